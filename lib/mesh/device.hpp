// Device: what a per-device body sees -- its index and coordinates on the mesh and JAX's
// collectives on tensors, each over one mesh axis or a tuple of them. It holds no data of its own
// beyond what the body passes it; the body's blocks are the only arrays it can reach.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "shard/mesh_shape.hpp"
#include "tensor/tensor.hpp"
#include "trace/trace.hpp"

namespace meshrun {

// Called before each collective with (device index, op, the device's collective count from 1 over
// all its groups, the group's label, the collective's sequence number in that group); the mesh
// uses it for --inject. May throw (the collective is then never entered).
using CollectiveHook =
    std::function<void(int, CollectiveOp, std::uint64_t, const std::string&, std::uint64_t)>;

// JAX's axis_name argument: one axis ("model") or a tuple of axes ({"data", "model"}). A view:
// it refers to the caller's strings for the duration of the call (no allocation per collective).
class AxisNames {
 public:
  AxisNames(const char* axis) : names_{axis}, count_(1) {}
  AxisNames(const std::string& axis) : names_{axis}, count_(1) {}
  AxisNames(std::initializer_list<std::string_view> tuple);
  // A tuple held as strings (the interpreter's params); 1 to kMaxMeshAxes of them.
  explicit AxisNames(std::span<const std::string> tuple);
  std::span<const std::string_view> names() const { return {names_.data(), count_}; }
  bool operator==(std::span<const std::string> axes) const;
  // "model", or "(data,model)" for a tuple -- how traces and messages name it.
  std::string str() const;

 private:
  std::array<std::string_view, kMaxMeshAxes> names_{};
  std::size_t count_ = 0;
};

// One group this device belongs to: the devices that share its coordinates on every axis not in
// `axes`; comm's ranks are row-major over `axes` (the group's name in traces is `label`).
struct GroupMembership {
  std::vector<std::string> axes;
  std::string label;  // "model", "(data,model)"
  Communicator* comm;
};

// Which collective a device is in, in one word another thread reads at once (the mesh's timeout
// report): 0 outside any collective, else the group (its index in the device's memberships) plus
// 1 in the low 8 bits, the op in the next 8, the group's sequence number above.
struct CollectiveWhere {
  static std::uint64_t pack(std::size_t group, CollectiveOp op, std::uint64_t seq) {
    return seq << 16 | static_cast<std::uint64_t>(op) << 8 | (group + 1);
  }
  static std::size_t group(std::uint64_t w) { return static_cast<std::size_t>(w & 0xff) - 1; }
  static CollectiveOp op(std::uint64_t w) { return static_cast<CollectiveOp>(w >> 8 & 0xff); }
  static std::uint64_t seq(std::uint64_t w) { return w >> 16; }
};

class Device {
 public:
  // `groups` holds one membership per ordered tuple of distinct mesh axes, the first being all the
  // mesh's axes in mesh order. `log`, when given,
  // receives a record of every collective this device enters (the trace); `profile`, when given,
  // a span per collective (profile.hpp); `in_collective`, when given, the collective this device
  // is in from its hook's return to the call's end (CollectiveWhere), 0 outside (relaxed stores).
  Device(int index, const MeshShape& mesh, std::vector<GroupMembership> groups,
         CollectiveHook hook = {}, std::vector<CollectiveRecord>* log = nullptr,
         DeviceProfile* profile = nullptr, std::atomic<std::uint64_t>* in_collective = nullptr);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The device's number on the whole mesh (row-major over the axes).
  int index() const { return index_; }
  // Collectives entered so far, over all groups (what --inject counts).
  std::uint64_t collectives_entered() const { return calls_; }
  // Where the next collectives are called from (Communicator::set_site): the interpreter names
  // each collective's equation, so devices that reach collectives from different places of the
  // program fail with the mismatched-collective error. `text` must outlive the call.
  void set_site(std::uint64_t site, const char* text) {
    site_ = site;
    site_text_ = text;
  }
  // The body returned: every group hears that this device calls nothing more (depart).
  void depart();
  const MeshShape& mesh() const { return mesh_; }
  // jax.lax.axis_index / axis_size: this device's rank in (the size of) its group over `axes`
  // (row-major over a tuple).
  int axis_index(AxisNames axes) const;
  int axis_size(AxisNames axes) const;

