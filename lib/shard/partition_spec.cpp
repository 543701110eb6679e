#include "shard/partition_spec.hpp"

#include <algorithm>

#include "support/errors.hpp"

namespace meshrun {

int PartitionSpec::split_dim(const std::string& axis) const {
  for (std::size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] && *dims_[i] == axis) return static_cast<int>(i);
  return -1;
}

bool PartitionSpec::replicated() const {
  return std::none_of(dims_.begin(), dims_.end(), [](const auto& d) { return d.has_value(); });
}

std::string PartitionSpec::str() const {
  std::string s = "P(";
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i] ? "'" + *dims_[i] + "'" : std::string("None");
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

void check_divisible(const std::string& field, const Shape& shape, const PartitionSpec& spec,
                     const std::string& axis, int devices) {
  const int dim = spec.split_dim(axis);
  if (dim < 0) return;
  const std::size_t size = shape.at(static_cast<std::size_t>(dim));
  if (size % static_cast<std::size_t>(devices) == 0) return;
  throw InputError(field, std::to_string(size) + " " +
                              dim_word(shape.size(), static_cast<std::size_t>(dim), size) +
                              (size == 1 ? " is" : " are") + " not divisible by " +
                              std::to_string(devices) + (devices == 1 ? " device" : " devices"));
}

Shape block_shape(const Shape& global, const PartitionSpec& spec, const std::string& axis,
                  int count) {
  Shape s = global;
  const int d = spec.split_dim(axis);
  if (d < 0) return s;
  MESHRUN_CHECK(static_cast<std::size_t>(d) < s.size(), "spec has more dims than the array");
  MESHRUN_CHECK(s[d] % static_cast<std::size_t>(count) == 0, "split dim not divisible");
  s[d] /= static_cast<std::size_t>(count);
  return s;
}

// Row-major arrays of rank <= 2 split along dim 0 or 1. Viewed as (outer, dim, inner).
namespace {
struct Split {
  std::size_t outer, whole, inner;  // the split dimension has `whole` entries
};
Split split_view(const Shape& shape, int d) {
  Split s{1, shape[d], 1};
  for (int i = 0; i < d; ++i) s.outer *= shape[i];
  for (std::size_t i = d + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}
}  // namespace

Tensor block_of(const Tensor& global, const PartitionSpec& spec, const std::string& axis,
                int index, int count) {
  const int d = spec.split_dim(axis);
  if (d < 0) return global;
  Tensor block(block_shape(global.shape, spec, axis, count));
  const Split v = split_view(global.shape, d);
  const std::size_t part = v.whole / static_cast<std::size_t>(count);
  const std::size_t run = part * v.inner;  // contiguous floats per outer index
  for (std::size_t o = 0; o < v.outer; ++o) {
    const float* src = &global.data[(o * v.whole + index * part) * v.inner];
    std::copy(src, src + run, &block.data[o * run]);
  }
  return block;
}

Tensor assemble(const std::vector<Tensor>& blocks, const PartitionSpec& spec,
                const std::string& axis) {
  MESHRUN_CHECK(!blocks.empty(), "assemble needs blocks");
  const int d = spec.split_dim(axis);
  if (d < 0) return blocks[0];
  Shape shape = blocks[0].shape;
  const std::size_t count = blocks.size(), part = shape[d];
  shape[d] *= count;
  Tensor global(shape);
  const Split v = split_view(shape, d);
  const std::size_t run = part * v.inner;
  for (std::size_t b = 0; b < count; ++b) {
    MESHRUN_CHECK(blocks[b].shape == blocks[0].shape, "blocks differ in shape");
    for (std::size_t o = 0; o < v.outer; ++o) {
      const float* src = &blocks[b].data[o * run];
      std::copy(src, src + run, &global.data[(o * v.whole + b * part) * v.inner]);
    }
  }
  return global;
}

}  // namespace meshrun
