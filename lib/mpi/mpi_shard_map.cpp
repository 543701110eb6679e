#include "mpi/mpi_shard_map.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include "mpi/mpi_mesh.hpp"
#include "mpi/mpi_runner.hpp"
#include "support/errors.hpp"

namespace meshrun {

namespace {

// A stalled device waits this much past the timeout for the peer that waits for it to report it.
constexpr auto kStallGrace = std::chrono::milliseconds(1000);

void put(Wire& w, const CollectiveRecord& r) {
  w.put(r.op);
  w.put(r.axis);
  w.put(r.in_shape);
  w.put(r.out_shape);
  w.put(static_cast<std::uint64_t>(r.out_varying));
  w.put(r.seq);
}

// --timings, --profile: times travel as nanoseconds after the sending rank's reference point
// (+1; 0 stands for an unset time), and land on rank 0 as its own reference point plus as many.
// The reference is taken on every rank right after the mesh is built, which every rank leaves
// within one message of the others: the timeline is right to about that on one machine or
// several (steady clocks of different machines are not comparable).
void put_time(Wire& w, ProfileClock::time_point t, ProfileClock::time_point ref) {
  if (t == ProfileClock::time_point{}) {
    w.put(std::uint64_t{0});
    return;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t - ref).count();
  w.put(static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0)) + 1);
}
ProfileClock::time_point time(Wire& w, ProfileClock::time_point ref) {
  const std::uint64_t v = w.u64();
  if (v == 0) return {};
  return ref + std::chrono::duration_cast<ProfileClock::duration>(
                   std::chrono::nanoseconds(static_cast<std::int64_t>(v - 1)));
}

void put(Wire& w, const DeviceProfile& d, ProfileClock::time_point ref) {
  put_time(w, d.body_start, ref);
  put_time(w, d.body_end, ref);
  w.put(static_cast<std::uint64_t>(d.collectives.size()));
  for (const CollectiveSpan& c : d.collectives) {
    w.put(c.op);
    w.put(c.group);
    w.put(c.seq);
    w.put(static_cast<std::uint64_t>(c.bytes));
    put_time(w, c.start, ref);
    put_time(w, c.end, ref);
    put_time(w, c.marks.arrived, ref);
    put_time(w, c.marks.complete, ref);
    w.put(static_cast<std::uint64_t>(c.failed));
  }
}

DeviceProfile device_profile(Wire& w, ProfileClock::time_point ref) {
  DeviceProfile d;
  d.body_start = time(w, ref);
  d.body_end = time(w, ref);
  for (std::uint64_t i = w.u64(); i > 0; --i) {
    CollectiveSpan& c = d.collectives.emplace_back();
    c.op = w.str();
    c.group = w.str();
    c.seq = w.u64();
    c.bytes = static_cast<std::size_t>(w.u64());
    c.start = time(w, ref);
    c.end = time(w, ref);
    c.marks.arrived = time(w, ref);
    c.marks.complete = time(w, ref);
    c.failed = w.u64() != 0;
  }
  return d;
}

CollectiveRecord record(Wire& w) {
  CollectiveRecord r;
  r.op = w.str();
  r.axis = w.str();
  r.in_shape = w.shape();
  r.out_shape = w.shape();
  r.out_varying = w.u64() != 0;
  r.seq = w.u64();
  return r;
}

// How a rank's devices ended, as its outcome tells rank 0: the error's class travels, not an exit
// code (rank 0 throws that class, the program maps it). kAborted: only consequences here (every
// device was released by another rank's failure); the others are a cause seen on this rank.
enum class Failure : std::uint64_t { kOk, kAborted, kMesh, kInternal };

// This rank's devices: their blocks in, their outputs, collectives and errors out.
class LocalRun {
 public:
  // `profiling`: each device records its DeviceProfile; the outcome carries them, times after
  // `ref`.
  LocalRun(MpiMesh& group, const MeshShape& mesh, const MeshOptions& options, bool profiling,
           ProfileClock::time_point ref)
      : group_(group),
        mesh_(mesh),
        options_(options),
        k_(static_cast<std::size_t>(group.local_devices())),
        blocks_(k_),
        outs_(k_),
        logs_(k_),
        entered_(k_, 0),
        stalled_(k_),
        errors_(k_),
        fired_(options.injections.size(), 0),
        profiles_(profiling ? k_ : 0),
        ref_(ref) {}

