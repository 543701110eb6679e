#include "mesh/mesh.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "collectives/futex.hpp"
#include "collectives/in_process.hpp"
#include "support/cpus.hpp"
#include "support/errors.hpp"

namespace meshrun {

namespace {

// "model", or "(data,model)" for a tuple: a group's name in traces and messages.
std::string tuple_label(const std::vector<std::string>& axes) {
  if (axes.size() == 1) return axes[0];
  std::string s = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + axes[i];
  return s + ")";
}

}  // namespace

std::vector<std::vector<std::string>> mesh_axis_tuples(const MeshShape& mesh) {
  std::vector<std::vector<std::string>> tuples;
  std::vector<std::string> current;
  std::vector<bool> used(mesh.size(), false);
  auto extend = [&](auto& self) -> void {
    if (!current.empty()) tuples.push_back(current);
    for (std::size_t i = 0; i < mesh.size(); ++i) {
      if (used[i]) continue;
      used[i] = true;
      current.push_back(mesh[i].first);
      self(self);
      current.pop_back();
      used[i] = false;
    }
  };
  extend(extend);
  auto full = std::find_if(tuples.begin(), tuples.end(),
                           [&](const auto& t) { return t.size() == mesh.size(); });
  std::rotate(tuples.begin(), full, full + 1);  // the first full tuple found is in mesh order
  return tuples;
}

AxisGroups mesh_axis_groups(const MeshShape& mesh, std::vector<std::string> tuple) {
  AxisGroups set;
  set.axes = std::move(tuple);
  set.label = tuple_label(set.axes);
  const int n = mesh_devices(mesh);
  for (int d = 0; d < n; ++d) {
    const std::vector<int> c = mesh_coords(mesh, d);
    int rank = 0, group = 0;
    for (const std::string& a : set.axes) {  // row-major over the tuple
      const auto p = static_cast<std::size_t>(mesh_axis_position(mesh, a));
      rank = rank * mesh[p].second + c[p];
    }
    for (std::size_t p = 0; p < mesh.size(); ++p) {  // row-major over the other axes
      if (std::find(set.axes.begin(), set.axes.end(), mesh[p].first) != set.axes.end()) continue;
      group = group * mesh[p].second + c[p];
    }
    auto& members = set.members;
    if (members.size() <= static_cast<std::size_t>(group))
      members.resize(static_cast<std::size_t>(group) + 1);
    auto& m = members[static_cast<std::size_t>(group)];
    if (m.size() <= static_cast<std::size_t>(rank)) m.resize(static_cast<std::size_t>(rank) + 1);
    m[static_cast<std::size_t>(rank)] = d;
    set.group_of.push_back(group);
    set.rank_of.push_back(rank);
  }
  return set;
}

namespace {

constexpr auto kIdleSlice = std::chrono::milliseconds(100);
// A stalled device sleeps on `failures` in slices of at most this (a safety net: every abort
// it waits for bumps the word).
constexpr auto kStallSlice = std::chrono::milliseconds(50);
// How much longer than the timeout a stalled device waits while a peer may still be waiting for it.
constexpr auto kStallGrace = std::chrono::milliseconds(1000);

// One InProcessGroup per group of one tuple of axes (mesh_axis_groups places the devices).
struct GroupSet {
  std::vector<std::string> axes;
  std::string label;
  std::vector<std::unique_ptr<InProcessGroup>> groups;
  std::vector<int> group_of, rank_of;

  GroupSet(const MeshShape& mesh, std::vector<std::string> tuple, const GroupOptions& options) {
    AxisGroups layout = mesh_axis_groups(mesh, std::move(tuple));
    axes = std::move(layout.axes);
    label = std::move(layout.label);
    group_of = std::move(layout.group_of);
    rank_of = std::move(layout.rank_of);
    for (auto& m : layout.members) {
      const int size = static_cast<int>(m.size());
      groups.push_back(std::make_unique<InProcessGroup>(size, label, options, std::move(m)));
    }
  }
};

}  // namespace

struct Mesh::Impl {
  MeshShape shape;
  int size;
  std::string axis;   // the first axis' name
  std::string label;  // "'data'" or "('data', 'model')", for messages about the whole mesh
  MeshOptions options;

