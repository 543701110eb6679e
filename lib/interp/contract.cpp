// FMA contraction (contract.hpp).
#include "interp/contract.hpp"

#include <cmath>

#include "interp/scalar_ops.hpp"
#include "support/cpu_features.hpp"

namespace meshrun::interp {
namespace {

// po[i] = fma(kb * b, c, ka * a) over n elements, a, b and c each an array or (sa, sb, sc) one
// scalar. Written once and compiled twice, as collectives/kernels.cpp does: with FMA, where
// std::fma is the vector instruction, and for the baseline (a libm call per element); the bits
// are std::fma's either way.
[[gnu::always_inline]] inline void fma_loop(std::size_t n, const float* pa, bool sa,
                                            const float* pb, bool sb, const float* pc, bool sc,
                                            float kb, float ka, float* po) {
  if (!sa && !sb && !sc) {
    for (std::size_t i = 0; i < n; ++i)
      po[i] = prim::f32::fma_contracted(kb, pb[i], pc[i], ka, pa[i]);
  } else if (!sa && sb && !sc) {  // a - lr * g
    const float b0 = pb[0];
    for (std::size_t i = 0; i < n; ++i) po[i] = prim::f32::fma_contracted(kb, b0, pc[i], ka, pa[i]);
  } else if (!sa && !sb && sc) {
    const float c0 = pc[0];
    for (std::size_t i = 0; i < n; ++i) po[i] = prim::f32::fma_contracted(kb, pb[i], c0, ka, pa[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      po[i] = prim::f32::fma_contracted(kb, pb[sb ? 0 : i], pc[sc ? 0 : i], ka, pa[sa ? 0 : i]);
    }
  }
}
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void fma_loop_fma(std::size_t n, const float* pa, bool sa,
                                                      const float* pb, bool sb, const float* pc,
                                                      bool sc, float kb, float ka, float* po) {
  fma_loop(n, pa, sa, pb, sb, pc, sc, kb, ka, po);
}
#endif

std::string shape_key(const Type& t) {
  std::string k;
  for (const DimExpr& d : t.shape) k += d.str() + ",";
  return k;
}

}  // namespace

ContractionPlan plan_contractions(const Jaxpr& jx) {
  ContractionPlan plan;
  plan.at.resize(jx.eqns.size());
  plan.absorbed.assign(jx.eqns.size(), 0);
  std::vector<int> uses(jx.types.size(), 0), defined_by(jx.types.size(), -1),
      last(jx.types.size(), -1);
  for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
    for (const Atom& a : jx.eqns[e].in)
      if (!a.is_literal()) ++uses[a.var];
    for (int v : jx.eqns[e].out) defined_by[v] = static_cast<int>(e);
    for (int v : jx.eqns[e].last_use) last[v] = static_cast<int>(e);
  }
  for (const Atom& a : jx.outvars)
    if (!a.is_literal()) ++uses[a.var];
  // A scalar, or of `shape`, or of one element broadcast to it (jax.random.uniform's minval and
  // maxval, f32[1, 1] against f32[4, 8]: XLA fuses the broadcast and contracts the FMA).
  const auto one_element = [](const Type& t) {
    for (const DimExpr& d : t.shape)
      if (!d.is_constant() || d.constant() != 1) return false;
    return true;
  };
  const auto fits = [&](const Atom& a, const std::string& shape) {
    if (a.is_literal()) return a.dtype == DType::kF32;
    const Type& t = jx.types[a.var];
    return t.dtype == DType::kF32 && (t.shape.empty() || shape_key(t) == shape || one_element(t));
  };
  plan.swapped_dot.assign(jx.eqns.size(), -1);
  for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
    const Eqn& q = jx.eqns[e];
    if (q.primitive != "transpose" || q.in.size() != 1 || q.out.size() != 1 ||
        q.in[0].is_literal() || uses[q.in[0].var] != 1 || defined_by[q.in[0].var] < 0 ||
        q.params.value("permutation", nlohmann::json()) != nlohmann::json::array({1, 0})) {
      continue;
    }
    const auto m = static_cast<std::size_t>(defined_by[q.in[0].var]);
    const Eqn& dot = jx.eqns[m];
    if (dot.primitive != "dot_general" || dot.in.size() != 2 || dot.out.size() != 1 ||
        jx.types[dot.out[0]].shape.size() != 2 || jx.types[dot.out[0]].dtype != DType::kF32 ||
        !dot.params.is_object() || !dot.params.contains("batch") ||
        !dot.params.contains("contracting") || !dot.params["contracting"].is_array() ||
        dot.params["contracting"].size() != 2 ||
        dot.params["batch"] !=
            nlohmann::json::array({nlohmann::json::array(), nlohmann::json::array()})) {
      continue;
    }
    bool live = true;  // its operands must live to e: none released in between
    for (const Atom& a : dot.in)
      if (!a.is_literal() && last[a.var] > static_cast<int>(m) && last[a.var] < static_cast<int>(e))
        live = false;
    if (!live) continue;
    plan.absorbed[m] = 1;
    plan.swapped_dot[e] = static_cast<int>(m);
  }
  for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
    const Eqn& q = jx.eqns[e];
    if ((q.primitive != "add" && q.primitive != "sub" && q.primitive != "add_any") ||
        q.in.size() != 2 || q.out.size() != 1 || jx.types[q.out[0]].dtype != DType::kF32) {
      continue;
    }
    const std::string shape = shape_key(jx.types[q.out[0]]);
    for (int side = 0; side < 2; ++side) {
      const Atom& p = q.in[static_cast<std::size_t>(side)];
      if (p.is_literal() || uses[p.var] != 1 || defined_by[p.var] < 0) continue;
      const auto m = static_cast<std::size_t>(defined_by[p.var]);
      const Eqn& mul = jx.eqns[m];
      if (mul.primitive != "mul" || mul.in.size() != 2 || plan.absorbed[m]) continue;
      // The product runs at e, so its operands must live to e: none released in between.
      const auto released_between = [&](const Atom& a) {
        return !a.is_literal() && last[a.var] > static_cast<int>(m) &&
               last[a.var] < static_cast<int>(e);
      };
      if (released_between(mul.in[0]) || released_between(mul.in[1])) continue;
      if (shape_key(jx.types[p.var]) != shape || !fits(mul.in[0], shape) ||
          !fits(mul.in[1], shape) || !fits(q.in[static_cast<std::size_t>(1 - side)], shape)) {
        continue;
      }
      plan.absorbed[m] = 1;
      plan.at[e] = {static_cast<int>(m), 1 - side, q.primitive == "sub" && side == 1,
                    q.primitive == "sub" && side == 0};
      break;
    }
  }
  return plan;
}

