// The matrix-product kernel under every matmul the programs run, at BLAS-like speed with the bits
// of the plain loop: each output element is one fused-multiply-add chain over k = 0..K-1 in order,
// started from +0 (or, with `accumulate`, continued from the value already in C).
//
// How the speed comes without changing a bit: C is cut into MR x NR tiles held in vector registers
// and vectorised across columns, so every lane is one element's own chain; K is cut into blocks,
// and each block continues the chain from the tile it loads back. Nothing is summed in another
// order, nothing is reduced horizontally. Dispatch is at run time (Highway kernels, our own CPU
// check) to AVX-512 or AVX2 (both with a real FMA); CPUs without one run gemm_portable, the plain
// loop on std::fma.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace meshrun {

// C (m, n) = op(A) (m, k) @ op(B) (k, n); all row-major with leading dimensions (elements per
// row). op(A) is A stored (m, k), or with a_transposed, A stored (k, m) and read as its transpose;
// op(B) is B stored (k, n), or with b_transposed, B stored (n, k) and read as its transpose (a
// product against a weight's transpose, x @ w.T, without a transposed copy of w). Either way each
// element's chain is the same: only where its operands are read from changes.
// C must not overlap A, B or the bias.
struct Gemm {
  const float* a = nullptr;
  std::size_t lda = 0;
  bool a_transposed = false;
  const float* b = nullptr;
  std::size_t ldb = 0;
  bool b_transposed = false;
  float* c = nullptr;
  std::size_t ldc = 0;
  std::size_t m = 0, n = 0, k = 0;
  // Continue each element's chain from the value in C instead of from +0 (a product over K
  // handed over in pieces keeps the bits of one call).
  bool accumulate = false;
  // Epilogue, after the chain, each a separately rounded step as the unfused ops would do it:
  // c = c + bias[j], then c = (c < 0 ? 0 : c) (so -0 and NaN pass through, as relu_inplace).
  const float* bias = nullptr;  // n elements, or none
  bool relu = false;

  // Whole row-major matrices: c (m, n) = a (m, k) @ b (k, n), a stored (k, m) transposed, b
  // stored (n, k) transposed.
  static Gemm dense(const float* a, const float* b, float* c, std::size_t m, std::size_t k,
                    std::size_t n, bool a_transposed = false, bool b_transposed = false) {
    return {.a = a,
            .lda = a_transposed ? m : k,
            .a_transposed = a_transposed,
            .b = b,
            .ldb = b_transposed ? k : n,
            .b_transposed = b_transposed,
            .c = c,
            .ldc = n,
            .m = m,
            .n = n,
            .k = k};
  }
};

// Runs on the best FMA target of this CPU.
void gemm(const Gemm& g);
// The plain i-p-j loop on std::fma: the fallback for CPUs without vector FMA, and the definition
// the fast paths must match bit for bit.
void gemm_portable(const Gemm& g);
// The kernel gemm() dispatches to now: "AVX3", "AVX2" (Highway's names) or "portable"
// (gemm_portable), for tests and benchmark headers.
const char* gemm_target();
// The kernels this CPU can run, best first; the last is always "portable".
std::vector<std::string> gemm_targets();
// Makes gemm() run the kernel `name` (one of gemm_targets()) from now on, or the best again for
// ""; false if this CPU cannot run it. For tests and benchmarks: not to be called during a run.
bool gemm_use_target(const std::string& name);

}  // namespace meshrun
