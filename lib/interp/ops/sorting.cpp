// sort (several operands, `dimension`, `num_keys`, `is_stable`; jnp.sort and jnp.argsort are
// sorts, argsort's second operand an iota), top_k and approx_top_k, as JAX 0.10.2 computes them
// on CPU.
//
// sort: JAX's comparator orders its keys lexicographically, each float key canonicalized first
// (-0.0 as +0.0, every NaN as one NaN) and compared in total order: -inf < ... < 0 < ... < inf <
// NaN, -0.0 and 0.0 equal (kept in their order with is_stable), every NaN equal and last. XLA:CPU
// sorts with std::stable_sort, or std::sort when is_stable is false: the order of equal keys is
// then std::sort's, which the same call reproduces (libstdc++'s introsort, deterministic).
//
// top_k: the k largest along `axis` (the last when absent), largest first, in the total order of
// the float's bits (-NaN < -inf < ... < -0.0 < +0.0 < ... < inf < +NaN: XLA:CPU's TopK compares the
// bits as integers), equal ones lowest index first; the indices int32.
//
// approx_top_k (lax.approx_max_k / approx_min_k): exact on CPU, where JAX's fallback is a sort of
// the row and its iota by the plain float comparison `a > b` (`a < b` for min) and a slice, which
// XLA:CPU rewrites: k = 1 to a reduce, 1 < k < n of a max to its TopK (top_k's order); otherwise
// std::sort by a comparison that is no total order (-0.0 equals 0.0, a NaN compares false):
// ops/guarded_sort.hpp is libstdc++'s std::sort step for step, so the order is XLA's, NaNs
// included, except where std::sort would read outside the row (it stops at the row's ends). JAX
// 0.10.2 gave these indices on all of 228 rows of 1 to 300 elements, every k, max and min, with
// NaNs of both signs, -0.0 and ties.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "interp/ops/guarded_sort.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

using U32 = std::uint32_t;
using U64 = std::uint64_t;

// A float's bits as an unsigned integer in the float's total order.
inline U32 total_order_key(float v) {
  const U32 u = std::bit_cast<U32>(v);
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}
// JAX's sort key: -0.0 as +0.0, every NaN as the greatest.
inline U32 sort_key(float v) {
  if (std::isnan(v)) return 0xFFFFFFFFu;
  if (v == 0.0f) return 0x80000000u;
  return total_order_key(v);
}
// A key of dtype t: a uint32's slot holds its bits (ir.hpp), ordered as unsigned integers.
inline U32 sort_key(DType t, float v) { return t == DType::kU32 ? slot_to_u32(v) : sort_key(v); }

struct Rows {
  std::size_t axis = 0, outer = 1, len = 1, inner = 1;
  std::size_t at(std::size_t row, std::size_t k) const {
    return (row / inner) * len * inner + row % inner + k * inner;
  }
  std::size_t count() const { return outer * inner; }
};

Rows rows_of(const Shape& shape, std::size_t axis) {
  Rows r;
  r.axis = axis;
  for (std::size_t i = 0; i < axis; ++i) r.outer *= shape[i];
  r.len = shape[axis];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) r.inner *= shape[i];
  return r;
}

// n log2(len) element steps at `ns` nanoseconds each, in dot_general flops (100 a nanosecond:
// cost.cpp); saturating.
std::uint64_t sort_cost(const Shape& shape, std::size_t axis, std::uint64_t ns) {
  std::uint64_t n = 1;
  for (std::size_t d : shape) n = __builtin_mul_overflow(n, d, &n) ? UINT64_MAX : n;
  const std::uint64_t len = shape.empty() ? 1 : shape[axis];
  const auto levels = static_cast<std::uint64_t>(std::bit_width(len)) + 1;
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(n, levels, &r) || __builtin_mul_overflow(r, ns * 100, &r))
    return UINT64_MAX;
  return r;
}

// ---- sort ----

struct SortParams {
  std::size_t dimension = 0, num_keys = 1;
  bool stable = true;
};

SortParams sort_params(const Eqn& eqn, std::size_t operands, std::size_t rank) {
  SortParams p;
  if (rank == 0) fail("sort of a scalar: it needs a dimension");
  p.dimension = checked_axis(eqn, "dimension", param_int(eqn, "dimension"), rank);
  const std::int64_t nk = param_int(eqn, "num_keys");
  if (nk < 1 || static_cast<std::uint64_t>(nk) > operands) {
    fail("sort param 'num_keys': " + std::to_string(nk) + " keys of " + std::to_string(operands) +
         " operands (1 to the number of operands)");
  }
  p.num_keys = static_cast<std::size_t>(nk);
  p.stable = param_bool(eqn, "is_stable", false);
  return p;
}

Types sort_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1, true);
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != in[0].shape) {
      fail("sort: operand " + std::to_string(i) + " has shape " + dims_str(in[i].shape) +
           ", operand 0 " + dims_str(in[0].shape) + " (every operand of one shape)");
    }
  }
  sort_params(eqn, in.size(), in[0].shape.size());
  return {in.begin(), in.end()};
}

