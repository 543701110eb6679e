// The reduction kernels of the collectives. Every element is folded in source order
// (((s0 + s1) + s2) + ...), the same order as a serial left fold in rank order, so vector width
// never changes a bit. Max and min fold the same way from -inf (+inf) with std::max's
// (a < b) ? b : a (std::min's (b < a) ? b : a): the rule of communicator.hpp. The vector path is
// chosen at run time (AVX2 where the CPU and OS have it, SSE2 elsewhere, as glibc found at
// start-up: support/cpu_features.hpp), so the default build runs on any x86-64; no -march flag is
// needed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace meshrun::kernels {

// What a fold computes: psum's sum (from s0), pmax's max (from -inf), pmin's min (from +inf).
enum class Combine : std::uint8_t { kSum, kMax, kMin };

// The vector path the kernels below take on this CPU: "avx2" or "sse2" (for benchmark headers).
const char* isa();

// dst[i] = src[0][i] + ... + src[n-1][i] for i in [begin, end). dst may be one of the sources.
void fold_sum(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end);
// The same with `op`: fold(kSum, ...) is fold_sum. A fold's result continues it: folding
// [fold(s0..sk), s(k+1), ...] gives fold(s0..sn) for every op (a max or min is never NaN).
void fold(Combine op, const float* const* src, int n, float* dst, std::size_t begin,
          std::size_t end);

// How fold_sum_to_all walks its sources and destinations. The bits are the same on every path.
enum class FoldPath {
  // One pass: a line of every source folded, then stored to every destination, step after step.
  // The most cache misses in flight at once, for data that comes from memory.
  kInterleaved,
  // 4 KiB at a time: the block is folded into a stack buffer source by source, then copied to each
  // destination, one stream per pass. For data already in cache: buffers of one size that the
  // allocator placed back to back sit at nearly one offset modulo 4 KiB, and the interleaved pass
  // then puts all 2n of its streams in the same few L1 sets, more than a set has ways: every step
  // evicted a line the next one needed (64 KiB psum, 8 devices: 16-31 us against 13.3-13.8).
  kBlocked,
  // kInterleaved with non-temporal (streaming) stores, when every dst[q] has the same address
  // modulo 64 (else plain stores): no read-for-ownership of lines that are only overwritten, no
  // eviction of the inputs still to be read, then an sfence, so the stores are globally visible
  // before the caller's next atomic publishes them. The unaligned head and tail are plain stores.
  kNonTemporal,
};

// The same sum, written to each of dst[0..m-1] at [begin, end): owner-computes writes its chunk
// straight into every member's output. A destination may alias a source (in-place all-reduce):
// each element is read from every source before it is written anywhere.
void fold_sum_to_all(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                     std::size_t end, FoldPath path);
// The same with `op`, on every path.
void fold_to_all(Combine op, const float* const* src, int n, float* const* dst, int m,
                 std::size_t begin, std::size_t end, FoldPath path);

}  // namespace meshrun::kernels
