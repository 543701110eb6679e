// Loop fusion of elementwise chains (fusion.hpp): the plan -- which equations form a group, their
// ops on scratch slots.
#include "interp/fusion.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "interp/primitives.hpp"

namespace meshrun::interp {
namespace {

std::string shape_key(const Type& t) {
  std::string k;
  for (const DimExpr& d : t.shape) k += d.str() + ",";
  return k;
}

// What the plan knows of each equation.
struct Candidate {
  bool ok = false;
  bool alias = false;   // an identity (pvary, stop_gradient, ...): its result is its operand
  bool scalar = false;  // an alias of a scalar: fits a group of any shape
  std::string key;      // the result's shape
};

// The identities JAX puts between elementwise equations (pvary of a literal under check_vma):
// inside a group they compute nothing, their result names their operand.
bool is_alias(const Primitive* p) { return p != nullptr && p->identity; }

class Planner {
 public:
  // `dims` null: every group of at least two computed equations, whatever its size (the run
  // skips the ones below kFusionMinElements).
  Planner(const Jaxpr& jx, const ContractionPlan& cp, const DimBindings* dims)
      : jx_(jx), cp_(cp), dims_(dims) {
    const std::size_t vars = jx.types.size();
    last_user_.assign(vars, -1);
    outvar_.assign(vars, 0);
    consumer_.assign(jx.eqns.size(), -1);
    for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
      for (const Atom& a : jx.eqns[e].in)
        if (!a.is_literal()) last_user_[a.var] = static_cast<int>(e);
      if (cp.at[e].mul >= 0) consumer_[static_cast<std::size_t>(cp.at[e].mul)] = int(e);
    }
    for (const Atom& a : jx.outvars)
      if (!a.is_literal()) outvar_[a.var] = 1;
    cand_.resize(jx.eqns.size());
    for (std::size_t e = 0; e < jx.eqns.size(); ++e) cand_[e] = candidate(e);
  }

  FusionPlan plan() {
    FusionPlan plan;
    plan.group_at.assign(jx_.eqns.size(), -1);
    const std::size_t n = jx_.eqns.size();
    std::size_t s = 0;
    while (s < n) {
      if (!cand_[s].ok) {
        ++s;
        continue;
      }
      if (cand_[s].scalar) {  // a group starts with an array op
        ++s;
        continue;
      }
      std::size_t t = s + 1;
      while (t < n && t - s < kFusionMaxEqns && cand_[t].ok &&
             (cand_[t].scalar || cand_[t].key == cand_[s].key))
        ++t;
      std::size_t found = 0;
      for (std::size_t end = t; end >= s + 2 && found == 0; --end)
        if (valid(s, end)) found = end;
      if (found == 0) {
        ++s;
        continue;
      }
      plan.group_at[s] = static_cast<int>(plan.groups.size());
      plan.groups.push_back(build(s, found));
      s = found;
    }
    return plan;
  }

 private:
  // An f32 scalar, or an f32 value of the shape `key`.
  bool fits(const Atom& a, const std::string& key) const {
    if (a.is_literal()) return a.dtype == DType::kF32;
    const Type& t = jx_.types[a.var];
    return t.dtype == DType::kF32 && (t.shape.empty() || shape_key(t) == key);
  }

  Candidate candidate(std::size_t e) const {
    const Eqn& q = jx_.eqns[e];
    Candidate c;
    if (q.out.size() != 1) return c;
    const Type& rt = jx_.types[q.out[0]];
    if (rt.dtype != DType::kF32) return c;
    const std::string key = shape_key(rt);
    const Primitive* prim = find_primitive(q.primitive);
    if (is_alias(prim) && q.in.size() == 1 && fits(q.in[0], key) && rt.shape.empty()) {
      c.ok = c.alias = c.scalar = true;
      return c;
    }
    if (rt.shape.empty()) return c;
    if (is_alias(prim)) {
      if (q.in.size() != 1) return c;
      c.alias = true;
    } else if (cp_.absorbed[e]) {
      if (q.primitive != "mul") return c;  // (the plan absorbs only muls)
    } else {
      if (prim == nullptr || prim->fused == nullptr || q.in.size() != prim->arity) return c;
      if (prim->fused_param != nullptr && !q.params.contains(prim->fused_param)) return c;
    }
    for (const Atom& a : q.in)
      if (!fits(a, key)) return c;
    c.key = key;
    if (dims_ == nullptr) {
      c.ok = true;
      return c;
    }
    // The elements, under the run's dimensions.
    std::size_t elements = 1;
    try {
      for (const DimExpr& d : rt.shape)
        elements *= static_cast<std::size_t>(d.eval(*dims_, q.where));
    } catch (...) {
      return c;
    }
    c.ok = elements >= kFusionMinElements;
    return c;
  }

  // [s, end) is a group: its last equation is computed (not absorbed), at least two are, each
  // absorbed mul's add/sub is inside, and every result but the last is used only inside.
  bool valid(std::size_t s, std::size_t end) const {
    const std::size_t last = end - 1;
    if (cp_.absorbed[last] || cand_[last].alias) return false;
    std::size_t computed = 0;
    for (std::size_t k = s; k < end; ++k) {
      if (cand_[k].alias) {
        // (counts for nothing)
      } else if (cp_.absorbed[k]) {
        if (consumer_[k] < static_cast<int>(s) || consumer_[k] >= static_cast<int>(end))
          return false;
      } else {
        ++computed;
        // An FMA's product inside too (its operands are then released by the group).
        if (cp_.at[k].mul >= 0 && cp_.at[k].mul < static_cast<int>(s)) return false;
      }
      if (k == last) continue;
      const int v = jx_.eqns[k].out[0];
      if (outvar_[v] || last_user_[v] >= static_cast<int>(end)) return false;
    }
    return computed >= 2;
  }

