// The fused kernels of the elementwise primitives (Primitive::fused, fusion.hpp): each one maps
// the scalar function its primitive's eval calls (scalar_ops.hpp) over one chunk, an operand being
// a run of floats or one float for every element. Internal to lib/interp: the sources that
// register the primitives instantiate them in their entries.
#pragma once

#include <cstddef>

#include "interp/primitives.hpp"

namespace meshrun::interp::prim {

template <class F>
void fused_map1(const FusedSrc& a, float* o, std::size_t c, F f) {
  if (a.scalar) {
    const float r = f(a.s);
    for (std::size_t i = 0; i < c; ++i) o[i] = r;
    return;
  }
  for (std::size_t i = 0; i < c; ++i) o[i] = f(a.p[i]);
}

template <class F>
void fused_map2(const FusedSrc& a, const FusedSrc& b, float* o, std::size_t c, F f) {
  if (!a.scalar && !b.scalar) {
    for (std::size_t i = 0; i < c; ++i) o[i] = f(a.p[i], b.p[i]);
  } else if (a.scalar && !b.scalar) {
    const float x = a.s;
    for (std::size_t i = 0; i < c; ++i) o[i] = f(x, b.p[i]);
  } else if (!a.scalar && b.scalar) {
    const float y = b.s;
    for (std::size_t i = 0; i < c; ++i) o[i] = f(a.p[i], y);
  } else {
    const float r = f(a.s, b.s);
    for (std::size_t i = 0; i < c; ++i) o[i] = r;
  }
}

// The kernel of a unary op whose eval maps Op::f, and of a binary one.
template <class Op>
void fused_unary(const FusedOp&, const FusedSrc* in, float* o, std::size_t c) {
  fused_map1(in[0], o, c, [](float x) { return Op::f(x); });
}
template <class Op>
void fused_binary(const FusedOp&, const FusedSrc* in, float* o, std::size_t c) {
  fused_map2(in[0], in[1], o, c, [](float x, float y) { return Op::f(x, y); });
}

// `p` with its fused kernel: a unary or binary f32 op that may sit in a fused chain.
constexpr Primitive fusable(Primitive p, FusedKernel kernel, std::uint8_t arity) {
  p.fused = kernel;
  p.arity = arity;
  return p;
}

}  // namespace meshrun::interp::prim
