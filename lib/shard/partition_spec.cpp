#include "shard/partition_spec.hpp"

#include <algorithm>

#include "support/errors.hpp"

namespace meshrun {

PartitionSpec::PartitionSpec(std::initializer_list<Entry> dims) {
  for (const Entry& e : dims) dims_.push_back(e.axes);
}

int PartitionSpec::split_dim(const std::string& axis) const {
  for (std::size_t i = 0; i < dims_.size(); ++i)
    if (std::find(dims_[i].begin(), dims_[i].end(), axis) != dims_[i].end())
      return static_cast<int>(i);
  return -1;
}

bool PartitionSpec::replicated() const {
  return std::all_of(dims_.begin(), dims_.end(), [](const auto& d) { return d.empty(); });
}

namespace {
// "None", "'data'", "('data', 'model')"
std::string entry_str(const std::vector<std::string>& axes) {
  if (axes.empty()) return "None";
  if (axes.size() == 1) return "'" + axes[0] + "'";
  std::string s = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", '" : "'") + axes[i] + "'";
  return s + ")";
}
}  // namespace

std::string PartitionSpec::str() const {
  std::string s = "P(";
  for (std::size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + entry_str(dims_[i]);
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

void check_spec_axes(const std::string& field, const PartitionSpec& spec, const MeshShape& mesh) {
  std::vector<std::string> seen;
  for (const auto& axes : spec.dims()) {
    for (const std::string& a : axes) {
      if (mesh_axis_position(mesh, a) < 0) {
        throw InputError(field, spec.str() + " refers to mesh axis '" + a +
                                    "', which is not in the mesh's axis names " +
                                    mesh_axis_names(mesh));
      }
      if (std::find(seen.begin(), seen.end(), a) != seen.end()) {
        throw InputError(field, spec.str() + " names mesh axis '" + a + "' more than once");
      }
      seen.push_back(a);
    }
  }
}

int shard_count(const PartitionSpec& spec, std::size_t dim, const MeshShape& mesh) {
  int count = 1;
  if (dim >= spec.dims().size()) return count;
  for (const std::string& a : spec.dims()[dim]) {
    const int pos = mesh_axis_position(mesh, a);
    if (pos >= 0) count *= mesh[static_cast<std::size_t>(pos)].second;
  }
  return count;
}

int shard_index(const PartitionSpec& spec, std::size_t dim, const MeshShape& mesh, int device) {
  int index = 0;
  if (dim >= spec.dims().size()) return index;
  const std::vector<int> coords = mesh_coords(mesh, device);
  for (const std::string& a : spec.dims()[dim]) {  // row-major over the tuple, as JAX
    const int pos = mesh_axis_position(mesh, a);
    if (pos < 0) continue;
    const auto p = static_cast<std::size_t>(pos);
    index = index * mesh[p].second + coords[p];
  }
  return index;
}

void check_divisible(const std::string& field, const Shape& shape, const PartitionSpec& spec,
                     const MeshShape& mesh) {
  for (std::size_t dim = 0; dim < shape.size() && dim < spec.dims().size(); ++dim) {
    const auto count = static_cast<std::size_t>(shard_count(spec, dim, mesh));
    const std::size_t size = shape[dim];
    if (size % count == 0) continue;
    if (mesh.size() == 1) {
      throw InputError(field, std::to_string(size) + " " + dim_word(shape.size(), dim, size) +
                                  (size == 1 ? " is" : " are") + " not divisible by " +
                                  std::to_string(count) + (count == 1 ? " device" : " devices"));
    }
    const auto& axes = spec.dims()[dim];
    const std::string target = (axes.size() == 1 ? "mesh axis " : "mesh axes ") + entry_str(axes) +
                               (axes.size() == 1 ? " (of size " : " (of total size ") +
                               std::to_string(count) + ")";
    throw InputError(field, shape_str(shape) + " with " + spec.str() + " maps array axis " +
                                std::to_string(dim) + " (of size " + std::to_string(size) +
                                ") to " + target + ", but " + std::to_string(size) +
                                " is not evenly divisible by " + std::to_string(count));
  }
}

Shape block_shape(const Shape& global, const PartitionSpec& spec, const MeshShape& mesh) {
  Shape s = global;
  for (std::size_t dim = 0; dim < s.size(); ++dim) {
    const auto count = static_cast<std::size_t>(shard_count(spec, dim, mesh));
    MESHRUN_CHECK(s[dim] % count == 0, "split dim not divisible");
    s[dim] /= count;
  }
  return s;
}

namespace {
// A rank <= 2 array viewed as (rows, cols): a vector is one row, a scalar one element.
struct Box {
  std::size_t rows, cols, row0, col0;
};
Box box_of(const Shape& block, const PartitionSpec& spec, const MeshShape& mesh, int device) {
  const std::size_t rows = block.size() == 2 ? block[0] : 1;
  const std::size_t cols = block.empty() ? 1 : block.back();
  const std::size_t row_index =
      block.size() == 2 ? static_cast<std::size_t>(shard_index(spec, 0, mesh, device)) : 0;
  const std::size_t col_index =
      block.empty() ? 0
                    : static_cast<std::size_t>(shard_index(spec, block.size() - 1, mesh, device));
  return {rows, cols, row_index * rows, col_index * cols};
}
}  // namespace

Tensor block_of(const TensorRef& global, const PartitionSpec& spec, const MeshShape& mesh,
                int device) {
  Shape shape = block_shape(global.shape, spec, mesh);
  const Box b = box_of(shape, spec, mesh, device);
  const std::size_t stride = global.shape.empty() ? 1 : global.shape.back();
  std::vector<float> data;  // filled row by row: each element written once, none zeroed first
  data.reserve(b.rows * b.cols);
  for (std::size_t i = 0; i < b.rows; ++i) {
    const float* src = global.data + (b.row0 + i) * stride + b.col0;
    data.insert(data.end(), src, src + b.cols);
  }
  return Tensor(std::move(shape), std::move(data));
}

Tensor block_of(const Tensor& global, const PartitionSpec& spec, const MeshShape& mesh,
                int device) {
  if (block_shape(global.shape, spec, mesh) == global.shape) return global;
  return block_of(TensorRef(global), spec, mesh, device);
}

Tensor assemble(const std::vector<Tensor>& blocks, const PartitionSpec& spec,
                const MeshShape& mesh) {
  MESHRUN_CHECK(!blocks.empty() && blocks.size() == static_cast<std::size_t>(mesh_devices(mesh)),
                "assemble needs one block per device");
  Shape shape = blocks[0].shape;
  for (std::size_t dim = 0; dim < shape.size(); ++dim)
    shape[dim] *= static_cast<std::size_t>(shard_count(spec, dim, mesh));
  if (shape == blocks[0].shape) return blocks[0];
  Tensor global(shape);
  const std::size_t stride = shape.empty() ? 1 : shape.back();
  // Backwards, so where devices hold the same block the lowest-numbered one is written last.
  for (std::size_t d = blocks.size(); d-- > 0;) {
    MESHRUN_CHECK(blocks[d].shape == blocks[0].shape, "blocks differ in shape");
    const Box b = box_of(blocks[d].shape, spec, mesh, static_cast<int>(d));
    for (std::size_t i = 0; i < b.rows; ++i) {
      const float* src = &blocks[d].data[i * b.cols];
      std::copy(src, src + b.cols, &global.data[(b.row0 + i) * stride + b.col0]);
    }
  }
  return global;
}

void check_divisible(const std::string& field, const Shape& shape, const PartitionSpec& spec,
                     const std::string& axis, int devices) {
  check_divisible(field, shape, spec, MeshShape{{axis, devices}});
}

Tensor block_of(const Tensor& global, const PartitionSpec& spec, const std::string& axis, int index,
                int count) {
  return block_of(global, spec, MeshShape{{axis, count}}, index);
}

Shape block_shape(const Shape& global, const PartitionSpec& spec, const std::string& axis,
                  int count) {
  return block_shape(global, spec, MeshShape{{axis, count}});
}

Tensor assemble(const std::vector<Tensor>& blocks, const PartitionSpec& spec,
                const std::string& axis) {
  return assemble(blocks, spec, MeshShape{{axis, static_cast<int>(blocks.size())}});
}

}  // namespace meshrun
