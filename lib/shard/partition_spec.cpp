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
// Device `device`'s block of an array of `global` shape, whose block shape is `block`: for each
// contiguous run of it, in row-major order, f(offset in the global array, offset in the block,
// length). A run is the block's extent along the innermost dimension it does not take whole,
// times the dimensions after it (which it does): rows of a matrix split by columns, whole rows
// of one split by rows, the block itself when only dimension 0 is split.
template <class F>
void for_each_run(const Shape& global, const Shape& block, const PartitionSpec& spec,
                  const MeshShape& mesh, int device, F f) {
  const std::size_t rank = global.size();
  if (rank == 0) return f(std::size_t{0}, std::size_t{0}, std::size_t{1});
  if (shape_size(block) == 0) return;
  std::size_t k = rank - 1;  // the outermost dimension of a run
  while (k > 0 && block[k] == global[k]) --k;
  std::vector<std::size_t> stride(rank, 1);  // the global array's, in elements
  for (std::size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * global[d + 1];
  std::vector<std::size_t> origin(rank);
  for (std::size_t d = 0; d < rank; ++d)
    origin[d] = block[d] * static_cast<std::size_t>(shard_index(spec, d, mesh, device));
  const std::size_t run = block[k] * stride[k];
  std::size_t runs = 1;
  for (std::size_t d = 0; d < k; ++d) runs *= block[d];
  std::vector<std::size_t> at(k, 0);  // the run's index in dimensions 0..k-1 of the block
  for (std::size_t r = 0; r < runs; ++r) {
    std::size_t from = origin[k] * stride[k];
    for (std::size_t d = 0; d < k; ++d) from += (origin[d] + at[d]) * stride[d];
    f(from, r * run, run);
    for (std::size_t d = k; d-- > 0;) {  // the next run: an odometer over dimensions 0..k-1
      if (++at[d] < block[d]) break;
      at[d] = 0;
    }
  }
}
}  // namespace

Tensor block_of(const TensorRef& global, const PartitionSpec& spec, const MeshShape& mesh,
                int device) {
  Shape shape = block_shape(global.shape, spec, mesh);
  std::vector<float> data;  // filled run by run: each element written once, none zeroed first
  data.reserve(shape_size(shape));
  for_each_run(global.shape, shape, spec, mesh, device,
               [&](std::size_t from, std::size_t, std::size_t n) {
                 data.insert(data.end(), global.data + from, global.data + from + n);
               });
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
  // Backwards, so where devices hold the same block the lowest-numbered one is written last.
  for (std::size_t d = blocks.size(); d-- > 0;) {
    MESHRUN_CHECK(blocks[d].shape == blocks[0].shape, "blocks differ in shape");
    const float* src = blocks[d].data.data();
    for_each_run(shape, blocks[d].shape, spec, mesh, static_cast<int>(d),
                 [&](std::size_t to, std::size_t from, std::size_t n) {
                   std::copy(src + from, src + from + n, global.data.data() + to);
                 });
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
