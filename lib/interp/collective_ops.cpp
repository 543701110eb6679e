// The collectives, on the device's groups (mesh/device.hpp): psum, psum_invariant, pmean, pmax,
// pmin, pvary, pcast, all_gather, reduce_scatter (psum_scatter), ppermute, all_to_all,
// axis_index. Infer checks they are inside a shard_map and name axes of its mesh; Device reduces
// along dimension 0, so another dimension is moved to the front (a copy only when a dimension
// before it is not 1). psum, pmean, pmax, pmin, all_gather, reduce_scatter and all_to_all take
// JAX's axis_index_groups (groups_param below; Device::grouped, communicator.hpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "interp/prim_util.hpp"
#include "mesh/device.hpp"

namespace meshrun::interp::prim {

namespace {

using I64 = std::int64_t;

// The axes, checked against the shard_map's mesh; returns the group size (1 for no axes).
std::size_t group_size(const Eqn& eqn, const std::vector<std::string>& axes,
                       const PrimContext& ctx) {
  if (ctx.mesh == nullptr) fail(eqn.primitive + " outside a shard_map");
  std::size_t n = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int pos = mesh_axis_position(*ctx.mesh, axes[i]);
    if (pos < 0) {
      fail(eqn.primitive + ": unknown axis name '" + axes[i].substr(0, 64) +
           "' (the mesh's axes are " + mesh_axis_names(*ctx.mesh) + ")");
    }
    for (std::size_t j = 0; j < i; ++j)
      if (axes[j] == axes[i]) fail(eqn.primitive + ": axis '" + axes[i] + "' named twice");
    n *= static_cast<std::size_t>((*ctx.mesh)[static_cast<std::size_t>(pos)].second);
  }
  return n;
}

// axis_index_groups: absent or null for the whole group over the axes (n members); else a list of
// lists of members, a partition of 0..n-1 into groups of one size (as JAX requires of
// all_gather, psum_scatter and all_to_all, and of every collective on TPU; XLA's CPU would take a
// psum's groups of unequal sizes, meshrun refuses them), checked before anything runs. JAX 0.10.2
// raises NotImplementedError for groups on psum_invariant (a psum under check_vma=True) and on
// all_gather(..., to='invarying'), and so does meshrun, one line, exit 2.
std::optional<IndexGroups> groups_param(const Eqn& eqn, std::size_t n) {
  if (!eqn.params.is_object() || !eqn.params.contains("axis_index_groups")) return std::nullopt;
  const nlohmann::json& j = eqn.params["axis_index_groups"];
  if (j.is_null()) return std::nullopt;
  if (eqn.primitive == "psum_invariant" || eqn.primitive == "all_gather_invariant") {
    fail(eqn.primitive +
         " with axis_index_groups: JAX 0.10.2 raises NotImplementedError for it "
         "(psum under check_vma=True, all_gather to='invarying')");
  }
  const auto bad = [&](const std::string& why) {
    fail(eqn.primitive + " param 'axis_index_groups' " + why);
  };
  if (!j.is_array() || j.empty()) bad("must be a non-empty list of lists of axis indices");
  std::vector<std::vector<int>> groups;
  for (const nlohmann::json& g : j) {
    if (!g.is_array() || g.empty()) bad("must be a non-empty list of lists of axis indices");
    groups.emplace_back();
    for (const nlohmann::json& r : g) {
      if (!r.is_number_integer()) bad("must be a non-empty list of lists of axis indices");
      const bool in_range = r.is_number_unsigned() ? r.get<std::uint64_t>() < n
                                                   : r.get<I64>() >= 0 && r.get<I64>() < I64(n);
      if (!in_range) {
        bad("names index " + r.dump().substr(0, 24) + ", not in [0, " + std::to_string(n) +
            ") (the group over the axes has " + std::to_string(n) + " members)");
      }
      groups.back().push_back(r.get<int>());
    }
  }
  if (const std::string why = IndexGroups::invalid(groups, static_cast<int>(n)); !why.empty())
    bad("is not a partition of the axes' " + std::to_string(n) +
        " indices into groups of one "
        "size: " +
        why);
  return IndexGroups(std::move(groups), static_cast<int>(n));
}

// The size of the group a collective runs over: its subgroups' when it has axis_index_groups.
std::size_t effective_size(const Eqn& eqn, std::size_t n) {
  const std::optional<IndexGroups> g = groups_param(eqn, n);
  return g ? static_cast<std::size_t>(g->subgroup_size()) : n;
}

// The device of a body, told where its next collective is called from: this equation (FNV-1a of
// its place, the same on every device and rank), so that devices reaching collectives from
// different places -- a cond's other branch, another trip of a loop -- are told apart.
Device& device(const Eqn& eqn, PrimContext& ctx) {
  if (ctx.device == nullptr) fail(eqn.primitive + " outside a shard_map");
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : eqn.where) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  ctx.device->set_site(h | 1, eqn.where.c_str());
  return *ctx.device;
}

