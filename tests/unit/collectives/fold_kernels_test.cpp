// The fold kernels (collectives/kernels.hpp) against a serial left fold in rank order, bit for bit,
// on each FoldPath: ranges that start and end off a vector or block boundary, several blocks and a
// partial one, destinations that are the sources (in-place psum), and what lies outside the range
// left as it was.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "collectives/kernels.hpp"

namespace {

using meshrun::kernels::FoldPath;

constexpr FoldPath kPaths[] = {FoldPath::kInterleaved, FoldPath::kBlocked, FoldPath::kNonTemporal};

// Values of very different magnitudes: any other order of the additions changes bits.
std::vector<std::vector<float>> inputs(int n, std::size_t len, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<std::vector<float>> in(static_cast<std::size_t>(n), std::vector<float>(len));
  for (auto& v : in)
    for (float& x : v) x = std::ldexp(unit(gen), exponent(gen));
  return in;
}

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The contract, written out: ((s0 + s1) + s2) + ... for each element.
float left_fold(const std::vector<std::vector<float>>& in, std::size_t i) {
  float a = in[0][i];
  for (std::size_t r = 1; r < in.size(); ++r) a += in[r][i];
  return a;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_path_folds_in_rank_order_into_every_destination) {
  const std::size_t len = 3 * 1024 + 100;  // three 4 KiB blocks and a partial one, past the range
  struct Range {
    std::size_t begin, end;
  };
  for (int n : {1, 3, 8}) {
    for (int m : {1, 8}) {
      for (Range range : {Range{0, 0}, Range{0, 17}, Range{0, 1024}, Range{5, 3 * 1024 + 42},
                          Range{1024, 3 * 1024}}) {
        for (FoldPath path : kPaths) {
          const auto in = inputs(n, len, static_cast<unsigned>(n * 100 + m));
          std::vector<const float*> src;
          for (const auto& v : in) src.push_back(v.data());
          // 64-byte aligned, so that kNonTemporal streams (its destinations share an offset).
          std::vector<float*> dst;
          std::vector<std::unique_ptr<float[], decltype(&std::free)>> owned;
          for (int q = 0; q < m; ++q) {
            auto* p =
                static_cast<float*>(std::aligned_alloc(64, (len * sizeof(float) + 63) / 64 * 64));
            owned.emplace_back(p, &std::free);
            for (std::size_t i = 0; i < len; ++i) p[i] = -7.0f;
            dst.push_back(p);
          }
          meshrun::kernels::fold_sum_to_all(src.data(), n, dst.data(), m, range.begin, range.end,
                                            path);
          int wrong = 0;
          for (int q = 0; q < m; ++q) {
            for (std::size_t i = 0; i < len; ++i) {
              const bool inside = i >= range.begin && i < range.end;
              const float want = inside ? left_fold(in, i) : -7.0f;
              wrong += bits(dst[static_cast<std::size_t>(q)][i]) != bits(want);
            }
          }
          BOOST_TEST(wrong == 0, "n=" << n << " m=" << m << " [" << range.begin << ", " << range.end
                                      << ") path " << static_cast<int>(path));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_path_folds_in_place) {
  // Each member's output is its input (psum in place): every source is read before it is written.
  const int n = 8;
  const std::size_t len = 2 * 1024 + 9;
  for (FoldPath path : kPaths) {
    const auto original = inputs(n, len, 7);
    auto buffers = original;
    std::vector<const float*> src;
    std::vector<float*> dst;
    for (auto& v : buffers) {
      src.push_back(v.data());
      dst.push_back(v.data());
    }
    meshrun::kernels::fold_sum_to_all(src.data(), n, dst.data(), n, 0, len, path);
    int wrong = 0;
    for (const auto& v : buffers)
      for (std::size_t i = 0; i < len; ++i) wrong += bits(v[i]) != bits(left_fold(original, i));
    BOOST_TEST(wrong == 0, "path " << static_cast<int>(path));
  }
}

namespace {

using meshrun::kernels::Combine;

// communicator.hpp's rule, written out: from -inf (+inf), acc = std::max(acc, s_r) (std::min) in
// rank order -- so a NaN never wins and of equal values (-0.0, +0.0) the lowest rank's stays.
float max_fold(const std::vector<std::vector<float>>& in, std::size_t i, Combine op) {
  float a = op == Combine::kMax ? -INFINITY : INFINITY;
  for (const auto& v : in) a = op == Combine::kMax ? std::max(a, v[i]) : std::min(a, v[i]);
  return a;
}

// Inputs where max and min have something to decide: NaNs (two payloads), both zeros, both
// infinities, equal values, and ordinary ones.
std::vector<std::vector<float>> edge_inputs(int n, std::size_t len, unsigned seed) {
  const float specials[] = {NAN, -NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -1.0f};
  std::mt19937 gen(seed);
  std::vector<std::vector<float>> in = inputs(n, len, seed);
  for (auto& v : in)
    for (float& x : v)
      if (gen() % 2 == 0) x = specials[gen() % 8];
  // An element NaN on every source: max gives -inf, min +inf.
  for (auto& v : in)
    if (len > 3) v[3] = NAN;
  return in;
}

}  // namespace

BOOST_AUTO_TEST_CASE(max_and_min_fold_from_infinity_like_std_max_on_every_path) {
  const std::size_t len = 3 * 1024 + 100;
  for (Combine op : {Combine::kMax, Combine::kMin}) {
    for (int n : {1, 2, 3, 8}) {
      for (FoldPath path : kPaths) {
        const auto in = edge_inputs(n, len, static_cast<unsigned>(n * 10 + 1));
        std::vector<const float*> src;
        for (const auto& v : in) src.push_back(v.data());
        std::vector<float*> dst;
        std::vector<std::unique_ptr<float[], decltype(&std::free)>> owned;
        for (int q = 0; q < 3; ++q) {
          auto* p =
              static_cast<float*>(std::aligned_alloc(64, (len * sizeof(float) + 63) / 64 * 64));
          owned.emplace_back(p, &std::free);
          dst.push_back(p);
        }
        meshrun::kernels::fold_to_all(op, src.data(), n, dst.data(), 3, 0, len, path);
        std::vector<float> single(len, -7.0f);
        meshrun::kernels::fold(op, src.data(), n, single.data(), 1, len - 1);
        int wrong = 0;
        for (std::size_t i = 0; i < len; ++i) {
          const float want = max_fold(in, i, op);
          for (int q = 0; q < 3; ++q)
            wrong += bits(dst[static_cast<std::size_t>(q)][i]) != bits(want);
          const bool inside = i >= 1 && i < len - 1;
          wrong += bits(single[i]) != bits(inside ? want : -7.0f);
        }
        BOOST_TEST(wrong == 0, (op == Combine::kMax ? "max" : "min")
                                   << " n=" << n << " path " << static_cast<int>(path));
        BOOST_TEST(bits(dst[0][3]) == bits(op == Combine::kMax ? -INFINITY : INFINITY));
      }
    }
  }
}

// The cases JAX 0.10.2 on CPU was asked (jax.lax.pmax / pmin over 8 devices): the bits it gave.
BOOST_AUTO_TEST_CASE(max_and_min_give_jaxs_bits_for_nan_and_signed_zeros) {
  struct Case {
    std::vector<float> in;
    float pmax, pmin;
  };
  const float nan = NAN;
  const std::vector<Case> cases{
      {{-0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, -0.0f, -0.0f},
      {{0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f}, 0.0f, 0.0f},
      {{-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, 0.0f}, -0.0f, -0.0f},
      {{-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f}, -0.0f, -0.0f},
      {{1, 2, 3, nan, 5, 6, 7, 8}, 8.0f, 1.0f},
      {{nan, 2, 3, 4, 5, 6, 7, 8}, 8.0f, 2.0f},
      {{1, 2, 3, 4, 5, 6, 7, nan}, 7.0f, 1.0f},
      {{nan, nan, nan, nan, nan, nan, nan, nan}, -INFINITY, INFINITY},
      {{nan, -INFINITY, nan, nan, nan, nan, nan, nan}, -INFINITY, -INFINITY},
  };
  for (const Case& c : cases) {
    std::vector<const float*> src;
    for (const float& v : c.in) src.push_back(&v);
    for (FoldPath path : kPaths) {
      float mx = 99.0f, mn = 99.0f;
      float* dmx = &mx;
      float* dmn = &mn;
      meshrun::kernels::fold_to_all(Combine::kMax, src.data(), 8, &dmx, 1, 0, 1, path);
      meshrun::kernels::fold_to_all(Combine::kMin, src.data(), 8, &dmn, 1, 0, 1, path);
      BOOST_TEST(bits(mx) == bits(c.pmax));
      BOOST_TEST(bits(mn) == bits(c.pmin));
    }
  }
}
