// reduce_sum/max/min/prod/and/or and argmax/argmin. Each output element folds its reduced
// elements in index order (row-major over the reduced axes), one sequential float chain, as
// meshrun's other kernels do; the input is read once, in row-major order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

using I64 = std::int64_t;

struct Sum {
  static constexpr float kInit = 0.0f;
  static float f(float acc, float x) { return acc + x; }
};
struct Prod {
  static constexpr float kInit = 1.0f;
  static float f(float acc, float x) { return acc * x; }
};
// max(acc, x) as XLA's reducer: NaN propagates, -0 < +0.
struct MaxR {
  static constexpr float kInit = -std::numeric_limits<float>::infinity();
  static float f(float a, float b) { return max_ieee(a, b); }
};
struct MinR {
  static constexpr float kInit = std::numeric_limits<float>::infinity();
  static float f(float a, float b) { return min_ieee(a, b); }
};
// On bool: and is min with identity true, or is max with identity false.
struct AndR {
  static constexpr float kInit = 1.0f;
  static float f(float a, float b) { return a < b ? a : b; }
};
struct OrR {
  static constexpr float kInit = 0.0f;
  static float f(float a, float b) { return a > b ? a : b; }
};

// Issue #49: XLA:CPU's TreeReductionRewriter (window 32), what it does to a reduce of bf16 or f16
// (its HLO after optimization): when a reduced axis has more than 32 elements, a reduce_window
// first -- on each reduced axis of n > 32 a window of 32 (stride 32, the axis padded with the
// identity to a multiple of 32: padding / 2 before, the rest after), on each other reduced axis
// a window of the whole axis -- then the reduce of the windows' results, rewritten the same way
// again while an axis is longer than 32. A window, and a reduce no axis of which is longer than
// 32, folds its elements in row-major order from the identity, each step rounded (XLA's reducer
// converts after each add or multiply). JAX 0.10.2's bits on every shape tried: rows of 33 to
// 5000, one to three reduced axes, sums and products (tests/jax/dtype_rules reduce_sum-*); for
// f16 only while at most one reduced axis is longer than 32 (with two, XLA:CPU's f16 code --
// which it runs in f16, not promoted -- gave other bits on 40 x 40 and 33 x 33: refused).
constexpr std::size_t kTreeWindow = 32;

// The fold of `block`, the elements of one result over the reduced axes of sizes `dims`
// (row-major), as the rewritten reduce computes it.
template <bool kSum>
float tree_fold(std::vector<float> block, std::vector<std::size_t> dims, float (*fit)(float)) {
  const float init = kSum ? 0.0f : 1.0f;
  const auto fold = [&](float a, float x) { return fit(kSum ? a + x : a * x); };
  while (true) {
    bool long_axis = false;
    for (std::size_t d : dims) long_axis = long_axis || d > kTreeWindow;
    if (!long_axis) {
      float a = init;
      for (float x : block) a = fold(a, x);
      return a;
    }
    const std::size_t rank = dims.size();
    std::vector<std::size_t> win(rank), lo(rank), outd(rank);
    for (std::size_t k = 0; k < rank; ++k) {
      if (dims[k] <= kTreeWindow) {
        win[k] = dims[k];
        lo[k] = 0;
        outd[k] = 1;
      } else {
        const std::size_t padded = (dims[k] + kTreeWindow - 1) / kTreeWindow * kTreeWindow;
        win[k] = kTreeWindow;
        lo[k] = (padded - dims[k]) / 2;
        outd[k] = padded / kTreeWindow;
      }
    }
    std::size_t outs = 1, wsize = 1;
    for (std::size_t k = 0; k < rank; ++k) {
      outs *= outd[k];
      wsize *= win[k];
    }
    std::vector<float> next(outs);
    std::vector<std::size_t> o(rank, 0), w(rank, 0);
    for (std::size_t at = 0; at < outs; ++at) {
      // o: the window's place (row-major over outd); its elements row-major over win
      std::size_t rest = at;
      for (std::size_t k = rank; k-- > 0;) {
        o[k] = rest % outd[k];
        rest /= outd[k];
      }
      float a = init;
      for (std::size_t e = 0; e < wsize; ++e) {
        std::size_t r = e, src = 0;
        bool pad = false;
        for (std::size_t k = rank; k-- > 0;) {
          w[k] = r % win[k];
          r /= win[k];
        }
        for (std::size_t k = 0; k < rank; ++k) {
          const std::size_t q = o[k] * win[k] + w[k];  // in the padded axis
          pad = pad || q < lo[k] || q >= lo[k] + dims[k];
          src = src * dims[k] + (q - lo[k]);
        }
        a = fold(a, pad ? init : block[src]);
      }
      next[at] = a;
    }
    block = std::move(next);
    dims = std::move(outd);
  }
}

