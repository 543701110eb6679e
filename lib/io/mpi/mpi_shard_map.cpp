#include "io/mpi/mpi_shard_map.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include "mesh/mpi/mpi_mesh.hpp"
#include "io/mpi/mpi_runner.hpp"
#include "support/errors.hpp"
#include "support/startup_point.hpp"

namespace meshrun {

namespace {

void put(Wire& w, const CollectiveRecord& r) {
  w.put(r.op);
  w.put(r.axis);
  w.put(r.in_shape);
  w.put(r.out_shape);
  w.put(static_cast<std::uint64_t>(r.out_varying));
  w.put(r.seq);
  w.put(static_cast<std::uint64_t>(r.moves));
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
  r.moves = w.u64() != 0;
  return r;
}

// How a rank's devices ended, as its outcome tells rank 0: the error's class travels, not an exit
// code (rank 0 throws that class, the program maps it). kAborted: only consequences here (every
// device was released by another rank's failure); the others are a cause seen on this rank.
// What ended a rank's devices, as the exit code needs it: kInput for an InputError on a device (an
// UnimplementedError: a value the program's input cannot run with, as an int32 beyond 2^24),
// which is exit 2 in one process and must be under mpirun too.
// kNoGroups: the rank could not build the mesh's groups (a peer never came); its outcome is
// only [kind, message] -- it ran nothing -- and counts as a cause.
enum class Failure : std::uint64_t { kOk, kAborted, kMesh, kInternal, kInput, kNoGroups };

// This rank's devices, run by a Mesh over the job's groups (the same runner as one process: its
// first cause, --inject and failure lines): their blocks in, their outputs, collectives and
// errors out.
class LocalRun {
 public:
  // `profiling`: each device records its DeviceProfile; the outcome carries them, times after
  // `ref`.
  LocalRun(std::shared_ptr<MpiMesh> groups, const MeshShape& mesh, MeshOptions options,
           bool profiling, ProfileClock::time_point ref)
      : groups_(groups),
        mesh_(mesh, with_groups(std::move(options), groups)),
        k_(static_cast<std::size_t>(groups->local_devices())),
        blocks_(k_),
        outs_(k_),
        ref_(ref) {
    if (profiling) trace_.profile = &profile_;
  }

  std::vector<std::vector<Tensor>>& blocks() { return blocks_; }

  void run(const Body& body) {
    try {
      mesh_.run(
          [&](Device& device) {
            const auto j = static_cast<std::size_t>(device.index() - mesh_.first_device());
            outs_[j] = body(device, blocks_[j]);
            blocks_[j].clear();
          },
          &trace_);
    } catch (...) {
      error_ = std::current_exception();
    }
  }

  // [kind, message, stall notes, fired flags, entered per device, (profile per device when
  // profiling), collectives per device (those entered: all of them, or up to the failure),
  // (outputs per device when kind is kOk)].
  std::string outcome() const {
    Wire w;
    Failure kind = Failure::kOk;
    std::string message;
    if (error_) {
      // The line: the first abort's reason as every rank saw it -- but where this rank hosts the
      // whole mesh (R = 1), the Mesh's own report, diagnosis included, as one process prints it.
      const bool whole = mesh_.local_devices() == mesh_.size();
      auto line = [&](const std::exception& x) {
        return groups_->aborted() && !whole ? groups_->reason() : std::string(x.what());
      };
      try {
        std::rethrow_exception(error_);
      } catch (const InternalError& x) {
        kind = Failure::kInternal;
        message = x.what();
      } catch (const AbortedError& x) {
        kind = Failure::kAborted;
        message = line(x);
      } catch (const InputError& x) {
        kind = Failure::kInput;
        message = line(x);
      } catch (const std::exception& x) {
        kind = Failure::kMesh;
        message = line(x);
      }
    }
    w.put(static_cast<std::uint64_t>(kind));
    w.put(message);
    std::vector<std::string> notes;
    for (std::size_t j = 0; j < k_; ++j)
      if (std::string s = mesh_.stall_note(static_cast<int>(j)); !s.empty()) notes.push_back(s);
    w.put(static_cast<std::uint64_t>(notes.size()));
    for (const std::string& s : notes) w.put(s);
    for (bool f : mesh_.injections_fired()) w.put(static_cast<std::uint64_t>(f));
    for (std::size_t j = 0; j < k_; ++j)
      w.put(mesh_.collectives_entered(mesh_.first_device() + static_cast<int>(j)));
    if (trace_.profile)
      for (const DeviceProfile& d : profile_.devices) put(w, d, ref_);
    for (std::size_t j = 0; j < k_; ++j) {
      w.put(static_cast<std::uint64_t>(trace_.collectives[j].size()));
      for (const CollectiveRecord& r : trace_.collectives[j]) put(w, r);
    }
    if (kind != Failure::kOk) return w.bytes();
    for (std::size_t j = 0; j < k_; ++j) {
      w.put(static_cast<std::uint64_t>(outs_[j].size()));
      for (const Tensor& t : outs_[j]) w.put(t);
    }
    return w.bytes();
  }

 private:
  // One run, its threads ended with it; not pinned (mpirun places the ranks).
  static MeshOptions with_groups(MeshOptions options, std::shared_ptr<MpiMesh> groups) {
    options.groups = std::move(groups);
    options.keep_threads = false;
    options.pin_devices = false;
    return options;
  }