Eqn swapped_dot_eqn(const Eqn& dot, const Eqn& into) {
  Eqn q = dot;
  q.in = {dot.in[1], dot.in[0]};
  for (const char* key : {"contracting", "batch"}) {
    const nlohmann::json& pair = dot.params[key];
    q.params[key] = nlohmann::json::array({pair[1], pair[0]});
  }
  q.out = into.out;
  q.last_use = into.last_use;
  q.last_use.insert(q.last_use.end(), dot.last_use.begin(), dot.last_use.end());
  return q;
}

Value fused_multiply_add(Value* a, bool own_a, const Value& b, const Value& c, bool negate_product,
                         bool negate_addend) {
  // The result's shape: the operand of most elements (the others are of it, or of one element).
  Shape shape = a->t.shape;
  for (const Tensor* t : {&b.t, &c.t})
    if (t->size() > shape_size(shape) ||
        (t->size() == shape_size(shape) && t->rank() > shape.size()))
      shape = t->shape;
  const std::size_t n = shape_size(shape);
  // In place over a when it is lent and of the result's shape: each element is read before its
  // slot is written.
  const bool in_place = own_a && a->t.shape == shape;
  Tensor out = in_place ? std::move(a->t) : Tensor(shape);
  const float* pa = in_place ? out.data.data() : a->t.data.data();
  const bool sa = !in_place && a->t.size() == 1 && n != 1;
  const bool sb = b.t.size() == 1 && n != 1, sc = c.t.size() == 1 && n != 1;
  const float* pb = b.t.data.data();
  const float* pc = c.t.data.data();
  const float kb = negate_product ? -1.0f : 1.0f, ka = negate_addend ? -1.0f : 1.0f;
  float* po = out.data.data();
#if defined(__x86_64__)
  if (cpu::has_avx2_fma()) {
    fma_loop_fma(n, pa, sa, pb, sb, pc, sc, kb, ka, po);
    return Value(DType::kF32, std::move(out));
  }
#endif
  fma_loop(n, pa, sa, pb, sb, pc, sc, kb, ka, po);
  return Value(DType::kF32, std::move(out));
}

}  // namespace meshrun::interp
