// Loop fusion of elementwise chains (fusion.hpp): the plan (which equations form a group) and the
// chunked run. Every op is one of scalar_ops.hpp's functions, the ones the primitives call.
#include "interp/fusion.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>

#include "interp/primitives.hpp"
#include "interp/scalar_ops.hpp"

namespace meshrun::interp {
namespace {

std::atomic<bool> g_enabled{true};

namespace f32 = prim::f32;

struct Known {
  const char* name;
  FusedOp::Code code;
  int arity;
};
constexpr Known kKnown[] = {
    {"add", FusedOp::kAdd, 2},       {"add_any", FusedOp::kAdd, 2},
    {"sub", FusedOp::kSub, 2},       {"mul", FusedOp::kMul, 2},
    {"div", FusedOp::kDiv, 2},       {"max", FusedOp::kMax, 2},
    {"min", FusedOp::kMin, 2},       {"pow", FusedOp::kPow, 2},
    {"neg", FusedOp::kNeg, 1},       {"abs", FusedOp::kAbs, 1},
    {"sign", FusedOp::kSign, 1},     {"exp", FusedOp::kExp, 1},
    {"exp2", FusedOp::kExp2, 1},     {"log", FusedOp::kLog, 1},
    {"log1p", FusedOp::kLog1p, 1},   {"expm1", FusedOp::kExpm1, 1},
    {"tanh", FusedOp::kTanh, 1},     {"logistic", FusedOp::kLogistic, 1},
    {"erf", FusedOp::kErf, 1},       {"erfc", FusedOp::kErfc, 1},
    {"sqrt", FusedOp::kSqrt, 1},     {"rsqrt", FusedOp::kRsqrt, 1},
    {"square", FusedOp::kSquare, 1}, {"integer_pow", FusedOp::kIntegerPow, 1},
};

const Known* known(const std::string& primitive) {
  for (const Known& k : kKnown)
    if (primitive == k.name) return &k;
  return nullptr;
}

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
bool is_alias(const std::string& p) {
  return p == "pvary" || p == "pcast" || p == "stop_gradient" || p == "copy" || p == "copy_p";
}

class Planner {
 public:
  Planner(const Jaxpr& jx, const ContractionPlan& cp, const DimBindings& dims)
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
    if (is_alias(q.primitive) && q.in.size() == 1 && fits(q.in[0], key) && rt.shape.empty()) {
      c.ok = c.alias = c.scalar = true;
      return c;
    }
    if (rt.shape.empty()) return c;
    if (is_alias(q.primitive)) {
      if (q.in.size() != 1) return c;
      c.alias = true;
    } else if (cp_.absorbed[e]) {
      if (q.primitive != "mul") return c;  // (the plan absorbs only muls)
    } else {
      const Known* k = known(q.primitive);
      if (k == nullptr || q.in.size() != static_cast<std::size_t>(k->arity)) return c;
      if (q.primitive == "integer_pow" && !q.params.contains("y")) return c;
    }
    for (const Atom& a : q.in)
      if (!fits(a, key)) return c;
    // The elements, under the run's dimensions.
    std::size_t elements = 1;
    try {
      for (const DimExpr& d : rt.shape)
        elements *= static_cast<std::size_t>(d.eval(dims_, q.where));
    } catch (...) {
      return c;
    }
    if (elements < kFusionMinElements) return c;
    c.ok = true;
    c.key = key;
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
        op.code = FusedOp::kFma;
        op.in[0] = operand(q.in[static_cast<std::size_t>(c.addend)], s, end);
        op.in[1] = operand(mul.in[0], s, end);
        op.in[2] = operand(mul.in[1], s, end);
        op.kb = c.negate_product ? -1.0f : 1.0f;  // as eval.cpp's fused_multiply_add
        op.ka = c.negate_addend ? -1.0f : 1.0f;
      } else {
        const Known* kn = known(q.primitive);
        op.code = kn->code;
        for (int i = 0; i < kn->arity; ++i)
          op.in[i] = operand(q.in[static_cast<std::size_t>(i)], s, end);
        if (op.code == FusedOp::kIntegerPow) op.y = param_int(q, "y");
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
      const int arity = op.code == FusedOp::kFma ? 3 : op.code < FusedOp::kNeg ? 2 : 1;
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
    g.elements = 1;
    for (const DimExpr& d : jx_.types[g.result_var].shape)
      g.elements *= static_cast<std::size_t>(d.eval(dims_, jx_.where));
    return g;
  }