  std::shared_ptr<MpiMesh> groups_;  // the mesh's groups; their abort is the mesh's
  Mesh mesh_;
  std::size_t k_;
  std::vector<std::vector<Tensor>> blocks_, outs_;
  Trace trace_;      // this rank's devices' collectives (and profiles), by local device
  Profile profile_;  // trace_.profile when profiling
  std::exception_ptr error_;
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
                                Trace* trace, bool profiling, const MpiOptions& protocol) {
  check_mpi_mesh(mesh, job.ranks());
  const int n = mesh_devices(mesh);
  const int k = n / job.ranks();
  // As one process's Mesh::run: the first call of a program's run starts the collectives afresh,
  // a later one adds to them (every call is graded and traced, issue #47), even when it fails
  // before its devices run.
  if (trace && (trace->calls == 0 || trace->collectives.size() != static_cast<std::size_t>(n)))
    trace->collectives.assign(static_cast<std::size_t>(n), {});
  MpiOptions mpi = protocol;
  mpi.timeout = options.timeout;
  std::shared_ptr<MpiMesh> groups;
  try {
    // Issue 51: how far a rank got, for the launcher's watch (and where the host tests hold it).
    startup_point("groups");
    groups = std::make_shared<MpiMesh>(mesh, mpi);
    startup_point("after");
  } catch (const TimeoutError& e) {
    // A rank never came to create the groups (a collective, which cannot say who): the ranks
    // still answering tell rank 0, which names the ones that did not -- stopped, dead or cut off.
    // Their word is an outcome (kNoGroups), as every rank sends after its run: on a mesh of
    // several axes, ranks whose groups do not include the lost one build theirs and run, and
    // rank 0 may be one of them, gathering outcomes.
    Wire none;
    none.put(static_cast<std::uint64_t>(Failure::kNoGroups));
    none.put(std::string(e.what()));
    try {
      job.to_root(Step::kOutcome, none.bytes(), options.timeout);
    } catch (const TimeoutError& lost) {
      throw CollectiveError(stopped_answering(lost, e.what()));
    }
    throw;
  }
  const MpiMesh& group = *groups;
  const ProfileClock::time_point ref = ProfileClock::now();  // see put_time
  LocalRun local(groups, mesh, options, profiling, ref);     // InputError for a bad --inject
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
      job.send(r, Step::kBlocks, w.bytes());
    }
    for (int d = 0; d < k; ++d)
      local.blocks()[static_cast<std::size_t>(d)] = device_blocks(mesh, in_specs, inputs, d);
  } else {
    Wire w(job.recv(0, Step::kBlocks));
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
    outcomes = job.to_root(Step::kOutcome, local.outcome(), bound);
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
    const auto sent = static_cast<Failure>(w.u64());
    const Failure theirs = sent == Failure::kNoGroups ? Failure::kMesh : sent;
    std::string m = w.str();
    const bool cause =
        theirs == Failure::kMesh || theirs == Failure::kInternal || theirs == Failure::kInput;
    if (failure == Failure::kOk ? theirs != Failure::kOk : failure == Failure::kAborted && cause) {
      failure = theirs;
      message = std::move(m);
    }
    if (sent == Failure::kNoGroups) {  // that rank ran nothing: no more of its outcome
      for (int j = 0; j < k; ++j) result.entered.push_back(0);
      continue;
    }
    for (std::uint64_t s = w.u64(); s > 0; --s) stalls += (stalls.empty() ? "" : "; ") + w.str();
    for (char& f : fired) f = static_cast<char>(f | (w.u64() != 0));
    for (int j = 0; j < k; ++j) result.entered.push_back(w.u64());
    const auto first = static_cast<std::size_t>(&w - wires.data()) * static_cast<std::size_t>(k);
    for (std::size_t j = 0; profiling && j < static_cast<std::size_t>(k); ++j) {
      DeviceProfile d = device_profile(w, ref);
      if (profile) profile->devices[first + j] = std::move(d);
    }
    // Every device's collectives, a failed run's too (up to where each stopped), as one process's
    // trace has them.
    for (std::size_t j = 0; j < static_cast<std::size_t>(k); ++j) {
      for (std::uint64_t c = w.u64(); c > 0; --c) {
        CollectiveRecord r = record(w);
        if (trace) trace->collectives[first + j].push_back(std::move(r));
      }
    }
  }
  running.reset();
  if (failure == Failure::kInternal) throw InternalError(message);
  if (failure == Failure::kInput) throw UnimplementedError(message);
  if (failure != Failure::kOk) {
    if (!stalls.empty() && message.find("stalled") == std::string::npos)
      message += " (stalled by --inject: " + stalls + ")";
    throw CollectiveError(message);
  }
  for (std::size_t i = 0; i < fired.size(); ++i)
    if (!fired[i]) result.unfired.push_back(options.injections[i]);
  std::vector<std::vector<Tensor>> outs(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) {
    Wire& w = wires[static_cast<std::size_t>(d / k)];
    for (std::uint64_t o = w.u64(); o > 0; --o)
      outs[static_cast<std::size_t>(d)].push_back(w.tensor());
  }
  const ProfilePhase phase(profile, "assemble");
  result.outputs = assemble_outputs(mesh, out_specs, std::move(outs), trace);
  if (trace) ++trace->calls;
  return result;
}

}  // namespace meshrun