  // job_: bumped by run() (release, after body_ and group_ are set); device threads sleep on it.
  alignas(64) std::atomic<std::uint32_t> job{0};
  // done_: devices that finished the current job (acq_rel: publishes their errors to run()).
  alignas(64) std::atomic<std::uint32_t> done{0};
  // stopping: set once by ~Mesh (under state_mu); injected stalls and run() watch it.
  std::atomic<bool> stopping{false};
  // failures: bumped (release) after the group is aborted, by record() and ~Mesh; the futex word
  // an injected stall sleeps on, so it wakes as soon as the mesh aborts and costs no CPU before.
  alignas(64) std::atomic<std::uint32_t> failures{0};
  // first_error: the device whose error run() rethrows -- the first to fail, by time, among the
  // causes; first_consequence: the first AbortedError (reported only when there is no cause).
  std::atomic<int> first_error{-1};
  std::atomic<int> first_consequence{-1};

  // run() and ~Mesh agree through state_mu: at most one run at a time (a nested or concurrent
  // run is refused), and the destructor waits for a run in progress to return before it frees
  // anything. Not on the collective path: taken twice per run.
  std::mutex state_mu;
  std::condition_variable state_cv;
  bool running = false;  // guarded by state_mu

  // body: set by run() before it bumps job (release), cleared after every device is done; a
  // device woken with body == nullptr is being told to exit (see ~Mesh).
  std::atomic<const std::function<void(Device&)>*> body{nullptr};
  Trace* trace = nullptr;  // set with body by run()
  // One set per ordered tuple of axes, made afresh for every run (an aborted group refuses every
  // further collective). Aborting the mesh aborts every group of every set.
  std::vector<GroupSet> group_sets;
  // aborted: set (release) by record() and ~Mesh before they bump `failures`; injected stalls
  // watch it, since the group a stalled device was about to enter may not be the one that failed.
  std::atomic<bool> aborted{false};
  std::vector<std::exception_ptr> errors;
  // Per device, written by its own thread during a run and read by run() after it: the collective
  // at which it began an injected stall ("" if it did not), and how many collectives it entered.
  std::vector<std::string> stalled_at;
  std::vector<std::uint64_t> entered;
  // Per device, the collective it is in right now (CollectiveWhere; 0 outside any), stored by its
  // own thread; and, per device whose wait timed out, every device's value at that moment, read
  // before the mesh aborts the other groups (explain() follows the waits to their cause).
  std::unique_ptr<std::atomic<std::uint64_t>[]> in_collective;
  std::vector<std::vector<std::uint64_t>> waits_at_timeout;
  // Devices in an injected stall right now: when they and the finished devices are all there is,
  // nobody waits for the stalled ones to time out, so each stall ends at its own timeout.
  std::atomic<int> stalling{0};
  // Per injection: whether it fired during the last run (written by its device's thread only).
  std::vector<char> fired;
  std::vector<std::jthread> threads;  // last member: joined first, before the state above dies

