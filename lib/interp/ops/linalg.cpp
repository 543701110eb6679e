// Linear algebra as JAX 0.10.2 computes it on CPU (issue #49): cholesky, triangular_solve, lu (with
// its int32 pivots and permutation), lu_pivots_to_permutation, custom_linear_solve
// (jnp.linalg.solve and inv hold one), and the stack of jnp.stack. Batch dimensions lead, as JAX's:
// a [..., m, n] operand is that many independent matrices.
//
// JAX's CPU kernels are LAPACK's and BLAS's (scipy's OpenBLAS: spotrf, strsm, sgetrf); these are
// their unblocked algorithms at the sizes programs use:
// - triangular_solve: strsm's order: blocks of 16 rows (4 on the right side), each less the rows
//   solved before it (one FMA sum), then right-looking substitution within it with the diagonal's
//   reciprocal (OpenBLAS packs 1/a_ii) and an FMA per update. JAX's bits on every side, triangle
//   and transpose at every size measured (3 to 33, docs/program-format.md).
// - cholesky: potf2_L (n <= 32, OpenBLAS's unblocked size): l_jj = sqrt(a_jj - <l_j, l_j>), the
//   column below it less L's rows times l_j, times 1/l_jj, with OpenBLAS's sdot and sgemv
//   kernels' sums (below). The upper triangle is the input's, as potrf leaves it (JAX masks it
//   after); a matrix that is not positive definite (a pivot <= 0; a NaN goes on, as potf2's) is
//   all NaN, as JAX's lowering makes it.
// - lu: getf2 (min(m, n) <= 17, OpenBLAS's unblocked size), left-looking with partial pivoting:
//   the first largest |value| of the column is the pivot, the multipliers times its reciprocal;
//   a pivot below FLT_MIN (zero among them) neither swaps nor scales (a singular matrix factors,
//   as getf2's). Pivots 0-based, and the permutation they make.
//   JAX's bits for cholesky and lu at those sizes; beyond, JAX's OpenBLAS blocks (potrf's trsm
//   and syrk, getrf's recursion) and meshrun does not: within tolerance (docs/program-format.md).
// - custom_linear_solve: its value is its `jaxpr` (JAX's `solve` jaxpr) on the solve's consts and
//   b (JAX's impl); the exporter keeps only those operands (the matvec and transpose jaxprs are
//   for differentiation, which the export has already done). A holder: the evaluator runs it.
// - stack: the operands along a new axis `axis`, exact.
// - platform_index: lax.platform_dependent's index, CPU's (jnp.diagonal, det and slogdet need it).
// Denormals are flushed (FTZ and DAZ) while they run, as XLA:CPU's threads run JAX's LAPACK calls:
// a subnormal operand counts as zero, a subnormal result becomes one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

using U64 = std::uint64_t;

U64 sat_mul(U64 a, U64 b) { return __builtin_mul_overflow(a, b, &a) ? UINT64_MAX : a; }

// The number of matrices of a [..., r, c] shape.
std::size_t batch_of(const Shape& s) {
  std::size_t n = 1;
  for (std::size_t i = 0; i + 2 < s.size(); ++i) n *= s[i];
  return n;
}
U64 batch_u64(const Shape& s) {
  U64 n = 1;
  for (std::size_t i = 0; i + 2 < s.size(); ++i) n = sat_mul(n, s[i]);
  return n;
}

// ---- OpenBLAS's level-1/2 kernels as potf2 and getf2 call them (x86_64, SkylakeX: what JAX's
// scipy OpenBLAS runs on an AVX-512 CPU), each element's arithmetic in its order. `at(k)` and
// `bt(k)` read the k-th elements of the two vectors.