// kFolds: reduce_sum and reduce_prod, whose bf16 and f16 results depend on the order.
template <unsigned kDtypes, bool kFolds = false>
std::vector<ValueType> reduce_infer(const Eqn& eqn, std::span<const ValueType> in,
                                    const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  const DType t = in[0].dtype;
  check_dtype(eqn, t, kDtypes);
  std::vector<bool> keep;
  Shape out = reduced_shape(in[0].shape, param_axis_list(eqn, "axes", in[0].shape.size()), &keep);
  if (kFolds && t == DType::kF16) {
    std::size_t long_axes = 0;
    for (std::size_t i = 0; i < keep.size(); ++i)
      if (!keep[i] && in[0].shape[i] > kTreeWindow) ++long_axes;
    if (long_axes > 1) {
      fail(eqn.primitive + " of float16 over " + std::to_string(long_axes) +
           " axes of more than 32 elements: XLA:CPU's f16 order there is not meshrun's (reduce "
           "one of them at a time, or convert to float32 first, as jnp.sum does)");
    }
  }
  return {{t, std::move(out)}};
}

// reduce_sum and reduce_prod of bf16 ... u16 (issue #49), redone over the float32 fold: bf16 and
// f16 as XLA:CPU's reducer, whose f32 add or multiply is converted to the dtype after each step
// (its HLO after optimization), folding each output's elements in index order as the float32
// path; i8 ... u16 exactly (modulo 2^64, which 2^bits divides) and wrapped once.
template <bool kSum>
void narrow_fold(const Value& x, const std::vector<bool>& keep, Value& out) {
  const float* p = x.t.data.data();
  if (is_float(x.dtype)) {
    float (*fit)(float) = dtype_info(x.dtype).fit;
    // XLA's TreeReductionRewriter (tree_fold): each result's elements gathered in row-major
    // order over the reduced axes, then folded as the rewritten reduce folds them.
    std::vector<std::size_t> dims;
    bool long_axis = false;
    for (std::size_t i = 0; i < keep.size(); ++i) {
      if (keep[i]) continue;
      dims.push_back(x.t.shape[i]);
      long_axis = long_axis || x.t.shape[i] > kTreeWindow;
    }
    if (long_axis) {
      std::vector<std::vector<float>> blocks(out.t.size());
      walk(x.t.shape, keep, [&](std::size_t i, std::size_t at) { blocks[at].push_back(p[i]); });
      for (std::size_t at = 0; at < blocks.size(); ++at)
        out.t.data[at] = tree_fold<kSum>(std::move(blocks[at]), dims, fit);
      return;
    }
    for (float& v : out.t.data) v = kSum ? 0.0f : 1.0f;
    walk(x.t.shape, keep, [&](std::size_t i, std::size_t at) {
      float& a = out.t.data[at];
      a = fit(kSum ? a + p[i] : a * p[i]);
    });
    return;
  }
  std::vector<std::uint64_t> acc(out.t.size(), kSum ? 0 : 1);
  walk(x.t.shape, keep, [&](std::size_t i, std::size_t at) {
    const auto v = static_cast<std::uint64_t>(static_cast<I64>(p[i]));
    acc[at] = kSum ? acc[at] + v : acc[at] * v;
  });
  float (*wrap)(I64) = dtype_info(x.dtype).wrap;
  for (std::size_t k = 0; k < acc.size(); ++k) out.t.data[k] = wrap(static_cast<I64>(acc[k]));
}

