#include "shard/mesh_shape.hpp"

#include <algorithm>
#include <cctype>

#include "support/errors.hpp"

namespace meshrun {

int mesh_devices(const MeshShape& mesh) {
  int n = 1;
  for (const auto& [name, size] : mesh) n *= size;
  return n;
}

int mesh_axis_position(const MeshShape& mesh, const std::string& axis) {
  for (std::size_t i = 0; i < mesh.size(); ++i)
    if (mesh[i].first == axis) return static_cast<int>(i);
  return -1;
}

std::vector<int> mesh_coords(const MeshShape& mesh, int device) {
  std::vector<int> coords(mesh.size());
  for (std::size_t i = mesh.size(); i-- > 0;) {  // row-major: the last axis varies fastest
    coords[i] = device % mesh[i].second;
    device /= mesh[i].second;
  }
  return coords;
}

std::string mesh_str(const MeshShape& mesh) {
  std::string s = "Mesh(";
  for (std::size_t i = 0; i < mesh.size(); ++i)
    s += (i ? ", '" : "'") + mesh[i].first + "': " + std::to_string(mesh[i].second);
  return s + ")";
}

std::string mesh_axis_names(const MeshShape& mesh) {
  std::string s = "(";
  for (std::size_t i = 0; i < mesh.size(); ++i) s += (i ? ", '" : "'") + mesh[i].first + "'";
  return s + (mesh.size() == 1 ? ",)" : ")");
}

void check_mesh(const std::string& field, const MeshShape& mesh, int max_devices) {
  if (mesh.empty()) throw InputError(field, "a mesh needs at least one axis");
  if (mesh.size() > static_cast<std::size_t>(kMaxMeshAxes)) {
    throw InputError(field, "at most " + std::to_string(kMaxMeshAxes) + " axes, got " +
                                std::to_string(mesh.size()));
  }
  long long devices = 1;
  for (std::size_t i = 0; i < mesh.size(); ++i) {
    const auto& [name, size] = mesh[i];
    if (name.empty()) throw InputError(field, "an axis name must not be empty");
    if (mesh_axis_position(mesh, name) != static_cast<int>(i)) {
      throw InputError(field, "axis '" + name + "' appears twice");
    }
    if (size < 1) {
      throw InputError(field,
                       "axis '" + name + "' must have size >= 1, got " + std::to_string(size));
    }
    devices *= size;
    if (devices > max_devices) {
      throw InputError(field, "at most " + std::to_string(max_devices) + " devices in all");
    }
  }
}

MeshShape parse_mesh(const std::string& text, const std::string& field) {
  MeshShape mesh;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const std::size_t eq = item.find('=');
    const std::string size = eq == std::string::npos ? "" : item.substr(eq + 1);
    const bool digits =
        !size.empty() && size.size() <= 4 &&
        std::all_of(size.begin(), size.end(), [](unsigned char c) { return std::isdigit(c); });
    if (eq == std::string::npos || eq == 0 || !digits) {
      throw InputError(
          field, "expected AXIS=SIZE[,AXIS=SIZE...] (e.g. data=2,model=4), got '" + text + "'");
    }
    mesh.emplace_back(item.substr(0, eq), std::stoi(size));
    pos = comma + 1;
  }
  check_mesh(field, mesh);
  return mesh;
}

}  // namespace meshrun