// sdot of strided vectors (kernel/x86_64/sdot.c): a double sum of pairs, each pair fmaf(y0, x0,
// y1 * x1) in float; an odd last element's float product; rounded to float at the end.
template <class A, class B>
float sdot_strided(std::size_t n, A at, B bt) {
  double d = 0;
  std::size_t i = 0;
  for (; i + 1 < n; i += 2) d += static_cast<double>(std::fma(at(i), bt(i), at(i + 1) * bt(i + 1)));
  if (i < n) d += static_cast<double>(at(i) * bt(i));
  return static_cast<float>(d);
}

// y[r] -= sum_k a(r, k) x[k] for r < rows, k < cols: sgemv_n with alpha -1
// (kernel/x86_64/sgemv_n_4.c). Up to 48 columns other than 4, the SkylakeX kernel: one sum of
// FMAs from 0 in k's order a row, subtracted once (y + alpha * sum, fused). 4 columns: the Haswell
// 4x4 kernel on the first rows & -4 -- rows in chunks of 4 and 8 with two sums (columns 0, 2 and
// 1, 3) added, then chunks of 16 with one -- and the rest as the first case.
template <class A>
void sgemv_n_sub(std::size_t rows, std::size_t cols, A a, const float* x, float* y,
                 std::size_t y_stride) {
  if (cols == 0) return;
  const auto one_sum = [&](std::size_t r) {
    float acc = 0;
    for (std::size_t k = 0; k < cols; ++k) acc = std::fma(a(r, k), x[k], acc);
    y[r * y_stride] -= acc;
  };
  std::size_t r = 0;
  if (cols == 4) {
    const std::size_t nb = rows & ~std::size_t{3};
    const std::size_t two_sums = (nb & 4) + (nb & 8);
    for (; r < two_sums; ++r) {
      const float s0 = std::fma(a(r, 2), x[2], a(r, 0) * x[0]);
      const float s1 = std::fma(a(r, 3), x[3], a(r, 1) * x[1]);
      y[r * y_stride] -= s0 + s1;
    }
  }
  for (; r < rows; ++r) one_sum(r);
}

void need_matrix(const Eqn& eqn, const ValueType& t, const char* what) {
  check_dtype(eqn, t.dtype, kF);
  if (t.shape.size() < 2) {
    fail(eqn.primitive + ": " + what + " must have rank >= 2 ([..., rows, columns]), got shape " +
         dims_str(t.shape));
  }
}
void need_square(const Eqn& eqn, const ValueType& t, const char* what) {
  need_matrix(eqn, t, what);
  const std::size_t r = t.shape.size();
  if (t.shape[r - 1] != t.shape[r - 2]) {
    fail(eqn.primitive + ": " + what + " must be square in its last two dimensions, got shape " +
         dims_str(t.shape));
  }
}

// ---- cholesky ----

Types cholesky_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  need_square(eqn, in[0], "the operand");
  return {in[0]};
}

// What one multiply-add of these kernels costs: 3 ns (a libm fma and the loop: 32 lu, cholesky
// and triangular_solve of 128 x 128 took 2.8 to 3.0 ns a multiply-add of thread CPU time on the
// 2-core AMD EPYC), in the budget's flops, 100 a nanosecond (cost.cpp).
constexpr U64 kMultiplyAdd = 300;

// n^3 / 3 multiply-adds a matrix, and n square roots and reciprocals.
U64 cholesky_flops(const Eqn&, std::span<const ValueType> ops, std::span<const ValueType>) {
  const U64 n = ops[0].shape.back();
  return sat_mul(sat_mul(batch_u64(ops[0].shape), sat_mul(n, n) + 1),
                 sat_mul(n / 3 + 1, kMultiplyAdd));
}

