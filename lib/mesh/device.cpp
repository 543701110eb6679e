#include "mesh/device.hpp"

#include "support/errors.hpp"

namespace meshrun {

void Device::check_axis(const std::string& axis, const char* op) const {
  if (axis != axis_) {
    throw InputError("", std::string(op) + ": unknown axis name '" + axis + "' (the mesh axis is '" +
                             axis_ + "')");
  }
}

int Device::axis_index(const std::string& axis) const {
  check_axis(axis, "axis_index");
  return index_;
}

int Device::axis_size(const std::string& axis) const {
  check_axis(axis, "axis_size");
  return comm_.size();
}

std::string Device::where() const {
  if (last_seq_ == 0) return "before its first collective";
  return std::string(op_name(last_op_)) + " #" + std::to_string(last_seq_) +
         " on '" + axis_ + "'";
}

void Device::before_flat(CollectiveOp op, const std::string& axis, std::size_t elems) {
  static const Shape kUntraced;
  if (log_) {
    const Shape flat{elems};
    before(op, axis, flat, flat);
  } else {
    before(op, axis, kUntraced, kUntraced);
  }
}

void Device::before(CollectiveOp op, const std::string& axis, const Shape& in, const Shape& out) {
  check_axis(axis, op_name(op));
  last_op_ = op;
  last_seq_ = comm_.seq() + 1;
  if (log_) {
    const bool varying = op == CollectiveOp::kReduceScatter || op == CollectiveOp::kPermute;
    log_->push_back({op_name(op), axis, in, out, varying, last_seq_});
  }
  if (hook_) hook_(index_, op, last_seq_);
}

void Device::psum_inplace(std::span<float> buf, const std::string& axis) {
  before_flat(CollectiveOp::kAllReduce, axis, buf.size());
  comm_.all_reduce_sum(buf, buf);
}

void Device::pmean_inplace(std::span<float> buf, const std::string& axis) {
  before_flat(CollectiveOp::kAllReduceMean, axis, buf.size());
  comm_.all_reduce_mean(buf, buf);
}

Tensor Device::psum(const Tensor& x, const std::string& axis) {
  before(CollectiveOp::kAllReduce, axis, x.shape, x.shape);
  Tensor y(x.shape);
  comm_.all_reduce_sum(x.span(), y.span());
  return y;
}

Tensor Device::pmean(const Tensor& x, const std::string& axis) {
  before(CollectiveOp::kAllReduceMean, axis, x.shape, x.shape);
  Tensor y(x.shape);
  comm_.all_reduce_mean(x.span(), y.span());
  return y;
}

Tensor Device::all_gather(const Tensor& x, const std::string& axis) {
  MESHRUN_CHECK(x.rank() >= 1, "all_gather needs an array of rank >= 1");
  Shape shape = x.shape;
  shape[0] *= static_cast<std::size_t>(comm_.size());
  before(CollectiveOp::kAllGather, axis, x.shape, shape);
  Tensor y(shape);
  comm_.all_gather(x.span(), y.span());
  return y;
}

Tensor Device::psum_scatter(const Tensor& x, const std::string& axis) {
  const auto n = static_cast<std::size_t>(comm_.size());
  if (x.rank() < 1 || x.shape[0] % n != 0) {
    throw InputError("", "psum_scatter: dimension 0 of " + shape_str(x.shape) +
                             " is not divisible by the axis size " + std::to_string(n));
  }
  Shape shape = x.shape;
  shape[0] /= n;
  before(CollectiveOp::kReduceScatter, axis, x.shape, shape);
  Tensor y(shape);
  comm_.reduce_scatter_sum(x.span(), y.span());
  return y;
}

Tensor Device::ppermute(const Tensor& x, const std::string& axis,
                        const std::vector<std::pair<int, int>>& perm) {
  // Validated before anything is recorded or injected, as psum_scatter is: a refused call never
  // appears in the trace as a collective that was entered.
  const int n = comm_.size();
  std::vector<int> source_of(static_cast<std::size_t>(n), -1);
  std::vector<bool> sends(static_cast<std::size_t>(n), false);
  for (auto [src, dst] : perm) {
    if (src < 0 || src >= n || dst < 0 || dst >= n || sends[src] || source_of[dst] >= 0) {
      throw InputError("", "ppermute: (" + std::to_string(src) + ", " + std::to_string(dst) +
                               ") is not part of a permutation of " + std::to_string(n) +
                               " devices");
    }
    sends[src] = true;
    source_of[dst] = src;
  }
  before(CollectiveOp::kPermute, axis, x.shape, x.shape);
  Tensor y(x.shape);
  comm_.permute(x.span(), y.span(), source_of);
  return y;
}

}  // namespace meshrun
