// The primitives that cut or pad: slice, dynamic_slice, dynamic_update_slice, pad, and
// dim_as_value. Each is one strided copy (prim::copy_strided) of the box that is kept.
#include <algorithm>
#include <cstdint>
#include <string>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

using I64 = std::int64_t;

// ---- slice ----

struct SliceSpec {
  std::vector<I64> start, step;
  Shape shape;
};

SliceSpec slice_spec(const Eqn& eqn, const Shape& op, const PrimContext& ctx) {
  SliceSpec s;
  s.start = param_indices(eqn, "start_indices", ctx);
  const std::vector<I64> limit = param_indices(eqn, "limit_indices", ctx);
  const bool has_strides =
      eqn.params.is_object() && eqn.params.contains("strides") && !eqn.params["strides"].is_null();
  s.step = has_strides ? param_indices(eqn, "strides", ctx) : std::vector<I64>(op.size(), 1);
  if (s.start.size() != op.size() || limit.size() != op.size() || s.step.size() != op.size()) {
    fail("slice start_indices, limit_indices and strides must have the operand's rank " +
         std::to_string(op.size()));
  }
  for (std::size_t i = 0; i < op.size(); ++i) {
    const auto dim = static_cast<I64>(op[i]);
    if (s.start[i] < 0 || s.start[i] > limit[i] || limit[i] > dim || s.step[i] < 1) {
      fail(
          "slice indices must satisfy 0 <= start <= limit <= shape and strides >= 1, got "
          "start_indices " +
          ints_str(s.start) + ", limit_indices " + ints_str(limit) + ", strides " +
          ints_str(s.step) + " for operand shape " + dims_str(op));
    }
    s.shape.push_back(
        static_cast<std::size_t>((limit[i] - s.start[i] + s.step[i] - 1) / s.step[i]));
  }
  return s;
}

Types slice_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  return {{in[0].dtype, slice_spec(eqn, in[0].shape, ctx).shape}};
}

// out = the box of x at `start` with steps `step` and out's shape.
Value cut(const Value& x, const std::vector<I64>& start, const std::vector<I64>& step,
          Shape shape) {
  const std::vector<I64> xs = strides_of(x.t.shape);
  I64 offset = 0;
  std::vector<I64> src(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    offset += start[i] * xs[i];
    src[i] = xs[i] * step[i];
  }
  Value out(x.dtype, Tensor(shape));
  copy_strided(shape, x.t.data.data() + offset, src, out.t.data.data(), strides_of(shape));
  return out;
}

Values slice_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                  PrimContext& ctx) {
  SliceSpec s = slice_spec(eqn, in[0]->t.shape, ctx);
  return one(cut(*in[0], s.start, s.step, std::move(s.shape)));
}

// ---- dynamic_slice, dynamic_update_slice: start indices are operands, clamped as XLA does ----

void check_indices(const Eqn& eqn, std::span<const ValueType> idx, std::size_t rank) {
  if (idx.size() != rank) {
    fail(eqn.primitive + " takes one start index per operand dimension (" + std::to_string(rank) +
         "), got " + std::to_string(idx.size()));
  }
  for (const ValueType& t : idx) {
    if (t.dtype != DType::kI32 || !t.shape.empty())
      fail(eqn.primitive + " start indices must be int32 scalars, got " + type_str(t));
  }
}

std::vector<I64> clamped_starts(std::span<Value* const> idx, const Shape& op, const Shape& box) {
  std::vector<I64> start(op.size());
  for (std::size_t i = 0; i < op.size(); ++i) {
    const auto v = static_cast<I64>(idx[i]->t.data[0]);
    start[i] = std::clamp<I64>(v, 0, static_cast<I64>(op[i] - box[i]));
  }
  return start;
}

Types dynamic_slice_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1, true);
  const Shape& op = in[0].shape;
  check_indices(eqn, in.subspan(1), op.size());
  Shape sizes = param_shape(eqn, "slice_sizes", ctx);
  if (sizes.size() != op.size()) fail("dynamic_slice slice_sizes must have the operand's rank");
  for (std::size_t i = 0; i < op.size(); ++i) {
    if (sizes[i] > op[i]) {
      fail("slice slice_sizes must be less than or equal to operand shape, got slice_sizes " +
           dims_str(sizes) + " for operand shape " + dims_str(op));
    }
  }
  return {{in[0].dtype, sizes}};
}

Values dynamic_slice_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                          PrimContext& ctx) {
  const Shape sizes = param_shape(eqn, "slice_sizes", ctx);
  const std::vector<I64> start = clamped_starts(in.subspan(1), in[0]->t.shape, sizes);
  return one(cut(*in[0], start, std::vector<I64>(sizes.size(), 1), sizes));
}

Types dynamic_update_slice_infer(const Eqn& eqn, std::span<const ValueType> in,
                                 const PrimContext&) {
  expect_operands(eqn, in.size(), 2, true);
  const Shape& op = in[0].shape;
  const Shape& up = in[1].shape;
  check_indices(eqn, in.subspan(2), op.size());
  if (in[1].dtype != in[0].dtype) fail("dynamic_update_slice update must have the operand's dtype");
  bool ok = up.size() == op.size();
  for (std::size_t i = 0; ok && i < op.size(); ++i) ok = up[i] <= op[i];
  if (!ok) {
    fail("dynamic_update_slice update shape must be smaller than operand shape, got update shape " +
         dims_str(up) + " for operand shape " + dims_str(op));
  }
  return {in[0]};
}

