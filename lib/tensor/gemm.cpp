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

// Tile shape: kMR rows x kNV vectors of C live in registers (AVX-512 has 32 vector registers,
// AVX2 16): kMR * kNV accumulators, kNV loaded rows of B and one broadcast of A.
constexpr std::size_t kL = hn::MaxLanes(D());
constexpr std::size_t kMR = HWY_TARGET == HWY_AVX2 ? 6 : 8;
constexpr std::size_t kNV = 2;
constexpr std::size_t kNR = kNV * kL;
// Cache blocking: A's kMR rows for one tile (kKC x kMR) stay in L1 while the packed B block
// (kKC x kNC) streams from L2 through them.
constexpr std::size_t kKC = 256;
constexpr std::size_t kNC = 1024;

// Where a tile finds A's element (row r, step p): in A's rows (a[r * lda + p], a row-major A read
// in place), or in its columns (a[p * lda + r], a packed panel with lda = kMR).
enum class ALayout { kRows, kColumns };

// C tile (kMR x kNR at c, row stride ldc) continues its chains over kc steps: acc = fma(a, b, acc)
// with a from A (see ALayout) and b from the packed B panel (kc x kNR). With `load_c` false the
// chains start from +0. bias (kNR elements) and relu are the epilogue.
template <ALayout kLayout>
HWY_INLINE void Tile(std::size_t kc, const float* HWY_RESTRICT a, std::size_t lda,
                     const float* HWY_RESTRICT bp, float* HWY_RESTRICT c, std::size_t ldc,
                     bool load_c, const float* bias, bool relu) {
  const D d;
  V acc[kMR][kNV];
  for (std::size_t r = 0; r < kMR; ++r)
    for (std::size_t v = 0; v < kNV; ++v)
      acc[r][v] = load_c ? hn::LoadU(d, c + r * ldc + v * kL) : hn::Zero(d);
  for (std::size_t p = 0; p < kc; ++p) {
    V b[kNV];
    for (std::size_t v = 0; v < kNV; ++v) b[v] = hn::Load(d, bp + p * kNR + v * kL);
    for (std::size_t r = 0; r < kMR; ++r) {
      const V av = hn::Set(d, kLayout == ALayout::kRows ? a[r * lda + p] : a[p * lda + r]);
      for (std::size_t v = 0; v < kNV; ++v) acc[r][v] = hn::MulAdd(av, b[v], acc[r][v]);
    }
  }
  if (bias) {
    for (std::size_t v = 0; v < kNV; ++v) {
      const V bv = hn::LoadU(d, bias + v * kL);
      for (std::size_t r = 0; r < kMR; ++r) acc[r][v] = hn::Add(acc[r][v], bv);
    }
  }
  if (relu) {
    const V zero = hn::Zero(d);
    for (std::size_t r = 0; r < kMR; ++r)
      for (std::size_t v = 0; v < kNV; ++v)
        acc[r][v] = hn::IfThenZeroElse(hn::Lt(acc[r][v], zero), acc[r][v]);
  }
  for (std::size_t r = 0; r < kMR; ++r)
    for (std::size_t v = 0; v < kNV; ++v) hn::StoreU(acc[r][v], d, c + r * ldc + v * kL);
}

// B rows pc..pc+kc-1, columns jc..jc+nc-1 -> panels of kNR columns, each kc x kNR row-major
// (panel q at bp + q * kc * kNR), columns past nc zero.
void PackB(const Gemm& g, std::size_t pc, std::size_t kc, std::size_t jc, std::size_t nc,
           float* HWY_RESTRICT bp) {
  const D d;
  for (std::size_t jr = 0; jr < nc; jr += kNR) {
    const std::size_t nr = std::min(kNR, nc - jr);
    float* panel = bp + jr * kc;
    for (std::size_t p = 0; p < kc; ++p) {
      const float* src = g.b + (pc + p) * g.ldb + jc + jr;
      float* dst = panel + p * kNR;
      if (nr == kNR) {  // the common case, in registers rather than a memcpy call per row
        for (std::size_t v = 0; v < kNV; ++v)
          hn::Store(hn::LoadU(d, src + v * kL), d, dst + v * kL);
      } else {
        std::copy(src, src + nr, dst);
        std::fill(dst + nr, dst + kNR, 0.0f);
      }
    }
  }
}

