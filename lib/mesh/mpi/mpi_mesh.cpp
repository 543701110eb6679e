#include "mesh/mpi/mpi_mesh.hpp"

#include <algorithm>

#include "support/errors.hpp"

namespace meshrun {

MpiMesh::MpiMesh(const MeshShape& mesh, MpiOptions options) {
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  const int n = mesh_devices(mesh);
  MESHRUN_CHECK(n % ranks_ == 0, "MpiMesh: the ranks do not divide the devices");
  k_ = n / ranks_;
  channel_ = std::make_shared<MpiAbortChannel>(MPI_COMM_WORLD, options.timeout,
                                               "creating the mesh '" + mesh[0].first + "'");
  try {
    build(mesh, options);
  } catch (...) {
    channel_->stop();  // no listener may run while the groups built so far go
    throw;
  }
}

void MpiMesh::build(const MeshShape& mesh, const MpiOptions& options) {
  const GroupOptions local_options{.timeout = options.timeout};
  for (std::vector<std::string>& tuple : mesh_axis_tuples(mesh)) {
    Set set{mesh_axis_groups(mesh, std::move(tuple)), {}, {}};
    const std::size_t groups = set.layout.members.size();
    set.local.resize(groups);
    set.spread.resize(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      const std::vector<int>& members = set.layout.members[g];
      std::vector<int> hosts;  // the ranks hosting a member, ascending
      hosts.reserve(members.size());
      for (int d : members) hosts.push_back(d / k_);
      std::sort(hosts.begin(), hosts.end());
      hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
      const bool mine = std::binary_search(hosts.begin(), hosts.end(), rank_);
      if (hosts.size() == 1) {  // on one rank: every rank knows it, none takes part in a split
        if (mine)
          set.local[g] = std::make_unique<InProcessGroup>(static_cast<int>(members.size()),
                                                          set.layout.label, local_options, members);
        continue;
      }
      MPI_Comm comm = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, mine ? static_cast<int>(g) : MPI_UNDEFINED, rank_, &comm);
      if (!mine) continue;
      comms_.push_back(comm);
      MpiMembers layout;
      for (int d : members) {
        layout.device.push_back(d);
        layout.owner.push_back(
            static_cast<int>(std::lower_bound(hosts.begin(), hosts.end(), d / k_) - hosts.begin()));
      }
      set.spread[g] =
          std::make_unique<MpiGroup>(comm, std::move(layout), set.layout.label, options, channel_);
    }
    // The in-process groups of this rank are released by the channel too.
    for (auto& group : set.local)
      if (group) channel_->listen([p = group.get()] { p->abort(); });
    sets_.push_back(std::move(set));
  }
}

MpiMesh::~MpiMesh() {
  end_run();
  channel_->stop();  // no listener runs from here on: the groups can go
  sets_.clear();
  for (MPI_Comm& c : comms_) MPI_Comm_free(&c);
}

std::string MpiMesh::device_name(int device) const { return rank_device_name(device, device / k_); }

void MpiMesh::begin_run(const GroupOptions&, std::function<void()> aborted_elsewhere) {
  if (ran_) throw InternalError("internal error: an MPI mesh's groups serve one run");
  ran_ = true;
  listener_ = channel_->listen(std::move(aborted_elsewhere));
}

void MpiMesh::end_run() {
  if (listener_ >= 0) channel_->forget(listener_);
  listener_ = -1;
}

std::vector<GroupMembership> MpiMesh::memberships(int local) {
  const int d = first_device() + local;
  std::vector<GroupMembership> out;
  for (const Set& set : sets_) {
    const auto g = static_cast<std::size_t>(set.layout.group_of[static_cast<std::size_t>(d)]);
    const int r = set.layout.rank_of[static_cast<std::size_t>(d)];
    Communicator* comm = nullptr;
    if (set.local[g]) {
      comm = &set.local[g]->member(r);
    } else {
      MpiGroup& group = *set.spread[g];
      for (int j = 0; j < group.local_devices(); ++j)
        if (group.member_rank(j) == r) comm = &group.member(j);
    }
    MESHRUN_CHECK(comm != nullptr, "MpiMesh: a device outside its own group");
    out.push_back({set.layout.axes, set.layout.label, comm});
  }
  return out;
}

}  // namespace meshrun