Values cholesky_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                     PrimContext&) {
  const FlushDenormals flush;  // XLA:CPU runs LAPACK with MXCSR's FTZ and DAZ
  Value out = pass_through(in[0], owned[0]);
  const std::size_t n = out.t.shape.back();
  const std::size_t mats = batch_of(out.t.shape);
  std::vector<float> row(n);
  for (std::size_t b = 0; b < mats; ++b) {
    float* a = out.t.data.data() + b * n * n;
    const auto at = [&](std::size_t i, std::size_t j) -> float& { return a[i * n + j]; };
    bool ok = true;
    // potf2_L: column j's diagonal less row j's dot with itself, its square root, the rest of
    // the column less L's rows times row j (gemv), times the root's reciprocal.
    for (std::size_t j = 0; j < n && ok; ++j) {
      const auto lj = [&](std::size_t k) { return at(j, k); };
      float ajj = at(j, j) - sdot_strided(j, lj, lj);
      if (ajj <= 0) {  // as potf2: a NaN goes on
        ok = false;
        break;
      }
      ajj = std::sqrt(ajj);
      at(j, j) = ajj;
      if (j + 1 < n) {
        for (std::size_t k = 0; k < j; ++k) row[k] = at(j, k);
        sgemv_n_sub(
            n - j - 1, j, [&](std::size_t r, std::size_t k) { return at(j + 1 + r, k); },
            row.data(), &at(j + 1, j), n);
        const float inv = 1.0f / ajj;
        for (std::size_t i = j + 1; i < n; ++i) at(i, j) *= inv;
      }
    }
    if (!ok) std::fill(a, a + n * n, std::numeric_limits<float>::quiet_NaN());
  }
  return one(std::move(out));
}

// ---- triangular_solve ----

struct TriParams {
  bool left = false, lower = false, transpose = false, unit = false;
};

TriParams tri_params(const Eqn& eqn) {
  TriParams p;
  p.left = param_bool(eqn, "left_side", false);
  p.lower = param_bool(eqn, "lower", false);
  p.transpose = param_bool(eqn, "transpose_a", false);
  p.unit = param_bool(eqn, "unit_diagonal", false);
  return p;
}

Types triangular_solve_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  need_square(eqn, in[0], "a");
  need_matrix(eqn, in[1], "b");
  const TriParams p = tri_params(eqn);
  const Shape &a = in[0].shape, &b = in[1].shape;
  const std::size_t m = a.back();
  bool ok = a.size() == b.size();
  for (std::size_t i = 0; ok && i + 2 < a.size(); ++i) ok = a[i] == b[i];
  if (ok) ok = (p.left ? b[b.size() - 2] : b.back()) == m;
  if (!ok) {
    fail(std::string("triangular_solve: b of shape ") + dims_str(b) + " does not fit a of shape " +
         dims_str(a) + " (same batch dimensions, b's " + (p.left ? "rows" : "columns") +
         " = a's size, left_side=" + (p.left ? "true" : "false") + ")");
  }
  return {in[1]};
}

// m / 2 multiply-adds an element of b (m^2 / 2 a right-hand side of m), and its reciprocal.
U64 triangular_solve_flops(const Eqn&, std::span<const ValueType> ops, std::span<const ValueType>) {
  const U64 m = ops[0].shape.back();
  const Shape& b = ops[1].shape;
  return sat_mul(sat_mul(batch_u64(b), sat_mul(b[b.size() - 2], b.back())),
                 sat_mul(m / 2 + 1, kMultiplyAdd));
}

// OpenBLAS's strsm (JAX's CPU kernel) solves in blocks of kUnroll rows (16, its sgemm kernel's M
// unroll, on the left; 4, its N unroll, on the right): forward, the full blocks from the top, then
// the rest in blocks of 8, 4, 2, 1 as m's bits hold them; backward, the rest first, from the
// bottom in blocks of 1, 2, 4, 8, then the full blocks upward. [begin, end) of each, in order.
std::vector<std::pair<std::size_t, std::size_t>> trsm_blocks(std::size_t m, std::size_t unroll,
                                                             bool forward) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (forward) {
    std::size_t s = 0;
    for (std::size_t q = 0; q < m / unroll; ++q, s += unroll) out.emplace_back(s, s + unroll);
    for (std::size_t i = unroll >> 1; i > 0; i >>= 1) {
      if ((m & i) != 0) {
        out.emplace_back(s, s + i);
        s += i;
      }
    }
  } else {
    for (std::size_t i = 1; i < unroll; i <<= 1) {
      if ((m & i) != 0) {
        const std::size_t e = m & ~(i - 1);
        out.emplace_back(e - i, e);
      }
    }
    const std::size_t top = m & ~(unroll - 1);
    for (std::size_t q = 0; q < m / unroll; ++q)
      out.emplace_back(top - unroll * (q + 1), top - unroll * q);
  }
  return out;
}

