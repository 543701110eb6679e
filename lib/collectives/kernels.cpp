#include "collectives/kernels.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// The helpers below take 32-byte vectors by reference only: passing them by value in the SSE2
// clone would change the ABI (GCC warns, clang refuses).

namespace meshrun::kernels {
namespace {

// 8 floats: one AVX register in the avx2 clone, two SSE registers in the default one.
typedef float v8 __attribute__((vector_size(32)));
constexpr std::size_t kW = 8;

inline void load(v8& v, const float* p) { std::memcpy(&v, p, sizeof v); }  // unaligned
inline void add(v8& acc, const float* p) {
  v8 t;
  load(t, p);
  acc += t;
}
inline void store(float* p, const v8& v) { std::memcpy(p, &v, sizeof v); }

}  // namespace

const char* isa() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") ? "avx2" : "sse2";
#else
  return "generic";
#endif
}

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define MESHRUN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MESHRUN_CLONES
#endif

MESHRUN_CLONES
void fold_sum(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end) {
  std::size_t i = begin;
  for (; i + 2 * kW <= end; i += 2 * kW) {
    v8 a, b;
    load(a, src[0] + i);
    load(b, src[0] + i + kW);
    for (int r = 1; r < n; ++r) {
      add(a, src[r] + i);
      add(b, src[r] + i + kW);
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

namespace {
// One element, folded in rank order, stored to every destination.
inline void fold_one_to_all(const float* const* src, int n, float* const* dst, int m,
                            std::size_t i) {
  float a = src[0][i];
  for (int r = 1; r < n; ++r) a += src[r][i];
  for (int q = 0; q < m; ++q) dst[q][i] = a;
}

#if defined(__x86_64__)
#define MESHRUN_HAVE_NT 1
bool same_offset_mod64(float* const* dst, int m) {
  const auto off = reinterpret_cast<std::uintptr_t>(dst[0]) & 63u;
  for (int q = 1; q < m; ++q)
    if ((reinterpret_cast<std::uintptr_t>(dst[q]) & 63u) != off) return false;
  return true;
}

// The streaming middle of fold_sum_to_all: [i, end) is whole 64-byte lines of every dst[q]. Two
// versions picked at run time (GCC has no portable non-temporal vector store, and a
// target_clones body cannot hold AVX intrinsics), each one line (16 floats) per step, the sources
// folded in rank order as everywhere else.
__attribute__((target("avx2"))) void stream_lines_avx2(const float* const* src, int n,
                                                       float* const* dst, int m, std::size_t i,
                                                       std::size_t end) {
  for (; i < end; i += 16) {
    __m256 a = _mm256_loadu_ps(src[0] + i), b = _mm256_loadu_ps(src[0] + i + 8);
    for (int r = 1; r < n; ++r) {
      a = _mm256_add_ps(a, _mm256_loadu_ps(src[r] + i));
      b = _mm256_add_ps(b, _mm256_loadu_ps(src[r] + i + 8));
    }
    for (int q = 0; q < m; ++q) {
      _mm256_stream_ps(dst[q] + i, a);
      _mm256_stream_ps(dst[q] + i + 8, b);
    }
  }
}

void stream_lines_sse2(const float* const* src, int n, float* const* dst, int m, std::size_t i,
                       std::size_t end) {
  for (; i < end; i += 16) {
    __m128 a = _mm_loadu_ps(src[0] + i), b = _mm_loadu_ps(src[0] + i + 4);
    __m128 c = _mm_loadu_ps(src[0] + i + 8), d = _mm_loadu_ps(src[0] + i + 12);
    for (int r = 1; r < n; ++r) {
      a = _mm_add_ps(a, _mm_loadu_ps(src[r] + i));
      b = _mm_add_ps(b, _mm_loadu_ps(src[r] + i + 4));
      c = _mm_add_ps(c, _mm_loadu_ps(src[r] + i + 8));
      d = _mm_add_ps(d, _mm_loadu_ps(src[r] + i + 12));
    }
    for (int q = 0; q < m; ++q) {
      _mm_stream_ps(dst[q] + i, a);
      _mm_stream_ps(dst[q] + i + 4, b);
      _mm_stream_ps(dst[q] + i + 8, c);
      _mm_stream_ps(dst[q] + i + 12, d);
    }
  }
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif
}  // namespace

namespace {
MESHRUN_CLONES
void fold_sum_to_all_cached(const float* const* src, int n, float* const* dst, int m,
                            std::size_t begin, std::size_t end) {
  std::size_t i = begin;
  for (; i + 2 * kW <= end; i += 2 * kW) {
    v8 a, b;
    load(a, src[0] + i);
    load(b, src[0] + i + kW);
    for (int r = 1; r < n; ++r) {
      add(a, src[r] + i);
      add(b, src[r] + i + kW);
    }
    for (int q = 0; q < m; ++q) {
      store(dst[q] + i, a);
      store(dst[q] + i + kW, b);
    }
  }
  for (; i < end; ++i) fold_one_to_all(src, n, dst, m, i);
}
}  // namespace

void fold_sum_to_all(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                     std::size_t end, bool nontemporal) {
#if defined(MESHRUN_HAVE_NT) && !defined(__SANITIZE_THREAD__)
  if (nontemporal && m > 0 && same_offset_mod64(dst, m)) {
    std::size_t i = begin;
    // Scalar head up to the first 64-byte boundary of the destinations (the same for all), whole
    // lines streamed, scalar tail.
    while (i < end && (reinterpret_cast<std::uintptr_t>(dst[0] + i) & 63u) != 0)
      fold_one_to_all(src, n, dst, m, i++);
    const std::size_t lines_end = i + (end - i) / 16 * 16;
    if (kHaveAvx2) {
      stream_lines_avx2(src, n, dst, m, i, lines_end);
    } else {
      stream_lines_sse2(src, n, dst, m, i, lines_end);
    }
    for (i = lines_end; i < end; ++i) fold_one_to_all(src, n, dst, m, i);
    _mm_sfence();  // streaming stores are weakly ordered: drain them before the caller publishes
    return;
  }
#else
  (void)nontemporal;
#endif
  fold_sum_to_all_cached(src, n, dst, m, begin, end);
}

}  // namespace meshrun::kernels
