// Device: what a per-device body sees -- its index on the mesh axis and JAX's collectives on
// tensors. It holds no data of its own beyond what the body passes it; the body's blocks are the
// only arrays it can reach.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "trace/trace.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

// Called before each collective with (device index, op, sequence number); the mesh uses it for
// --inject. May throw (the collective is then never entered).
using CollectiveHook = std::function<void(int, CollectiveOp, std::uint64_t)>;

class Device {
 public:
  // `log`, when given, receives a record of every collective this device enters (the trace).
  Device(int index, std::string axis, Communicator& comm, CollectiveHook hook = {},
         std::vector<CollectiveRecord>* log = nullptr)
      : index_(index), axis_(std::move(axis)), comm_(comm), hook_(std::move(hook)), log_(log) {}

  int index() const { return index_; }
  const std::string& axis() const { return axis_; }
  // jax.lax.axis_index / axis_size; the axis must be the mesh's.
  int axis_index(const std::string& axis) const;
  int axis_size(const std::string& axis) const;

  // jax.lax.psum / pmean: the element-wise sum (mean) over the axis, same shape.
  Tensor psum(const Tensor& x, const std::string& axis);
  Tensor pmean(const Tensor& x, const std::string& axis);
  // In place on a packed buffer (several small reductions packed into one call).
  void psum_inplace(std::span<float> buf, const std::string& axis);
  void pmean_inplace(std::span<float> buf, const std::string& axis);
  // jax.lax.all_gather(x, axis, tiled=True): blocks concatenated along dimension 0.
  Tensor all_gather(const Tensor& x, const std::string& axis);
  // jax.lax.psum_scatter(x, axis, tiled=True): this device's block (along dimension 0) of the sum.
  Tensor psum_scatter(const Tensor& x, const std::string& axis);
  // jax.lax.ppermute(x, axis, perm): perm holds (source, destination) pairs; a device that no
  // pair sends to receives zeros.
  Tensor ppermute(const Tensor& x, const std::string& axis,
                  const std::vector<std::pair<int, int>>& perm);

  Communicator& comm() { return comm_; }
  // "psum #3 on 'data'": the collective this device is in or last entered ("no collective yet").
  std::string where() const;

 private:
  void check_axis(const std::string& axis, const char* op) const;
  void before(CollectiveOp op, const std::string& axis, const Shape& in, const Shape& out);
  // For the in-place calls on a flat buffer: builds the shape only when tracing (no allocation
  // per call otherwise).
  void before_flat(CollectiveOp op, const std::string& axis, std::size_t elems);

  int index_;
  std::string axis_;
  Communicator& comm_;
  CollectiveHook hook_;
  std::vector<CollectiveRecord>* log_;
  CollectiveOp last_op_ = CollectiveOp::kAllReduce;
  std::uint64_t last_seq_ = 0;
};

}  // namespace meshrun