std::uint64_t sort_flops(const Eqn& eqn, std::span<const ValueType> ops,
                         std::span<const ValueType>) {
  const SortParams p = sort_params(eqn, ops.size(), ops[0].shape.size());
  // 10 ns an element and level, and 2 for each further operand (bench/sort_bench: 1 x 10^6
  // float32, 73 ns an element of thread CPU time over 20 levels, 3.7 a level), so that a sort of
  // 10^9 elements (31 levels, 3e13 flops) is refused by the default budget before it runs.
  return sort_cost(ops[0].shape, p.dimension, 10 + 2 * (ops.size() - 1));
}

Values sort_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Shape& shape = in[0]->t.shape;
  const SortParams p = sort_params(eqn, in.size(), shape.size());
  const Rows r = rows_of(shape, p.dimension);
  Values out;
  for (const Value* v : in) out.emplace_back(v->dtype, Tensor(shape));
  std::vector<U64> packed(r.len);
  std::vector<U32> perm(r.len), keys(p.num_keys * r.len);
  for (std::size_t row = 0; row < r.count(); ++row) {
    if (p.num_keys == 1) {
      const float* x = in[0]->t.data.data();
      const DType t = in[0]->dtype;
      if (p.stable) {
        // (key, index) as one integer: std::sort of those is the stable order.
        for (std::size_t k = 0; k < r.len; ++k)
          packed[k] = (U64{sort_key(t, x[r.at(row, k)])} << 32) | k;
        std::sort(packed.begin(), packed.end());
        for (std::size_t k = 0; k < r.len; ++k) perm[k] = static_cast<U32>(packed[k]);
      } else {
        for (std::size_t k = 0; k < r.len; ++k) keys[k] = sort_key(t, x[r.at(row, k)]);
        std::iota(perm.begin(), perm.end(), U32{0});
        std::sort(perm.begin(), perm.end(), [&](U32 a, U32 b) { return keys[a] < keys[b]; });
      }
    } else {
      for (std::size_t j = 0; j < p.num_keys; ++j) {
        const float* x = in[j]->t.data.data();
        for (std::size_t k = 0; k < r.len; ++k)
          keys[j * r.len + k] = sort_key(in[j]->dtype, x[r.at(row, k)]);
      }
      const auto less = [&](U32 a, U32 b) {
        for (std::size_t j = 0; j < p.num_keys; ++j) {
          const U32 ka = keys[j * r.len + a], kb = keys[j * r.len + b];
          if (ka != kb) return ka < kb;
        }
        return false;
      };
      std::iota(perm.begin(), perm.end(), U32{0});
      if (p.stable) {
        std::stable_sort(perm.begin(), perm.end(), less);
      } else {
        std::sort(perm.begin(), perm.end(), less);
      }
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float* x = in[i]->t.data.data();
      float* o = out[i].t.data.data();
      for (std::size_t k = 0; k < r.len; ++k) o[r.at(row, k)] = x[r.at(row, perm[k])];
    }
  }
  return out;
}

// ---- top_k, approx_top_k ----

struct TopK {
  std::size_t axis = 0, k = 0;
};

// `key_k`, `key_axis`: the params' names (top_k: k, axis; approx_top_k: k, reduction_dimension).
TopK topk_params(const Eqn& eqn, const ValueType& t, const char* axis_key) {
  TopK p;
  const std::size_t rank = t.shape.size();
  if (rank == 0) fail(eqn.primitive + " of a scalar: it needs an axis");
  std::int64_t axis = static_cast<std::int64_t>(rank) - 1;
  if (eqn.params.is_object() && eqn.params.contains(axis_key) &&
      !eqn.params.at(axis_key).is_null()) {
    axis = param_int(eqn, axis_key);
    if (axis < 0 && axis >= -static_cast<std::int64_t>(rank))
      axis += static_cast<std::int64_t>(rank);
  }
  p.axis = checked_axis(eqn, axis_key, axis, rank);
  const std::int64_t k = param_int(eqn, "k");
  if (k < 0 || static_cast<std::uint64_t>(k) > t.shape[p.axis]) {
    fail(eqn.primitive + " param 'k': " + std::to_string(k) + " of an axis of " +
         std::to_string(t.shape[p.axis]) + " elements (0 to the axis' size)");
  }
  if (t.shape[p.axis] > static_cast<std::size_t>(kMaxInt))
    fail(eqn.primitive + ": an axis of more than 2^24 elements: its int32 indices");
  p.k = static_cast<std::size_t>(k);
  return p;
}

template <bool kApprox>
Types topk_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  const TopK p = topk_params(eqn, in[0], kApprox ? "reduction_dimension" : "axis");
  if (kApprox) {
    check_dtype(eqn, in[0].dtype, kF);
    if (!param_bool(eqn, "aggregate_to_topk", true))
      fail("approx_top_k with aggregate_to_topk false (its TPU-sized output) is not supported");
  } else {
    check_dtype(eqn, in[0].dtype, kNum);
  }
  Shape s = in[0].shape;
  s[p.axis] = p.k;
  return {make_type(in[0].dtype, s), make_type(DType::kI32, s)};
}

