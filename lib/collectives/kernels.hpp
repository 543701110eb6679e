// The reduction kernels of the collectives. Every element is folded in source order
// (((s0 + s1) + s2) + ...), the same order as a serial left fold in rank order, so vector width
// never changes a bit. The vector path is chosen at run time (AVX2 where the CPU and OS have it,
// SSE2 elsewhere, as glibc found at start-up: support/cpu_features.hpp), so the default build
// runs on any x86-64; no -march flag is needed.
#pragma once

#include <cstddef>

namespace meshrun::kernels {

// The vector path the kernels below take on this CPU: "avx2" or "sse2" (for benchmark headers).
const char* isa();

// dst[i] = src[0][i] + ... + src[n-1][i] for i in [begin, end). dst may be one of the sources.
void fold_sum(const float* const* src, int n, float* dst, std::size_t begin, std::size_t end);

// The same sum, written to each of dst[0..m-1] at [begin, end): owner-computes writes its chunk
// straight into every member's output. A destination may alias a source (in-place all-reduce):
// each block is read from every source before it is written anywhere.
// With `nontemporal`, and when every dst[q] has the same address modulo 64, the aligned middle is
// written with non-temporal (streaming) stores -- no read-for-ownership of lines that are only
// overwritten, and no eviction of the inputs still to be read -- followed by an sfence, so the
// stores are globally visible before the caller's next atomic publishes them. Otherwise (or for
// the unaligned head and tail) plain stores. The bits are the same either way.
void fold_sum_to_all(const float* const* src, int n, float* const* dst, int m, std::size_t begin,
                     std::size_t end, bool nontemporal);

}  // namespace meshrun::kernels