  // jax.lax.psum / pmean: the element-wise sum (mean) over the axes, same shape. The sum folds
  // the group's members in rank order (for a tuple: row-major over its axes).
  Tensor psum(const Tensor& x, AxisNames axes);
  Tensor pmean(const Tensor& x, AxisNames axes);
  // jax.lax.pmax / pmin: the element-wise max (min) over the axes, folded in rank order as XLA's
  // CPU collectives do (communicator.hpp: a NaN never wins, of equal values the lowest rank's).
  Tensor pmax(const Tensor& x, AxisNames axes);
  Tensor pmin(const Tensor& x, AxisNames axes);
  // In place on a packed buffer (several small reductions packed into one call).
  void psum_inplace(std::span<float> buf, AxisNames axes);
  void pmean_inplace(std::span<float> buf, AxisNames axes);
  void pmax_inplace(std::span<float> buf, AxisNames axes);
  void pmin_inplace(std::span<float> buf, AxisNames axes);
  // jax.lax.all_gather(x, axes, tiled=True): blocks concatenated along dimension 0.
  Tensor all_gather(const Tensor& x, AxisNames axes);
  // jax.lax.psum_scatter(x, axes, tiled=True): this device's block (along dimension 0) of the sum.
  Tensor psum_scatter(const Tensor& x, AxisNames axes);
  // The same collectives over this device's subgroup of `groups` only (axis_index_groups,
  // communicator.hpp; groups.members() == axis_size(axes)): psum, pmean, pmax, pmin (`op`
  // kAllReduce, kAllReduceMean, kAllReduceMax, kAllReduceMin: same shape), all_gather (tiled,
  // dimension 0: k blocks) and psum_scatter (tiled, dimension 0 divisible by k).
  Tensor grouped(CollectiveOp op, const Tensor& x, AxisNames axes, const IndexGroups& groups);
  // jax.lax.ppermute(x, axes, perm): perm holds (source, destination) pairs of group ranks; a
  // device that no pair sends to receives zeros.
  Tensor ppermute(const Tensor& x, AxisNames axes, const std::vector<std::pair<int, int>>& perm);
  // The collective this device last made, as the trace and the profile show it, named after the
  // primitive the program called when it was built from another: all_to_all from one all_gather
  // (its result `out`, differing from device to device).
  void record_last_as(const char* op, const Shape& out, bool out_varying);

  // The communicator over all the mesh's axes in mesh order (on a one-axis mesh, its axis).
  Communicator& comm() { return *groups_.front().comm; }
  // "psum #3 on 'data'": the collective this device is in or last entered ("before its first
  // collective").
  std::string where() const;

 private:
  // The membership for `axes`; InputError (naming `op`) for an axis the mesh does not have.
  const GroupMembership& group(AxisNames axes, const char* op = "collective") const;
  Communicator& before(CollectiveOp op, AxisNames axes, const Shape& in, const Shape& out);
  // For the in-place calls on a flat buffer: builds the shape only when tracing (no allocation
  // per call otherwise).
  Communicator& before_flat(CollectiveOp op, AxisNames axes, std::size_t elems);
  // Closes the collective span before() opened, when profiling -- also when the call throws --
  // and clears in_collective_ when the call returns (one that throws, a timeout or an abort, was
  // waiting there: the mesh's report may read it after the device left).
  struct SpanEnd {
    Device& dev;
    int uncaught = std::uncaught_exceptions();
    ~SpanEnd();
  };
  void end_span();

  int index_;
  const MeshShape& mesh_;
  std::vector<GroupMembership> groups_;
  CollectiveHook hook_;
  std::vector<CollectiveRecord>* log_;
  std::uint64_t calls_ = 0;  // collectives entered, over all groups (what --inject counts)
  CollectiveOp last_op_ = CollectiveOp::kAllReduce;
  std::uint64_t last_seq_ = 0;
  const GroupMembership* last_group_ = nullptr;
  DeviceProfile* profile_;
  std::atomic<std::uint64_t>* in_collective_;
  SyncMarks marks_;         // where the communicators mark the collective in progress
  bool span_open_ = false;  // profile_->collectives.back() is still in progress
  std::uint64_t site_ = 0;  // set_site's
  const char* site_text_ = nullptr;
};

}  // namespace meshrun