  void device_loop(int index, const std::stop_token& stop);
  void run_job(int index, const std::stop_token& stop);
  // --inject at the device's `count`-th collective, which is `op` #seq in `group`.
  void inject(int index, CollectiveOp op, std::uint64_t count, const std::string& group,
              std::uint64_t seq, const std::stop_token& stop);
  void record(int index, std::exception_ptr error, bool consequence = false);
  void abort_all();
  void start_missing_threads();
  std::exception_ptr explain(int first) const;
};

void Mesh::Impl::abort_all() {
  aborted.store(true, std::memory_order_release);
  for (GroupSet& set : group_sets)
    for (auto& g : set.groups) g->abort();
}

// The mesh whose device the calling thread is (nullptr on every other thread): ~Mesh refuses to
// run on one of its own devices.
thread_local const void* t_device_of = nullptr;

// MeshOptions::pin_devices: device `index` of `size` onto one of the CPUs this process may use,
// round robin, when the devices outnumber them. Best effort: a refusal leaves the thread unpinned.
static void pin_if_oversubscribed(int index, int size) {
#if defined(__linux__)
  const std::vector<int> cpus = usable_cpu_ids();
  if (cpus.empty() || static_cast<std::size_t>(size) <= cpus.size()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<std::size_t>(index) % cpus.size()], &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
#else
  (void)index;
  (void)size;
#endif
}

void Mesh::Impl::device_loop(int index, const std::stop_token& stop) {
  t_device_of = this;
  if (options.pin_devices) pin_if_oversubscribed(index, size);
  std::uint32_t seen = 0;
  for (;;) {
    std::uint32_t j = job.load(std::memory_order_acquire);
    while (j == seen) {
      // Stop is requested only when no run is in progress and none can start (~Mesh, after the
      // last run returned; or a constructor that failed half-way): no job can be pending here.
      if (stop.stop_requested()) return;
      futex_wait_for(job, seen, kIdleSlice);
      j = job.load(std::memory_order_acquire);
    }
    // A job run() started is always finished and counted, even while the mesh is being
    // destroyed (run() waits for every device; its group is aborted, so collectives fail fast).
    // ~Mesh bumps job only once no run is in progress: body is then null and the device exits.
    if (body.load(std::memory_order_acquire) == nullptr) return;
    seen = j;
    run_job(index, stop);
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<std::uint32_t>(size))
      futex_wake_all(done);
    // options never change after construction, and the mesh outlives this thread (it joins it).
    if (!options.keep_threads) return;  // the next run starts a new thread
  }
}

void Mesh::Impl::run_job(int index, const std::stop_token& stop) {
  std::vector<GroupMembership> memberships;
  for (GroupSet& set : group_sets) {
    const auto d = static_cast<std::size_t>(index);
    memberships.push_back(
        {set.axes, set.label,
         &set.groups[static_cast<std::size_t>(set.group_of[d])]->member(set.rank_of[d])});
  }
  DeviceProfile* profile =
      trace && trace->profile ? &trace->profile->devices[static_cast<std::size_t>(index)] : nullptr;
  Device device(
      index, shape, std::move(memberships),
      [this, &stop](int d, CollectiveOp op, std::uint64_t count, const std::string& group,
                    std::uint64_t seq) { inject(d, op, count, group, seq, stop); },
      trace ? &trace->collectives[static_cast<std::size_t>(index)] : nullptr, profile,
      &in_collective[static_cast<std::size_t>(index)]);
  if (profile) profile->body_start = ProfileClock::now();
  try {
    (*body.load(std::memory_order_acquire))(device);
    entered[static_cast<std::size_t>(index)] = device.collectives_entered();
  } catch (const AbortedError&) {
    record(index, std::current_exception(), /*consequence=*/true);
  } catch (const TimeoutError&) {
    std::vector<std::uint64_t>& waits = waits_at_timeout[static_cast<std::size_t>(index)];
    for (int d = 0; d < size; ++d)
      waits.push_back(in_collective[static_cast<std::size_t>(d)].load(std::memory_order_relaxed));
    record(index, std::current_exception());
  } catch (const CollectiveError&) {
    record(index, std::current_exception());
  } catch (const InternalError&) {
    record(index, std::current_exception());
  } catch (const std::exception& e) {
    record(index, std::make_exception_ptr(
                      DeviceError(index, "device " + std::to_string(index) + " failed " +
                                             (device.where().rfind("before", 0) == 0 ? "" : "at ") +
                                             device.where() + ": " + e.what())));
  } catch (...) {
    record(index, std::make_exception_ptr(DeviceError(index, "device " + std::to_string(index) +
                                                                 " failed at " + device.where() +
                                                                 ": unknown exception")));
  }
  // However the body ended: the timeline of a failed run is the one most looked at.
  if (profile) profile->body_end = ProfileClock::now();
}

