#include "mesh/mesh.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "collectives/futex.hpp"
#include "mesh/in_process_groups.hpp"
#include "mesh/mesh_impl.hpp"
#include "support/cpus.hpp"
#include "support/errors.hpp"
namespace meshrun {

void Mesh::Impl::abort_all(const std::string& reason) {
  aborted.store(true, std::memory_order_release);
  groups->abort(reason);
}

void Mesh::Impl::aborted_elsewhere() {
  aborted.store(true, std::memory_order_release);
  failures.fetch_add(1, std::memory_order_release);
  futex_wake_all(failures);  // end an injected stall
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
#if defined(__linux__)
  // Named for top -H, gdb and /proc/PID/task/*/comm: "meshrun-dev" and its mesh device (at most
  // 15 bytes; the hosts' fault test finds a rank's devices by it).
  const std::string name = "meshrun-dev" + std::to_string(first + index);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
#endif
  if (options.pin_devices) pin_if_oversubscribed(index, local);
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
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<std::uint32_t>(local))
      futex_wake_all(done);
    // options never change after construction, and the mesh outlives this thread (it joins it).
    if (!options.keep_threads) return;  // the next run starts a new thread
  }
}

// Local device j: mesh device first + j.
void Mesh::Impl::run_job(int j, const std::stop_token& stop) {
  const auto at = static_cast<std::size_t>(j);
  const int index = first + j;
  DeviceProfile* profile = trace && trace->profile ? &trace->profile->devices[at] : nullptr;
  // Made inside the try: building it allocates (its memberships), and an exception escaping a
  // device thread would end the process (std::terminate) instead of failing the device.
  std::optional<Device> device;
  auto at_where = [&] {
    const std::string where = device ? device->where() : "before its first collective";
    return groups->device_name(index) + " failed " + (where.starts_with("before") ? "" : "at ") +
           where + ": ";
  };
  auto failed = [&](const std::string& what) {
    return std::make_exception_ptr(DeviceError(index, at_where() + what));
  };
  try {
    device.emplace(
        index, shape, groups->memberships(j),
        [this, &stop](int d, CollectiveOp op, std::uint64_t count, const std::string& group,
                      std::uint64_t seq) { inject(d, op, count, group, seq, stop); },
        trace ? &trace->collectives[at] : nullptr, profile, &in_collective[at]);
    if (profile) profile->body_start = ProfileClock::now();
    (*body.load(std::memory_order_acquire))(*device);
    device->depart();  // a peer still waiting for it in a collective fails now, not at its deadline
  } catch (const std::bad_alloc&) {  // kept as it is: the run reports "out of memory" (exit 4)
    record(j, std::current_exception());
  } catch (const AbortedError&) {
    record(j, std::current_exception(), /*consequence=*/true);
  } catch (const TimeoutError&) {
    std::vector<std::uint64_t>& waits = waits_at_timeout[at];
    for (int d = 0; d < local; ++d)
      waits.push_back(in_collective[static_cast<std::size_t>(d)].load(std::memory_order_relaxed));
    record(j, std::current_exception());
  } catch (const CollectiveError&) {
    record(j, std::current_exception());
  } catch (const InternalError&) {
    record(j, std::current_exception());
  } catch (const UnimplementedError& e) {  // still one: this engine cannot run the program
    record(j, std::make_exception_ptr(UnimplementedError(at_where() + e.what())));
  } catch (const std::exception& e) {
    record(j, failed(e.what()));
  } catch (...) {
    record(j, failed("unknown exception"));
  }
  entered[at] = device ? device->collectives_entered() : 0;
  // However the body ended: the timeline of a failed run is the one most looked at.
  if (profile) profile->body_end = ProfileClock::now();
}

// Local device j failed: its error is kept, and every device of the mesh released -- with the
// error's message as the reason other processes report. A consequence (AbortedError) releases
// nothing and names no reason: whatever aborted its group aborts the mesh with the cause itself
// -- the provider's abort, or a device that timed out, which aborts its own group before it
// records its TimeoutError. Were the consequence to abort the mesh in that window, under MPI its
// "aborted because another device failed" would be the reason every rank reports (CI, mpi_cli_r2:
// a stall on a 2-D mesh reported as that instead of the timeout).
void Mesh::Impl::record(int j, std::exception_ptr error, bool consequence) {
  std::string reason;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown exception";
  }
  errors[static_cast<std::size_t>(j)] = std::move(error);
  first_cause.note(j, consequence);
  if (consequence)
    aborted.store(true, std::memory_order_release);
  else
    abort_all(reason);  // release every device waiting in a collective, in every group
  failures.fetch_add(1, std::memory_order_release);
  futex_wake_all(failures);  // and end an injected stall
}

std::vector<Injection> Mesh::unfired_injections() const {
  std::vector<Injection> out;
  for (std::size_t i = 0; i < impl_->options.injections.size(); ++i) {
    if (!impl_->fired[i]) out.push_back(impl_->options.injections[i]);
  }
  return out;
}

std::uint64_t Mesh::collectives_entered(int device) const {
  return impl_->entered.at(static_cast<std::size_t>(device - impl_->first));
}