// An int32 sum (psum, reduce_scatter) is refused once beyond 2^24, where float32 no longer holds
// every integer: below it, it is JAX's int32 sum exactly (which wraps only at 2^31).
void check_exact_ints(const Eqn& eqn, const Value& v) {
  if (v.dtype != DType::kI32) return;
  for (float x : v.t.data)
    if (x > static_cast<float>(kMaxInt) || x < -static_cast<float>(kMaxInt))
      fail(eqn.primitive + ": an integer result is beyond 2^24, which meshrun holds exactly");
}

// ---- psum, psum_invariant, pmean, pmax, pmin, pvary, pcast: one result per operand ----

// Which all-reduce a reduce_* instantiation is.
enum class Reduce { kSum, kMean, kMax, kMin };

// psum: f32 and i32 (exact below 2^24, checked after); pmean: f32; pmax, pmin: f32, i32 and bool
// (their results are operands' values, or -inf / +inf for an f32 element NaN on every device).
template <Reduce kOp>
Types reduce_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1, true);
  groups_param(eqn, group_size(eqn, param_axes(eqn, "axes"), ctx));
  for (const ValueType& t : in) {
    const bool refused = kOp == Reduce::kMean  ? t.dtype != DType::kF32
                         : kOp == Reduce::kSum ? t.dtype == DType::kBool
                                               : false;
    if (refused) fail(eqn.primitive + " does not accept dtype " + dtype_word(t.dtype));
  }
  return {in.begin(), in.end()};
}

// Several operands (one psum of many, or the psums compile.cpp combined, as XLA's all-reduce
// combiner) go in as few collectives as pays: the small ones in one collective on a packed buffer
// (one sync for them all), each of kPackedMax floats or more in place on its own buffer -- a copy
// in and out of the packed buffer costs more there than a sync (mlp-train's 4 MiB dW1 block: three
// passes over it per step). Every device makes the same calls in the same order (the operands'
// shapes are the same on all of them), and the fold of each element runs over the group in rank
// order either way, so the bits are the same.
// 64 KiB of float32: where the in-process engine's blocked fold ends. Chosen, not measured: the
// copies were measured at 4 MiB and 1 MiB (mlp-train's dW1, dW2), not where they start to cost
// more than a sync.
constexpr std::size_t kPackedMax = 16 * 1024;

template <Reduce kOp>
void reduce_inplace(Device& dev, std::span<float> buf, const AxisNames& names) {
  if constexpr (kOp == Reduce::kMean) {
    dev.pmean_inplace(buf, names);
  } else if constexpr (kOp == Reduce::kMax) {
    dev.pmax_inplace(buf, names);
  } else if constexpr (kOp == Reduce::kMin) {
    dev.pmin_inplace(buf, names);
  } else {
    dev.psum_inplace(buf, names);
  }
}

// ---- dtypes2 (issue #49): f16 sums over devices. XLA:CPU runs an f16 all-reduce and
// reduce-scatter in f16 itself (not promoted to f32, as it does bf16's): the members folded in
// rank order, each add rounded to f16 (JAX 0.10.2 on 8 devices: psum, psum_scatter, pmean's
// psum). meshrun gathers the operands (all_gather: every member's in rank order) and folds them so
// on each device; axis_index_groups on them are refused (their fold order not verified).
bool f16_fold(DType t) { return t == DType::kF16; }

