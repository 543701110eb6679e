#include "mesh/device.hpp"

#include <algorithm>
#include <exception>

#include "support/errors.hpp"

namespace meshrun {

AxisNames::AxisNames(std::initializer_list<std::string_view> tuple) {
  if (tuple.size() == 0 || tuple.size() > names_.size()) {
    throw InputError("", "an axis tuple names 1 to " + std::to_string(names_.size()) +
                             " axes, got " + std::to_string(tuple.size()));
  }
  for (std::string_view n : tuple) names_[count_++] = n;
}

AxisNames::AxisNames(std::span<const std::string> tuple) {
  if (tuple.empty() || tuple.size() > names_.size()) {
    throw InputError("", "an axis tuple names 1 to " + std::to_string(names_.size()) +
                             " axes, got " + std::to_string(tuple.size()));
  }
  for (const std::string& n : tuple) names_[count_++] = n;
}

bool AxisNames::operator==(std::span<const std::string> axes) const {
  return axes.size() == count_ && std::equal(axes.begin(), axes.end(), names_.begin());
}

std::string AxisNames::str() const {
  if (count_ == 1) return std::string(names_[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < count_; ++i) (s += i ? "," : "") += names_[i];
  return s + ")";
}

const GroupMembership& Device::group(AxisNames axes, const char* op) const {
  for (const GroupMembership& g : groups_)
    if (axes == std::span<const std::string>(g.axes)) return g;
  for (std::string_view a : axes.names()) {
    if (mesh_axis_position(mesh_, std::string(a)) < 0) {
      throw InputError("", std::string(op) + ": unknown axis name '" + std::string(a) +
                               "' (the mesh's axes are " + mesh_axis_names(mesh_) + ")");
    }
  }
  throw InputError("", std::string(op) + ": axis tuple " + axes.str() + " names an axis twice");
}

Device::Device(int index, const MeshShape& mesh, std::vector<GroupMembership> groups,
               CollectiveHook hook, std::vector<CollectiveRecord>* log, DeviceProfile* profile,
               std::atomic<std::uint64_t>* in_collective)
    : index_(index),
      mesh_(mesh),
      groups_(std::move(groups)),
      hook_(std::move(hook)),
      log_(log),
      profile_(profile),
      in_collective_(in_collective) {
  if (profile_)
    for (GroupMembership& g : groups_) g.comm->mark_syncs(&marks_);
}

Device::~Device() {
  if (profile_)  // the communicators live on until the next run: no pointer into a gone Device
    for (GroupMembership& g : groups_) g.comm->mark_syncs(nullptr);
}

Device::SpanEnd::~SpanEnd() {
  if (dev.in_collective_ && std::uncaught_exceptions() == uncaught)
    dev.in_collective_->store(0, std::memory_order_relaxed);
  if (dev.profile_) dev.end_span();
}

void Device::end_span() {
  if (!span_open_) return;  // before() threw before opening it
  span_open_ = false;
  CollectiveSpan& span = profile_->collectives.back();
  span.end = ProfileClock::now();
  span.marks = marks_;
  span.failed = std::uncaught_exceptions() > 0;
}

int Device::axis_index(AxisNames axes) const { return group(axes, "axis_index").comm->rank(); }

int Device::axis_size(AxisNames axes) const { return group(axes, "axis_size").comm->size(); }

std::string Device::where() const {
  if (last_group_ == nullptr) return "before its first collective";
  return collective_label(last_op_, last_seq_, last_group_->label);
}

Communicator& Device::before_flat(CollectiveOp op, AxisNames axes, std::size_t elems) {
  static const Shape kUntraced;
  if (log_ || profile_) {
    const Shape flat{elems};
    return before(op, axes, flat, flat);
  }
  return before(op, axes, kUntraced, kUntraced);
}

Communicator& Device::before(CollectiveOp op, AxisNames axes, const Shape& in, const Shape& out) {
  const GroupMembership& g = group(axes, op_name(op));
  last_op_ = op;
  last_seq_ = g.comm->seq() + 1;
  last_group_ = &g;
  if (profile_) {
    marks_ = {};
    CollectiveSpan& span = profile_->collectives.emplace_back();
    span.op = op_name(op);
    span.group = g.label;
    span.seq = last_seq_;
    span.bytes = shape_size(in) * sizeof(float);
    span.start = ProfileClock::now();
    span_open_ = true;
  }
  if (log_) {
    const bool varying = op == CollectiveOp::kReduceScatter || op == CollectiveOp::kPermute;
    log_->push_back({op_name(op), g.label, in, out, varying, last_seq_});
  }
  g.comm->set_site(site_, site_text_);
  if (hook_) hook_(index_, op, ++calls_, g.label, last_seq_);
  if (in_collective_) {
    const auto group = static_cast<std::size_t>(&g - groups_.data());
    in_collective_->store(CollectiveWhere::pack(group, op, last_seq_), std::memory_order_relaxed);
  }
  return *g.comm;
}

void Device::depart() {
  for (const GroupMembership& g : groups_) g.comm->depart();
}

void Device::psum_inplace(std::span<float> buf, AxisNames axes) {
  const SpanEnd end{*this};
  before_flat(CollectiveOp::kAllReduce, axes, buf.size()).all_reduce_sum(buf, buf);
}

void Device::pmean_inplace(std::span<float> buf, AxisNames axes) {
  const SpanEnd end{*this};
  before_flat(CollectiveOp::kAllReduceMean, axes, buf.size()).all_reduce_mean(buf, buf);
}

void Device::pmax_inplace(std::span<float> buf, AxisNames axes) {
  const SpanEnd end{*this};
  before_flat(CollectiveOp::kAllReduceMax, axes, buf.size()).all_reduce_max(buf, buf);
}

void Device::pmin_inplace(std::span<float> buf, AxisNames axes) {
  const SpanEnd end{*this};
  before_flat(CollectiveOp::kAllReduceMin, axes, buf.size()).all_reduce_min(buf, buf);
}

Tensor Device::pmax(const Tensor& x, AxisNames axes) {
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kAllReduceMax, axes, x.shape, x.shape);
  Tensor y(x.shape);
  c.all_reduce_max(x.span(), y.span());
  return y;
}

Tensor Device::pmin(const Tensor& x, AxisNames axes) {
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kAllReduceMin, axes, x.shape, x.shape);
  Tensor y(x.shape);
  c.all_reduce_min(x.span(), y.span());
  return y;
}