void Mesh::Impl::record(int index, std::exception_ptr error, bool consequence) {
  errors[static_cast<std::size_t>(index)] = std::move(error);
  int none = -1;
  (consequence ? first_consequence : first_error)
      .compare_exchange_strong(none, index, std::memory_order_acq_rel);
  abort_all();  // release every device waiting in a collective, in every group
  failures.fetch_add(1, std::memory_order_release);
  futex_wake_all(failures);  // and end an injected stall
}

void Mesh::Impl::inject(int index, CollectiveOp op, std::uint64_t count, const std::string& group,
                        std::uint64_t seq, const std::stop_token& stop) {
  for (std::size_t i = 0; i < options.injections.size(); ++i) {
    const Injection& inj = options.injections[i];
    if (inj.device != index || inj.at != count) continue;
    fired[i] = 1;
    const std::string spec = std::to_string(index) + "@" + std::to_string(count);
    const std::string at =
        std::string(op_name(op)) + " #" + std::to_string(seq) + " on '" + group + "'";
    if (inj.kind == Injection::Kind::kFail) {
      throw std::runtime_error("injected failure (--inject fail:" + spec + ")");
    }
    if (inj.kind == Injection::Kind::kInternal) {
      throw InternalError("internal error: injected at device " + std::to_string(index) + "'s " +
                          at + " (--inject internal:" + spec + ")");
    }
    // Stall: never arrive. Sleep in short slices until the mesh aborts (a peer timed out and
    // reported us) or is destroyed. Bounded: by the timeout plus a second while some device may
    // still wait for us (its own timeout report, naming us, should win), by the timeout alone
    // once every other device has stalled too or finished -- nobody else will report then.
    stalled_at[static_cast<std::size_t>(index)] = at + " (--inject stall:" + spec + ")";
    stalling.fetch_add(1, std::memory_order_acq_rel);
    const auto start = std::chrono::steady_clock::now();
    auto released = [&] {
      return aborted.load(std::memory_order_acquire) || stop.stop_requested() ||
             stopping.load(std::memory_order_acquire);
    };
    for (;;) {
      const std::uint32_t seen = failures.load(std::memory_order_acquire);  // before the checks
      if (released()) break;
      const bool alone = stalling.load(std::memory_order_acquire) +
                             static_cast<int>(done.load(std::memory_order_acquire)) ==
                         size;
      const auto limit =
          start + options.timeout + (alone ? std::chrono::milliseconds(0) : kStallGrace);
      const auto now = std::chrono::steady_clock::now();
      if (now >= limit) break;
      futex_wait_for(failures, seen, std::min<std::chrono::nanoseconds>(limit - now, kStallSlice));
    }
    stalling.fetch_sub(1, std::memory_order_acq_rel);
    const std::string what = "device " + std::to_string(index) + " stalled at " +
                             stalled_at[static_cast<std::size_t>(index)];
    if (released()) throw AbortedError(what);  // the peers' report (or ~Mesh) is the cause
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count();
    throw CollectiveError(what + " and never arrived; gave up after " + std::to_string(ms) + " ms");
  }
}

