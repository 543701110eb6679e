#include "collectives/kernels.hpp"

#include <cstring>

// The helpers below pass 32-byte vectors by value; they are inlined into each clone, so the
// ABI note GCC gives for the SSE2 clone does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace meshrun::kernels {
namespace {

// 8 floats: one AVX register in the avx2 clone, two SSE registers in the default one.
typedef float v8 __attribute__((vector_size(32)));
constexpr std::size_t kW = 8;

inline v8 load(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);  // an unaligned vector load
  return v;
}
inline void store(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }

}  // namespace

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define MESHRUN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MESHRUN_CLONES
#endif

MESHRUN_CLONES
void fold_sum(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end) {
  std::size_t i = begin;
  for (; i + 2 * kW <= end; i += 2 * kW) {
    v8 a = load(src[0] + i), b = load(src[0] + i + kW);
    for (int r = 1; r < n; ++r) {
      a += load(src[r] + i);
      b += load(src[r] + i + kW);
    }
    store(dst + i, a);
    store(dst + i + kW, b);
  }
  for (; i < end; ++i) {
    float a = src[0][i];
    for (int r = 1; r < n; ++r) a += src[r][i];
    dst[i] = a;
  }
}

MESHRUN_CLONES
void fold_sum_to_all(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                     std::size_t end) {
  std::size_t i = begin;
  for (; i + 2 * kW <= end; i += 2 * kW) {
    v8 a = load(src[0] + i), b = load(src[0] + i + kW);
    for (int r = 1; r < n; ++r) {
      a += load(src[r] + i);
      b += load(src[r] + i + kW);
    }
    for (int q = 0; q < m; ++q) {
      store(dst[q] + i, a);
      store(dst[q] + i + kW, b);
    }
  }
  for (; i < end; ++i) {
    float a = src[0][i];
    for (int r = 1; r < n; ++r) a += src[r][i];
    for (int q = 0; q < m; ++q) dst[q][i] = a;
  }
}

}  // namespace meshrun::kernels