template <class Op>
std::vector<Value> reduce_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                               PrimContext&) {
  const Value& x = *in[0];
  const Shape& xs = x.t.shape;
  std::vector<bool> keep;
  const Shape shape = reduced_shape(xs, param_axis_list(eqn, "axes", xs.size()), &keep);
  Value out(x.dtype, Tensor(shape));
  float* o = out.t.data.data();
  // The identity in the operand's dtype, as JAX's: on bool, max starts from False and min from
  // True (an empty bool axis is False / True, not -inf / +inf).
  float init = Op::kInit;
  if (x.dtype == DType::kBool) {
    if constexpr (std::is_same_v<Op, MaxR>) init = 0.0f;
    if constexpr (std::is_same_v<Op, MinR>) init = 1.0f;
  }
  for (float& v : out.t.data) v = init;
  const std::size_t n = x.t.size();
  const float* p = x.t.data.data();
  if (n > 0) {
    const std::size_t rank = xs.size();
    if (rank == 0) {
      o[0] = Op::f(o[0], p[0]);
    } else {
      // The output offset of each input index: the kept axes' strides, 0 on the reduced ones.
      std::vector<I64> ds(rank, 0);
      I64 m = 1;
      for (std::size_t i = rank; i-- > 0;) {
        if (keep[i]) {
          ds[i] = m;
          m *= static_cast<I64>(xs[i]);
        }
      }
      const std::size_t inner = xs[rank - 1];
      std::vector<std::size_t> idx(rank, 0);
      I64 dof = 0;
      for (std::size_t base = 0; base < n; base += inner) {
        const float* s = p + base;
        float* d = o + dof;
        if (ds[rank - 1] == 0) {
          float acc = d[0];
          for (std::size_t j = 0; j < inner; ++j) acc = Op::f(acc, s[j]);
          d[0] = acc;
        } else {
          for (std::size_t j = 0; j < inner; ++j) d[j] = Op::f(d[j], s[j]);
        }
        for (std::size_t k = rank - 1; k-- > 0;) {
          if (++idx[k] < xs[k]) {
            dof += ds[k];
            break;
          }
          dof -= ds[k] * static_cast<I64>(idx[k] - 1);
          idx[k] = 0;
        }
      }
    }
  }
  if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>) {
    if (is_narrow(x.dtype)) narrow_fold<std::is_same_v<Op, Sum>>(x, keep, out);
  }
  if (is_narrow(x.dtype) && !is_float(x.dtype)) {
    // i8 ... u16: an empty axis's max or min is the dtype's lowest or highest, as JAX's identity.
    const DTypeInfo& d = dtype_info(x.dtype);
    const float lo = d.kind == DKind::kSigned ? -std::ldexp(1.0f, d.bits - 1) : 0.0f;
    const float hi =
        d.kind == DKind::kSigned ? std::ldexp(1.0f, d.bits - 1) - 1 : std::ldexp(1.0f, d.bits) - 1;
    for (float& v : out.t.data)
      if (std::isinf(v)) v = v < 0 ? lo : hi;
  }
  if (x.dtype == DType::kI32) {
    if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>) {
      // JAX wraps int32 sums and products past 2^31; meshrun holds integers in float32, exact up
      // to 2^24: redo them on int64 and refuse what float32 cannot hold, naming the true result
      // as int_result does (a sum of at most 2^32 values of at most 2^24 fits int64). A product
      // beyond int64 is held as its sign only (`wide`: +-1), sticky unless a 0 comes; one clamped
      // at 2^24 + 1 was named so in the message (16! as "16777217").
      constexpr bool kSum = std::is_same_v<Op, Sum>;
      std::vector<I64> acc(out.t.size(), kSum ? 0 : 1);
      std::vector<signed char> wide(kSum ? 0 : out.t.size(), 0);
      walk(xs, keep, [&](std::size_t i, std::size_t at) {
        const auto v = static_cast<I64>(p[i]);
        if (kSum) {
          acc[at] += v;
        } else if (v == 0) {
          acc[at] = 0;
          wide[at] = 0;
        } else if (wide[at] != 0) {
          if (v < 0) wide[at] = static_cast<signed char>(-wide[at]);
        } else if (I64 r = 0; __builtin_mul_overflow(acc[at], v, &r)) {
          wide[at] = (acc[at] < 0) == (v < 0) ? 1 : -1;
        } else {
          acc[at] = r;
        }
      });
      for (std::size_t k = 0; k < acc.size(); ++k) {
        if (!kSum && wide[k] != 0) {
          fail(eqn.primitive + ": the integer result is beyond " + (wide[k] < 0 ? "-" : "") +
               "2^63, beyond 2^24, which meshrun holds exactly");
        }
        out.t.data[k] = int_result(acc[k], eqn);
      }
    }
    for (float v : out.t.data) {
      if (!std::isfinite(v)) {
        fail(eqn.primitive + " of an empty int32 axis: JAX's identity " +
             (v < 0 ? "-2147483648" : "2147483647") +
             " is beyond 2^24, which meshrun holds "
             "exactly");
      }
    }
  }
  std::vector<Value> r;
  r.push_back(std::move(out));
  return r;
}

