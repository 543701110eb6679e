// Which devices of a mesh form the group of each tuple of axes, and in what order their values
// fold: the topology both engines build their groups from (the in-process mesh, mesh/, and the
// MPI backend), so that both fold in the same order.
#pragma once

#include <string>
#include <vector>

#include "shard/mesh_shape.hpp"

namespace meshrun {

// Every ordered tuple of distinct axes of `mesh`, the full tuple in mesh order first (Device
// expects it there), then the rest in a fixed order: the groups a device belongs to.
std::vector<std::vector<std::string>> mesh_axis_tuples(const MeshShape& mesh);

// The groups over one tuple of axes: members[g] holds, by rank in the group (row-major over the
// tuple), the devices whose coordinates on the other axes, row-major in mesh order, number g;
// group_of[device] and rank_of[device] place each device.
struct AxisGroups {
  std::vector<std::string> axes;
  std::string label;  // "model", "(data,model)"
  std::vector<std::vector<int>> members;
  std::vector<int> group_of, rank_of;
};
AxisGroups mesh_axis_groups(const MeshShape& mesh, std::vector<std::string> tuple);

}  // namespace meshrun
