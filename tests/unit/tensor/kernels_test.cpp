// The matrix kernels bit for bit against scalar std::fma references written here (each output
// element one FMA chain over k in order from +0, then + bias, then relu; dp-step's loss and
// gradients as its unfused code computed them), on every Highway target this machine supports and
// the build compiled (forced one at a time), on ragged shapes: 1, primes, vector widths +-1,
// K = 1, K and N past the kernel's cache blocks, padded leading dimensions, transposed A and B,
// accumulation into C, and values that expose a reordered or refused chain (signed zeros, inf).
#include <boost/test/unit_test.hpp>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/cpu_features.hpp"
#include "tensor/gemm.hpp"
#include "tensor/linear_mse.hpp"
#include "tensor/tensor.hpp"

using namespace meshrun;

namespace {

// Values that show a wrong chain: ordinary normals, exact small integers, and zeros of both signs
// (a chain that started from the first product instead of fma(a, b, +0) would keep a -0).
std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 9), small(-4, 4);
  std::vector<float> v(n);
  for (auto& x : v) {
    const int which = kind(rng);
    x = which == 0 ? 0.0f : which == 1 ? -0.0f : which == 2 ? float(small(rng)) : normal(rng);
  }
  return v;
}

// The contract, element by element (i-j-p, unlike any kernel's loop order).
void reference_gemm(const Gemm& g) {
  for (std::size_t i = 0; i < g.m; ++i) {
    for (std::size_t j = 0; j < g.n; ++j) {
      float& c = g.c[i * g.ldc + j];
      float acc = g.accumulate ? c : 0.0f;
      for (std::size_t p = 0; p < g.k; ++p) {
        const float a = g.a_transposed ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
        const float b = g.b_transposed ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        acc = std::fma(a, b, acc);
      }
      if (g.bias) acc = acc + g.bias[j];
      if (g.relu) acc = acc < 0.0f ? 0.0f : acc;
      c = acc;
    }
  }
}

// Index of the first element whose bits differ, or -1.
long first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i])) {
      return long(i);
    }
  return got.size() == want.size() ? -1 : long(got.size());
}

// Makes gemm dispatch to one kernel for the scope's lifetime, then back to the CPU's best.
class ForcedTarget {
 public:
  explicit ForcedTarget(const std::string& name) { BOOST_REQUIRE(gemm_use_target(name)); }
  ~ForcedTarget() { gemm_use_target(""); }
  ForcedTarget(const ForcedTarget&) = delete;
  ForcedTarget& operator=(const ForcedTarget&) = delete;
};

// Runs `check` once per kernel this CPU can run (AVX3, AVX2, portable), after checking that the
// dispatch really went there.
template <class Check>
void for_each_target(Check check) {
  for (const std::string& t : gemm_targets()) {
    const ForcedTarget forced(t);
    BOOST_TEST_CONTEXT("target " << t) {
      BOOST_REQUIRE_EQUAL(std::string(gemm_target()), t);
      check();
    }
  }
}

struct Shape3 {
  std::size_t m, k, n;
};

struct Variant {
  bool transposed = false, accumulate = false, bias = false, relu = false;
  std::size_t pad = 0;  // extra elements per row of every operand
  bool b_transposed = false;
};

// `kernel` (gemm or gemm_portable) vs the reference on one shape and variant; inputs from rng.
void check_gemm(Shape3 s, Variant v, std::mt19937& rng, void (*kernel)(const Gemm&) = gemm) {
  const std::size_t a_rows = v.transposed ? s.k : s.m, a_cols = v.transposed ? s.m : s.k;
  const std::size_t b_rows = v.b_transposed ? s.n : s.k, b_cols = v.b_transposed ? s.k : s.n;
  const std::size_t lda = a_cols + v.pad, ldb = b_cols + v.pad, ldc = s.n + v.pad;
  const auto a = random_values(a_rows * lda, rng);
  const auto b = random_values(b_rows * ldb, rng);
  const auto bias = random_values(s.n, rng);
  const auto c0 = random_values(s.m * ldc, rng);  // kept where not accumulating (padding too)
  std::vector<float> got = c0, want = c0;
  Gemm g = Gemm::dense(a.data(), b.data(), got.data(), s.m, s.k, s.n, v.transposed, v.b_transposed);
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.accumulate = v.accumulate;
  g.bias = v.bias ? bias.data() : nullptr;
  g.relu = v.relu;
  kernel(g);
  g.c = want.data();
  reference_gemm(g);
  const long at = first_difference(got, want);
  BOOST_TEST(at == -1, "m=" << s.m << " k=" << s.k << " n=" << s.n << " transposed=" << v.transposed
                            << " b_transposed=" << v.b_transposed << " accumulate=" << v.accumulate
                            << " bias=" << v.bias << " relu=" << v.relu << " pad=" << v.pad
                            << ": element " << at << " got " << std::setprecision(9)
                            << (at < 0 ? 0 : got[std::size_t(at)]) << " want "
                            << (at < 0 ? 0 : want[std::size_t(at)]));
}

