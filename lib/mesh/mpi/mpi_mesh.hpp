// One rank's share of a mesh (any number of axes) spread over the ranks of MPI_COMM_WORLD: devices
// are numbered row-major over the axes as jax.make_mesh numbers them, and rank r hosts devices
// r*k .. r*k+k-1 (k = devices / R). For every ordered tuple of axes it builds the groups the
// rank's devices belong to, exactly the in-process mesh's groups (mesh_axis_groups), so every
// reduction folds the same members in the same order and the bits are the single-process ones:
//   - a group whose members all live on this rank: an InProcessGroup (no MPI at all);
//   - a group spanning several ranks: an MpiGroup over a communicator of just those ranks,
//     MPI_Comm_split(MPI_COMM_WORLD, color = group id, key = world rank) -- every rank takes part
//     in every split, with MPI_UNDEFINED for groups it hosts no member of. The member ranks in the
//     group's communicator are their world ranks' order, and within a rank members keep their
//     order in the group: the fold over the group is the same left fold.
// Every group shares one MpiAbortChannel over MPI_COMM_WORLD: a failure in any group on any rank
// aborts every group on every rank (a device waiting in another group, on another rank, is
// released), as the in-process mesh aborts all its groups.
//
// MPI_Comm_split blocks. Every rank first passes the channel's non-blocking, bounded creation
// (MPI_Comm_idup over MPI_COMM_WORLD, which times out if a rank never comes), so the splits start
// only once every rank is there; they can then hang only if a rank dies during them, and mpirun
// ends the job when a rank dies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/in_process.hpp"
#include "mesh/group_provider.hpp"
#include "mesh/mesh.hpp"
#include "collectives/mpi/mpi_group.hpp"

namespace meshrun {

// A Mesh's GroupProvider under mpirun (group_provider.hpp): its groups are built once, by the
// constructor, so the Mesh that takes it runs once.
class MpiMesh final : public GroupProvider {
 public:
  // Collective over MPI_COMM_WORLD; the world's size must divide the mesh's devices.
  MpiMesh(const MeshShape& mesh, MpiOptions options);
  ~MpiMesh() override;
  MpiMesh(const MpiMesh&) = delete;
  MpiMesh& operator=(const MpiMesh&) = delete;

  int rank() const { return rank_; }
  int local_devices() const override { return k_; }
  int first_device() const override { return rank_ * k_; }
  // "device 5 (rank 2)": every rank reports the line of the rank that failed.
  std::string device_name(int device) const override;
  // The groups were built for one run: a second one is an InternalError. Listens on the abort
  // channel until end_run().
  void begin_run(const GroupOptions& options, std::function<void()> aborted_elsewhere) override;
  void end_run() override;
  // Local device j's groups, in Device's order (the full tuple in mesh order first).
  std::vector<GroupMembership> memberships(int local) override;

  void abort(const std::string& reason) override { channel_->abort(reason); }
  std::string abort_reason() const override { return channel_->reason(); }
  bool aborted() const { return channel_->aborted(); }
  std::string reason() const { return channel_->reason(); }

 private:
  struct Set {
    AxisGroups layout;
    // Per group id: the group if this rank hosts one of its members, else null (one of the two).
    std::vector<std::unique_ptr<InProcessGroup>> local;
    std::vector<std::unique_ptr<MpiGroup>> spread;
  };
  void build(const MeshShape& mesh, const MpiOptions& options);

  int rank_ = 0, ranks_ = 1, k_ = 1;
  bool ran_ = false;
  int listener_ = -1;  // the running Mesh's, between begin_run and end_run
  std::shared_ptr<MpiAbortChannel> channel_;
  std::vector<MPI_Comm> comms_;  // the split communicators, freed last
  std::vector<Set> sets_;
};

}  // namespace meshrun
