// The scans XLA:CPU computes for a reduce_window whose window is a whole axis (padding n - 1, or
// n, on one side, stride and dilations 1): what JAX lowers cumsum & co. to (ops/cumulative.cpp),
// and what a reduce_window of that shape is (ops/windows.cpp). XLA's ReduceWindowRewriter turns
// such a window longer than kBase into a tree: the axis padded with the identity to a multiple of
// kBase, each chunk scanned on its own, the chunks' totals scanned exclusively (by the same
// rewrite when there are more than kBase of them), each element combined as f(its chunk's scan,
// its chunk's prefix). A window reduction folds its window in index order from the identity,
// `acc = f(acc, x)`, so a reverse scan folds x[i], x[i+1], ... left to right. Internal to
// lib/interp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "interp/scalar_ops.hpp"

namespace meshrun::interp::prim::scan {

// XLA:CPU's ReduceWindowRewriter base length (JAX 0.10.2: a cumsum of 17 or more elements is not
// the sequential sum; the tree below with 16 gives JAX's bits on every length tried, up to 5000).
constexpr std::size_t kBase = 16;

struct SumOp {
  static constexpr float kInit = 0.0f;
  static float f(float a, float b) { return a + b; }
};
struct ProdOp {
  static constexpr float kInit = 1.0f;
  static float f(float a, float b) { return a * b; }
};
struct MaxOp {
  static constexpr float kInit = -std::numeric_limits<float>::infinity();
  static float f(float a, float b) { return max_ieee(a, b); }
};
struct MinOp {
  static constexpr float kInit = std::numeric_limits<float>::infinity();
  static float f(float a, float b) { return min_ieee(a, b); }
};
// jax._src.lax.other.logaddexp on float32: amax + log1p(exp(-|x - y|)), or x + y where x - y is
// NaN (NaNs, or infinities of one sign).
struct LogAddExpOp {
  static constexpr float kInit = -std::numeric_limits<float>::infinity();
  static float f(float a, float b) {
    const float amax = max_ieee(a, b);
    const float delta = a - b;
    if (std::isnan(delta)) return a + b;
    return amax + f32::log1p(f32::exp(-std::fabs(delta)));
  }
};

// The window reduction of a row of n <= kBase elements whose window is the whole row:
// inclusive (out[i] folds x[0..i], or x[i..n-1] with `rev`) or exclusive (x[0..i-1], x[i+1..]).
template <class Op>
inline void direct_scan(const float* x, std::size_t n, bool rev, bool exclusive, float* out) {
  if (!rev) {
    float acc = Op::kInit;
    for (std::size_t i = 0; i < n; ++i) {
      if (exclusive) {
        out[i] = acc;
        acc = Op::f(acc, x[i]);
      } else {
        acc = Op::f(acc, x[i]);
        out[i] = acc;
      }
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    float acc = Op::kInit;
    for (std::size_t k = exclusive ? i + 1 : i; k < n; ++k) acc = Op::f(acc, x[k]);
    out[i] = acc;
  }
}

template <class Op>
void exclusive_scan(const float* x, std::size_t n, bool rev, float* out);

// The inclusive scan of a row as XLA:CPU computes it (the file's comment).
template <class Op>
void inclusive_scan(const float* x, std::size_t n, bool rev, float* out) {
  if (n <= kBase) {
    direct_scan<Op>(x, n, rev, false, out);
    return;
  }
  const std::size_t chunks = (n + kBase - 1) / kBase;
  std::vector<float> padded(chunks * kBase, Op::kInit), scanned(chunks * kBase);
  std::copy(x, x + n, padded.begin());
  std::vector<float> ends(chunks), prefix(chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    float* s = scanned.data() + c * kBase;
    direct_scan<Op>(padded.data() + c * kBase, kBase, rev, false, s);
    ends[c] = rev ? s[0] : s[kBase - 1];
  }
  exclusive_scan<Op>(ends.data(), chunks, rev, prefix.data());
  for (std::size_t i = 0; i < n; ++i) out[i] = Op::f(scanned[i], prefix[i / kBase]);
}

template <class Op>
void exclusive_scan(const float* x, std::size_t n, bool rev, float* out) {
  if (n <= kBase) {
    direct_scan<Op>(x, n, rev, true, out);
    return;
  }
  // The rewrite of an exclusive window: the inclusive scan, shifted by one, the identity in the
  // place left empty.
  std::vector<float> inc(n);
  inclusive_scan<Op>(x, n, rev, inc.data());
  if (!rev) {
    out[0] = Op::kInit;
    for (std::size_t i = 1; i < n; ++i) out[i] = inc[i - 1];
  } else {
    for (std::size_t i = 0; i + 1 < n; ++i) out[i] = inc[i + 1];
    out[n - 1] = Op::kInit;
  }
}

}  // namespace meshrun::interp::prim::scan
