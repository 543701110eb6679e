#include "collectives/kernels.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

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
typedef std::int32_t v8i __attribute__((vector_size(32)));
constexpr std::size_t kW = 8;
constexpr float kInf = std::numeric_limits<float>::infinity();

[[gnu::always_inline]] inline void load(v8& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}  // unaligned
[[gnu::always_inline]] inline void store(float* p, const v8& v) { std::memcpy(p, &v, sizeof v); }
// where ? a : b, lane by lane, as bits.
[[gnu::always_inline]] inline void select(v8& out, const v8i& where, const v8& a, const v8& b) {
  out = reinterpret_cast<v8>((reinterpret_cast<v8i>(a) & where) |
                             (reinterpret_cast<v8i>(b) & ~where));
}

// The three folds, each as its first step (the accumulator from source 0) and its next step
// (one more source), on a vector and on one float. Sum starts from s0 itself (XLA's CPU
// all-reduce starts from 0.0f, which differs only where every term is -0.0: -0.0 here, +0.0
// there); max and min from -inf and +inf, the rule of communicator.hpp.
struct Sum {
  static constexpr Combine kOp = Combine::kSum;
  [[gnu::always_inline]] static void first(v8& acc, const float* p) { load(acc, p); }
  [[gnu::always_inline]] static void next(v8& acc, const float* p) {
    v8 t;
    load(t, p);
    acc += t;
  }
  static float first(float x) { return x; }
  static float next(float acc, float x) { return acc + x; }
};
struct Max {
  static constexpr Combine kOp = Combine::kMax;
  [[gnu::always_inline]] static void first(v8& acc, const float* p) {
    acc = v8{} - kInf;
    next(acc, p);
  }
  [[gnu::always_inline]] static void next(v8& acc, const float* p) {  // std::max(acc, t)
    v8 t;
    load(t, p);
    select(acc, acc < t, t, acc);
  }
  static float first(float x) { return next(-kInf, x); }
  static float next(float acc, float x) { return acc < x ? x : acc; }
};
struct Min {
  static constexpr Combine kOp = Combine::kMin;
  [[gnu::always_inline]] static void first(v8& acc, const float* p) {
    acc = v8{} + kInf;
    next(acc, p);
  }
  [[gnu::always_inline]] static void next(v8& acc, const float* p) {  // std::min(acc, t)
    v8 t;
    load(t, p);
    select(acc, t < acc, t, acc);
  }
  static float first(float x) { return next(kInf, x); }
  static float next(float acc, float x) { return x < acc ? x : acc; }
};

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
template <class Op>
[[gnu::always_inline]] inline void fold_body(const float* const* src, int n, float* dst,
                                             std::size_t begin, std::size_t end) {
  std::size_t i = begin;
  for (; i + 2 * kW <= end; i += 2 * kW) {
    v8 a, b;
    Op::first(a, src[0] + i);
    Op::first(b, src[0] + i + kW);
    for (int r = 1; r < n; ++r) {
      Op::next(a, src[r] + i);
      Op::next(b, src[r] + i + kW);
    }
    store(dst + i, a);
    store(dst + i + kW, b);
  }
  for (; i < end; ++i) {
    float a = Op::first(src[0][i]);
    for (int r = 1; r < n; ++r) a = Op::next(a, src[r][i]);
    dst[i] = a;
  }
}
#if defined(__x86_64__)
template <class Op>
MESHRUN_AVX2 void fold_avx2(const float* const* src, int n, float* dst, std::size_t begin,
                            std::size_t end) {
  fold_body<Op>(src, n, dst, begin, end);
}
#endif
template <class Op>
void fold_baseline(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end) {
  fold_body<Op>(src, n, dst, begin, end);
}
template <class Op>
void fold_op(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end) {
#if defined(__x86_64__)
  if (have_avx2()) return fold_avx2<Op>(src, n, dst, begin, end);
#endif
  fold_baseline<Op>(src, n, dst, begin, end);
}
}  // namespace

void fold_sum(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end) {
  fold_op<Sum>(src, n, dst, begin, end);
}

void fold(Combine op, const float* const* src, int n, float* dst, std::size_t begin,
          std::size_t end) {
  switch (op) {
    case Combine::kSum:
      return fold_op<Sum>(src, n, dst, begin, end);
    case Combine::kMax:
      return fold_op<Max>(src, n, dst, begin, end);
    case Combine::kMin:
      return fold_op<Min>(src, n, dst, begin, end);
  }
}