// ---- argmax, argmin: the first index of the extremum; a NaN counts as the extremum ----

std::size_t arg_axis(const Eqn& eqn, const Shape& shape) {
  const std::vector<std::size_t> axes = param_axis_list(eqn, "axes", shape.size());
  if (axes.size() != 1) fail(eqn.primitive + " takes exactly one axis in 'axes'");
  if (shape[axes[0]] == 0) fail(eqn.primitive + " of an empty axis");
  return axes[0];
}

std::vector<ValueType> arg_infer(const Eqn& eqn, std::span<const ValueType> in,
                                 const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  if (in[0].dtype == DType::kBool) fail(eqn.primitive + " does not accept dtype bool");
  const std::size_t axis = arg_axis(eqn, in[0].shape);
  if (param_dtype(eqn, "index_dtype") != DType::kI32)
    fail(eqn.primitive + " index_dtype must be i32");
  if (in[0].shape[axis] > static_cast<std::size_t>(kMaxInt))
    fail(eqn.primitive + " axis beyond 2^24");
  Shape out = in[0].shape;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  return {{DType::kI32, out}};
}

template <bool kMax>
std::vector<Value> arg_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                            PrimContext&) {
  const Value& x = *in[0];
  const Shape& xs = x.t.shape;
  const std::size_t axis = arg_axis(eqn, xs);
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= xs[i];
  for (std::size_t i = axis + 1; i < xs.size(); ++i) inner *= xs[i];
  const std::size_t len = xs[axis];
  Shape shape = xs;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  Value out(DType::kI32, Tensor(shape));
  const float* p = x.t.data.data();
  for (std::size_t a = 0; a < outer; ++a) {
    for (std::size_t c = 0; c < inner; ++c) {
      const float* s = p + a * len * inner + c;
      float best = s[0];
      std::size_t at = 0;
      for (std::size_t k = 1; k < len; ++k) {
        const float v = s[k * inner];
        const bool better = kMax ? v > best : v < best;
        if ((better && !std::isnan(best)) || (std::isnan(v) && !std::isnan(best))) {
          best = v;
          at = k;
        }
      }
      out.t.data[a * inner + c] = static_cast<float>(at);
    }
  }
  std::vector<Value> r;
  r.push_back(std::move(out));
  return r;
}

}  // namespace

std::span<const Entry> reduction_entries() {
  static const Entry kEntries[] = {
      {"reduce_sum", {&reduce_infer<kF | kI, true>, &reduce_eval<Sum>}},
      {"reduce_prod", {&reduce_infer<kF | kI, true>, &reduce_eval<Prod>}},
      {"reduce_max", {&reduce_infer<kF | kI | kB>, &reduce_eval<MaxR>}},
      {"reduce_min", {&reduce_infer<kF | kI | kB>, &reduce_eval<MinR>}},
      {"reduce_and", {&reduce_infer<kB>, &reduce_eval<AndR>}},
      {"reduce_or", {&reduce_infer<kB>, &reduce_eval<OrR>}},
      {"argmax", {&arg_infer, &arg_eval<true>}},
      {"argmin", {&arg_infer, &arg_eval<false>}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
