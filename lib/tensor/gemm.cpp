// gemm: a GotoBLAS-style blocked product whose every output element is still one FMA chain over
// k in order (see gemm.hpp). Highway compiles the per-target part once per x86 target
// (foreach_target.h re-includes this file); HWY_ONCE marks the part compiled once.
//
// Only Highway's headers are used, not libhwy.so: its load-time timer calibration cost every
// meshrun process ~5 ms before main (callgrind: 4.3 of 8.3 M instructions of `meshrun --version`),
// and Debian ships no static libhwy. So the per-target code is compiled for the two x86 targets
// with a real FMA only, and gemm() picks one from the CPU's own feature bits (see HWY_ONCE below).
#ifndef HWY_TARGETS
#define HWY_TARGETS (HWY_AVX3 | HWY_AVX2)
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tensor/gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// (foreach_target.h must come first: it re-includes this file, and everything below, per target.)
#include <hwy/highway.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "support/cpu_features.hpp"
#include "tensor/gemm.hpp"

// Only targets whose MulAdd is a true fused multiply-add may run the vector kernel: on SSE4 and
// below Highway's MulAdd is a multiply then an add, which rounds twice. AVX2 and every x86 target
// above it (a smaller bit is a better target) have FMA.
#undef MESHRUN_GEMM_FMA
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define MESHRUN_GEMM_FMA 1
#else
#define MESHRUN_GEMM_FMA 0
#endif

