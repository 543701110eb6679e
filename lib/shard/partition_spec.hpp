// PartitionSpec -- JAX's P(...): for each dimension of an array, the mesh axes it is split over:
// none (replicated along that dimension), one axis (P('data', None)) or a tuple of axes
// (P(('data', 'model'),): the dimension is cut into data_size * model_size blocks, numbered
// row-major over the tuple). P() is fully replicated. An array is replicated over every mesh axis
// its spec does not name.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shard/mesh_shape.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

inline constexpr std::nullopt_t None = std::nullopt;

class PartitionSpec {
 public:
  // One dimension's entry: None, an axis name, or a tuple of axis names {"data", "model"}.
  struct Entry {
    std::vector<std::string> axes;  // empty: None
    Entry(std::nullopt_t) {}
    Entry(const char* axis) : axes{axis} {}
    Entry(std::string axis) : axes{std::move(axis)} {}
    Entry(std::initializer_list<std::string> tuple) : axes(tuple) {}
  };

  PartitionSpec() = default;
  PartitionSpec(std::initializer_list<Entry> dims);
  // From each dimension's axes (empty: None), as a program file spells a spec.
  explicit PartitionSpec(std::vector<std::vector<std::string>> dims) : dims_(std::move(dims)) {}

  // [dim]: the axes that dimension is split over (empty: not split).
  const std::vector<std::vector<std::string>>& dims() const { return dims_; }
  // The dimension split over `axis` (alone or in a tuple), or -1 when the array is replicated over
  // it.
  int split_dim(const std::string& axis) const;
  bool replicated() const;
  // "P('data',)", "P(None, 'model')", "P(('data', 'model'),)", "P()"
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> dims_;
};

using P = PartitionSpec;

// Throws InputError naming `field` unless every axis `spec` names is one of the mesh's, at most
// once: "P(None, 'model') refers to mesh axis 'model', which is not in the mesh's axis names
// ('data',)".
void check_spec_axes(const std::string& field, const PartitionSpec& spec, const MeshShape& mesh);
// Throws InputError naming `field` unless every dimension `spec` splits is divisible by the
// product of its axes' sizes. On a one-axis mesh: "input.x: 12 rows are not divisible by 8
// devices"; otherwise in the manner of JAX's _spec_divisibility_error: "input.x: f32[6,2] with
// P('data', None) maps array axis 0 (of size 6) to mesh axis 'data' (of size 4), but 6 is not
// evenly divisible by 4".
void check_divisible(const std::string& field, const Shape& shape, const PartitionSpec& spec,
                     const MeshShape& mesh);

// How many blocks dimension `dim` is cut into on `mesh` (1 when not split; axes the mesh does not
// have count as size 1), and device `device`'s block index along it.
int shard_count(const PartitionSpec& spec, std::size_t dim, const MeshShape& mesh);
int shard_index(const PartitionSpec& spec, std::size_t dim, const MeshShape& mesh, int device);

// The block of `global` that device `device` of `mesh` holds under `spec`: a copy, so the device
// owns it and cannot see past it. Every split dimension must be divisible (check_divisible).
Tensor block_of(const Tensor& global, const PartitionSpec& spec, const MeshShape& mesh, int device);
// The same from an array held elsewhere (a mapped .npy input): always a copy.
Tensor block_of(const TensorRef& global, const PartitionSpec& spec, const MeshShape& mesh,
                int device);
Shape block_shape(const Shape& global, const PartitionSpec& spec, const MeshShape& mesh);
// The global array from the blocks of every device of `mesh` (blocks[device]). Devices that hold
// the same block (replicated over an axis) must agree; the lowest-numbered one is taken.
Tensor assemble(const std::vector<Tensor>& blocks, const PartitionSpec& spec,
                const MeshShape& mesh);

// The same on a one-axis mesh {axis: count}.
void check_divisible(const std::string& field, const Shape& shape, const PartitionSpec& spec,
                     const std::string& axis, int devices);
Tensor block_of(const Tensor& global, const PartitionSpec& spec, const std::string& axis, int index,
                int count);
Shape block_shape(const Shape& global, const PartitionSpec& spec, const std::string& axis,
                  int count);
Tensor assemble(const std::vector<Tensor>& blocks, const PartitionSpec& spec,
                const std::string& axis);

}  // namespace meshrun
