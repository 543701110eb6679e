// Mesh: named axes with sizes ({data: 2, model: 4}), devices numbered row-major over them as
// jax.make_mesh numbers them, each a std::jthread: parked between runs for the mesh's lifetime, or
// (MeshOptions::keep_threads = false) started by each run and ended with it.
// Mesh::run hands every device the same body, waits for all of them and rethrows the first
// error; a device that throws aborts every collective group of the mesh (each wait observes its
// group's abort flag), so the others are released instead of hanging, whichever group they wait in.
// Collectives run in groups: for every ordered tuple of distinct axes (("model"), ("data"),
// ("data", "model"), ("model", "data")) one group per coordinate of the other axes -- XLA's
// replica groups, {{0,1,2,3},{4,5,6,7}} for 'model' on data=2, model=4. A GroupProvider
// (group_provider.hpp) makes them: in-process by default, or across the ranks of an MPI job,
// where each rank's Mesh runs only the devices that rank hosts, with this same code. Destroying
// the mesh (even mid-run, from another thread) cancels any run in progress, waits for it, then
// requests stop and joins the threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mesh/device.hpp"
#include "mesh/injection.hpp"
#include "shard/topology.hpp"

namespace meshrun {

class GroupProvider;

struct MeshOptions {
  // Bound on every collective wait; a device that has not arrived by then is reported.
  std::chrono::milliseconds timeout{10'000};
  // Deliberate failures (--inject), for watching and testing the failure paths.
  std::vector<Injection> injections;
  // When the mesh has more devices than the CPUs this process may run on (8 devices, 2 cores),
  // pin device d to allowed CPU d mod ncpus, so every core holds an equal share of the devices.
  // Left to itself the scheduler may put 5 on one core and 3 on the other, and every collective
  // then waits for the busier core: measured here, a 4-byte psum took 5.3-9.2 us unpinned and
  // 4.6-4.8 us pinned, 64 KiB 17-23 us against 16.5-17 us. Linux only; a no-op elsewhere.
  bool pin_devices = true;
  // Device threads park between runs and live as long as the mesh (a mesh that runs many times:
  // tests, benchmarks). false: each run starts its device threads and every thread ends as soon
  // as its body has returned -- for a process that runs once and exits, which would otherwise
  // park 8 threads only to wake them again to exit (on 2 cores, ~0.2 ms of a 2 ms process; issue
  // 9). The ended threads are joined by the next run or by ~Mesh.
  bool keep_threads = true;
  // Where the groups come from, and which devices this process hosts; null: InProcessGroups,
  // every device here.
  std::shared_ptr<GroupProvider> groups;
};

// The groups of each tuple of axes: shard/topology.hpp.

class Mesh {
 public:
  // Throws InputError for a malformed shape (check_mesh) or an injection naming no device.
  explicit Mesh(MeshShape shape, MeshOptions options = {});
  // A one-axis mesh {axis: size}.
  Mesh(int size, std::string axis, MeshOptions options = {});
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  int size() const;  // devices in all
  // The devices this process runs: first_device() .. first_device() + local_devices() - 1 (every
  // device, unless the groups span processes).
  int first_device() const;
  int local_devices() const;
  const MeshShape& shape() const;
  // The first axis' name (on a one-axis mesh, its axis).
  const std::string& axis() const;

  // Runs body(device) once on every device thread and waits for all of them. Throws DeviceError
  // (a body threw) or CollectiveError (mismatch, timeout) -- the lowest-numbered device's cause
  // (collectives/first_cause.hpp); the errors it caused in the other devices (AbortedError) are
  // dropped. After a failure the mesh is usable again for the next run. One run at a time: a nested
  // run (from a body) or a concurrent one throws InternalError instead of deadlocking. The wait is
  // bounded as long as every body returns: collective waits end at the timeout or the abort,
  // injected stalls at the abort. Destroying the mesh from another thread during a run cancels it:
  // run() throws AbortedError and the destructor returns once run() has returned and the threads
  // are joined. With `trace`, each device records the collectives it enters into
  // trace->collectives[j] and, with trace->profile, its spans into trace->profile->devices[j] (j =
  // index - first_device()).
  void run(const std::function<void(Device&)>& body, Trace* trace = nullptr);

  // After a run: the injections that never fired (their device made fewer collectives), so a
  // caller can report an --inject that tested nothing; and how many collectives a device entered.
  std::vector<Injection> unfired_injections() const;
  std::uint64_t collectives_entered(int device) const;
  // Per injection, whether it fired here; and per local device j, where an injected stall held it
  // ("" if none did): "device 5 (rank 2) at psum #1 on 'data' (--inject stall:5@1)".
  std::vector<bool> injections_fired() const;
  std::string stall_note(int local) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meshrun