// 1, primes, and the vector widths (8, 16) and tile widths (16, 32) with their neighbours.
const std::vector<std::size_t> kEdges = {1,  2,  3,  5,  7,  8,  9,  13, 15,
                                         16, 17, 31, 32, 33, 47, 48, 61};

}  // namespace

BOOST_AUTO_TEST_CASE(gemm_equals_the_fma_chain_on_ragged_shapes_for_every_target) {
  for_each_target([] {
    std::mt19937 rng(1);
    std::uniform_int_distribution<std::size_t> pick(0, kEdges.size() - 1);
    std::bernoulli_distribution coin(0.5);
    for (int t = 0; t < 60; ++t) {
      const Shape3 s{kEdges[pick(rng)], kEdges[pick(rng)], kEdges[pick(rng)]};
      const Variant v{coin(rng), coin(rng), coin(rng), coin(rng), coin(rng) ? 0u : 3u, coin(rng)};
      check_gemm(s, v, rng);
    }
    // K = 1, and every variant on two ragged shapes.
    for (int bits = 0; bits < 64; ++bits) {
      const Variant v{bool(bits & 1), bool(bits & 2),      bool(bits & 4),
                      bool(bits & 8), bits & 16 ? 5u : 0u, bool(bits & 32)};
      check_gemm({13, 1, 37}, v, rng);
      check_gemm({9, 41, 23}, v, rng);
    }
  });
}

BOOST_AUTO_TEST_CASE(gemm_continues_chains_across_cache_blocks) {
  // K past one block of k (128 or 512) and N past several panels of B: each element's chain
  // must continue from C in order, never restart or be summed separately.
  for_each_target([] {
    std::mt19937 rng(2);
    check_gemm({3, 600, 45}, {}, rng);
    check_gemm({17, 257, 33}, {.transposed = true, .bias = true, .relu = true}, rng);
    check_gemm({2, 513, 1100}, {.accumulate = true, .bias = true, .relu = true, .pad = 1}, rng);
    check_gemm({9, 31, 1031}, {}, rng);
    // B transposed (stored (n, k)): its panels gathered down its rows, the same chains.
    check_gemm({3, 600, 45}, {.b_transposed = true}, rng);
    check_gemm({17, 257, 33}, {.transposed = true, .bias = true, .b_transposed = true}, rng);
    check_gemm({2, 513, 1100}, {.accumulate = true, .pad = 1, .b_transposed = true}, rng);
  });
}

// The edges of the kernel's own blocking, on both vector targets: register tiles of 6 rows x 64
// (AVX-512) or x 16 (AVX2) columns, 32 KB panels of B of 128 (AVX-512) or 512 (AVX2) steps of k,
// blocks of 384 rows of A (the narrower tiles of few columns, and their deeper panels: below). Each
// dimension at 1, a tile or block -1, exactly it, +1, and primes, crossed with every variant in
// turn, so a tile that drops, repeats or reorders one step of a chain (or one row or column at an
// edge) differs from the in-order fma loop somewhere.
BOOST_AUTO_TEST_CASE(gemm_equals_the_fma_chain_at_the_edges_of_its_tiles_and_blocks) {
  for_each_target([] {
    std::mt19937 rng(3);
    // Every row count of a last tile (1 to 5 of 6) and whole tiles.
    const std::size_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    const std::size_t ns[] = {1, 15, 16, 17, 63, 64, 65, 67};
    const std::size_t ks[] = {1, 2, 127, 128, 129, 131};
    int bits = 0;
    for (std::size_t m : ms)
      for (std::size_t n : ns)
        for (std::size_t k : ks) {
          const Variant v{bool(bits & 1), bool(bits & 2),      bool(bits & 4),
                          bool(bits & 8), bits & 16 ? 3u : 0u, bool(bits & 32)};
          ++bits;
          check_gemm({m, k, n}, v, rng);
        }
    // Past one block of A's rows, and K around the AVX2 panel's 512 steps.
    for (std::size_t m : {383u, 384u, 385u, 389u})
      check_gemm({m, 129, 65},
                 {.transposed = m % 2 == 1, .bias = true, .relu = true, .b_transposed = m > 384},
                 rng);
    for (std::size_t k : {511u, 512u, 513u, 521u})
      for (bool accumulate : {false, true})
        check_gemm({7, k, 17}, {.accumulate = accumulate, .pad = 1, .b_transposed = accumulate},
                   rng);
  });
}