template <bool kApprox>
std::uint64_t topk_flops(const Eqn& eqn, std::span<const ValueType> ops,
                         std::span<const ValueType>) {
  const TopK p = topk_params(eqn, ops[0], kApprox ? "reduction_dimension" : "axis");
  return sort_cost(ops[0].shape, p.axis, 4);
}

template <bool kApprox>
Values topk_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& x = *in[0];
  const TopK p = topk_params(eqn, x.type(), kApprox ? "reduction_dimension" : "axis");
  const bool max_k = !kApprox || param_bool(eqn, "is_max_k", true);
  const Rows r = rows_of(x.t.shape, p.axis);
  Shape s = x.t.shape;
  s[p.axis] = p.k;
  const Rows ro = rows_of(s, p.axis);
  Value vals(x.dtype, Tensor(s)), idx(DType::kI32, Tensor(s));
  std::vector<U64> packed(r.len);
  std::vector<U32> perm(r.len);
  std::vector<float> row(r.len);
  const float* xp = x.t.data.data();
  for (std::size_t q = 0; q < r.count(); ++q) {
    for (std::size_t k = 0; k < r.len; ++k) row[k] = xp[r.at(q, k)];
    // approx_top_k as XLA:CPU rewrites JAX's fallback (a sort and a slice): k = 1 is a reduce
    // from (-inf, -1) (min: +inf) keeping its accumulator while `acc > x` (`<`), so of ties and
    // after a NaN the later element; 1 < k < n of a max is XLA's TopK (top_k's order below);
    // every other k sorts the row with std::sort and `>` (`<`) and slices it.
    if (kApprox && p.k == 1) {
      float acc =
          max_k ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      U32 at = 0;
      for (std::size_t k = 0; k < r.len; ++k) {
        if (!(max_k ? acc > row[k] : acc < row[k])) {
          acc = row[k];
          at = static_cast<U32>(k);
        }
      }
      perm[0] = at;
    } else if (!kApprox || (max_k && p.k < r.len)) {
      // Largest key first, then lowest index: ascending in (~key, index).
      for (std::size_t k = 0; k < r.len; ++k) packed[k] = (U64{~total_order_key(row[k])} << 32) | k;
      std::partial_sort(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(p.k),
                        packed.end());
      for (std::size_t k = 0; k < p.k; ++k) perm[k] = static_cast<U32>(packed[k]);
    } else {
      std::iota(perm.begin(), perm.end(), U32{0});
      U32* b = perm.data();
      U32* e = b + r.len;
      if (max_k) {
        guarded::sort(b, e, [&](U32 i, U32 j) { return row[i] > row[j]; });
      } else {
        guarded::sort(b, e, [&](U32 i, U32 j) { return row[i] < row[j]; });
      }
    }
    for (std::size_t k = 0; k < p.k; ++k) {
      vals.t.data[ro.at(q, k)] = row[perm[k]];
      idx.t.data[ro.at(q, k)] = static_cast<float>(perm[k]);
    }
  }
  Values out;
  out.push_back(std::move(vals));
  out.push_back(std::move(idx));
  return out;
}

// ---- rev (jnp.argsort(descending=True), jnp.flip): the order of `dimensions` reversed ----

Types rev_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  param_axis_list(eqn, "dimensions", in[0].shape.size());
  return {in[0]};
}

Values rev_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& x = *in[0];
  const Shape& s = x.t.shape;
  std::vector<bool> flip(s.size(), false);
  for (std::size_t a : param_axis_list(eqn, "dimensions", s.size())) flip[a] = true;
  Value out(x.dtype, Tensor(s));
  const std::size_t n = x.t.size();
  if (n == 0) return one(std::move(out));
  // Row-major over the output; the source index of each follows, flipped where asked.
  const std::vector<std::int64_t> st = strides_of(s);
  std::vector<std::size_t> idx(s.size(), 0);
  std::int64_t src = 0;
  for (std::size_t a = 0; a < s.size(); ++a)
    if (flip[a]) src += st[a] * static_cast<std::int64_t>(s[a] - 1);
  for (std::size_t i = 0; i < n; ++i) {
    out.t.data[i] = x.t.data[static_cast<std::size_t>(src)];
    for (std::size_t a = s.size(); a-- > 0;) {
      const std::int64_t step = flip[a] ? -st[a] : st[a];
      if (++idx[a] < s[a]) {
        src += step;
        break;
      }
      src -= step * static_cast<std::int64_t>(s[a] - 1);
      idx[a] = 0;
    }
  }
  return one(std::move(out));
}

constexpr Primitive sort_prim() {
  Primitive p{&sort_infer, &sort_eval};
  p.flops = &sort_flops;
  return p;
}

template <bool kApprox>
constexpr Primitive topk_prim() {
  Primitive p{&topk_infer<kApprox>, &topk_eval<kApprox>};
  p.flops = &topk_flops<kApprox>;
  return p;
}

}  // namespace

std::span<const Entry> sorting_entries() {
  static const Entry kEntries[] = {
      {"sort", sort_prim()},
      {"top_k", topk_prim<false>()},
      {"approx_top_k", topk_prim<true>()},
      {"rev", {&rev_infer, &rev_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
