// PartitionSpec -- JAX's P(...): for each dimension of an array, the mesh axis it is split over,
// or none (replicated along that dimension). P() is fully replicated.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace meshrun {

inline constexpr std::nullopt_t None = std::nullopt;

class PartitionSpec {
 public:
  PartitionSpec() = default;
  PartitionSpec(std::initializer_list<std::optional<std::string>> dims) : dims_(dims) {}

  const std::vector<std::optional<std::string>>& dims() const { return dims_; }
  // The dimension split over `axis`, or -1 when the array is replicated over it.
  int split_dim(const std::string& axis) const;
  bool replicated() const;
  // "P('data',)", "P(None, 'model')", "P()"
  std::string str() const;

 private:
  std::vector<std::optional<std::string>> dims_;
};

using P = PartitionSpec;

// Throws InputError naming `field` unless the dimension `spec` splits over `axis` is divisible by
// `devices`: "input.x: 12 rows are not divisible by 8 devices".
void check_divisible(const std::string& field, const Shape& shape, const PartitionSpec& spec,
                     const std::string& axis, int devices);

// The block of `global` that device `index` of `count` holds under `spec` on `axis`: a copy, so
// the device owns it and cannot see past it. The split dimension must be divisible by `count`.
Tensor block_of(const Tensor& global, const PartitionSpec& spec, const std::string& axis,
                int index, int count);
// The shape of that block.
Shape block_shape(const Shape& global, const PartitionSpec& spec, const std::string& axis,
                  int count);
// The global array from the devices' blocks (for a replicated spec: block 0).
Tensor assemble(const std::vector<Tensor>& blocks, const PartitionSpec& spec,
                const std::string& axis);

}  // namespace meshrun