  std::vector<std::vector<Tensor>>& blocks() { return blocks_; }

  void run(const Body& body) {
    std::vector<std::jthread> threads;
    for (std::size_t j = 0; j < k_; ++j) threads.emplace_back([&, j] { run_device(body, j); });
  }

  // [kind, message, stall notes, fired flags, entered per device, (profile per device when
  // profiling), (outputs and collectives per device when kind is kOk)].
  std::string outcome() const {
    Wire w;
    Failure kind = Failure::kOk;
    std::string message;
    if (const std::exception_ptr e = first_cause(errors_)) {
      try {
        std::rethrow_exception(e);
      } catch (const InternalError& x) {
        kind = Failure::kInternal;
        message = x.what();
      } catch (const AbortedError& x) {
        kind = Failure::kAborted;
        message = group_.aborted() ? group_.reason() : x.what();
      } catch (const std::exception& x) {
        kind = Failure::kMesh;
        message = group_.aborted() ? group_.reason() : x.what();
      }
    }
    w.put(static_cast<std::uint64_t>(kind));
    w.put(message);
    std::vector<std::string> notes;
    for (const std::string& s : stalled_)
      if (!s.empty()) notes.push_back(s);
    w.put(static_cast<std::uint64_t>(notes.size()));
    for (const std::string& s : notes) w.put(s);
    for (char f : fired_) w.put(static_cast<std::uint64_t>(f));
    for (std::uint64_t n : entered_) w.put(n);
    for (const DeviceProfile& d : profiles_) put(w, d, ref_);
    if (kind != Failure::kOk) return w.bytes();
    for (std::size_t j = 0; j < k_; ++j) {
      w.put(static_cast<std::uint64_t>(outs_[j].size()));
      for (const Tensor& t : outs_[j]) w.put(t);
      w.put(static_cast<std::uint64_t>(logs_[j].size()));
      for (const CollectiveRecord& r : logs_[j]) put(w, r);
    }
    return w.bytes();
  }

 private:
  void run_device(const Body& body, std::size_t j) {
    const int index = group_.first_device() + static_cast<int>(j);
    Device device(
        index, mesh_, group_.memberships(static_cast<int>(j)),
        [this, j](int d, CollectiveOp op, std::uint64_t count, const std::string& label,
                  std::uint64_t seq) { inject(j, d, op, count, label, seq); },
        &logs_[j], profiles_.empty() ? nullptr : &profiles_[j]);
    if (!profiles_.empty()) profiles_[j].body_start = ProfileClock::now();
    // However the body ends: the timeline of a failed run is the one most looked at.
    struct BodyEnd {
      DeviceProfile* p;
      ~BodyEnd() {
        if (p) p->body_end = ProfileClock::now();
      }
    } body_end{profiles_.empty() ? nullptr : &profiles_[j]};
    try {
      outs_[j] = body(device, blocks_[j]);
      blocks_[j].clear();
    } catch (const AbortedError&) {
      errors_[j] = std::current_exception();  // a consequence: the group already has the cause
    } catch (const CollectiveError& e) {
      errors_[j] = std::current_exception();
      group_.abort(e.what());
    } catch (const InternalError& e) {
      errors_[j] = std::current_exception();
      group_.abort(e.what());
    } catch (const std::exception& e) {
      // As the in-process mesh says it, with the rank: every rank reports this one line.
      const std::string where = device.where();
      const std::string what = "device " + std::to_string(index) + " (rank " +
                               std::to_string(group_.rank()) + ") failed " +
                               (where.starts_with("before") ? "" : "at ") + where + ": " + e.what();
      errors_[j] = std::make_exception_ptr(DeviceError(index, what));
      group_.abort(what);
    }
    entered_[j] = device.collectives_entered();
  }

