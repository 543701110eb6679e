// MeshShape: the named axes of a mesh in order with their sizes, as jax.make_mesh((2, 4),
// ('data', 'model')) takes them. Devices are numbered row-major over the axes (the last axis
// varies fastest), as JAX numbers them: on data=2, model=4, device 5 is data 1, model 1.
// The same pair list as the case file's optional "mesh" key (io::Case::mesh).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace meshrun {

using MeshShape = std::vector<std::pair<std::string, int>>;

// Up to this many axes (enough for data x model x pipeline); the mesh makes a group for every
// ordered tuple of distinct axes, which grows quickly with the count.
inline constexpr int kMaxMeshAxes = 4;

// The number of devices: the product of the sizes.
int mesh_devices(const MeshShape& mesh);
// The position of `axis` in the mesh, or -1.
int mesh_axis_position(const MeshShape& mesh, const std::string& axis);
// Device `device`'s coordinate along each axis, in mesh order.
std::vector<int> mesh_coords(const MeshShape& mesh, int device);
// "Mesh('data': 2, 'model': 4)", as JAX prints a Mesh.
std::string mesh_str(const MeshShape& mesh);
// "('data', 'model')": the axis names, as JAX's mesh.axis_names.
std::string mesh_axis_names(const MeshShape& mesh);

// Throws InputError naming `field` unless every axis has a non-empty, distinct name and a size
// >= 1, there are at most kMaxMeshAxes of them and at most `max_devices` devices in all.
void check_mesh(const std::string& field, const MeshShape& mesh, int max_devices = 1024);
// Parses --mesh's "data=2,model=4"; errors name `field`.
MeshShape parse_mesh(const std::string& text, const std::string& field);

}  // namespace meshrun