Values triangular_solve_eval(const Eqn& eqn, std::span<Value* const> in,
                             std::span<const bool> owned, PrimContext&) {
  const TriParams p = tri_params(eqn);
  const FlushDenormals flush;  // XLA:CPU runs BLAS with MXCSR's FTZ and DAZ
  const Value& av = *in[0];
  Value out = pass_through(in[1], owned[1]);
  const std::size_t m = av.t.shape.back();
  const Shape& bs = out.t.shape;
  const std::size_t rows = bs[bs.size() - 2], cols = bs.back();
  const std::size_t mats = batch_of(bs);
  // Left: op(a) x = b, each column of b. Right: x op(a) = b, i.e. op(a)^T x^T = b^T, each row.
  // t(i, k): the matrix solved with, op(a) or op(a)^T.
  const bool trans = p.left ? p.transpose : !p.transpose;
  // The stored triangle is `lower`; t's is lower when exactly one of (lower, transposed) holds.
  const bool forward = p.lower != trans;
  const std::size_t nrhs = p.left ? cols : rows;
  const auto blocks = trsm_blocks(m, p.left ? 16 : 4, forward);
  std::vector<float> x(m), inv(m);
  for (std::size_t b = 0; b < mats; ++b) {
    const float* a = av.t.data.data() + b * m * m;
    float* o = out.t.data.data() + b * rows * cols;
    const auto t = [&](std::size_t i, std::size_t k) {
      return trans ? a[k * m + i] : a[i * m + k];
    };
    // OpenBLAS packs the diagonal's reciprocals (1 for a unit diagonal: x * 1 is x).
    for (std::size_t i = 0; i < m; ++i) inv[i] = 1.0f / a[i * m + i];
    for (std::size_t r = 0; r < nrhs; ++r) {
      // element i of the right-hand side r
      const auto el = [&](std::size_t i) -> float& {
        return p.left ? o[i * cols + r] : o[r * cols + i];
      };
      for (std::size_t i = 0; i < m; ++i) x[i] = el(i);
      for (const auto& [s, e] : blocks) {
        // The block less the solved part (sgemm: one sum of FMAs from 0 in k's order,
        // subtracted once), ...
        const std::size_t k0 = forward ? 0 : e, k1 = forward ? s : m;
        if (k0 < k1) {
          for (std::size_t q = s; q < e; ++q) {
            float acc = 0;
            for (std::size_t k = k0; k < k1; ++k) acc = std::fma(t(q, k), x[k], acc);
            x[q] -= acc;
          }
        }
        // ... then substitution within it, right-looking, an FMA per update.
        for (std::size_t step = 0; step < e - s; ++step) {
          const std::size_t i = forward ? s + step : e - 1 - step;
          if (!p.unit) x[i] *= inv[i];
          const float xi = x[i];
          if (forward) {
            for (std::size_t k = i + 1; k < e; ++k) x[k] = std::fma(-xi, t(k, i), x[k]);
          } else {
            for (std::size_t k = s; k < i; ++k) x[k] = std::fma(-xi, t(k, i), x[k]);
          }
        }
      }
      for (std::size_t i = 0; i < m; ++i) el(i) = x[i];
    }
  }
  return one(std::move(out));
}

// ---- lu ----