Values dynamic_update_slice_eval(const Eqn&, std::span<Value* const> in,
                                 std::span<const bool> owned, PrimContext&) {
  const Value& up = *in[1];
  const std::vector<I64> start = clamped_starts(in.subspan(2), in[0]->t.shape, up.t.shape);
  Value out = pass_through(in[0], owned[0]);
  const std::vector<I64> os = strides_of(out.t.shape);
  I64 offset = 0;
  for (std::size_t i = 0; i < os.size(); ++i) offset += start[i] * os[i];
  copy_strided(up.t.shape, up.t.data.data(), strides_of(up.t.shape), out.t.data.data() + offset,
               os);
  return one(std::move(out));
}

// ---- pad: lo/hi may be negative (they crop), interior >= 0 ----

struct PadSpec {
  std::vector<I64> lo, hi, interior;
  Shape shape;
};

PadSpec pad_spec(const Eqn& eqn, const Shape& op, const PrimContext& ctx) {
  if (!eqn.params.is_object() || !eqn.params.contains("padding_config"))
    fail("param 'padding_config' missing");
  const nlohmann::json& cfg = eqn.params["padding_config"];
  if (!cfg.is_array() || cfg.size() != op.size())
    fail("pad param 'padding_config' must hold one [lo, hi, interior] per operand dimension (" +
         std::to_string(op.size()) + ")");
  PadSpec p;
  for (std::size_t i = 0; i < op.size(); ++i) {
    const nlohmann::json& e = cfg[i];
    if (!e.is_array() || e.size() != 3)
      fail("pad param 'padding_config' entries are [lo, hi, interior]");
    I64 v[3];
    for (std::size_t k = 0; k < 3; ++k) {
      if (!e[k].is_number_integer() && !e[k].is_string())
        fail("pad param 'padding_config' entries must be integers or dimension expressions");
      v[k] = index_of(e[k], "padding_config", ctx);
    }
    if (v[2] < 0) fail("pad interior padding must be nonnegative, got " + std::to_string(v[2]));
    const auto d = static_cast<I64>(op[i]);
    // lo + hi + d + (d - 1) * interior, each step checked: 2^24 * 2^40 wraps int64 to 0.
    const std::string what = "pad: the size of dimension " + std::to_string(i) + " after padding";
    const I64 size = checked_add(checked_add(checked_add(v[0], v[1], what), d, what),
                                 d > 0 ? checked_mul(d - 1, v[2], what) : 0, what);
    if (size < 0) {
      fail("dimension size after padding is negative, got " + std::to_string(size) +
           " for dimension " + std::to_string(i));
    }
    p.lo.push_back(v[0]);
    p.hi.push_back(v[1]);
    p.interior.push_back(v[2]);
    p.shape.push_back(static_cast<std::size_t>(size));
  }
  return p;
}

Types pad_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 2);
  if (in[1].dtype != in[0].dtype || !in[1].shape.empty())
    fail("pad padding value must be a scalar of the operand's dtype, got " + type_str(in[1]));
  return {make_type(in[0].dtype, pad_spec(eqn, in[0].shape, ctx).shape)};
}

Values pad_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                PrimContext& ctx) {
  const Value& x = *in[0];
  const PadSpec p = pad_spec(eqn, x.t.shape, ctx);
  Value out(x.dtype, Tensor(p.shape));
  std::fill(out.t.data.begin(), out.t.data.end(), in[1]->t.data[0]);
  // The operand elements that land inside: i in [i0, i1) per dimension.
  const std::vector<I64> xs = strides_of(x.t.shape), os = strides_of(p.shape);
  Shape box(x.t.rank());
  I64 src_off = 0, dst_off = 0;
  std::vector<I64> dst(x.t.rank());
  for (std::size_t k = 0; k < x.t.rank(); ++k) {
    const I64 step = p.interior[k] + 1;
    const auto n = static_cast<I64>(x.t.shape[k]);
    const auto size = static_cast<I64>(p.shape[k]);
    I64 i0 = p.lo[k] >= 0 ? 0 : (-p.lo[k] + step - 1) / step;  // first i with lo + i*step >= 0
    I64 i1 = size - p.lo[k] <= 0 ? 0 : std::min(n, (size - p.lo[k] - 1) / step + 1);
    if (i1 < i0) i1 = i0;
    box[k] = static_cast<std::size_t>(i1 - i0);
    src_off += i0 * xs[k];
    dst_off += (p.lo[k] + i0 * step) * os[k];
    dst[k] = os[k] * step;
  }
  if (shape_size(box) > 0)
    copy_strided(box, x.t.data.data() + src_off, xs, out.t.data.data() + dst_off, dst);
  return one(std::move(out));
}

// ---- dim_as_value ----

Types dim_as_value_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 0);
  int_result(param_dim(eqn, "dim", ctx), eqn);
  return {{DType::kI32, {}}};
}

Values dim_as_value_eval(const Eqn& eqn, std::span<Value* const>, std::span<const bool>,
                         PrimContext& ctx) {
  return one(Value(DType::kI32, Tensor::scalar(int_result(param_dim(eqn, "dim", ctx), eqn))));
}

}  // namespace

std::span<const Entry> slicing_entries() {
  static const Entry kEntries[] = {
      {"slice", {&slice_infer, &slice_eval}},
      {"dynamic_slice", {&dynamic_slice_infer, &dynamic_slice_eval}},
      {"dynamic_update_slice", {&dynamic_update_slice_infer, &dynamic_update_slice_eval}},
      {"pad", {&pad_infer, &pad_eval}},
      {"dim_as_value", {&dim_as_value_infer, &dim_as_value_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