  FusedOperand operand(const Atom& a, std::size_t s, std::size_t end) const {
    FusedOperand o;
    if (a.is_literal()) {
      o.kind = FusedOperand::kLiteral;
      o.literal = static_cast<float>(a.literal);  // as eval.cpp's literal()
      return o;
    }
    for (std::size_t k = s; k < end; ++k) {
      if (cand_[k].alias && jx_.eqns[k].out[0] == a.var) return operand(jx_.eqns[k].in[0], s, k);
    }
    o.index = a.var;
    if (jx_.types[a.var].shape.empty()) {
      o.kind = FusedOperand::kScalarVar;
      return o;
    }
    o.kind = FusedOperand::kOutside;
    for (std::size_t k = s; k < end; ++k)
      if (jx_.eqns[k].out[0] == a.var) o.kind = FusedOperand::kSlot;  // slot assigned below
    return o;
  }

  FusionGroup build(std::size_t s, std::size_t end) const {
    FusionGroup g;
    g.begin = s;
    g.end = end;
    std::vector<int> defines;  // per op, the variable it defines
    for (std::size_t k = s; k < end; ++k) {
      if (cp_.absorbed[k] || cand_[k].alias) continue;
      const Eqn& q = jx_.eqns[k];
      FusedOp op;
      if (const Contraction& c = cp_.at[k]; c.mul >= 0) {
        const Eqn& mul = jx_.eqns[static_cast<std::size_t>(c.mul)];
        op.kernel = &fused_fma;
        op.arity = 3;
        op.fma = true;
        op.in[0] = operand(q.in[static_cast<std::size_t>(c.addend)], s, end);
        op.in[1] = operand(mul.in[0], s, end);
        op.in[2] = operand(mul.in[1], s, end);
        op.kb = c.negate_product ? -1.0f : 1.0f;  // as eval.cpp's fused_multiply_add
        op.ka = c.negate_addend ? -1.0f : 1.0f;
      } else {
        const Primitive& prim = *find_primitive(q.primitive);  // candidate() found it
        op.kernel = prim.fused;
        op.arity = prim.arity;
        for (int i = 0; i < prim.arity; ++i)
          op.in[i] = operand(q.in[static_cast<std::size_t>(i)], s, end);
        if (prim.fused_param != nullptr) op.y = param_int(q, prim.fused_param);
      }
      g.ops.push_back(op);
      defines.push_back(q.out[0]);
    }
    g.result_var = defines.back();
    // Slots: a member's value lives from its op to the last op that reads it; a slot is reused
    // once its value is dead (an op may write the slot it reads: each element reads its own
    // index only).
    const std::size_t nops = g.ops.size();
    std::vector<int> last_read(nops, -1);
    const auto op_of = [&](int var) {
      return static_cast<std::size_t>(std::find(defines.begin(), defines.end(), var) -
                                      defines.begin());
    };
    for (std::size_t i = 0; i < nops; ++i)
      for (FusedOperand& o : g.ops[i].in)
        if (o.kind == FusedOperand::kSlot) last_read[op_of(o.index)] = static_cast<int>(i);
    std::vector<int> slot_of(nops, -1), free;
    for (std::size_t i = 0; i < nops; ++i) {
      FusedOp& op = g.ops[i];
      const int arity = op.arity;
      for (int j = 0; j < arity; ++j) {
        FusedOperand& o = op.in[j];
        if (o.kind != FusedOperand::kSlot || o.index < 0) continue;
        const std::size_t producer = op_of(o.index);
        o.index = slot_of[producer];
        if (last_read[producer] == static_cast<int>(i) &&
            std::find(free.begin(), free.end(), o.index) == free.end())
          free.push_back(o.index);
      }
      // (an operand read twice by this op is freed once, above, and read through its slot)
      if (i + 1 == nops) break;  // the last op writes the result
      if (free.empty()) {
        slot_of[i] = g.slots++;
      } else {
        slot_of[i] = free.back();
        free.pop_back();
      }
      op.out_slot = slot_of[i];
      if (last_read[i] < 0) free.push_back(slot_of[i]);  // never read: dead at once
    }
    // Outside operands of shape S released by the group: candidates for the result's buffer.
    for (std::size_t k = s; k < end; ++k) {
      for (int v : jx_.eqns[k].last_use) {
        bool outside_operand = false;
        for (const FusedOp& op : g.ops)
          for (const FusedOperand& o : op.in)
            if (o.kind == FusedOperand::kOutside && o.index == v) outside_operand = true;
        if (outside_operand && jx_.types[v].dtype == DType::kF32) g.reusable.push_back(v);
      }
    }
    return g;
  }

  const Jaxpr& jx_;
  const ContractionPlan& cp_;
  const DimBindings* dims_;
  std::vector<int> last_user_, consumer_;
  std::vector<char> outvar_;
  std::vector<Candidate> cand_;
};

}  // namespace

FusionPlan plan_fusion(const Jaxpr& jx, const ContractionPlan& contractions,
                       const DimBindings* dims) {
  if (dims == nullptr || !fusion_enabled()) {
    FusionPlan none;
    none.group_at.assign(jx.eqns.size(), -1);
    return none;
  }
  return Planner(jx, contractions, dims).plan();
}

FusionPlan plan_fusion_symbolic(const Jaxpr& jx, const ContractionPlan& contractions) {
  return Planner(jx, contractions, nullptr).plan();
}

}  // namespace meshrun::interp