void refuse_f16_groups(const Eqn& eqn, const std::optional<IndexGroups>& groups, DType t) {
  if (groups && f16_fold(t))
    fail(eqn.primitive +
         " of float16 with axis_index_groups: XLA:CPU's order of its f16 fold "
         "over groups is not verified (docs/program-format.md, Dtypes)");
}

// Of the gathered members (each `size` elements, in rank order), the `len` elements at `at` of
// each, folded in rank order with each add rounded to f16.
Tensor f16_fold_members(const Tensor& gathered, std::size_t members, std::size_t size,
                        std::size_t at, Shape shape) {
  Tensor out(std::move(shape));
  float (*fit)(float) = dtype_info(DType::kF16).fit;
  const float* g = gathered.data.data();
  float* o = out.data.data();
  const std::size_t len = out.data.size();
  for (std::size_t i = 0; i < len; ++i) o[i] = g[at + i];
  for (std::size_t r = 1; r < members; ++r)
    for (std::size_t i = 0; i < len; ++i) o[i] = fit(o[i] + g[r * size + at + i]);
  return out;
}

// psum of an f16 value over `names`: its shape, every member's folded.
Tensor f16_psum(Device& dev, const Tensor& x, const AxisNames& names) {
  const std::size_t n = static_cast<std::size_t>(dev.axis_size(names)), size = x.data.size();
  Tensor flat(Shape{size});
  flat.data = x.data;
  const Tensor g = dev.all_gather(flat, names);
  dev.record_last_as("psum", x.shape, false);  // the program called psum, not all_gather
  return f16_fold_members(g, n, size, 0, x.shape);
}

template <Reduce kOp>
Values reduce_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                   PrimContext& ctx) {
  const std::vector<std::string> axes = param_axes(eqn, "axes");
  Values out;
  out.reserve(in.size());
  if (axes.empty()) {
    for (std::size_t i = 0; i < in.size(); ++i) out.push_back(pass_through(in[i], owned[i]));
    return out;
  }
  Device& dev = device(eqn, ctx);
  const AxisNames names(axes);
  if constexpr (kOp == Reduce::kSum) {
    bool any = false;
    for (const Value* v : in) any = any || f16_fold(v->dtype);
    if (any) {
      refuse_f16_groups(eqn, groups_param(eqn, static_cast<std::size_t>(dev.axis_size(names))),
                        DType::kF16);
      // One collective per operand, in order, the others as a lone psum each (as every device
      // makes the same calls, the bits are the packed path's).
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (f16_fold(in[i]->dtype)) {
          out.emplace_back(in[i]->dtype, f16_psum(dev, in[i]->t, names));
          continue;
        }
        Value v = pass_through(in[i], owned[i]);
        reduce_inplace<kOp>(dev, v.t.span(), names);
        out.push_back(std::move(v));
      }
      for (const Value& v : out) check_exact_ints(eqn, v);
      return out;
    }
  }
  if (const std::optional<IndexGroups> groups =
          groups_param(eqn, static_cast<std::size_t>(dev.axis_size(names)))) {
    // One grouped collective per operand (not packed: few programs reduce many over groups).
    constexpr CollectiveOp kCollective = kOp == Reduce::kMean  ? CollectiveOp::kAllReduceMean
                                         : kOp == Reduce::kMax ? CollectiveOp::kAllReduceMax
                                         : kOp == Reduce::kMin ? CollectiveOp::kAllReduceMin
                                                               : CollectiveOp::kAllReduce;
    for (Value* v : in) out.emplace_back(v->dtype, dev.grouped(kCollective, v->t, names, *groups));
    if constexpr (kOp == Reduce::kSum) {
      for (const Value& v : out) check_exact_ints(eqn, v);
    }
    return out;
  }
  const auto alone = [&](std::size_t i) { return in.size() == 1 || in[i]->t.size() >= kPackedMax; };
  std::size_t packed = 0;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!alone(i)) packed += in[i]->t.size();
  std::vector<float> buf(packed);
  std::size_t at = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (alone(i) || in[i]->t.data.empty()) continue;
    std::memcpy(buf.data() + at, in[i]->t.data.data(), in[i]->t.size() * sizeof(float));
    at += in[i]->t.size();
  }
  if (packed > 0) reduce_inplace<kOp>(dev, buf, names);
  at = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (alone(i)) {
      Value v = pass_through(in[i], owned[i]);
      reduce_inplace<kOp>(dev, v.t.span(), names);
      out.push_back(std::move(v));
      continue;
    }
    Value v = owned[i] ? std::move(*in[i]) : Value(in[i]->dtype, Tensor(in[i]->t.shape));
    if (!v.t.data.empty())
      std::memcpy(v.t.data.data(), buf.data() + at, v.t.size() * sizeof(float));
    at += v.t.size();
    out.push_back(std::move(v));
  }
  if constexpr (kOp == Reduce::kSum) {
    for (const Value& v : out) check_exact_ints(eqn, v);
  }
  return out;
}

