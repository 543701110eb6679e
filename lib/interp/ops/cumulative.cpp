// cumsum, cumprod, cummax, cummin, cumlogsumexp (params `axis`, `reverse`), as JAX 0.10.2 computes
// them on CPU: JAX lowers each to a reduce_window whose window is the whole axis (padding n - 1
// before it, or after it with `reverse`), and XLA:CPU's ReduceWindowRewriter turns a window longer
// than 16 into a tree: the axis padded with the identity to a multiple of 16, each chunk of 16
// scanned on its own, the chunks' totals scanned exclusively (by the same rewrite when there are
// more than 16 of them), and each element combined as f(its chunk's scan, its chunk's prefix).
// A window reduction folds its window in index order from the identity, `acc = f(acc, x)`, so a
// reverse scan folds x[i], x[i+1], ... left to right, not from the end. The summation order shows
// in float32's last bits: these are the bits JAX gives (tests/jax/dtype_rules/cumsum-*).
//
// int32 cumsum and cumprod are exact (no order shows in integers): computed on int64 and refused
// beyond 2^24, which meshrun holds exactly.
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

// XLA:CPU's ReduceWindowRewriter base length (JAX 0.10.2: a cumsum of 17 or more elements is not
// the sequential sum; the tree below with 16 gives JAX's bits on every length tried, up to 5000).
constexpr std::size_t kBase = 16;

struct SumOp {
  static constexpr float kInit = 0.0f;
  static float f(float a, float b) { return a + b; }
};
struct ProdOp {
  static constexpr float kInit = 1.0f;
  static float f(float a, float b) { return a * b; }
};
struct MaxOp {
  static constexpr float kInit = -std::numeric_limits<float>::infinity();
  static float f(float a, float b) { return max_ieee(a, b); }
};
struct MinOp {
  static constexpr float kInit = std::numeric_limits<float>::infinity();
  static float f(float a, float b) { return min_ieee(a, b); }
};
// jax._src.lax.other.logaddexp on float32: amax + log1p(exp(-|x - y|)), or x + y where x - y is
// NaN (NaNs, or infinities of one sign).
struct LogAddExpOp {
  static constexpr float kInit = -std::numeric_limits<float>::infinity();
  static float f(float a, float b) {
    const float amax = max_ieee(a, b);
    const float delta = a - b;
    if (std::isnan(delta)) return a + b;
    return amax + f32::log1p(f32::exp(-std::fabs(delta)));
  }
};

// The window reduction of a row of n <= kBase elements whose window is the whole row:
// inclusive (out[i] folds x[0..i], or x[i..n-1] with `rev`) or exclusive (x[0..i-1], x[i+1..]).
template <class Op>
void direct_scan(const float* x, std::size_t n, bool rev, bool exclusive, float* out) {
  if (!rev) {
    float acc = Op::kInit;
    for (std::size_t i = 0; i < n; ++i) {
      if (exclusive) {
        out[i] = acc;
        acc = Op::f(acc, x[i]);
      } else {
        acc = Op::f(acc, x[i]);
        out[i] = acc;
      }
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    float acc = Op::kInit;
    for (std::size_t k = exclusive ? i + 1 : i; k < n; ++k) acc = Op::f(acc, x[k]);
    out[i] = acc;
  }
}

template <class Op>
void exclusive_scan(const float* x, std::size_t n, bool rev, float* out);

// The inclusive scan of a row as XLA:CPU computes it (the file's comment).
template <class Op>
void inclusive_scan(const float* x, std::size_t n, bool rev, float* out) {
  if (n <= kBase) {
    direct_scan<Op>(x, n, rev, false, out);
    return;
  }
  const std::size_t chunks = (n + kBase - 1) / kBase;
  std::vector<float> padded(chunks * kBase, Op::kInit), scanned(chunks * kBase);
  std::copy(x, x + n, padded.begin());
  std::vector<float> ends(chunks), prefix(chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    float* s = scanned.data() + c * kBase;
    direct_scan<Op>(padded.data() + c * kBase, kBase, rev, false, s);
    ends[c] = rev ? s[0] : s[kBase - 1];
  }
  exclusive_scan<Op>(ends.data(), chunks, rev, prefix.data());
  for (std::size_t i = 0; i < n; ++i) out[i] = Op::f(scanned[i], prefix[i / kBase]);
}

template <class Op>
void exclusive_scan(const float* x, std::size_t n, bool rev, float* out) {
  if (n <= kBase) {
    direct_scan<Op>(x, n, rev, true, out);
    return;
  }
  // The rewrite of an exclusive window: the inclusive scan, shifted by one, the identity in the
  // place left empty.
  std::vector<float> inc(n);
  inclusive_scan<Op>(x, n, rev, inc.data());
  if (!rev) {
    out[0] = Op::kInit;
    for (std::size_t i = 1; i < n; ++i) out[i] = inc[i - 1];
  } else {
    for (std::size_t i = 0; i + 1 < n; ++i) out[i] = inc[i + 1];
    out[n - 1] = Op::kInit;
  }
}

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
      if (dt == DType::kI32 && std::is_same_v<Op, SumOp>) {
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

// Each element is folded about 17 times (a reverse chunk folds up to 16 elements per output,
// the tree adds one combine per level); cumlogsumexp's fold is an exp and a log1p (4 + 7 ns).
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
      {"cumsum", cum<SumOp, kNum, 17>()},
      {"cumprod", cum<ProdOp, kNum, 17>()},
      {"cummax", cum<MaxOp, kNum, 17>()},
      {"cummin", cum<MinOp, kNum, 17>()},
      {"cumlogsumexp", cum<LogAddExpOp, kF, 17 * 1100>()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