Types lu_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  need_matrix(eqn, in[0], "the operand");
  const Shape& s = in[0].shape;
  const std::size_t m = s[s.size() - 2], n = s.back();
  if (m > static_cast<std::size_t>(kMaxInt)) {
    fail("lu: " + std::to_string(m) +
         " rows, beyond the int32 pivots meshrun holds exactly (2^24)");
  }
  Shape piv(s.begin(), s.end() - 2), perm(s.begin(), s.end() - 2);
  piv.push_back(std::min(m, n));
  perm.push_back(m);
  return {in[0], make_type(DType::kI32, std::move(piv)), make_type(DType::kI32, std::move(perm))};
}

// m n min(m, n) / 3 multiply-adds at most (n^3 / 3 for a square matrix), and the pivot searches.
U64 lu_flops(const Eqn&, std::span<const ValueType> ops, std::span<const ValueType>) {
  const Shape& s = ops[0].shape;
  const U64 m = s[s.size() - 2], n = s.back();
  return sat_mul(sat_mul(batch_u64(s), sat_mul(m, n)),
                 sat_mul(std::min(m, n) / 3 + 1, kMultiplyAdd));
}

Values lu_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned, PrimContext&) {
  const FlushDenormals flush;  // XLA:CPU runs LAPACK with MXCSR's FTZ and DAZ
  Value out = pass_through(in[0], owned[0]);
  const Shape& s = out.t.shape;
  const std::size_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
  const std::size_t mats = batch_of(s);
  Shape ps(s.begin(), s.end() - 2), qs(s.begin(), s.end() - 2);
  ps.push_back(k);
  qs.push_back(m);
  Value piv(DType::kI32, Tensor(ps)), perm(DType::kI32, Tensor(qs));
  std::vector<std::size_t> ipiv(k), pm(m);
  std::vector<float> col(m);
  for (std::size_t b = 0; b < mats; ++b) {
    float* a = out.t.data.data() + b * m * n;
    const auto at = [&](std::size_t i, std::size_t j) -> float& { return a[i * n + j]; };
    // getf2 (lapack/getf2/getf2_k.c), column by column.
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t i = 0; i < m; ++i) col[i] = at(i, j);
      // The earlier columns' row swaps, then the unit lower triangle's solve on the rows above
      // the diagonal (a dot a row).
      const std::size_t above = std::min(j, m);
      for (std::size_t i = 0; i < above; ++i) std::swap(col[i], col[ipiv[i]]);
      for (std::size_t i = 1; i < above; ++i) {
        col[i] -= sdot_strided(
            i, [&](std::size_t q) { return at(i, q); }, [&](std::size_t q) { return col[q]; });
      }
      if (j < m) {
        // The rest of the column less L's rows times the solved part (gemv), then the pivot:
        // the first largest |value| (isamax).
        sgemv_n_sub(
            m - j, j, [&](std::size_t r, std::size_t q) { return at(j + r, q); }, col.data(),
            col.data() + j, 1);
        std::size_t jp = j;
        for (std::size_t i = j + 1; i < m; ++i)
          if (std::fabs(col[i]) > std::fabs(col[jp])) jp = i;
        ipiv[j] = jp;
        const float pivot = col[jp];
        for (std::size_t i = 0; i < m; ++i) at(i, j) = col[i];
        // getf2 swaps and scales only for a pivot of a normal magnitude (>= FLT_MIN).
        if (std::fabs(pivot) >= std::numeric_limits<float>::min()) {
          const float inv = 1.0f / pivot;
          if (jp != j)
            for (std::size_t q = 0; q <= j; ++q) std::swap(at(j, q), at(jp, q));
          for (std::size_t i = j + 1; i < m; ++i) at(i, j) *= inv;
        }
      } else {
        for (std::size_t i = 0; i < m; ++i) at(i, j) = col[i];
      }
    }
    for (std::size_t i = 0; i < m; ++i) pm[i] = i;
    for (std::size_t i = 0; i < k; ++i) std::swap(pm[i], pm[ipiv[i]]);
    for (std::size_t i = 0; i < k; ++i) piv.t.data[b * k + i] = static_cast<float>(ipiv[i]);
    for (std::size_t i = 0; i < m; ++i) perm.t.data[b * m + i] = static_cast<float>(pm[i]);
  }
  Values r;
  r.push_back(std::move(out));
  r.push_back(std::move(piv));
  r.push_back(std::move(perm));
  return r;
}

