#include "collectives/kernels.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "support/cpu_features.hpp"

// The helpers below take 32-byte vectors by reference only: passing them by value in the baseline
// version would change the ABI (GCC warns, clang refuses).

namespace meshrun::kernels {
namespace {

// 8 floats: one AVX register in the AVX2 version, two SSE registers in the baseline one.
typedef float v8 __attribute__((vector_size(32)));
constexpr std::size_t kW = 8;

[[gnu::always_inline]] inline void load(v8& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}  // unaligned
[[gnu::always_inline]] inline void add(v8& acc, const float* p) {
  v8 t;
  load(t, p);
  acc += t;
}
[[gnu::always_inline]] inline void store(float* p, const v8& v) { std::memcpy(p, &v, sizeof v); }

}  // namespace

// Each vector kernel below is written once, as an always-inline function, and compiled twice: for
// AVX2 (a target("avx2") wrapper) and for the baseline; the wrapper is chosen at run time from the
// features glibc found (support/cpu_features.hpp). Not GCC's target_clones: its resolver links
// libgcc's CPU probe, a constructor that runs ~15 CPUIDs, each a trap to the hypervisor in a VM.
#if defined(__x86_64__)
#define MESHRUN_AVX2 __attribute__((target("avx2")))
namespace {
// Read on first use, not by a namespace-scope initialiser another one could run before.
bool have_avx2() {
  static const bool avx2 = cpu::features().avx2;
  return avx2;
}
}  // namespace
#endif

const char* isa() {
#if defined(__x86_64__)
  return have_avx2() ? "avx2" : "sse2";
#else
  return "generic";
#endif
}

namespace {
[[gnu::always_inline]] inline void fold_sum_body(const float* const* src, int n, float* dst,
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
    store(dst + i, a);
    store(dst + i + kW, b);
  }
  for (; i < end; ++i) {
    float a = src[0][i];
    for (int r = 1; r < n; ++r) a += src[r][i];
    dst[i] = a;
  }
}
#if defined(__x86_64__)
MESHRUN_AVX2 void fold_sum_avx2(const float* const* src, int n, float* dst, std::size_t begin,
                                std::size_t end) {
  fold_sum_body(src, n, dst, begin, end);
}
#endif
void fold_sum_baseline(const float* const* src, int n, float* dst, std::size_t begin,
                       std::size_t end) {
  fold_sum_body(src, n, dst, begin, end);
}
}  // namespace

void fold_sum(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end) {
#if defined(__x86_64__)
  if (have_avx2()) return fold_sum_avx2(src, n, dst, begin, end);
#endif
  fold_sum_baseline(src, n, dst, begin, end);
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
MESHRUN_AVX2 void stream_lines_avx2(const float* const* src, int n, float* const* dst, int m,
                                    std::size_t i, std::size_t end) {
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
#endif
}  // namespace

namespace {
[[gnu::always_inline]] inline void fold_sum_to_all_body(const float* const* src, int n,
                                                        float* const* dst, int m, std::size_t begin,
                                                        std::size_t end) {
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

// FoldPath::kBlocked: whole blocks through `sum` (on the stack: in L1), the rest interleaved.
constexpr std::size_t kBlock = 1024;  // floats: 4 KiB, one page of each stream per pass
// One block, copied with vector loads and stores: glibc's memcpy of 4 KiB to an output that is
// not 64-byte aligned (any std::vector) cost 0.9 us of a 64 KiB psum's 18.5 (bench/README.md).
[[gnu::always_inline]] inline void copy_block(float* to, const float* from) {
  for (std::size_t j = 0; j < kBlock; j += 2 * kW) {
    v8 a, b;
    load(a, from + j);
    load(b, from + j + kW);
    store(to + j, a);
    store(to + j + kW, b);
  }
}
[[gnu::always_inline]] inline void fold_blocks_to_all_body(const float* const* src, int n,
                                                           float* const* dst, int m,
                                                           std::size_t begin, std::size_t end) {
  alignas(64) float sum[kBlock];
  std::size_t i = begin;
  for (; i + kBlock <= end; i += kBlock) {
    copy_block(sum, src[0] + i);
    for (int r = 1; r < n; ++r) {  // rank order, as the interleaved pass folds each element
      for (std::size_t j = 0; j < kBlock; j += 2 * kW) {
        v8 a, b;
        load(a, sum + j);
        load(b, sum + j + kW);
        add(a, src[r] + i + j);
        add(b, src[r] + i + j + kW);
        store(sum + j, a);
        store(sum + j + kW, b);
      }
    }
    for (int q = 0; q < m; ++q) copy_block(dst[q] + i, sum);
  }
  fold_sum_to_all_body(src, n, dst, m, i, end);
}

#if defined(__x86_64__)
MESHRUN_AVX2 void fold_sum_to_all_avx2(const float* const* src, int n, float* const* dst, int m,
                                       std::size_t begin, std::size_t end) {
  fold_sum_to_all_body(src, n, dst, m, begin, end);
}
MESHRUN_AVX2 void fold_blocks_to_all_avx2(const float* const* src, int n, float* const* dst, int m,
                                          std::size_t begin, std::size_t end) {
  fold_blocks_to_all_body(src, n, dst, m, begin, end);
}
#endif
void fold_sum_to_all_baseline(const float* const* src, int n, float* const* dst, int m,
                              std::size_t begin, std::size_t end) {
  fold_sum_to_all_body(src, n, dst, m, begin, end);
}
void fold_blocks_to_all_baseline(const float* const* src, int n, float* const* dst, int m,
                                 std::size_t begin, std::size_t end) {
  fold_blocks_to_all_body(src, n, dst, m, begin, end);
}
}  // namespace

void fold_sum_to_all(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                     std::size_t end, FoldPath path) {
  if (path == FoldPath::kBlocked) {
#if defined(__x86_64__)
    if (have_avx2()) return fold_blocks_to_all_avx2(src, n, dst, m, begin, end);
#endif
    return fold_blocks_to_all_baseline(src, n, dst, m, begin, end);
  }
#if defined(MESHRUN_HAVE_NT) && !defined(__SANITIZE_THREAD__)
  if (path == FoldPath::kNonTemporal && m > 0 && same_offset_mod64(dst, m)) {
    std::size_t i = begin;
    // Scalar head up to the first 64-byte boundary of the destinations (the same for all), whole
    // lines streamed, scalar tail.
    while (i < end && (reinterpret_cast<std::uintptr_t>(dst[0] + i) & 63u) != 0)
      fold_one_to_all(src, n, dst, m, i++);
    const std::size_t lines_end = i + (end - i) / 16 * 16;
    if (have_avx2()) {
      stream_lines_avx2(src, n, dst, m, i, lines_end);
    } else {
      stream_lines_sse2(src, n, dst, m, i, lines_end);
    }
    for (i = lines_end; i < end; ++i) fold_one_to_all(src, n, dst, m, i);
    _mm_sfence();  // streaming stores are weakly ordered: drain them before the caller publishes
    return;
  }
#endif
#if defined(__x86_64__)
  if (have_avx2()) return fold_sum_to_all_avx2(src, n, dst, m, begin, end);
#endif
  fold_sum_to_all_baseline(src, n, dst, m, begin, end);
}

}  // namespace meshrun::kernels