Tensor Device::psum(const Tensor& x, AxisNames axes) {
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kAllReduce, axes, x.shape, x.shape);
  Tensor y(x.shape);
  c.all_reduce_sum(x.span(), y.span());
  return y;
}

Tensor Device::pmean(const Tensor& x, AxisNames axes) {
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kAllReduceMean, axes, x.shape, x.shape);
  Tensor y(x.shape);
  c.all_reduce_mean(x.span(), y.span());
  return y;
}

void Device::record_last_as(const char* op, const Shape& out, bool out_varying) {
  if (log_ != nullptr && !log_->empty()) {
    log_->back().op = op;
    log_->back().out_shape = out;
    log_->back().out_varying = out_varying;
  }
  if (profile_ != nullptr && !profile_->collectives.empty()) profile_->collectives.back().op = op;
}

Tensor Device::all_gather(const Tensor& x, AxisNames axes) {
  MESHRUN_CHECK(x.rank() >= 1, "all_gather needs an array of rank >= 1");
  Shape shape = x.shape;
  shape[0] *= static_cast<std::size_t>(axis_size(axes));
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kAllGather, axes, x.shape, shape);
  Tensor y(shape);
  c.all_gather(x.span(), y.span());
  return y;
}

Tensor Device::psum_scatter(const Tensor& x, AxisNames axes) {
  const auto n = static_cast<std::size_t>(axis_size(axes));
  if (x.rank() < 1 || x.shape[0] % n != 0) {
    throw InputError("", "psum_scatter: dimension 0 of " + shape_str(x.shape) +
                             " is not divisible by the axis size " + std::to_string(n));
  }
  Shape shape = x.shape;
  shape[0] /= n;
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kReduceScatter, axes, x.shape, shape);
  Tensor y(shape);
  c.reduce_scatter_sum(x.span(), y.span());
  return y;
}

Tensor Device::grouped(CollectiveOp op, const Tensor& x, AxisNames axes,
                       const IndexGroups& groups) {
  const char* name = op_name(op);
  if (groups.members() != axis_size(axes)) {
    throw InputError("", std::string(name) + ": axis_index_groups cover " +
                             std::to_string(groups.members()) + " members, the axis " + axes.str() +
                             " has " + std::to_string(axis_size(axes)));
  }
  const auto k = static_cast<std::size_t>(groups.subgroup_size());
  Shape shape = x.shape;
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter) {
    if (x.rank() < 1) throw InputError("", std::string(name) + " needs an array of rank >= 1");
    if (op == CollectiveOp::kAllGather) {
      shape[0] *= k;
    } else if (shape[0] % k != 0) {
      throw InputError("", std::string(name) + ": dimension 0 of " + shape_str(x.shape) +
                               " is not divisible by the axis_index_groups' size " +
                               std::to_string(k));
    } else {
      shape[0] /= k;
    }
  } else if (op == CollectiveOp::kPermute) {
    throw InputError("", "ppermute takes no axis_index_groups");
  }
  const SpanEnd end{*this};
  // before() records it as the ungrouped op would be, its result varying: the subgroups differ.
  Communicator& c = before(op, axes, x.shape, shape);
  if (log_ != nullptr) {
    log_->back().out_varying = true;
    log_->back().moves = k > 1;
  }
  Tensor y(shape);
  c.grouped(op, groups, x.span(), y.span());
  return y;
}

Tensor Device::ppermute(const Tensor& x, AxisNames axes,
                        const std::vector<std::pair<int, int>>& perm) {
  // Validated before anything is recorded or injected, as psum_scatter is: a refused call never
  // appears in the trace as a collective that was entered.
  const int n = axis_size(axes);
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
  const SpanEnd end{*this};
  Communicator& c = before(CollectiveOp::kPermute, axes, x.shape, x.shape);
  if (log_ != nullptr) {
    const int me = axis_index(axes);
    const int from = source_of[static_cast<std::size_t>(me)];
    bool sends_away = false;
    for (auto [src, dst] : perm) sends_away = sends_away || (src == me && dst != me);
    log_->back().moves = sends_away || (from >= 0 && from != me);
  }
  Tensor y(x.shape);
  c.permute(x.span(), y.span(), source_of);
  return y;
}

}  // namespace meshrun