// op(A) rows ic..ic+mr-1, columns pc..pc+kc-1 -> one kc x kMR panel (ALayout::kColumns with
// lda = kMR), rows past mr zero. Needed for a transposed A (its rows of the tile are strided
// columns in memory) and for a ragged last tile; a whole tile of a plain A is read in place.
void PackA(const Gemm& g, std::size_t ic, std::size_t mr, std::size_t pc, std::size_t kc,
           float* HWY_RESTRICT ap) {
  if (mr < kMR) std::fill(ap, ap + kc * kMR, 0.0f);
  if (g.a_transposed) {
    for (std::size_t p = 0; p < kc; ++p) {
      const float* src = g.a + (pc + p) * g.lda + ic;
      std::copy(src, src + mr, ap + p * kMR);
    }
  } else {
    for (std::size_t r = 0; r < mr; ++r) {
      const float* src = g.a + (ic + r) * g.lda + pc;
      for (std::size_t p = 0; p < kc; ++p) ap[p * kMR + r] = src[p];
    }
  }
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

void GemmFma(const Gemm& g) {
  // Sized for this product, not for the largest blocks: a small one (dp-step's 1x1 weights) then
  // packs into a few bytes, not 40 KB of fresh pages in its device's new malloc arena.
  const std::size_t nc_max = std::min(kNC, (g.n + kNR - 1) / kNR * kNR);
  const std::size_t kc_max = std::min(kKC, g.k);
  auto bpack = AllocateAligned(kc_max * nc_max);
  auto apack = AllocateAligned(kc_max * kMR);
  // The bias, padded to whole tiles so the epilogue never reads past it.
  AlignedFloats bias;
  if (g.bias) {
    const std::size_t padded = (g.n + kNR - 1) / kNR * kNR;
    bias = AllocateAligned(padded);
    std::copy(g.bias, g.bias + g.n, bias.get());
    std::fill(bias.get() + g.n, bias.get() + padded, 0.0f);
  }
  // Ragged tiles run on this full-size copy and are copied back.
  alignas(64) float edge[kMR * kNR] = {};

  for (std::size_t jc = 0; jc < g.n; jc += kNC) {
    const std::size_t nc = std::min(kNC, g.n - jc);
    for (std::size_t pc = 0; pc < g.k; pc += kKC) {
      const std::size_t kc = std::min(kKC, g.k - pc);
      const bool load_c = pc > 0 || g.accumulate;
      const bool last = pc + kc == g.k;
      PackB(g, pc, kc, jc, nc, bpack.get());
      for (std::size_t ic = 0; ic < g.m; ic += kMR) {
        const std::size_t mr = std::min(kMR, g.m - ic);
        const bool in_place = mr == kMR && !g.a_transposed;
        if (!in_place) PackA(g, ic, mr, pc, kc, apack.get());
        const float* a = in_place ? g.a + ic * g.lda + pc : apack.get();
        for (std::size_t jr = 0; jr < nc; jr += kNR) {
          const std::size_t nr = std::min(kNR, nc - jr);
          const float* bp = bpack.get() + jr * kc;
          const float* tile_bias = last && bias ? bias.get() + jc + jr : nullptr;
          const bool relu = last && g.relu;
          float* c = g.c + ic * g.ldc + jc + jr;
          float* tile = c;
          std::size_t ldt = g.ldc;
          if (nr < kNR || mr < kMR) {
            tile = edge;
            ldt = kNR;
            if (load_c)
              for (std::size_t r = 0; r < mr; ++r)
                std::copy(c + r * g.ldc, c + r * g.ldc + nr, edge + r * kNR);
          }
          if (in_place) {
            Tile<ALayout::kRows>(kc, a, g.lda, bp, tile, ldt, load_c, tile_bias, relu);
          } else {
            Tile<ALayout::kColumns>(kc, a, kMR, bp, tile, ldt, load_c, tile_bias, relu);
          }
          if (tile == edge)
            for (std::size_t r = 0; r < mr; ++r)
              std::copy(edge + r * kNR, edge + r * kNR + nr, c + r * g.ldc);
        }
      }
    }
  }
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