Types vary_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1, true);
  group_size(eqn, param_axes(eqn, "axes"), ctx);
  return {in.begin(), in.end()};
}

Values vary_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                 PrimContext&) {
  Values out;
  for (std::size_t i = 0; i < in.size(); ++i) out.push_back(pass_through(in[i], owned[i]));
  return out;
}

// ---- all_gather, reduce_scatter: along dimension d via dimension 0 ----

// x's elements with axis d moved to the front: a copy only when an axis before d is not 1.
Tensor to_front(Tensor x, std::size_t d) {
  Shape shape = x.shape;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  shape.insert(shape.begin(), x.shape[d]);
  std::size_t before = 1;
  for (std::size_t i = 0; i < d; ++i) before *= x.shape[i];
  if (before == 1 || x.shape[d] == 1) {
    x.shape = std::move(shape);
    return x;
  }
  const std::vector<I64> xs = strides_of(x.shape);
  std::vector<I64> src{xs[d]};
  for (std::size_t i = 0; i < x.shape.size(); ++i)
    if (i != d) src.push_back(xs[i]);
  Tensor out(shape);
  copy_strided(shape, x.data.data(), src, out.data.data(), strides_of(shape));
  return out;
}

// The inverse: axis 0 of x moved to position d.
Tensor from_front(Tensor x, std::size_t d) {
  Shape shape(x.shape.begin() + 1, x.shape.end());
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), x.shape[0]);
  std::size_t before = 1;
  for (std::size_t i = 0; i < d; ++i) before *= shape[i];
  if (before == 1 || x.shape[0] == 1) {
    x.shape = std::move(shape);
    return x;
  }
  // out[..., j@d, ...] = x[j, ...]: read x with its axis 0 placed at d.
  const std::vector<I64> xs = strides_of(x.shape);
  std::vector<I64> src(xs.begin() + 1, xs.end());
  src.insert(src.begin() + static_cast<std::ptrdiff_t>(d), xs[0]);
  Tensor out(shape);
  copy_strided(shape, x.data.data(), src, out.data.data(), strides_of(shape));
  return out;
}

Types all_gather_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  const std::size_t n = effective_size(eqn, group_size(eqn, param_axes(eqn, "axes"), ctx));
  const bool tiled = param_bool(eqn, "tiled", false);
  Shape shape = in[0].shape;
  const std::size_t d =
      checked_axis(eqn, "all_gather_dimension", param_int(eqn, "all_gather_dimension"),
                   shape.size() + (tiled ? 0 : 1));
  if (tiled) {
    shape[d] *= n;
  } else {
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), n);
  }
  return {make_type(in[0].dtype, std::move(shape))};
}