  const Jaxpr& jx_;
  const ContractionPlan& cp_;
  const DimBindings& dims_;
  std::vector<int> last_user_, consumer_;
  std::vector<char> outvar_;
  std::vector<Candidate> cand_;
};

// An operand on one chunk: a run of floats, or one float for every element.
struct Src {
  const float* p = nullptr;
  float s = 0;
  bool scalar = false;
};

template <class F>
void map1(const Src& a, float* o, std::size_t c, F f) {
  if (a.scalar) {
    const float r = f(a.s);
    for (std::size_t i = 0; i < c; ++i) o[i] = r;
    return;
  }
  for (std::size_t i = 0; i < c; ++i) o[i] = f(a.p[i]);
}

template <class F>
void map2(const Src& a, const Src& b, float* o, std::size_t c, F f) {
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

void fma3(const FusedOp& op, const Src& a, const Src& b, const Src& cc, float* o, std::size_t c) {
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

void apply(const FusedOp& op, const Src* in, float* o, std::size_t c) {
#define MESHRUN_F1(fn) map1(in[0], o, c, [](float x) { return f32::fn(x); })
#define MESHRUN_F2(fn) map2(in[0], in[1], o, c, [](float x, float y) { return f32::fn(x, y); })
  switch (op.code) {
    case FusedOp::kAdd:
      MESHRUN_F2(add);
      break;
    case FusedOp::kSub:
      MESHRUN_F2(sub);
      break;
    case FusedOp::kMul:
      MESHRUN_F2(mul);
      break;
    case FusedOp::kDiv:
      MESHRUN_F2(div);
      break;
    case FusedOp::kMax:
      MESHRUN_F2(max);
      break;
    case FusedOp::kMin:
      MESHRUN_F2(min);
      break;
    case FusedOp::kPow:
      MESHRUN_F2(pow);
      break;
    case FusedOp::kNeg:
      MESHRUN_F1(neg);
      break;
    case FusedOp::kAbs:
      MESHRUN_F1(abs);
      break;
    case FusedOp::kSign:
      MESHRUN_F1(sign);
      break;
    case FusedOp::kExp:
      MESHRUN_F1(exp);
      break;
    case FusedOp::kExp2:
      MESHRUN_F1(exp2);
      break;
    case FusedOp::kLog:
      MESHRUN_F1(log);
      break;
    case FusedOp::kLog1p:
      MESHRUN_F1(log1p);
      break;
    case FusedOp::kExpm1:
      MESHRUN_F1(expm1);
      break;
    case FusedOp::kTanh:
      MESHRUN_F1(tanh);
      break;
    case FusedOp::kLogistic:
      MESHRUN_F1(logistic);
      break;
    case FusedOp::kErf:
      MESHRUN_F1(erf);
      break;
    case FusedOp::kErfc:
      MESHRUN_F1(erfc);
      break;
    case FusedOp::kSqrt:
      MESHRUN_F1(sqrt);
      break;
    case FusedOp::kRsqrt:
      MESHRUN_F1(rsqrt);
      break;
    case FusedOp::kSquare:
      MESHRUN_F1(square);
      break;
    case FusedOp::kIntegerPow:
      if (in[0].scalar) {
        float r;
        f32::integer_pow(&in[0].s, &r, 1, op.y);
        for (std::size_t i = 0; i < c; ++i) o[i] = r;
      } else {
        f32::integer_pow(in[0].p, o, c, op.y);
      }
      break;
    case FusedOp::kFma:
      fma3(op, in[0], in[1], in[2], o, c);
      break;
  }
#undef MESHRUN_F1
#undef MESHRUN_F2
}

int arity(const FusedOp& op) {
  return op.code == FusedOp::kFma ? 3 : op.code < FusedOp::kNeg ? 2 : 1;
}

}  // namespace

bool set_fusion_enabled(bool on) { return g_enabled.exchange(on); }
bool fusion_enabled() { return g_enabled.load(); }

FusionPlan plan_fusion(const Jaxpr& jx, const ContractionPlan& contractions,
                       const DimBindings* dims) {
  if (dims == nullptr || !fusion_enabled()) {
    FusionPlan none;
    none.group_at.assign(jx.eqns.size(), -1);
    return none;
  }
  return Planner(jx, contractions, *dims).plan();
}

bool run_fusion_group(const FusionGroup& g, std::vector<Value>& env) {
  if (!fusion_enabled()) return false;
  // The operands are what the plan said (else the unfused path runs).
  const Value* shaped = nullptr;
  for (const FusedOp& op : g.ops) {
    for (int j = 0; j < arity(op); ++j) {
      const FusedOperand& o = op.in[j];
      if (o.kind == FusedOperand::kOutside) {
        const Value& v = env[static_cast<std::size_t>(o.index)];
        if (v.dtype != DType::kF32 || v.t.size() != g.elements) return false;
        if (shaped == nullptr) shaped = &v;
        if (v.t.shape != shaped->t.shape) return false;
      } else if (o.kind == FusedOperand::kScalarVar) {
        const Value& v = env[static_cast<std::size_t>(o.index)];
        if (v.dtype != DType::kF32 || v.t.size() != 1) return false;
      }
    }
  }
  if (shaped == nullptr) return false;
  const std::size_t n = g.elements;
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
  Src in[3];
  for (std::size_t base = 0; base < n; base += kFusionChunk) {
    const std::size_t c = std::min(kFusionChunk, n - base);
    for (const FusedOp& op : g.ops) {
      for (int j = 0; j < arity(op); ++j) {
        const FusedOperand& o = op.in[j];
        Src& s = in[j];
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
      apply(op, in, o, c);
    }
  }
  Tensor result = reuse < 0 ? std::move(fresh) : std::move(env[static_cast<std::size_t>(reuse)].t);
  env[static_cast<std::size_t>(g.result_var)] = Value(DType::kF32, std::move(result));
  return true;
}

}  // namespace meshrun::interp