HWY_BEFORE_NAMESPACE();
namespace meshrun {
namespace HWY_NAMESPACE {

#if MESHRUN_GEMM_FMA
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// The micro-kernel and its blocking (GotoBLAS/BLIS-style, with the B panel as the L1-resident
// operand):
//
// * Register tile: kMR rows x kNV vectors of C (kNV = kMaxNV, or fewer for a product of few
//   columns: see GemmFma), every lane one element's accumulator, plus kNV
//   loaded vectors of B and one broadcast of A per step. AVX-512: 6 x 4 vectors = 6 x 64 floats in
//   24 of its 32 registers (+ 4 + 1), 24 independent FMAs per step fed by 4 vector loads and 6
//   broadcasts; AVX2: 6 x 2 vectors = 6 x 16 in 12 of 16. Wide rather than tall: per FMA it
//   needs fewer broadcasts of A (0.25 against 8 x 2's 0.5), which on this project's AVX-512
//   machine (AMD Zen 5) showed as 220-225 GFLOP/s per CPU second on tp-mlp's two devices where
//   8 x 2 gave 206 (kernels_bench; bench/results/2026-12-01/NOTES.md); 14 x 2 was slower still.
// * B is packed one kKC x kNR panel at a time (32 KB, so it stays in L1) and every tile of a
//   kMC-row block of A runs through it before the next panel is packed. The panels of one strip
//   of kNR columns run in K order before the next strip, so that strip of C (384 x 64 floats at
//   most) stays in L2 while its chains go through all of K, instead of all of C going out to L3
//   and back once per block of K. While a panel's tiles run, each tile first prefetches its share
//   of the next panel's rows of B into L2 (and, on the strip's first block, the next tile of C), so
//   the first (cold, from memory) read of B overlaps the FMAs instead of being a pass of its own,
//   and no buffer the size of a B block is mapped, faulted in and unmapped per call.
// * A transposed B (stored (n, k)) is packed into the same panels, read down its rows: only
//   PackB and the prefetches know. (So x @ w.T needs no transposed copy of w.)
// * A's tiles are read in place (a row-major A's kMR rows, from L2) or, for a transposed A, from a
//   K x kMR packed copy of them made once per block of rows. The last mr < kMR rows run on a
//   tile of mr rows of accumulators (the same chains, fewer of them).
// * K is cut into kKC-long blocks; each block continues every chain from the C tile it loads back
//   (a float32 stored and reloaded is exact).
//
// Why the bits cannot change: every lane of every accumulator is one element of C, and its value
// only ever goes through acc = fma(a[i, p], b[p, j], acc) for p = 0, 1, ..., K - 1 in that order
// (the blocks of K run in order and pass acc on through C), started from +0 or from C with
// `accumulate`, then + bias and relu once after p = K - 1. Tiling, packing, prefetching and the
// order in which tiles run only decide when each chain advances, never what it computes; padded
// rows and columns (zeros) only feed lanes that are never stored.
constexpr std::size_t kL = hn::MaxLanes(D());
constexpr std::size_t kMR = 6;
// The widest tile, kMaxNV vectors of C per row. A product of few columns runs on a narrower one
// (GemmFma): dp-step's x @ w and its gradient have 16 columns, and a 64-wide tile computed four
// times the lanes it kept, through a copy of C per tile: 22-23 and 13 GFLOP/s per CPU second on 8
// threads (kernels_bench gemm 8192 64 16, gemm 64 8192 16 --a-transposed), 72-73 and 29-32 on
// the narrow tile (2026-12-05, bench/results/2026-12-05T07Z-issue32/NOTES.md).
constexpr std::size_t kMaxNV = HWY_TARGET == HWY_AVX2 ? 2 : 4;
// A tile kNV vectors wide has kNR = kNROf<kNV> columns; K is cut in kKC = kKCOf<kNV>-long blocks,
// so that a panel of B is 32 KB: 128 rows at 64 columns (AVX-512's widest), 512 at 16.
template <std::size_t kNV>
constexpr std::size_t kNROf = (kNV * kL);
template <std::size_t kNV>
constexpr std::size_t kKCOf = 32 * 1024 / sizeof(float) / kNROf<kNV>;
constexpr std::size_t kMC = 64 * kMR;  // rows of A per block (tiles per B panel): 384

// Where a tile finds A's element (row r, step p): in A's rows (a[r * lda + p], a row-major A read
// in place), or in its columns (a[p * lda + r], a packed panel with lda = kMR).
enum class ALayout { kRows, kColumns };

// C tile (kRows x kNR at c, row stride ldc; kRows = kMR but for a ragged last tile) continues its
// chains over kc steps: acc = fma(a, b, acc) with a from A (see ALayout) and b from the packed B
// panel (kc x kNR). With `load_c` false the chains start from +0. bias (kNR elements) and relu are
// the epilogue.
template <ALayout kLayout, std::size_t kNV, std::size_t kRows = kMR>
HWY_INLINE void Tile(std::size_t kc, const float* HWY_RESTRICT a, std::size_t lda,
                     const float* HWY_RESTRICT bp, float* HWY_RESTRICT c, std::size_t ldc,
                     bool load_c, const float* bias, bool relu) {
  constexpr std::size_t kNR = kNROf<kNV>;
  const D d;
  V acc[kRows][kNV];
  for (std::size_t r = 0; r < kRows; ++r)
    for (std::size_t v = 0; v < kNV; ++v)
      acc[r][v] = load_c ? hn::LoadU(d, c + r * ldc + v * kL) : hn::Zero(d);
  for (std::size_t p = 0; p < kc; ++p) {
    V b[kNV];
    for (std::size_t v = 0; v < kNV; ++v) b[v] = hn::Load(d, bp + p * kNR + v * kL);
    for (std::size_t r = 0; r < kRows; ++r) {
      const V av = hn::Set(d, kLayout == ALayout::kRows ? a[r * lda + p] : a[p * lda + r]);
      for (std::size_t v = 0; v < kNV; ++v) acc[r][v] = hn::MulAdd(av, b[v], acc[r][v]);
    }
  }
  if (bias) {
    for (std::size_t v = 0; v < kNV; ++v) {
      const V bv = hn::LoadU(d, bias + v * kL);
      for (std::size_t r = 0; r < kRows; ++r) acc[r][v] = hn::Add(acc[r][v], bv);
    }
  }
  if (relu) {
    const V zero = hn::Zero(d);
    for (std::size_t r = 0; r < kRows; ++r)
      for (std::size_t v = 0; v < kNV; ++v)
        acc[r][v] = hn::IfThenZeroElse(hn::Lt(acc[r][v], zero), acc[r][v]);
  }
  for (std::size_t r = 0; r < kRows; ++r)
    for (std::size_t v = 0; v < kNV; ++v) hn::StoreU(acc[r][v], d, c + r * ldc + v * kL);
}

// The tile of the last mr < kMR rows: the same chains on fewer accumulators (A's rows past mr
// are never read), so no packing of a plain A and no copy of C's rows for it.
template <ALayout kLayout, std::size_t kNV>
void RaggedTile(std::size_t mr, std::size_t kc, const float* HWY_RESTRICT a, std::size_t lda,
                const float* HWY_RESTRICT bp, float* HWY_RESTRICT c, std::size_t ldc, bool load_c,
                const float* bias, bool relu) {
  static_assert(kMR == 6, "one case per row count below kMR");
  switch (mr) {
    case 1:
      return Tile<kLayout, kNV, 1>(kc, a, lda, bp, c, ldc, load_c, bias, relu);
    case 2:
      return Tile<kLayout, kNV, 2>(kc, a, lda, bp, c, ldc, load_c, bias, relu);
    case 3:
      return Tile<kLayout, kNV, 3>(kc, a, lda, bp, c, ldc, load_c, bias, relu);
    case 4:
      return Tile<kLayout, kNV, 4>(kc, a, lda, bp, c, ldc, load_c, bias, relu);
    default:
      return Tile<kLayout, kNV, 5>(kc, a, lda, bp, c, ldc, load_c, bias, relu);
  }
}

// op(B) rows pc..pc+kc-1, columns j..j+nr-1 -> one kc x kNR row-major panel, columns past nr
// zero. A transposed B (stored (n, k)) gives the same panel from its rows j..j+nr-1: the same
// numbers in the same places, so the tiles (and every chain) cannot tell the two apart.
template <std::size_t kNV>
void PackB(const Gemm& g, std::size_t pc, std::size_t kc, std::size_t j, std::size_t nr,
           float* HWY_RESTRICT panel) {
  constexpr std::size_t kNR = kNROf<kNV>;
  const D d;
  if (g.b_transposed) {
    for (std::size_t col = 0; col < nr; ++col) {
      const float* src = g.b + (j + col) * g.ldb + pc;
      for (std::size_t p = 0; p < kc; ++p) panel[p * kNR + col] = src[p];
    }
    if (nr < kNR)
      for (std::size_t p = 0; p < kc; ++p)
        std::fill(panel + p * kNR + nr, panel + (p + 1) * kNR, 0.0f);
    return;
  }
  for (std::size_t p = 0; p < kc; ++p) {
    const float* src = g.b + (pc + p) * g.ldb + j;
    float* dst = panel + p * kNR;
    if (nr == kNR) {  // the common case, in registers rather than a memcpy call per row
      for (std::size_t v = 0; v < kNV; ++v) hn::Store(hn::LoadU(d, src + v * kL), d, dst + v * kL);
    } else {
      std::copy(src, src + nr, dst);
      std::fill(dst + nr, dst + kNR, 0.0f);
    }
  }
}

// The floats between the tiles of a packed transposed A: each tile is one K x kMR panel.
constexpr std::size_t PackedTileStride(std::size_t k) { return k * kMR; }

// A transposed (stored (k, m)): its rows ic0..ic0+mc-1 of op(A), all of K -> one K x kMR panel
// per tile of kMR rows (the last one ragged), at ap + t * PackedTileStride(K) (ALayout::kColumns
// with lda = kMR); the rows of a tile are strided columns in memory. A's rows are read once each,
// in order, every tile's part of it moved inline (a tile at a time read each of A's cache lines
// once per tile, and a memmove call per kMR floats cost more than them).
void PackTransposedA(const Gemm& g, std::size_t ic0, std::size_t mc, float* HWY_RESTRICT ap) {
  const std::size_t full = mc / kMR, rest = mc % kMR;
  const std::size_t panel = PackedTileStride(g.k);
  for (std::size_t p = 0; p < g.k; ++p) {
    const float* src = g.a + p * g.lda + ic0;
    float* dst = ap + p * kMR;
    for (std::size_t t = 0; t < full; ++t)
      for (std::size_t r = 0; r < kMR; ++r) dst[t * panel + r] = src[t * kMR + r];
    for (std::size_t r = 0; r < rest; ++r) dst[full * panel + r] = src[full * kMR + r];
  }
}

// The cache lines of `count` floats from p on, into L2 (prefetcht1). Into L1 (hwy::Prefetch's
// prefetcht0) the next 32 KB panel evicted lines of the one the tiles are reading: 6-10% fewer
// GFLOP/s per CPU second on 8 threads for 128x1024x1024, 0-3% for 1024x128x1024 --a-transposed
// and tp-mlp's products (kernels_bench, alternated, 2026-12-05). PackB then reads it from L2.
void PrefetchFloats(const float* p, std::size_t count) {
  constexpr std::size_t kLine = 64 / sizeof(float);
  constexpr int kRead = 0, kL2 = 2;
  for (std::size_t i = 0; i < count; i += kLine) __builtin_prefetch(p + i, kRead, kL2);
  __builtin_prefetch(p + count - 1, kRead, kL2);
}

struct FreeAligned {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeAligned>;

// `n` floats aligned for whole-vector loads (std::aligned_alloc wants a multiple of the alignment).
AlignedFloats AllocateAligned(std::size_t n) {
  const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
  if (p == nullptr) throw std::bad_alloc();
  return AlignedFloats(p);
}

// This thread's packed A tiles, kept between calls: a device's products after its first find
// them already mapped (a fresh buffer per call costs page faults and a munmap each time).
float* ABlockScratch(std::size_t n) {
  thread_local AlignedFloats block;
  thread_local std::size_t size = 0;
  if (size < n) {
    block = AllocateAligned(n);
    size = n;
  }
  return block.get();
}

// Where the next panel of B starts (rows from pc, columns from j), for the prefetches.
struct PanelAt {
  std::size_t pc, kc, j, nr;
  bool valid;
};

// `panel` holds min(K, kKC) x kNR floats; `edge`, kMR x kNR zeros: a ragged strip of columns
// runs on this copy.
template <std::size_t kNV>
void GemmFmaOn(const Gemm& g, float* panel, float* edge) {
  constexpr std::size_t kNR = kNROf<kNV>;
  constexpr std::size_t kKC = kKCOf<kNV>;
  // The bias, padded to whole tiles so the epilogue never reads past it.
  AlignedFloats bias;
  if (g.bias) {
    const std::size_t padded = (g.n + kNR - 1) / kNR * kNR;
    bias = AllocateAligned(padded);
    std::copy(g.bias, g.bias + g.n, bias.get());
    std::fill(bias.get() + g.n, bias.get() + padded, 0.0f);
  }
  // A transposed: its tiles packed, K x kMR each (ALayout::kColumns, block pc at pc * kMR);
  // a plain A is read in place.
  float* ablock = nullptr;

  for (std::size_t ic0 = 0; ic0 < g.m; ic0 += kMC) {
    const std::size_t mc = std::min(kMC, g.m - ic0);
    const std::size_t tiles = (mc + kMR - 1) / kMR;
    if (g.a_transposed) {
      if (ablock == nullptr)
        ablock = ABlockScratch((std::min(kMC, g.m) + kMR - 1) / kMR * PackedTileStride(g.k));
      PackTransposedA(g, ic0, mc, ablock);
    }
    for (std::size_t j = 0; j < g.n; j += kNR) {
      const std::size_t nr = std::min(kNR, g.n - j);
      for (std::size_t pc = 0; pc < g.k; pc += kKC) {
        const std::size_t kc = std::min(kKC, g.k - pc);
        const bool load_c = pc > 0 || g.accumulate;
        const bool last = pc + kc == g.k;
        PackB<kNV>(g, pc, kc, j, nr, panel);
        // The panel after this one: the next block of K, else the next columns, else the first
        // panel of the next block of A's rows.
        PanelAt next{pc + kKC, 0, j, 0, true};
        if (next.pc >= g.k) next = {0, 0, j + kNR, 0, j + kNR < g.n};
        if (!next.valid && ic0 + kMC < g.m) next = {0, 0, 0, 0, true};
        next.kc = std::min(kKC, g.k - next.pc);
        next.nr = std::min(kNR, g.n - next.j);
        // The next panel's lines of memory: rows of B, or, transposed, its rows j.. (columns of
        // op(B)), each spread over the tiles.
        const std::size_t lines = g.b_transposed ? next.nr : next.kc;
        const std::size_t lines_per_tile = next.valid ? (lines + tiles - 1) / tiles : 0;

        const float* tile_bias = last && bias ? bias.get() + j : nullptr;
        const bool relu = last && g.relu;
        for (std::size_t t = 0; t < tiles; ++t) {
          const std::size_t ic = ic0 + t * kMR;
          const std::size_t mr = std::min(kMR, mc - t * kMR);
          float* c = g.c + ic * g.ldc + j;
          // This tile's share of the next panel's rows of B, and (on the first block of K, when
          // C comes from memory) the next tile of C.
          for (std::size_t p = t * lines_per_tile; p < std::min(lines, (t + 1) * lines_per_tile);
               ++p) {
            if (g.b_transposed) {
              PrefetchFloats(g.b + (next.j + p) * g.ldb + next.pc, next.kc);
            } else {
              PrefetchFloats(g.b + (next.pc + p) * g.ldb + next.j, next.nr);
            }
          }
          if (pc == 0 && t + 1 < tiles)
            for (std::size_t r = 0; r < std::min(kMR, mc - (t + 1) * kMR); ++r)
              PrefetchFloats(c + (kMR + r) * g.ldc, nr);

          float* tile = c;
          std::size_t ldt = g.ldc;
          if (nr < kNR) {
            tile = edge;
            ldt = kNR;
            if (load_c)
              for (std::size_t r = 0; r < mr; ++r)
                std::copy(c + r * g.ldc, c + r * g.ldc + nr, edge + r * kNR);
          }
          const float* a = g.a_transposed ? ablock + t * PackedTileStride(g.k) + pc * kMR
                                          : g.a + ic * g.lda + pc;
          const std::size_t lda = g.a_transposed ? kMR : g.lda;
          if (g.a_transposed) {
            if (mr == kMR) {
              Tile<ALayout::kColumns, kNV>(kc, a, lda, panel, tile, ldt, load_c, tile_bias, relu);
            } else {
              RaggedTile<ALayout::kColumns, kNV>(mr, kc, a, lda, panel, tile, ldt, load_c,
                                                 tile_bias, relu);
            }
          } else if (mr == kMR) {
            Tile<ALayout::kRows, kNV>(kc, a, lda, panel, tile, ldt, load_c, tile_bias, relu);
          } else {
            RaggedTile<ALayout::kRows, kNV>(mr, kc, a, lda, panel, tile, ldt, load_c, tile_bias,
                                            relu);
          }
          if (tile == edge)
            for (std::size_t r = 0; r < mr; ++r)
              std::copy(edge + r * kNR, edge + r * kNR + nr, c + r * g.ldc);
        }
      }
    }
  }
}
// The panel and the edge copy live on the device thread's stack. A 32 KB panel for a product of
// a few rows of K put the callee frames 34 KB down a fresh thread stack: one more page faulted in
// per device in every start-up (issue #32.2; the first documented example's products are 1x1x1).
// A product of K <= kSmallK rows gets a panel of that many rows; the arithmetic is the same.
constexpr std::size_t kSmallK = 4;

template <std::size_t kNV, std::size_t kPanelRows>
HWY_NOINLINE void GemmFmaOnStack(const Gemm& g) {
  alignas(64) float panel[kPanelRows * kNROf<kNV>];
  alignas(64) float edge[kMR * kNROf<kNV>] = {};
  GemmFmaOn<kNV>(g, panel, edge);
}

template <std::size_t kNV>
void GemmFmaOfWidth(const Gemm& g) {
  if (g.k <= kSmallK) return GemmFmaOnStack<kNV, kSmallK>(g);
  GemmFmaOnStack<kNV, kKCOf<kNV>>(g);
}

// The narrowest tile that holds all of C's columns, else the widest.
void GemmFma(const Gemm& g) {
  const std::size_t vectors = (g.n + kL - 1) / kL;
  if (vectors <= 1) return GemmFmaOfWidth<1>(g);
  if (vectors <= 2 || kMaxNV == 2) return GemmFmaOfWidth<2>(g);
  GemmFmaOfWidth<kMaxNV>(g);
}
#endif  // MESHRUN_GEMM_FMA

void GemmTarget(const Gemm& g) {
#if MESHRUN_GEMM_FMA
  // With k == 0 there is no chain: C is +0 (or kept) plus the epilogue, which the loop does.
  if (g.m > 0 && g.n > 0 && g.k > 0) return GemmFma(g);
#endif
  gemm_portable(g);
}

}  // namespace HWY_NAMESPACE
}  // namespace meshrun
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace meshrun {

namespace {

struct Kernel {
  const char* name;
  void (*run)(const Gemm&);
  bool (*supported)();
};

// What Highway's AVX3 and AVX2 targets require of the CPU (hwy/targets.cc), as glibc found it at
// start-up (support/cpu_features.hpp: no CPUID of our own).
bool has_avx3() {
  const cpu::Features& f = cpu::features();
  return f.avx512f && f.avx512vl && f.avx512dq && f.avx512bw;
}
bool has_avx2() {
  const cpu::Features& f = cpu::features();
  return f.avx2 && f.fma && f.bmi2 && f.f16c;
}
bool always() { return true; }

// Best first.
constexpr Kernel kKernels[] = {
    {"AVX3", &N_AVX3::GemmTarget, &has_avx3},
    {"AVX2", &N_AVX2::GemmTarget, &has_avx2},
    {"portable", &gemm_portable, &always},
};

const Kernel* best_kernel() {
  for (const Kernel& k : kKernels)
    if (k.supported()) return &k;
  return &kKernels[std::size(kKernels) - 1];
}

// The kernel gemm() runs: the best this CPU supports, unless gemm_use_target chose another. Made
// on first use, not by a namespace-scope initialiser another one could run before.
std::atomic<const Kernel*>& chosen() {
  static std::atomic<const Kernel*> kernel{best_kernel()};
  return kernel;
}

}  // namespace

void gemm(const Gemm& g) { chosen().load(std::memory_order_relaxed)->run(g); }

const char* gemm_target() { return chosen().load(std::memory_order_relaxed)->name; }

std::vector<std::string> gemm_targets() {
  std::vector<std::string> names;
  for (const Kernel& k : kKernels)
    if (k.supported()) names.emplace_back(k.name);
  return names;
}

bool gemm_use_target(const std::string& name) {
  if (name.empty()) {
    chosen().store(best_kernel(), std::memory_order_relaxed);
    return true;
  }
  for (const Kernel& k : kKernels) {
    if (name == k.name && k.supported()) {
      chosen().store(&k, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

void gemm_portable(const Gemm& g) {
  for (std::size_t i = 0; i < g.m; ++i) {
    float* ci = g.c + i * g.ldc;
    if (!g.accumulate) std::fill(ci, ci + g.n, 0.0f);
    for (std::size_t p = 0; p < g.k; ++p) {
      const float aip = g.a_transposed ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
      if (g.b_transposed) {
        for (std::size_t j = 0; j < g.n; ++j) ci[j] = std::fma(aip, g.b[j * g.ldb + p], ci[j]);
        continue;
      }
      const float* bp = g.b + p * g.ldb;
      for (std::size_t j = 0; j < g.n; ++j) ci[j] = std::fma(aip, bp[j], ci[j]);
    }
    for (std::size_t j = 0; j < g.n; ++j) {
      if (g.bias) ci[j] += g.bias[j];
      if (g.relu) ci[j] = ci[j] < 0.0f ? 0.0f : ci[j];
    }
  }
}

}  // namespace meshrun
#endif  // HWY_ONCE