namespace {
// One element, folded in rank order, stored to every destination.
template <class Op>
inline void fold_one_to_all(const float* const* src, int n, float* const* dst, int m,
                            std::size_t i) {
  float a = Op::first(src[0][i]);
  for (int r = 1; r < n; ++r) a = Op::next(a, src[r][i]);
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

// The streaming middle of fold_to_all: [i, end) is whole 64-byte lines of every dst[q]. Two
// versions picked at run time (GCC has no portable non-temporal vector store, and a
// target_clones body cannot hold AVX intrinsics), each one line (16 floats) per step, the sources
// folded in rank order as everywhere else. maxps(x, acc) is (x > acc) ? x : acc, i.e.
// std::max(acc, x), NaN and signed zeros included; minps(x, acc) likewise std::min(acc, x).
// acc = acc + x, std::max(acc, x) or std::min(acc, x) on the vector at p (by reference: see the
// note at the top).
template <class Op>
[[gnu::always_inline, gnu::target("avx2")]] inline void next_avx2(__m256& acc, const float* p) {
  const __m256 x = _mm256_loadu_ps(p);
  if constexpr (Op::kOp == Combine::kSum) {
    acc = _mm256_add_ps(acc, x);
  } else if constexpr (Op::kOp == Combine::kMax) {
    acc = _mm256_max_ps(x, acc);
  } else {
    acc = _mm256_min_ps(x, acc);
  }
}
template <class Op>
[[gnu::always_inline, gnu::target("avx2")]] inline void first_avx2(__m256& acc, const float* p) {
  if constexpr (Op::kOp == Combine::kSum) {
    acc = _mm256_loadu_ps(p);
  } else {
    acc = _mm256_set1_ps(Op::kOp == Combine::kMax ? -kInf : kInf);
    next_avx2<Op>(acc, p);
  }
}
template <class Op>
[[gnu::always_inline]] inline void next_sse2(__m128& acc, const float* p) {
  const __m128 x = _mm_loadu_ps(p);
  if constexpr (Op::kOp == Combine::kSum) {
    acc = _mm_add_ps(acc, x);
  } else if constexpr (Op::kOp == Combine::kMax) {
    acc = _mm_max_ps(x, acc);
  } else {
    acc = _mm_min_ps(x, acc);
  }
}
template <class Op>
[[gnu::always_inline]] inline void first_sse2(__m128& acc, const float* p) {
  if constexpr (Op::kOp == Combine::kSum) {
    acc = _mm_loadu_ps(p);
  } else {
    acc = _mm_set1_ps(Op::kOp == Combine::kMax ? -kInf : kInf);
    next_sse2<Op>(acc, p);
  }
}

template <class Op>
MESHRUN_AVX2 void stream_lines_avx2(const float* const* src, int n, float* const* dst, int m,
                                    std::size_t i, std::size_t end) {
  for (; i < end; i += 16) {
    __m256 a, b;
    first_avx2<Op>(a, src[0] + i);
    first_avx2<Op>(b, src[0] + i + 8);
    for (int r = 1; r < n; ++r) {
      next_avx2<Op>(a, src[r] + i);
      next_avx2<Op>(b, src[r] + i + 8);
    }
    for (int q = 0; q < m; ++q) {
      _mm256_stream_ps(dst[q] + i, a);
      _mm256_stream_ps(dst[q] + i + 8, b);
    }
  }
}

template <class Op>
void stream_lines_sse2(const float* const* src, int n, float* const* dst, int m, std::size_t i,
                       std::size_t end) {
  for (; i < end; i += 16) {
    __m128 a, b, c, d;
    first_sse2<Op>(a, src[0] + i);
    first_sse2<Op>(b, src[0] + i + 4);
    first_sse2<Op>(c, src[0] + i + 8);
    first_sse2<Op>(d, src[0] + i + 12);
    for (int r = 1; r < n; ++r) {
      next_sse2<Op>(a, src[r] + i);
      next_sse2<Op>(b, src[r] + i + 4);
      next_sse2<Op>(c, src[r] + i + 8);
      next_sse2<Op>(d, src[r] + i + 12);
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
template <class Op>
[[gnu::always_inline]] inline void fold_to_all_body(const float* const* src, int n,
                                                    float* const* dst, int m, std::size_t begin,
                                                    std::size_t end) {
  std::size_t i = begin;
  for (; i + 2 * kW <= end; i += 2 * kW) {
    v8 a, b;
    Op::first(a, src[0] + i);
    Op::first(b, src[0] + i + kW);
    for (int r = 1; r < n; ++r) {
      Op::next(a, src[r] + i);
      Op::next(b, src[r] + i + kW);
    }
    for (int q = 0; q < m; ++q) {
      store(dst[q] + i, a);
      store(dst[q] + i + kW, b);
    }
  }
  for (; i < end; ++i) fold_one_to_all<Op>(src, n, dst, m, i);
}

// FoldPath::kBlocked: whole blocks through `acc` (on the stack: in L1), the rest interleaved.
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
template <class Op>
[[gnu::always_inline]] inline void fold_blocks_to_all_body(const float* const* src, int n,
                                                           float* const* dst, int m,
                                                           std::size_t begin, std::size_t end) {
  alignas(64) float acc[kBlock];
  std::size_t i = begin;
  for (; i + kBlock <= end; i += kBlock) {
    for (std::size_t j = 0; j < kBlock; j += 2 * kW) {
      v8 a, b;
      Op::first(a, src[0] + i + j);
      Op::first(b, src[0] + i + j + kW);
      store(acc + j, a);
      store(acc + j + kW, b);
    }
    for (int r = 1; r < n; ++r) {  // rank order, as the interleaved pass folds each element
      for (std::size_t j = 0; j < kBlock; j += 2 * kW) {
        v8 a, b;
        load(a, acc + j);
        load(b, acc + j + kW);
        Op::next(a, src[r] + i + j);
        Op::next(b, src[r] + i + j + kW);
        store(acc + j, a);
        store(acc + j + kW, b);
      }
    }
    for (int q = 0; q < m; ++q) copy_block(dst[q] + i, acc);
  }
  fold_to_all_body<Op>(src, n, dst, m, i, end);
}

#if defined(__x86_64__)
template <class Op>
MESHRUN_AVX2 void fold_to_all_avx2(const float* const* src, int n, float* const* dst, int m,
                                   std::size_t begin, std::size_t end) {
  fold_to_all_body<Op>(src, n, dst, m, begin, end);
}
template <class Op>
MESHRUN_AVX2 void fold_blocks_to_all_avx2(const float* const* src, int n, float* const* dst, int m,
                                          std::size_t begin, std::size_t end) {
  fold_blocks_to_all_body<Op>(src, n, dst, m, begin, end);
}
#endif
template <class Op>
void fold_to_all_baseline(const float* const* src, int n, float* const* dst, int m,
                          std::size_t begin, std::size_t end) {
  fold_to_all_body<Op>(src, n, dst, m, begin, end);
}
template <class Op>
void fold_blocks_to_all_baseline(const float* const* src, int n, float* const* dst, int m,
                                 std::size_t begin, std::size_t end) {
  fold_blocks_to_all_body<Op>(src, n, dst, m, begin, end);
}

template <class Op>
void fold_to_all_op(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                    std::size_t end, FoldPath path) {
  if (path == FoldPath::kBlocked) {
#if defined(__x86_64__)
    if (have_avx2()) return fold_blocks_to_all_avx2<Op>(src, n, dst, m, begin, end);
#endif
    return fold_blocks_to_all_baseline<Op>(src, n, dst, m, begin, end);
  }
#if defined(MESHRUN_HAVE_NT) && !defined(__SANITIZE_THREAD__)
  if (path == FoldPath::kNonTemporal && m > 0 && same_offset_mod64(dst, m)) {
    std::size_t i = begin;
    // Scalar head up to the first 64-byte boundary of the destinations (the same for all), whole
    // lines streamed, scalar tail.
    while (i < end && (reinterpret_cast<std::uintptr_t>(dst[0] + i) & 63u) != 0)
      fold_one_to_all<Op>(src, n, dst, m, i++);
    const std::size_t lines_end = i + (end - i) / 16 * 16;
    if (have_avx2()) {
      stream_lines_avx2<Op>(src, n, dst, m, i, lines_end);
    } else {
      stream_lines_sse2<Op>(src, n, dst, m, i, lines_end);
    }
    for (i = lines_end; i < end; ++i) fold_one_to_all<Op>(src, n, dst, m, i);
    _mm_sfence();  // streaming stores are weakly ordered: drain them before the caller publishes
    return;
  }
#endif
#if defined(__x86_64__)
  if (have_avx2()) return fold_to_all_avx2<Op>(src, n, dst, m, begin, end);
#endif
  fold_to_all_baseline<Op>(src, n, dst, m, begin, end);
}
}  // namespace

void fold_sum_to_all(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                     std::size_t end, FoldPath path) {
  fold_to_all_op<Sum>(src, n, dst, m, begin, end, path);
}

void fold_to_all(Combine op, const float* const* src, int n, float* const* dst, int m,
                 std::size_t begin, std::size_t end, FoldPath path) {
  switch (op) {
    case Combine::kSum:
      return fold_to_all_op<Sum>(src, n, dst, m, begin, end, path);
    case Combine::kMax:
      return fold_to_all_op<Max>(src, n, dst, m, begin, end, path);
    case Combine::kMin:
      return fold_to_all_op<Min>(src, n, dst, m, begin, end, path);
  }
}

}  // namespace meshrun::kernels