// The error run() reports for device `first`'s, with what only the mesh knows: for a timeout,
// which missing devices were stalled (--inject), which were only late (still in their body, e.g.
// not scheduled on an oversubscribed machine) and which were waiting in a collective of another
// group -- followed to the members that group waited for, down to the stalled and late ones, the
// cause; for a stall that ended the run, every device that stalled, not just the first to give up.
std::exception_ptr Mesh::Impl::explain(int first) const {
  std::exception_ptr error = errors[static_cast<std::size_t>(first)];  // not const: returned, moved
  auto list = [](const std::vector<int>& devices) {
    std::string s;
    for (int d : devices) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return s;
  };
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    const std::vector<std::uint64_t>& waits = waits_at_timeout[static_cast<std::size_t>(first)];
    auto wait_of = [&](int d) {
      return static_cast<std::size_t>(d) < waits.size() ? waits[static_cast<std::size_t>(d)] : 0;
    };
    std::vector<int> stalled, late;
    std::string why;                       // "4 waiting in psum #1 on 'model' for 6; "
    std::vector<int> chain = e.missing();  // grows as waits are followed; each device once
    std::vector<bool> seen(static_cast<std::size_t>(size), false);
    seen[static_cast<std::size_t>(first)] = true;
    for (int m : chain) seen[static_cast<std::size_t>(m)] = true;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const int m = chain[i];
      const std::uint64_t w = wait_of(m);
      if (!stalled_at[static_cast<std::size_t>(m)].empty()) {
        stalled.push_back(m);
      } else if (w == 0) {
        late.push_back(m);
      } else {  // waiting for the members of its group that were not in the same collective
        const GroupSet& set = group_sets[CollectiveWhere::group(w)];
        const int group = set.group_of[static_cast<std::size_t>(m)];
        std::vector<int> blockers;
        for (int d = 0; d < size; ++d) {
          if (set.group_of[static_cast<std::size_t>(d)] != group || wait_of(d) == w) continue;
          blockers.push_back(d);
          if (!seen[static_cast<std::size_t>(d)]) chain.push_back(d);
          seen[static_cast<std::size_t>(d)] = true;
        }
        why += std::to_string(m) + " waiting in " + op_name(CollectiveWhere::op(w)) + " #" +
               std::to_string(CollectiveWhere::seq(w)) + " on '" + set.label + "'" +
               (blockers.empty() ? "" : " for " + list(blockers)) + "; ";
      }
    }
    std::sort(stalled.begin(), stalled.end());
    std::sort(late.begin(), late.end());
    if (!stalled.empty()) why += list(stalled) + " stalled by --inject; ";
    if (!late.empty())
      why += list(late) + " late: still running the body, a longer --timeout may help; ";
    if (why.size() >= 2) why.resize(why.size() - 2);  // the last "; "
    return std::make_exception_ptr(
        TimeoutError(e.what() + std::string(" (") + why + ")", e.missing()));
  } catch (const CollectiveError&) {
    // A stall that ended the run (nobody else waited): name every device that stalled.
    std::vector<int> stalled;
    std::string where;
    for (std::size_t d = 0; d < stalled_at.size(); ++d) {
      if (stalled_at[d].empty()) continue;
      stalled.push_back(static_cast<int>(d));
      where += (where.empty() ? "" : "; ") + std::to_string(d) + " at " + stalled_at[d];
    }
    if (stalled.size() < 2 || stalled_at[static_cast<std::size_t>(first)].empty()) return error;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count();
    return std::make_exception_ptr(CollectiveError("devices " + list(stalled) + " stalled (" +
                                                   where + ") and never arrived; gave up after " +
                                                   std::to_string(ms) + " ms"));
  } catch (...) {
  }
  return error;
}

std::vector<Injection> Mesh::unfired_injections() const {
  std::vector<Injection> out;
  for (std::size_t i = 0; i < impl_->options.injections.size(); ++i) {
    if (!impl_->fired[i]) out.push_back(impl_->options.injections[i]);
  }
  return out;
}

std::uint64_t Mesh::collectives_entered(int device) const {
  return impl_->entered.at(static_cast<std::size_t>(device));
}

Mesh::Mesh(int size, std::string axis, MeshOptions options)
    : Mesh(size < 1
               ? throw InputError("--devices", "must be at least 1, got " + std::to_string(size))
               : MeshShape{{std::move(axis), size}},
           std::move(options)) {}