  // --inject, as the in-process mesh does it (mesh.cpp), for this rank's devices.
  void inject(std::size_t j, int index, CollectiveOp op, std::uint64_t count,
              const std::string& label, std::uint64_t seq) {
    for (std::size_t i = 0; i < options_.injections.size(); ++i) {
      const Injection& inj = options_.injections[i];
      if (inj.device != index || inj.at != count) continue;
      fired_[i] = 1;
      const std::string at =
          std::string(op_name(op)) + " #" + std::to_string(seq) + " on '" + label + "'";
      if (inj.kind == Injection::Kind::kFail)
        throw std::runtime_error("injected failure (--inject " + injection_str(inj) + ")");
      if (inj.kind == Injection::Kind::kInternal)
        throw InternalError("internal error: injected at device " + std::to_string(index) + "'s " +
                            at + " (--inject " + injection_str(inj) + ")");
      // Stall: never arrive. The peers time out and abort the group, which ends the stall; the
      // grace bounds it if nobody is left to wait for this device.
      stalled_[j] = "device " + std::to_string(index) + " (rank " + std::to_string(group_.rank()) +
                    ") at " + at + " (--inject " + injection_str(inj) + ")";
      const auto limit = std::chrono::steady_clock::now() + options_.timeout + kStallGrace;
      while (!group_.aborted() && std::chrono::steady_clock::now() < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (group_.aborted())
        throw AbortedError("device " + std::to_string(index) + " stalled at " + at);
      throw CollectiveError("device " + std::to_string(index) + " stalled at " + at +
                            " and never arrived; gave up after " +
                            std::to_string(options_.timeout.count()) + " ms");
    }
  }

  MpiMesh& group_;  // the mesh's groups; their abort is the mesh's
  const MeshShape& mesh_;
  const MeshOptions& options_;
  std::size_t k_;
  std::vector<std::vector<Tensor>> blocks_, outs_;
  std::vector<std::vector<CollectiveRecord>> logs_;
  std::vector<std::uint64_t> entered_;
  std::vector<std::string> stalled_;
  std::vector<std::exception_ptr> errors_;
  std::vector<char> fired_;              // per injection; each written only by its device's thread
  std::vector<DeviceProfile> profiles_;  // per local device when profiling, else empty
  ProfileClock::time_point ref_;
};

// "data=2,model=4", as --mesh spells it.
std::string mesh_flag(const MeshShape& mesh) {
  std::string s;
  for (const auto& [axis, size] : mesh)
    s += (s.empty() ? "" : ",") + axis + "=" + std::to_string(size);
  return s;
}

}  // namespace

void check_mpi_mesh(const MeshShape& mesh, int ranks) {
  const int n = mesh_devices(mesh);
  if (n % ranks != 0) {
    throw InputError("--backend mpi", std::to_string(ranks) + " ranks do not divide the mesh's " +
                                          std::to_string(n) + " devices (" + mesh_flag(mesh) +
                                          "); run with a number of ranks that divides " +
                                          std::to_string(n));
  }
}

