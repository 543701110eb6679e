#include "shard/topology.hpp"

#include <algorithm>

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

}  // namespace meshrun
