// Where a Mesh's devices find their collective groups. The Mesh runs the devices -- threads, error
// capture, first cause, abort, --inject, timeouts and their diagnosis -- the same way whatever the
// groups are; a provider only says which devices this process hosts and hands each its
// memberships, one per ordered tuple of axes (shard/topology.hpp places them):
//   - InProcessGroups (in_process_groups.hpp): every device of the mesh in this process, its
//     groups InProcessGroups (collectives/in_process.hpp). The default.
//   - MpiGroups (lib/mpi_mesh): under mpirun, rank r hosts devices r*k .. r*k+k-1; a group
//     inside one rank is an InProcessGroup, one across ranks a communicator over MPI.
// Aborting is the provider's too: abort() releases every device of the mesh waiting in any
// group, in this process and (MPI) every other; a provider aborted from elsewhere calls the
// callback begin_run() was given, so the Mesh ends its injected stalls.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collectives/in_process.hpp"
#include "mesh/device.hpp"

namespace meshrun {

class GroupProvider {
 public:
  virtual ~GroupProvider() = default;

  // This process hosts devices first_device() .. first_device() + local_devices() - 1.
  virtual int first_device() const = 0;
  virtual int local_devices() const = 0;
  // How failure messages name a device: "device 3", or "device 3 (rank 1)" under MPI.
  virtual std::string device_name(int device) const { return "device " + std::to_string(device); }

  // Before each run, on the thread calling Mesh::run: the groups for it (an aborted group refuses
  // every further collective, so a provider that can run again makes new ones; one that cannot
  // throws InternalError). `aborted_elsewhere` is called, from any thread, when the groups are
  // aborted by another process.
  virtual void begin_run(const GroupOptions& options, std::function<void()> aborted_elsewhere) = 0;
  // After every device of the run is done: `aborted_elsewhere` is not called once this returns.
  virtual void end_run() {}
  // Local device `local`'s memberships, in Device's order: one per tuple of mesh_axis_tuples.
  virtual std::vector<GroupMembership> memberships(int local) = 0;
  // Aborts every group of the run, everywhere; `reason` (the first cause's message) is what other
  // processes report. Thread-safe; the first reason wins.
  virtual void abort(const std::string& reason) = 0;
  // The first abort's reason as the whole mesh saw it ("" where only this process can fail: the
  // Mesh reports its own first cause then).
  virtual std::string abort_reason() const { return {}; }
};

}  // namespace meshrun
