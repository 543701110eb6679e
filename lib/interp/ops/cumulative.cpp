// cumsum, cumprod, cummax, cummin, cumlogsumexp (params `axis`, `reverse`), as JAX 0.10.2 computes
// them on CPU: JAX lowers each to a reduce_window whose window is the whole axis (padding n - 1
// before it, or after it with `reverse`), which XLA:CPU computes as ops/scan.hpp says: the
// summation order shows in float32's last bits, and these are the bits JAX gives
// (tests/jax/dtype_rules/cumsum-*).
//
// int32 cumsum and cumprod are exact (no order shows in integers): computed on int64 and refused
// beyond 2^24, which meshrun holds exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "interp/ops/scan.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

using I64 = std::int64_t;
using scan::inclusive_scan;
using scan::LogAddExpOp;
using scan::MaxOp;
using scan::MinOp;
using scan::ProdOp;
using scan::SumOp;

struct Layout {
  std::size_t axis = 0, outer = 1, len = 1, inner = 1;
};

Layout layout(const Eqn& eqn, const Shape& shape) {
  Layout l;
  l.axis = checked_axis(eqn, "axis", param_int(eqn, "axis"), shape.size());
  for (std::size_t i = 0; i < l.axis; ++i) l.outer *= shape[i];
  l.len = shape[l.axis];
  for (std::size_t i = l.axis + 1; i < shape.size(); ++i) l.inner *= shape[i];
  return l;
}

template <unsigned kDtypes>
Types cum_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  if (in[0].shape.empty()) fail(eqn.primitive + " of a scalar: it needs an axis");
  check_dtype(eqn, in[0].dtype, kDtypes);
  layout(eqn, in[0].shape);
  param_bool(eqn, "reverse", false);
  return {in[0]};
}

// The exact int32 scans: the running sum or product on int64, each result refused beyond 2^24
// (so the running value never leaves int64: 2^24 * 2^24).
template <bool kProd>
void int_scan(const Eqn& eqn, const float* x, std::size_t n, bool rev, float* out) {
  I64 acc = kProd ? 1 : 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = rev ? n - 1 - k : k;
    const auto v = static_cast<I64>(x[i]);
    acc = kProd ? acc * v : acc + v;
    out[i] = int_result(acc, eqn);
  }
}

// Issue #49: i8 ... u16 sums and products exact modulo 2^64 (which 2^bits divides), wrapped.
template <bool kProd>
void wrapped_scan(const float* x, std::size_t n, bool rev, float (*wrap)(I64), float* out) {
  std::uint64_t acc = kProd ? 1 : 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = rev ? n - 1 - k : k;
    const auto v = static_cast<std::uint64_t>(static_cast<I64>(x[i]));
    acc = kProd ? acc * v : acc + v;
    out[i] = wrap(static_cast<I64>(acc));
  }
}

// Issue #49: bf16 and f16 as XLA:CPU's reduce_window, whose f32 add or multiply is converted to
// the dtype after each step of the same tree (its HLO after optimization; JAX 0.10.2's bits on
// rows of 5 to 1000, both ways).
template <class Op>
struct Fitted {
  static constexpr float kInit = Op::kInit;
  static inline thread_local float (*fit)(float) = nullptr;
  static float f(float a, float b) { return fit(Op::f(a, b)); }
};

template <class Op>
Values cum_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                PrimContext&) {
  const Value& x = *in[0];
  const Layout l = layout(eqn, x.t.shape);
  const bool rev = param_bool(eqn, "reverse", false);
  const DType dt = x.dtype;
  std::vector<float> row(l.len), res(l.len);
  Value out(dt, Tensor(x.t.shape));
  (void)owned;
  const float* p = x.t.data.data();
  float* o = out.t.data.data();
  for (std::size_t a = 0; a < l.outer; ++a) {
    for (std::size_t c = 0; c < l.inner; ++c) {
      const float* s = p + a * l.len * l.inner + c;
      float* d = o + a * l.len * l.inner + c;
      for (std::size_t k = 0; k < l.len; ++k) row[k] = s[k * l.inner];
      constexpr bool kFolds = std::is_same_v<Op, SumOp> || std::is_same_v<Op, ProdOp>;
      if (kFolds && is_narrow(dt) && !is_float(dt)) {
        wrapped_scan<std::is_same_v<Op, ProdOp>>(row.data(), l.len, rev, dtype_info(dt).wrap,
                                                 res.data());
      } else if (kFolds && is_narrow(dt)) {
        Fitted<Op>::fit = dtype_info(dt).fit;
        inclusive_scan<Fitted<Op>>(row.data(), l.len, rev, res.data());
      } else if (dt == DType::kI32 && std::is_same_v<Op, SumOp>) {
        int_scan<false>(eqn, row.data(), l.len, rev, res.data());
      } else if (dt == DType::kI32 && std::is_same_v<Op, ProdOp>) {
        int_scan<true>(eqn, row.data(), l.len, rev, res.data());
      } else {
        inclusive_scan<Op>(row.data(), l.len, rev, res.data());
      }
      for (std::size_t k = 0; k < l.len; ++k) d[k * l.inner] = res[k];
    }
  }
  return one(std::move(out));
}

// 5 ns an element (bench/sort_bench: cumsum of 1000 x 1000 and 1 x 10^6 float32 along the rows,
// reverse, 3.3 and 4.4 ns of thread CPU time: a reverse chunk's windows fold up to 16 elements
// each) in dot_general flops (100 a nanosecond, cost.cpp); cumlogsumexp's folds an exp and a log1p
// each besides (4 + 7 ns, cost.cpp), 17 of them an element.
template <std::uint64_t kPerElement>
std::uint64_t cum_flops(const Eqn&, std::span<const ValueType> ops, std::span<const ValueType>) {
  std::uint64_t n = 1;
  for (std::size_t d : ops[0].shape) n = __builtin_mul_overflow(n, d, &n) ? UINT64_MAX : n;
  std::uint64_t r = 0;
  return __builtin_mul_overflow(n, kPerElement, &r) ? UINT64_MAX : r;
}

template <class Op, unsigned kDtypes, std::uint64_t kPerElement>
constexpr Primitive cum() {
  Primitive p{&cum_infer<kDtypes>, &cum_eval<Op>};
  p.flops = &cum_flops<kPerElement>;
  return p;
}

}  // namespace

std::span<const Entry> cumulative_entries() {
  static const Entry kEntries[] = {
      {"cumsum", cum<SumOp, kNum, 500>()},
      {"cumprod", cum<ProdOp, kNum, 500>()},
      {"cummax", cum<MaxOp, kNum, 500>()},
      {"cummin", cum<MinOp, kNum, 500>()},
      {"cumlogsumexp", cum<LogAddExpOp, kF, 500 + 17 * 1100>()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