// ---- lu_pivots_to_permutation ----
// jax.scipy.linalg.lu_solve's: JAX lowers it on CPU as a loop of jnp indexing (linalg.py's
// _generic_lu_pivots_to_permutation): for i < k, j = pivots[i] (negative: + size, as jnp wraps),
// y = perm[j] clamped into the array (a gather), perm[i] = y and perm[j] = perm's old [i], each
// write dropped out of bounds (a scatter): an out-of-range pivot gives JAX's result, never a read
// outside the array.

std::size_t permutation_size(const Eqn& eqn) {
  const std::int64_t n = param_int(eqn, "permutation_size");
  if (n < 0 || n > kMaxInt) {
    fail("lu_pivots_to_permutation param 'permutation_size': " + std::to_string(n) +
         " (0 to 2^24: int32 held exactly)");
  }
  return static_cast<std::size_t>(n);
}

Types pivots_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_dtype(eqn, in[0].dtype, kI);
  if (in[0].shape.empty()) fail("lu_pivots_to_permutation of a scalar: pivots are [..., k]");
  Shape s = in[0].shape;
  const std::size_t m = permutation_size(eqn);
  if (m < s.back()) {
    fail("lu_pivots_to_permutation: permutation_size " + std::to_string(m) +
         " below the pivots' trailing dimension " + std::to_string(s.back()) + " (JAX's rule)");
  }
  s.back() = m;
  return {make_type(DType::kI32, std::move(s))};
}

// k steps a permutation, each a few element moves; the output written once.
U64 pivots_flops(const Eqn&, std::span<const ValueType> ops, std::span<const ValueType> outs) {
  U64 n = 1;
  for (std::size_t d : ops[0].shape) n = sat_mul(n, d);
  U64 o = 1;
  for (std::size_t d : outs[0].shape) o = sat_mul(o, d);
  return sat_mul(n, 4) + o;
}

Values pivots_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                   PrimContext&) {
  const Shape& s = in[0]->t.shape;
  const std::size_t k = s.back(), m = permutation_size(eqn);
  Shape os = s;
  os.back() = m;
  Value out(DType::kI32, Tensor(os));
  const std::size_t rows =
      k == 0 ? out.t.size() / std::max<std::size_t>(m, 1) : in[0]->t.size() / k;
  const auto sm = static_cast<std::int64_t>(m);
  for (std::size_t r = 0; r < rows; ++r) {
    float* p = out.t.data.data() + r * m;
    for (std::size_t i = 0; i < m; ++i) p[i] = static_cast<float>(i);
    if (m == 0) continue;
    const float* piv = in[0]->t.data.data() + r * k;
    for (std::size_t i = 0; i < k; ++i) {
      auto j = static_cast<std::int64_t>(piv[i]);
      if (j < 0) j += sm;
      const float x = p[std::min(i, m - 1)];
      const float y = p[std::clamp<std::int64_t>(j, 0, sm - 1)];
      if (i < m) p[i] = y;
      if (j >= 0 && j < sm) p[j] = x;
    }
  }
  return one(std::move(out));
}

// ---- platform_index ----
// lax.platform_dependent's branch index (jnp.diagonal, jnp.linalg.det and slogdet hold one, with a
// cond on it): `platforms`, a list of lists of platform names or null (the default); the index of
// the first list naming "cpu" -- JAX's CPU -- else of the default, else refused (JAX would not
// lower it on CPU).