Values all_gather_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                       PrimContext& ctx) {
  const std::vector<std::string> axes = param_axes(eqn, "axes");
  const bool tiled = param_bool(eqn, "tiled", false);
  const auto d = static_cast<std::size_t>(param_int(eqn, "all_gather_dimension"));
  Value x = pass_through(in[0], owned[0]);
  if (!tiled) x.t.shape.insert(x.t.shape.begin() + static_cast<std::ptrdiff_t>(d), 1);
  if (axes.empty()) return one(std::move(x));
  Tensor front = to_front(std::move(x.t), d);
  Device& dev = device(eqn, ctx);
  const AxisNames names(axes);
  const std::optional<IndexGroups> groups =
      groups_param(eqn, static_cast<std::size_t>(dev.axis_size(names)));
  Tensor gathered = groups ? dev.grouped(CollectiveOp::kAllGather, front, names, *groups)
                           : dev.all_gather(front, names);
  return one(Value(x.dtype, from_front(std::move(gathered), d)));
}

Types reduce_scatter_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  const std::size_t n = effective_size(eqn, group_size(eqn, param_axes(eqn, "axes"), ctx));
  if (in[0].dtype == DType::kBool)  // f32, and i32 as psum (checked exact after)
    fail(eqn.primitive + " does not accept dtype " + dtype_word(in[0].dtype));
  const bool tiled = param_bool(eqn, "tiled", false);
  Shape shape = in[0].shape;
  const std::size_t d =
      checked_axis(eqn, "scatter_dimension", param_int(eqn, "scatter_dimension"), shape.size());
  if (tiled) {
    if (shape[d] % n != 0) {
      fail(eqn.primitive + " scatter dimension " + std::to_string(d) + " of size " +
           std::to_string(shape[d]) + " is not divisible by the group size " + std::to_string(n));
    }
    shape[d] /= n;
  } else {
    if (shape[d] != n) {
      fail(eqn.primitive + " untiled: scatter dimension " + std::to_string(d) + " of size " +
           std::to_string(shape[d]) + " must equal the group size " + std::to_string(n));
    }
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  }
  return {{in[0].dtype, shape}};
}

Values reduce_scatter_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                           PrimContext& ctx) {
  const std::vector<std::string> axes = param_axes(eqn, "axes");
  const bool tiled = param_bool(eqn, "tiled", false);
  const auto d = static_cast<std::size_t>(param_int(eqn, "scatter_dimension"));
  Value x = pass_through(in[0], owned[0]);
  Tensor result;
  if (axes.empty()) {
    result = std::move(x.t);
  } else {
    Tensor front = to_front(std::move(x.t), d);
    Device& dev = device(eqn, ctx);
    const AxisNames names(axes);
    const std::optional<IndexGroups> groups =
        groups_param(eqn, static_cast<std::size_t>(dev.axis_size(names)));
    refuse_f16_groups(eqn, groups, x.dtype);
    if (f16_fold(x.dtype)) {
      // This device's block (along dimension 0) of every member's, folded (f16_fold_members).
      const std::size_t n = static_cast<std::size_t>(dev.axis_size(names));
      const std::size_t size = front.data.size(), len = size / n;
      Shape block = front.shape;
      block[0] /= n;
      const Tensor g = dev.all_gather(front, names);
      dev.record_last_as("reduce_scatter", block, true);
      const auto k = static_cast<std::size_t>(dev.axis_index(names));
      result = from_front(f16_fold_members(g, n, size, k * len, block), d);
    } else {
      result = from_front(groups ? dev.grouped(CollectiveOp::kReduceScatter, front, names, *groups)
                                 : dev.psum_scatter(front, names),
                          d);
    }
  }
  if (!tiled) result.shape.erase(result.shape.begin() + static_cast<std::ptrdiff_t>(d));
  Value v(x.dtype, std::move(result));
  check_exact_ints(eqn, v);
  return one(std::move(v));
}

// ---- ppermute ----