Mesh::Mesh(MeshShape shape, MeshOptions options) : impl_(std::make_unique<Impl>()) {
  check_mesh("--mesh", shape);
  const int size = mesh_devices(shape);
  impl_->size = size;
  impl_->axis = shape[0].first;
  impl_->label = shape.size() == 1 ? "'" + shape[0].first + "'" : mesh_axis_names(shape);
  impl_->shape = std::move(shape);
  impl_->options = std::move(options);
  for (const Injection& inj : impl_->options.injections) {
    if (inj.device >= size) {
      throw InputError("--inject", "device " + std::to_string(inj.device) +
                                       " does not exist on a mesh of " + std::to_string(size) +
                                       " devices");
    }
  }
  impl_->fired.assign(impl_->options.injections.size(), 0);
  impl_->entered.assign(static_cast<std::size_t>(size), 0);
  impl_->in_collective =
      std::make_unique<std::atomic<std::uint64_t>[]>(static_cast<std::size_t>(size));
  impl_->threads.reserve(static_cast<std::size_t>(size));
  // The device threads start with the first run, after its job is posted: they find it at once
  // instead of going to sleep and being woken for it (start-up of a one-run process, issue 9).
}

// Starts the device threads run() still lacks (all of them on the first run, and on every run
// without keep_threads, after joining the previous run's, which have ended or are ending). They
// find the job just posted. A thread that cannot be created fails its device, as if its body had
// thrown: the others are released by the abort, and the device counts as done.
void Mesh::Impl::start_missing_threads() {
  if (!options.keep_threads) threads.clear();  // joins
  for (int i = static_cast<int>(threads.size()); i < size; ++i) {
    try {
      threads.emplace_back([this, i](const std::stop_token& st) { device_loop(i, st); });
    } catch (const std::exception& e) {  // system_error (no thread), bad_alloc (its state)
      for (int d = i; d < size; ++d) {
        std::exception_ptr why;
        try {
          why =
              std::make_exception_ptr(InternalError("internal error: cannot start the thread of "
                                                    "device " +
                                                    std::to_string(d) + ": " + e.what()));
        } catch (...) {  // no memory for the message either: the cause itself
          why = std::current_exception();
        }
        record(d, why);
        done.fetch_add(1, std::memory_order_acq_rel);
      }
      return;
    }
  }
}

// Destroying a mesh while a run is in progress on another thread (or while a device stalls) is
// safe: the run is cancelled -- its group aborted, so every collective wait returns at once and
// stalls end -- the destructor waits for that run() to return (it throws to its caller), then
// stops and joins the device threads. A body busy computing outside any collective is waited
// for: C++ threads cannot be interrupted, only joined.
Mesh::~Mesh() {
  Impl& m = *impl_;
  // Not by scanning `threads`: a run on another thread may be starting them right now.
  if (t_device_of == &m) {
    // It would wait for its own run to end: a certain deadlock. Refuse loudly instead.
    std::fputs("meshrun: internal error: a Mesh was destroyed by one of its own devices\n", stderr);
    std::abort();
  }
  {
    std::unique_lock lock(m.state_mu);
    m.stopping.store(true, std::memory_order_release);
    if (m.running) m.abort_all();  // release every device waiting in a collective
    m.failures.fetch_add(1, std::memory_order_release);
    futex_wake_all(m.failures);  // end injected stalls
    m.state_cv.wait(lock, [&] { return !m.running; });
  }
  // No run in progress and none can start (a run between releasing the lock and bumping job is
  // still counted in `running`): stop now, and since body is null the bump makes every device exit.
  for (auto& t : m.threads) t.request_stop();
  m.job.fetch_add(1, std::memory_order_release);
  futex_wake_all(m.job);
  m.threads.clear();  // joins
}