std::size_t platform_index_of(const Eqn& eqn) {
  const std::optional<std::size_t> i = platform_branch(eqn, "cpu");
  if (!i) fail("platform_index: no branch for cpu and no default");
  return *i;
}

Types platform_index_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 0);
  platform_index_of(eqn);
  return {make_type(DType::kI32, {})};
}

Values platform_index_eval(const Eqn& eqn, std::span<Value* const>, std::span<const bool>,
                           PrimContext&) {
  Value out(DType::kI32, Tensor(Shape{}));
  out.t.data[0] = static_cast<float>(platform_index_of(eqn));
  return one(std::move(out));
}

// ---- stack ----

std::size_t stack_axis(const Eqn& eqn, std::size_t rank) {
  return checked_axis(eqn, "axis", param_int(eqn, "axis"), rank + 1);
}

Types stack_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1, true);
  for (const ValueType& t : in) {
    if (t.dtype != in[0].dtype || t.shape != in[0].shape) {
      fail("stack: operands of one shape and dtype, got " + std::string(dtype_word(in[0].dtype)) +
           dims_str(in[0].shape) + " and " + dtype_word(t.dtype) + dims_str(t.shape));
    }
  }
  const std::size_t axis = stack_axis(eqn, in[0].shape.size());
  Shape s = in[0].shape;
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(axis), in.size());
  return {make_type(in[0].dtype, std::move(s))};
}

Values stack_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Shape& s = in[0]->t.shape;
  const std::size_t axis = stack_axis(eqn, s.size());
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= s[i];
  for (std::size_t i = axis; i < s.size(); ++i) inner *= s[i];
  Shape os = s;
  os.insert(os.begin() + static_cast<std::ptrdiff_t>(axis), in.size());
  Value out(in[0]->dtype, Tensor(os));
  float* o = out.t.data.data();
  for (std::size_t q = 0; q < outer; ++q)
    for (const Value* v : in) {
      const float* src = v->t.data.data() + q * inner;
      o = std::copy(src, src + inner, o);
    }
  return one(std::move(out));
}

template <auto Infer, auto Eval, auto Flops>
constexpr Primitive priced() {
  Primitive p{Infer, Eval};
  p.flops = Flops;
  return p;
}

constexpr Primitive solve_holder() {
  Primitive p{nullptr, nullptr};
  p.holds_jaxpr = "jaxpr";
  return p;
}

}  // namespace

std::span<const Entry> linalg_entries() {
  static const Entry kEntries[] = {
      {"cholesky", priced<&cholesky_infer, &cholesky_eval, &cholesky_flops>()},
      {"triangular_solve",
       priced<&triangular_solve_infer, &triangular_solve_eval, &triangular_solve_flops>()},
      {"lu", priced<&lu_infer, &lu_eval, &lu_flops>()},
      {"lu_pivots_to_permutation", priced<&pivots_infer, &pivots_eval, &pivots_flops>()},
      {"custom_linear_solve", solve_holder()},
      {"stack", {&stack_infer, &stack_eval}},
      {"platform_index", {&platform_index_infer, &platform_index_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim

namespace meshrun::interp {

std::optional<std::size_t> platform_branch(const Eqn& eqn, std::string_view platform) {
  if (!eqn.params.is_object() || !eqn.params.contains("platforms") ||
      !eqn.params.at("platforms").is_array()) {
    prim::fail("platform_index param 'platforms' missing or not a list");
  }
  const nlohmann::json& ps = eqn.params.at("platforms");
  std::optional<std::size_t> fallback;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const nlohmann::json& e = ps[i];
    if (e.is_null()) {
      if (!fallback) fallback = i;
      continue;
    }
    if (!e.is_array()) prim::fail("platform_index param 'platforms': an entry not a list nor null");
    for (const nlohmann::json& name : e)
      if (name.is_string() && name.get<std::string>() == platform) return i;
  }
  return fallback;
}

}  // namespace meshrun::interp