MpiShardMapResult mpi_shard_map(MpiJob& job, const MeshShape& mesh, const Body& body,
                                const std::vector<ArgDef>& in_specs,
                                const std::vector<ArgDef>& out_specs,
                                const std::vector<TensorRef>& inputs, const MeshOptions& options,
                                Trace* trace, bool profiling) {
  check_mpi_mesh(mesh, job.ranks());
  const int n = mesh_devices(mesh);
  for (const Injection& inj : options.injections) {  // as Mesh refuses it: on every rank alike
    if (inj.device >= n)
      throw InputError("--inject", "device " + std::to_string(inj.device) +
                                       " does not exist on a mesh of " + std::to_string(n) +
                                       " devices");
  }
  const int k = n / job.ranks();
  MpiMesh group(mesh, MpiOptions{.timeout = options.timeout});
  const ProfileClock::time_point ref = ProfileClock::now();  // see put_time
  LocalRun local(group, mesh, options, profiling, ref);
  Profile* const profile = trace && profiling ? trace->profile : nullptr;  // rank 0's
  if (profile) profile->devices.assign(static_cast<std::size_t>(n), {});

  // Placement: rank 0 cuts every rank's blocks and sends each only its own.
  if (job.rank() == 0) {
    const ProfilePhase phase(profile, "split");
    check_shard_map_inputs(mesh, in_specs, out_specs, inputs);
    if (trace) record_inputs(*trace, mesh, in_specs, inputs);
    for (int r = 1; r < job.ranks(); ++r) {
      Wire w;
      for (int d = r * k; d < (r + 1) * k; ++d)
        for (const Tensor& t : device_blocks(mesh, in_specs, inputs, d)) w.put(t);
      job.send(r, w.bytes());
    }
    for (int d = 0; d < k; ++d)
      local.blocks()[static_cast<std::size_t>(d)] = device_blocks(mesh, in_specs, inputs, d);
  } else {
    Wire w(job.recv(0));
    for (auto& blocks : local.blocks())
      for (std::size_t i = 0; i < in_specs.size(); ++i) blocks.push_back(w.tensor());
  }

  std::optional<ProfilePhase> running;
  if (job.rank() == 0) running.emplace(profile, "run");
  local.run(body);
  // After a failure a rank may be dead: waiting for its outcome is bounded by the timeout then.
  // Every live rank sends its outcome as soon as its devices are released (the abort reaches them
  // all within the timeout), so the ranks still missing when rank 0 gives up -- or rank 0 itself,
  // for a rank whose outcome it never took -- are the ones that stopped or died: named first, they
  // are the line's subject whatever rank's wait the failure was seen in first.
  std::vector<std::string> outcomes;
  const MpiJob::ms bound = group.aborted() ? options.timeout : MpiJob::ms{0};
  try {
    outcomes = job.to_root(local.outcome(), bound);
  } catch (const TimeoutError& e) {
    throw CollectiveError(stopped_answering(e, group.aborted() ? group.reason() : ""));
  }
  MpiShardMapResult result;
  if (job.rank() != 0) {
    if (group.aborted()) throw CollectiveError(group.reason());
    return result;
  }

  // Rank 0: the first failure, or the outputs.
  std::vector<Wire> wires;
  wires.reserve(outcomes.size());
  for (std::string& o : outcomes) wires.emplace_back(std::move(o));
  // The failure is the first cause (the lowest rank's that saw one; a rank whose devices were
  // only released by another's failure counts last), as one process reports its first cause.
  std::string stalls;
  Failure failure = Failure::kOk;
  std::string message;
  std::vector<char> fired(options.injections.size(), 0);
  for (Wire& w : wires) {
    const auto theirs = static_cast<Failure>(w.u64());
    std::string m = w.str();
    const bool cause = theirs == Failure::kMesh || theirs == Failure::kInternal;
    if (failure == Failure::kOk ? theirs != Failure::kOk : failure == Failure::kAborted && cause) {
      failure = theirs;
      message = std::move(m);
    }
    for (std::uint64_t s = w.u64(); s > 0; --s) stalls += (stalls.empty() ? "" : "; ") + w.str();
    for (char& f : fired) f = static_cast<char>(f | (w.u64() != 0));
    for (int j = 0; j < k; ++j) result.entered.push_back(w.u64());
    const auto first = static_cast<std::size_t>(&w - wires.data()) * static_cast<std::size_t>(k);
    for (std::size_t j = 0; profiling && j < static_cast<std::size_t>(k); ++j) {
      DeviceProfile d = device_profile(w, ref);
      if (profile) profile->devices[first + j] = std::move(d);
    }
  }
  running.reset();
  if (failure == Failure::kInternal) throw InternalError(message);
  if (failure != Failure::kOk) {
    if (!stalls.empty() && message.find("stalled") == std::string::npos)
      message += " (stalled by --inject: " + stalls + ")";
    throw CollectiveError(message);
  }
  for (std::size_t i = 0; i < fired.size(); ++i)
    if (!fired[i]) result.unfired.push_back(options.injections[i]);
  std::vector<std::vector<Tensor>> outs(static_cast<std::size_t>(n));
  if (trace) trace->collectives.assign(static_cast<std::size_t>(n), {});
  for (int d = 0; d < n; ++d) {
    Wire& w = wires[static_cast<std::size_t>(d / k)];
    for (std::uint64_t o = w.u64(); o > 0; --o)
      outs[static_cast<std::size_t>(d)].push_back(w.tensor());
    for (std::uint64_t c = w.u64(); c > 0; --c) {
      CollectiveRecord r = record(w);
      if (trace) trace->collectives[static_cast<std::size_t>(d)].push_back(std::move(r));
    }
  }
  const ProfilePhase phase(profile, "assemble");
  result.outputs = assemble_outputs(mesh, out_specs, std::move(outs), trace);
  return result;
}

}  // namespace meshrun