int Mesh::size() const { return impl_->size; }
const MeshShape& Mesh::shape() const { return impl_->shape; }
const std::string& Mesh::axis() const { return impl_->axis; }

void Mesh::run(const std::function<void(Device&)>& body, Trace* trace) {
  Impl& m = *impl_;
  const std::string label = m.label;  // for a message after m may be gone; copied before running
  {
    std::lock_guard lock(m.state_mu);
    if (m.stopping.load(std::memory_order_relaxed)) {
      throw AbortedError("mesh on " + m.label + ": it is being destroyed and runs nothing more");
    }
    if (m.running) {
      // From a device body it would wait for itself; from another thread it would mix two runs.
      throw InternalError("mesh on " + m.label +
                          ": Mesh::run called while a run is in progress (nested or concurrent)");
    }
    GroupOptions go;
    go.timeout = m.options.timeout;
    m.group_sets.clear();  // fresh groups per run
    for (auto& tuple : mesh_axis_tuples(m.shape))
      m.group_sets.emplace_back(m.shape, std::move(tuple), go);
    m.aborted.store(false, std::memory_order_relaxed);
    if (trace) trace->collectives.assign(static_cast<std::size_t>(m.size), {});
    if (trace && trace->profile)
      trace->profile->devices.assign(static_cast<std::size_t>(m.size), {});
    m.errors.assign(static_cast<std::size_t>(m.size), nullptr);
    m.stalled_at.assign(static_cast<std::size_t>(m.size), "");
    m.waits_at_timeout.assign(static_cast<std::size_t>(m.size), {});
    for (int d = 0; d < m.size; ++d)
      m.in_collective[static_cast<std::size_t>(d)].store(0, std::memory_order_relaxed);
    m.entered.assign(static_cast<std::size_t>(m.size), 0);
    m.fired.assign(m.options.injections.size(), 0);
    m.running = true;  // last: nothing below throws until the devices are done
  }
  m.trace = trace;
  m.first_error.store(-1, std::memory_order_relaxed);
  m.first_consequence.store(-1, std::memory_order_relaxed);
  m.done.store(0, std::memory_order_relaxed);
  m.body.store(&body, std::memory_order_relaxed);
  m.job.fetch_add(1, std::memory_order_release);  // publishes everything above to the devices
  const bool parked = m.options.keep_threads && !m.threads.empty();  // some wait on `job`
  if (!m.options.keep_threads || static_cast<int>(m.threads.size()) < m.size)
    m.start_missing_threads();
  if (parked) futex_wake_all(m.job);
  // Bounded as long as every body returns: each collective wait ends by its deadline or the
  // abort, an injected stall by the abort or its own limit.
  for (;;) {
    const std::uint32_t d = m.done.load(std::memory_order_acquire);
    if (d == static_cast<std::uint32_t>(m.size)) break;
    futex_wait_for(m.done, d, kIdleSlice);
  }
  m.body.store(nullptr, std::memory_order_relaxed);
  m.trace = nullptr;
  int first = m.first_error.load(std::memory_order_acquire);
  if (first < 0) first = m.first_consequence.load(std::memory_order_acquire);
  std::exception_ptr error;
  if (first >= 0) {
    try {  // nothing may throw past here before `running` is cleared: ~Mesh waits for it
      error = m.explain(first);
    } catch (...) {
      error = m.errors[static_cast<std::size_t>(first)];
    }
  }
  const bool cancelled = m.stopping.load(std::memory_order_acquire) &&
                         m.first_error.load(std::memory_order_relaxed) < 0 && error;
  {
    std::lock_guard lock(m.state_mu);
    m.running = false;
    m.state_cv.notify_all();  // under the lock: a waiting ~Mesh may free m once it is released
  }
  // m must not be touched from here on: a destructor on another thread may be freeing it.
  if (cancelled) {
    throw AbortedError("mesh on " + label +
                       ": the run was cancelled because the mesh was destroyed");
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace meshrun