// A product of few columns runs on a narrower tile (1 or 2 vectors: up to 16 or 32 columns on
// AVX-512, 8 on AVX2) with a deeper panel of B (512 or 256 steps on AVX-512, 1024 on AVX2's one
// vector); a transposed A is
// packed for all its tiles in one pass over its rows, the last tile ragged. Widths around each
// tile's edge, K around each panel depth, rows past a block of A.
BOOST_AUTO_TEST_CASE(gemm_narrow_tiles_equal_the_fma_chain) {
  for_each_target([] {
    std::mt19937 rng(5);
    int bits = 0;
    for (std::size_t n : {1u, 7u, 8u, 9u, 16u, 17u, 31u, 32u, 33u})
      for (std::size_t k : {255u, 256u, 257u, 511u, 512u, 513u, 1023u, 1024u, 1025u})
        for (std::size_t m : {5u, 6u, 13u, 389u}) {
          const Variant v{bool(bits & 1), bool(bits & 2),      bool(bits & 4),
                          bool(bits & 8), bits & 16 ? 2u : 0u, bool(bits & 32)};
          bits += 7;
          check_gemm({m, k, n}, v, rng);
        }
  });
}

BOOST_AUTO_TEST_CASE(gemm_passes_signed_zeros_and_non_finite_values_as_the_loop_does) {
  for_each_target([] {
    // C preloaded with -0, a row of A all -0 and column 0 of B positive: fma(-0, b, -0) keeps -0,
    // the bias -0 keeps it, and relu must pass it through (x < 0 is false). inf makes NaN
    // (inf * 0) and inf - inf.
    const float inf = std::numeric_limits<float>::infinity();
    const std::size_t m = 3, k = 4, n = 19;
    std::vector<float> a = {-0.0f, -0.0f, -0.0f, -0.0f, 1, -2, 0.5f, 3, inf, 1, 0, -1};
    std::vector<float> b(k * n);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 7) - 3) * 0.75f;
    for (std::size_t p = 0; p < k; ++p) b[p * n] = 0.5f * float(p + 1);
    b[n + 2] = -inf;
    std::vector<float> bias(n, -0.0f);
    bias[5] = inf;
    for (const bool relu : {false, true}) {
      std::vector<float> got(m * n, -0.0f), want = got;
      Gemm g = Gemm::dense(a.data(), b.data(), got.data(), m, k, n);
      g.accumulate = true;
      g.bias = bias.data();
      g.relu = relu;
      gemm(g);
      g.c = want.data();
      reference_gemm(g);
      BOOST_TEST(first_difference(got, want) == -1);
      // The case does exercise what it says: some -0 survives, and some NaN is made.
      const auto negative_zero = [](float x) { return x == 0 && std::signbit(x); };
      BOOST_TEST(std::any_of(want.begin(), want.end(), negative_zero));
      BOOST_TEST(std::any_of(want.begin(), want.end(), [](float x) { return std::isnan(x); }));
    }
  });
}

BOOST_AUTO_TEST_CASE(gemm_with_an_empty_dimension) {
  // K = 0: no chain, C is +0 (or kept, accumulating) plus the epilogue; M or N = 0: nothing.
  for_each_target([] {
    std::mt19937 rng(6);
    for (const bool accumulate : {false, true})
      check_gemm({3, 0, 37}, {.accumulate = accumulate, .bias = true, .relu = true}, rng);
    check_gemm({0, 5, 7}, {}, rng);
    check_gemm({4, 5, 0}, {.bias = true}, rng);
  });
}

BOOST_AUTO_TEST_CASE(portable_fallback_equals_the_fma_chain) {
  std::mt19937 rng(3);
  for (const Shape3 s : {Shape3{1, 1, 1}, Shape3{7, 13, 33}, Shape3{16, 300, 5}}) {
    for (const int bits : {0, 1, 2, 3}) {
      const Variant v{.transposed = (bits & 1) != 0,
                      .accumulate = true,
                      .bias = true,
                      .relu = true,
                      .b_transposed = (bits & 2) != 0};
      check_gemm(s, v, rng, gemm_portable);
    }
  }
}