std::vector<bool> Mesh::injections_fired() const {
  return {impl_->fired.begin(), impl_->fired.end()};
}

std::string Mesh::stall_note(int local) const {
  const std::string& at = impl_->stalled_at.at(static_cast<std::size_t>(local));
  return at.empty() ? at : impl_->groups->device_name(impl_->first + local) + " at " + at;
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
  impl_->groups = impl_->options.groups;
  if (!impl_->groups) impl_->groups = std::make_shared<InProcessGroups>(impl_->shape);
  impl_->first = impl_->groups->first_device();
  impl_->local = impl_->groups->local_devices();
  MESHRUN_CHECK(impl_->first >= 0 && impl_->local >= 1 && impl_->first + impl_->local <= size,
                "Mesh: the group provider hosts devices outside the mesh");
  for (const Injection& inj : impl_->options.injections) {
    if (inj.device >= size) {
      throw InputError("--inject", "device " + std::to_string(inj.device) +
                                       " does not exist on a mesh of " + std::to_string(size) +
                                       " devices");
    }
  }
  impl_->fired.assign(impl_->options.injections.size(), 0);
  const auto local = static_cast<std::size_t>(impl_->local);
  impl_->entered.assign(local, 0);
  impl_->in_collective = std::make_unique<std::atomic<std::uint64_t>[]>(local);
  impl_->threads.reserve(local);
  // The device threads start with the first run, after its job is posted: they find it at once
  // instead of going to sleep and being woken for it (start-up of a one-run process, issue 9).
}

// Starts the device threads run() still lacks (all of them on the first run, and on every run
// without keep_threads, after joining the previous run's, which have ended or are ending). They
// find the job just posted. A thread that cannot be created fails its device, as if its body had
// thrown: the others are released by the abort, and the device counts as done.
void Mesh::Impl::start_missing_threads() {
  if (!options.keep_threads) threads.clear();  // joins
  for (int i = static_cast<int>(threads.size()); i < local; ++i) {
    try {
      threads.emplace_back([this, i](const std::stop_token& st) { device_loop(i, st); });
    } catch (const std::exception& e) {  // system_error (no thread), bad_alloc (its state)
      for (int d = i; d < local; ++d) {
        std::exception_ptr why;
        try {
          why = std::make_exception_ptr(
              InternalError("internal error: cannot start the thread of " +
                            groups->device_name(first + d) + ": " + e.what()));
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
    if (m.running) m.abort_all("the mesh was destroyed");  // release every device waiting
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
int Mesh::first_device() const { return impl_->first; }
int Mesh::local_devices() const { return impl_->local; }
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
    // Cleared before begin_run: a provider already aborted from elsewhere (another rank failed
    // before this one started) calls aborted_elsewhere from inside begin_run, and that must stay.
    m.aborted.store(false, std::memory_order_relaxed);
    m.groups->begin_run(go, [&m] { m.aborted_elsewhere(); });  // fresh groups per run
    const auto local = static_cast<std::size_t>(m.local);
    // A later shard_map call of the same program run adds to the first's collectives.
    if (trace && (trace->calls == 0 || trace->collectives.size() != local))
      trace->collectives.assign(local, {});
    if (trace && trace->profile) trace->profile->devices.assign(local, {});
    m.errors.assign(local, nullptr);
    m.stalled_at.assign(local, "");
    m.waits_at_timeout.assign(local, {});
    for (std::size_t d = 0; d < local; ++d) m.in_collective[d].store(0, std::memory_order_relaxed);
    m.entered.assign(local, 0);
    m.fired.assign(m.options.injections.size(), 0);
    m.running = true;  // last: nothing below throws until the devices are done
  }
  m.trace = trace;
  m.first_cause.reset();
  m.done.store(0, std::memory_order_relaxed);
  m.body.store(&body, std::memory_order_relaxed);
  m.job.fetch_add(1, std::memory_order_release);  // publishes everything above to the devices
  const bool parked = m.options.keep_threads && !m.threads.empty();  // some wait on `job`
  if (!m.options.keep_threads || static_cast<int>(m.threads.size()) < m.local)
    m.start_missing_threads();
  if (parked) futex_wake_all(m.job);
  // Bounded as long as every body returns: each collective wait ends by its deadline or the
  // abort, an injected stall by the abort or its own limit.
  for (;;) {
    const std::uint32_t d = m.done.load(std::memory_order_acquire);
    if (d == static_cast<std::uint32_t>(m.local)) break;
    futex_wait_for(m.done, d, kIdleSlice);
  }
  m.groups->end_run();
  m.body.store(nullptr, std::memory_order_relaxed);
  m.trace = nullptr;
  const int first = m.first_cause.first();
  std::exception_ptr error;
  if (first >= 0) {
    try {  // nothing may throw past here before `running` is cleared: ~Mesh waits for it
      error = m.explain(first);
    } catch (...) {
      error = m.errors[static_cast<std::size_t>(first)];
    }
  }
  const bool cancelled =
      m.stopping.load(std::memory_order_acquire) && !m.first_cause.any_cause() && error;
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
