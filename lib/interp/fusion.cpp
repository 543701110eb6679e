// Loop fusion of elementwise chains (fusion.hpp): a group's chunked run. Every op is one of
// scalar_ops.hpp's functions, the ones the primitives call.
#include "interp/fusion.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "interp/scalar_ops.hpp"

namespace meshrun::interp {
namespace {

std::atomic<bool> g_enabled{true};

namespace f32 = prim::f32;

void fma3(const FusedOp& op, const FusedSrc& a, const FusedSrc& b, const FusedSrc& cc, float* o,
          std::size_t c) {
  const float kb = op.kb, ka = op.ka;
  if (!a.scalar && !b.scalar && !cc.scalar) {
    for (std::size_t i = 0; i < c; ++i) o[i] = f32::fma_contracted(kb, b.p[i], cc.p[i], ka, a.p[i]);
  } else if (!a.scalar && b.scalar && !cc.scalar) {  // a - lr * g
    const float b0 = b.s;
    for (std::size_t i = 0; i < c; ++i) o[i] = f32::fma_contracted(kb, b0, cc.p[i], ka, a.p[i]);
  } else {
    const float* pa = a.scalar ? &a.s : a.p;
    const float* pb = b.scalar ? &b.s : b.p;
    const float* pc = cc.scalar ? &cc.s : cc.p;
    const std::size_t sa = a.scalar ? 0 : 1, sb = b.scalar ? 0 : 1, sc = cc.scalar ? 0 : 1;
    for (std::size_t i = 0; i < c; ++i)
      o[i] = f32::fma_contracted(kb, pb[i * sb], pc[i * sc], ka, pa[i * sa]);
  }
}

}  // namespace

void fused_fma(const FusedOp& op, const FusedSrc* in, float* o, std::size_t c) {
  fma3(op, in[0], in[1], in[2], o, c);
}

bool set_fusion_enabled(bool on) { return g_enabled.exchange(on); }
bool fusion_enabled() { return g_enabled.load(); }

bool run_fusion_group(const FusionGroup& g, std::vector<Value>& env) {
  if (!fusion_enabled()) return false;
  // The outside operands share one shape S of kFusionMinElements or more (else the unfused path
  // runs); the scalars hold one element.
  const Value* shaped = nullptr;
  for (const FusedOp& op : g.ops) {
    for (int j = 0; j < op.arity; ++j) {
      const FusedOperand& o = op.in[j];
      if (o.kind == FusedOperand::kOutside) {
        const Value& v = env[static_cast<std::size_t>(o.index)];
        if (v.dtype != DType::kF32) return false;
        if (shaped == nullptr) shaped = &v;
        if (v.t.shape != shaped->t.shape) return false;
      } else if (o.kind == FusedOperand::kScalarVar) {
        const Value& v = env[static_cast<std::size_t>(o.index)];
        if (v.dtype != DType::kF32 || v.t.size() != 1) return false;
      }
    }
  }
  if (shaped == nullptr || shaped->t.size() < kFusionMinElements) return false;
  const std::size_t n = shaped->t.size();
  const Shape shape = shaped->t.shape;
  // The result's buffer: an outside operand's at its last use (each chunk's result is written
  // after every op has read that chunk), else a new array.
  int reuse = -1;
  for (int v : g.reusable) {
    if (env[static_cast<std::size_t>(v)].t.size() == n) {
      reuse = v;
      break;
    }
  }
  Tensor fresh;
  if (reuse < 0) fresh = Tensor(shape);
  float* out = reuse < 0 ? fresh.data.data() : env[static_cast<std::size_t>(reuse)].t.data.data();
  std::vector<float> scratch(static_cast<std::size_t>(g.slots) * kFusionChunk);
  FusedSrc in[3];
  for (std::size_t base = 0; base < n; base += kFusionChunk) {
    const std::size_t c = std::min(kFusionChunk, n - base);
    for (const FusedOp& op : g.ops) {
      for (int j = 0; j < op.arity; ++j) {
        const FusedOperand& o = op.in[j];
        FusedSrc& s = in[j];
        s.scalar = false;
        switch (o.kind) {
          case FusedOperand::kSlot:
            s.p = scratch.data() + static_cast<std::size_t>(o.index) * kFusionChunk;
            break;
          case FusedOperand::kOutside:
            s.p = env[static_cast<std::size_t>(o.index)].t.data.data() + base;
            break;
          case FusedOperand::kScalarVar:
            s.scalar = true;
            s.s = env[static_cast<std::size_t>(o.index)].t.data[0];
            break;
          case FusedOperand::kLiteral:
            s.scalar = true;
            s.s = o.literal;
            break;
        }
      }
      float* o = op.out_slot < 0
                     ? out + base
                     : scratch.data() + static_cast<std::size_t>(op.out_slot) * kFusionChunk;
      op.kernel(op, in, o, c);
    }
  }
  Tensor result = reuse < 0 ? std::move(fresh) : std::move(env[static_cast<std::size_t>(reuse)].t);
  env[static_cast<std::size_t>(g.result_var)] = Value(DType::kF32, std::move(result));
  return true;
}

}  // namespace meshrun::interp