BOOST_AUTO_TEST_CASE(tensor_products_equal_the_unfused_ops) {
  for_each_target([] {
    std::mt19937 rng(4);
    for (const Shape3 s : {Shape3{1, 1, 1}, Shape3{5, 17, 31}, Shape3{33, 64, 47}}) {
      const Tensor a({s.m, s.k}, random_values(s.m * s.k, rng));
      const Tensor at({s.k, s.m}, random_values(s.m * s.k, rng));
      const Tensor b({s.k, s.n}, random_values(s.k * s.n, rng));
      const Tensor bias({s.n}, random_values(s.n, rng));
      Tensor want({s.m, s.n});
      reference_gemm(Gemm::dense(a.data.data(), b.data.data(), want.data.data(), s.m, s.k, s.n));
      BOOST_TEST(first_difference(matmul(a, b).data, want.data) == -1);
      // relu(a @ b + bias) as add_row_vector then relu_inplace did it.
      for (std::size_t i = 0; i < s.m; ++i) {
        for (std::size_t j = 0; j < s.n; ++j) {
          float& x = want(i, j);
          x = x + bias.data[j];
          x = x < 0.0f ? 0.0f : x;
        }
      }
      BOOST_TEST(first_difference(matmul_bias_relu(a, b, bias).data, want.data) == -1);
      reference_gemm(Gemm::dense(at.data.data(), b.data.data(), want.data.data(), s.m, s.k, s.n,
                                 /*a_transposed=*/true));
      BOOST_TEST(first_difference(matmul_tn(at, b).data, want.data) == -1);
      // a @ bt^T, bt stored (n, k): the bits of the product against the transposed copy.
      const Tensor bt({s.n, s.k}, random_values(s.k * s.n, rng));
      reference_gemm(
          Gemm::dense(a.data.data(), transpose(bt).data.data(), want.data.data(), s.m, s.k, s.n));
      BOOST_TEST(first_difference(matmul_nt(a, bt).data, want.data) == -1);
    }
  });
}

namespace {

// dp-step's per-device arithmetic as its unfused code did it: err = x @ w (FMA chain) + b - y;
// sq = the sum over rows of each row's sum of err * err (the reference program's reduce_sum over
// axis 1, then over axis 0); g = 2 * err * inv_rows; gw = x^T @ g (FMA chain over the
// rows); gb = column sums of g over the rows. One rounding per line.
struct MseRef {
  float sq = 0.0f;
  std::vector<float> gw, gb;
};
MseRef reference_mse(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& b,
                     float inv_rows) {
  const std::size_t rows = x.rows(), d = w.rows(), k = w.cols();
  MseRef r{0.0f, std::vector<float>(d * k, 0.0f), std::vector<float>(k, 0.0f)};
  std::vector<float> g(rows * k);
  std::vector<float> row_sums(rows, 0.0f);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < k; ++j) {
      float acc = 0.0f;
      for (std::size_t p = 0; p < d; ++p) acc = std::fma(x(i, p), w(p, j), acc);
      acc = acc + b.data[j];
      const float err = acc - y(i, j);
      const float square = err * err;
      row_sums[i] = row_sums[i] + square;
      const float twice = 2.0f * err;
      g[i * k + j] = twice * inv_rows;
    }
  }
  for (std::size_t i = 0; i < rows; ++i) r.sq = r.sq + row_sums[i];
  for (std::size_t p = 0; p < d; ++p) {
    for (std::size_t j = 0; j < k; ++j) {
      float acc = 0.0f;
      for (std::size_t i = 0; i < rows; ++i) acc = std::fma(x(i, p), g[i * k + j], acc);
      r.gw[p * k + j] = acc;
    }
  }
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < k; ++j) r.gb[j] = r.gb[j] + g[i * k + j];
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(linear_mse_grad_equals_the_unfused_dp_step_arithmetic) {
  // Shapes include one row, K = 1, and enough rows for several row blocks (x blocks of 32 Ki
  // floats: 512 rows at D = 64).
  for_each_target([] {
    std::mt19937 rng(5);
    for (const Shape3 s : {Shape3{1, 1, 1}, Shape3{8, 2, 3}, Shape3{127, 37, 23},
                           Shape3{1300, 64, 16}, Shape3{600, 100, 1}}) {
      const std::size_t rows = s.m, d = s.k, k = s.n;
      const Tensor x({rows, d}, random_values(rows * d, rng));
      const Tensor y({rows, k}, random_values(rows * k, rng));
      const Tensor w({d, k}, random_values(d * k, rng));
      const Tensor b({k}, random_values(k, rng));
      const float inv_rows = 1.0f / static_cast<float>(rows);
      std::vector<float> gw(d * k, 7.0f), gb(k, 7.0f);  // overwritten, not added to
      const float sq = linear_mse_grad(x, y, w, b, inv_rows, gw, gb);
      const MseRef want = reference_mse(x, y, w, b, inv_rows);
      BOOST_TEST_CONTEXT("rows=" << rows << " d=" << d << " k=" << k) {
        BOOST_TEST(std::bit_cast<std::uint32_t>(sq) == std::bit_cast<std::uint32_t>(want.sq));
        BOOST_TEST(first_difference(gw, want.gw) == -1);
        BOOST_TEST(first_difference(gb, want.gb) == -1);
      }
    }
  });
}