std::vector<std::pair<int, int>> perm_param(const Eqn& eqn, std::size_t n) {
  if (!eqn.params.is_object() || !eqn.params.contains("perm")) fail("param 'perm' missing");
  const nlohmann::json& j = eqn.params["perm"];
  if (!j.is_array()) fail("ppermute param 'perm' must be a list of [source, destination] pairs");
  std::vector<std::pair<int, int>> perm;
  std::vector<bool> src(n, false), dst(n, false);
  for (const nlohmann::json& p : j) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer())
      fail("ppermute param 'perm' must be a list of [source, destination] pairs");
    const I64 s = p[0].is_number_unsigned() && p[0].get<std::uint64_t>() > n ? -1 : p[0].get<I64>();
    const I64 t = p[1].is_number_unsigned() && p[1].get<std::uint64_t>() > n ? -1 : p[1].get<I64>();
    if (s < 0 || t < 0 || static_cast<std::size_t>(s) >= n || static_cast<std::size_t>(t) >= n ||
        src[static_cast<std::size_t>(s)] || dst[static_cast<std::size_t>(t)]) {
      fail("ppermute sources and destinations must be unique and in [0, " + std::to_string(n) +
           "), got " + p.dump().substr(0, 40));
    }
    src[static_cast<std::size_t>(s)] = dst[static_cast<std::size_t>(t)] = true;
    perm.emplace_back(static_cast<int>(s), static_cast<int>(t));
  }
  return perm;
}

Types ppermute_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  perm_param(eqn, group_size(eqn, param_axes(eqn, "axes"), ctx));
  return {in[0]};
}

// Over several axes a ppermute's source and destination number the members in the mesh's order
// of those axes, whatever the order of `axes` (JAX 0.10.2 sorts each group's device ids:
// ppermute(x, ('model', 'data'), perm) on a mesh ('data', 'model') is ppermute(x, ('data',
// 'model'), perm)) -- unlike all_gather, psum_scatter, all_to_all and axis_index, which follow
// `axes`. The mesh is the one the program declares (PrimContext::declared_mesh).
Values ppermute_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                     PrimContext& ctx) {
  std::vector<std::string> axes = param_axes(eqn, "axes");
  Device& dev = device(eqn, ctx);
  const MeshShape& order = ctx.declared_mesh != nullptr ? *ctx.declared_mesh : dev.mesh();
  std::stable_sort(axes.begin(), axes.end(), [&](const std::string& a, const std::string& b) {
    return mesh_axis_position(order, a) < mesh_axis_position(order, b);
  });
  const AxisNames names(axes);
  const auto perm = perm_param(eqn, static_cast<std::size_t>(dev.axis_size(names)));
  return one(Value(in[0]->dtype, dev.ppermute(in[0]->t, names, perm)));
}

// ---- all_to_all: chunk j of split_axis goes to rank j; the chunks received are concatenated
// along concat_axis in source order (with axis_index_groups: within each subgroup, ranked by
// its listed order). The primitive's shapes are always those of tiled=True (JAX
// adds the expand_dims and squeeze of tiled=False as equations of their own). Built from one
// all_gather: each device keeps its chunk of every member's block. ----

Types all_to_all_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  const std::size_t n = effective_size(eqn, group_size(eqn, param_axes(eqn, "axes"), ctx));
  Shape shape = in[0].shape;
  const std::size_t s = checked_axis(eqn, "split_axis", param_int(eqn, "split_axis"), shape.size());
  const std::size_t c =
      checked_axis(eqn, "concat_axis", param_int(eqn, "concat_axis"), shape.size());
  if (shape[s] % n != 0) {
    fail("all_to_all split_axis " + std::to_string(s) + " of size " + std::to_string(shape[s]) +
         " is not divisible by the group size " + std::to_string(n));
  }
  shape[s] /= n;
  shape[c] *= n;
  return {make_type(in[0].dtype, std::move(shape))};
}

