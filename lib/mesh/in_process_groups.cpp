#include "mesh/in_process_groups.hpp"

namespace meshrun {

InProcessGroups::InProcessGroups(MeshShape shape)
    : shape_(std::move(shape)), size_(mesh_devices(shape_)) {}

void InProcessGroups::begin_run(const GroupOptions& options, std::function<void()>) {
  sets_.clear();  // fresh groups per run
  for (auto& tuple : mesh_axis_tuples(shape_)) {
    Set& set = sets_.emplace_back(Set{mesh_axis_groups(shape_, std::move(tuple)), {}});
    for (auto& members : set.layout.members) {
      const int size = static_cast<int>(members.size());
      set.groups.push_back(
          std::make_unique<InProcessGroup>(size, set.layout.label, options, std::move(members)));
    }
  }
}

std::vector<GroupMembership> InProcessGroups::memberships(int local) {
  const auto d = static_cast<std::size_t>(local);
  std::vector<GroupMembership> out;
  out.reserve(sets_.size());
  for (Set& set : sets_) {
    InProcessGroup& group = *set.groups[static_cast<std::size_t>(set.layout.group_of[d])];
    out.push_back({set.layout.axes, set.layout.label, &group.member(set.layout.rank_of[d])});
  }
  return out;
}

void InProcessGroups::abort(const std::string&) {
  for (Set& set : sets_)
    for (auto& g : set.groups) g->abort();
}

}  // namespace meshrun