// mlp-train's SGD update: every element one std::fma (the vector FMA where the CPU has one), on
// lengths around the vector widths, in place (out == y) and not, with zeros of both signs,
// infinities, NaN, subnormals, and values where the fused result differs from a rounded multiply
// then add (so a kernel that did not fuse would fail).
BOOST_AUTO_TEST_CASE(fma_scaled_is_one_fma_per_element) {
  std::mt19937 rng(11);
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 33u, 1000u, 4099u}) {
    std::vector<float> x = random_values(n, rng), y = random_values(n, rng);
    const float specials[] = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -0.0f};
    for (std::size_t i = 0; i < n && i < 5; ++i) x[i * n / 5] = specials[i];  // 5 slots
    const float a = -0.0078125f * (1.0f + 0x1p-20f);
    std::vector<float> want(n), got(n, 42.0f);
    bool fused_shows = false;
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = std::fma(a, x[i], y[i]);
      volatile float product = a * x[i];
      fused_shows |= std::isfinite(want[i]) && want[i] != product + y[i];
    }
    fma_scaled(a, x.data(), y.data(), got.data(), n);
    BOOST_TEST(first_difference(got, want) == -1, "n=" << n);
    fma_scaled(a, x.data(), y.data(), y.data(), n);  // in place
    BOOST_TEST(first_difference(y, want) == -1, "in place, n=" << n);
    if (n >= 1000) BOOST_TEST(fused_shows);  // the case can tell a fused update from an unfused one
  }
}

// The tiled transpose against element-by-element indexing, on shapes around its 16 x 16 tiles.
BOOST_AUTO_TEST_CASE(transpose_moves_every_element_to_its_mirror) {
  std::mt19937 rng(12);
  for (const auto& [r, c] : std::vector<std::pair<std::size_t, std::size_t>>{
           {1, 1}, {1, 17}, {17, 1}, {15, 16}, {16, 16}, {33, 47}, {64, 5}, {0, 3}}) {
    const Tensor m({r, c}, random_values(r * c, rng));
    const Tensor t = transpose(m);
    BOOST_TEST((t.shape == Shape{c, r}));
    bool same = true;
    for (std::size_t i = 0; i < r; ++i)
      for (std::size_t j = 0; j < c; ++j)
        same &= std::bit_cast<std::uint32_t>(t(j, i)) == std::bit_cast<std::uint32_t>(m(i, j));
    BOOST_TEST(same, r << "x" << c);
  }
}

// The features the kernels are chosen by (glibc's, read without CPUID: support/cpu_features.hpp)
// against an independent probe, libgcc's __builtin_cpu_supports (CPUID, and the OS's XSAVE state),
// plus CPUID leaf 1 for F16C: a mix-up of glibc's feature names would pick a kernel this CPU lacks.
BOOST_AUTO_TEST_CASE(cpu_features_agree_with_libgcc) {
#if defined(__x86_64__)
  const meshrun::cpu::Features& f = meshrun::cpu::features();
  __builtin_cpu_init();
  BOOST_TEST(f.avx2 == static_cast<bool>(__builtin_cpu_supports("avx2")));
  BOOST_TEST(f.fma == static_cast<bool>(__builtin_cpu_supports("fma")));
  BOOST_TEST(f.bmi2 == static_cast<bool>(__builtin_cpu_supports("bmi2")));
  BOOST_TEST(f.avx512f == static_cast<bool>(__builtin_cpu_supports("avx512f")));
  BOOST_TEST(f.avx512vl == static_cast<bool>(__builtin_cpu_supports("avx512vl")));
  BOOST_TEST(f.avx512dq == static_cast<bool>(__builtin_cpu_supports("avx512dq")));
  BOOST_TEST(f.avx512bw == static_cast<bool>(__builtin_cpu_supports("avx512bw")));
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
                    (ecx & bit_F16C) != 0;
  BOOST_TEST(f.f16c == f16c);
  BOOST_TEST_MESSAGE("gemm target: " << meshrun::gemm_target() << ", avx2=" << f.avx2
                                     << " avx512f=" << f.avx512f);
#else
  BOOST_TEST(!meshrun::cpu::features().avx2);
#endif
}