Values all_to_all_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                       PrimContext& ctx) {
  const std::vector<std::string> axes = param_axes(eqn, "axes");
  if (axes.empty()) return one(pass_through(in[0], owned[0]));
  const auto s = static_cast<std::size_t>(param_int(eqn, "split_axis"));
  const auto c = static_cast<std::size_t>(param_int(eqn, "concat_axis"));
  Device& dev = device(eqn, ctx);
  const AxisNames names(axes);
  auto n = static_cast<std::size_t>(dev.axis_size(names));
  auto rank = static_cast<std::size_t>(dev.axis_index(names));
  const std::optional<IndexGroups> groups = groups_param(eqn, n);
  const Tensor& x = in[0]->t;
  // n blocks of x's shape, in rank order; with groups, the subgroup's k blocks in its listed order,
  // this device's chunk j going to the subgroup's j-th member.
  Tensor all;
  if (groups) {
    rank = static_cast<std::size_t>(groups->position(static_cast<int>(rank)));
    n = static_cast<std::size_t>(groups->subgroup_size());
    all = dev.grouped(CollectiveOp::kAllGather, x, names, *groups);
  } else {
    all = dev.all_gather(x, names);
  }
  Shape chunk = x.shape;
  chunk[s] /= n;
  Shape shape = chunk;
  shape[c] *= n;
  dev.record_last_as("all_to_all", shape, true);  // the program called all_to_all, not all_gather
  Value out(in[0]->dtype, Tensor(shape));
  const std::vector<I64> xs = strides_of(x.shape), os = strides_of(shape);
  for (std::size_t src = 0; src < n; ++src) {
    const float* from =
        all.data.data() + src * x.size() + static_cast<I64>(rank * chunk[s]) * xs[s];
    float* to = out.t.data.data() + static_cast<I64>(src * chunk[c]) * os[c];
    copy_strided(chunk, from, xs, to, os);
  }
  return one(std::move(out));
}

// ---- axis_index ----

Types axis_index_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 0);
  const std::vector<std::string> axes = param_axes(eqn, "axes");
  if (axes.empty()) fail("axis_index needs at least one axis");
  group_size(eqn, axes, ctx);
  return {{DType::kI32, {}}};
}

Values axis_index_eval(const Eqn& eqn, std::span<Value* const>, std::span<const bool>,
                       PrimContext& ctx) {
  const std::vector<std::string> axes = param_axes(eqn, "axes");
  const int i = device(eqn, ctx).axis_index(AxisNames(axes));
  return one(Value(DType::kI32, Tensor::scalar(static_cast<float>(i))));
}

// The entries' kinds: operands that cross between devices; an all-reduce besides (each result
// depends on its own operand only: psum, pmean, pmax, pmin); an identity.
constexpr Primitive collective(decltype(Primitive::infer) infer, decltype(Primitive::eval) eval) {
  Primitive p{infer, eval};
  p.collective = true;
  return p;
}
constexpr Primitive reduction(decltype(Primitive::infer) infer, decltype(Primitive::eval) eval) {
  Primitive p = collective(infer, eval);
  p.reduction = true;
  return p;
}
constexpr Primitive identity(decltype(Primitive::infer) infer, decltype(Primitive::eval) eval) {
  Primitive p{infer, eval};
  p.identity = true;
  return p;
}

}  // namespace

std::span<const Entry> collective_entries() {
  static const Entry kEntries[] = {
      {"psum", reduction(reduce_infer<Reduce::kSum>, reduce_eval<Reduce::kSum>)},
      {"psum_invariant", reduction(reduce_infer<Reduce::kSum>, reduce_eval<Reduce::kSum>)},
      {"pmean", reduction(reduce_infer<Reduce::kMean>, reduce_eval<Reduce::kMean>)},
      {"pmax", reduction(reduce_infer<Reduce::kMax>, reduce_eval<Reduce::kMax>)},
      {"pmin", reduction(reduce_infer<Reduce::kMin>, reduce_eval<Reduce::kMin>)},
      {"pvary", identity(vary_infer, vary_eval)},
      {"pcast", identity(vary_infer, vary_eval)},
      {"all_gather", collective(all_gather_infer, all_gather_eval)},
      // all_gather(..., to='invarying'): the same gather, typed invariant (the same on every
      // device of the axes), which every device's gathered copy is.
      {"all_gather_invariant", collective(all_gather_infer, all_gather_eval)},
      {"reduce_scatter", collective(reduce_scatter_infer, reduce_scatter_eval)},
      {"psum_scatter", collective(reduce_scatter_infer, reduce_scatter_eval)},
      {"ppermute", collective(ppermute_infer, ppermute_eval)},
      {"all_to_all", collective(all_to_all_infer, all_to_all_eval)},
      {"axis_index", {&axis_index_infer, &axis_index_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
