// The exercises' structural rules on a program file (rules.hpp).
#include "interp/rules.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "interp/eval.hpp"
#include "interp/held.hpp"
#include "interp/ops/control_flow.hpp"
#include "interp/program.hpp"
#include "interp/semantic_rules.hpp"
#include "programs/program.hpp"

namespace meshrun::interp {
namespace {

using Mask =
    std::uint64_t;  // which of the program's inputs (bit i: input i, up to 64) a value depends on

// Bit 63: derived from a closed-over array (a constant of rank >= 1).
constexpr Mask kConstant = Mask{1} << 63;

// A shard_map's operand: what it depends on, its spec and its type in the body.
struct Operand {
  Mask depends = 0;
  PartitionSpec spec;
  std::string type;        // in the body (its block)
  std::string outer_type;  // as the shard_map receives it
  const Eqn* shard_map = nullptr;
};

struct Flow {
  std::vector<Operand> operands;            // of every shard_map
  std::vector<std::string> body_constants;  // arrays closed over inside a body: their types
};

std::string declared(const Type& t) {
  std::string dims;
  for (const DimExpr& d : t.shape) dims += (dims.empty() ? "" : ",") + d.str();
  return std::string(dtype_name(t.dtype)) + "[" + dims + "]";
}

bool is_reduction(const std::string& p) {
  return find_primitive(p) != nullptr && find_primitive(p)->reduction;
}

// Forward data flow: what each outvar of `jx` depends on, given its invars' masks.
std::vector<Mask> flow(const Jaxpr& jx, const std::vector<Mask>& in, Flow& f, int depth = 0,
                       bool in_body = false) {
  std::vector<Mask> m(jx.types.size(), 0);
  for (std::size_t i = 0; i < jx.invars.size() && i < in.size(); ++i) m[jx.invars[i]] = in[i];

  for (std::size_t i = 0; i < jx.constvars.size(); ++i) {
    if (jx.consts[i].shape.empty()) continue;
    m[jx.constvars[i]] = kConstant;
    if (in_body) f.body_constants.push_back(declared(jx.types[jx.constvars[i]]));
  }
  for (const Eqn& e : jx.eqns) {
    std::vector<Mask> ops;
    Mask all = 0;
    for (const Atom& a : e.in) {
      ops.push_back(a.is_literal() ? 0 : m[a.var]);
      all |= ops.back();
    }
    if (const Primitive* p = find_primitive(e.primitive);
        p != nullptr && p->control != Primitive::Control::kNone && depth < 64) {
      // scan, while, cond: through loop carries to their fixpoint, and every branch.
      const auto body = [&](const Jaxpr& j, const std::vector<Mask>& in) {
        return flow(j, in, f, depth + 1, in_body);
      };
      const auto either = [](Mask a, Mask b) { return a | b; };
      // 64 bits: a fixpoint within 64 rounds, nothing to widen or extend.
      const auto same = [](Mask a) { return a; };
      const auto last = [](Mask, Mask after, std::uint64_t) { return after; };
      const std::vector<Mask> outs =
          control_facts<Mask>(e, ops, e.out.size(), body, either, either, same, last);
      for (std::size_t k = 0; k < e.out.size(); ++k) m[e.out[k]] = outs[k];
      continue;
    }
    const Jaxpr* sub = e.sub("jaxpr") ? e.sub("jaxpr") : e.sub("call_jaxpr");
    if (e.primitive == "shard_map" && sub != nullptr) {
      std::vector<PartitionSpec> specs;
      try {
        specs = shard_map_specs(e, "in_specs");
      } catch (const PrimitiveError&) {
      }
      for (std::size_t k = 0; k < ops.size() && k < specs.size() && k < sub->invars.size(); ++k) {
        const Atom& a = e.in[k];
        f.operands.push_back({ops[k], specs[k], declared(sub->types[sub->invars[k]]),
                              a.is_literal() ? "" : declared(jx.types[a.var]), &e});
      }
    }
    if (sub != nullptr && depth < 64) {
      const std::vector<Mask> outs =
          flow(*sub, ops, f, depth + 1, in_body || e.primitive == "shard_map");
      for (std::size_t k = 0; k < e.out.size() && k < outs.size(); ++k) m[e.out[k]] = outs[k];
      continue;
    }
    if (is_reduction(e.primitive)) {
      // psum of several operands: each result depends on its own operand only.
      for (std::size_t k = 0; k < e.out.size() && k < ops.size(); ++k) m[e.out[k]] = ops[k];
      continue;
    }
    for (int v : e.out) m[v] = all;
  }

  std::vector<Mask> out;
  for (const Atom& a : jx.outvars) out.push_back(a.is_literal() ? 0 : m[a.var]);
  return out;
}

int input_index(const ProgramFile& file, const std::string& name) {
  for (std::size_t i = 0; i < file.inputs.size(); ++i)
    if (file.inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

StructuralRule static_rule(std::string description, std::optional<std::string> failure) {
  return {std::move(description), [failure = std::move(failure)](const Trace&) { return failure; }};
}

std::size_t constants(const Jaxpr& jx, int depth = 0) {
  std::size_t n = jx.consts.size();
  if (depth > 64) return n;
  for (const Eqn& e : jx.eqns)
    for (const auto& [key, sub] : e.subs) n += constants(*sub, depth + 1);
  return n;
}

}  // namespace

std::map<const Eqn*, std::vector<int>> shard_map_operand_inputs(const ProgramFile& file,
                                                                const Export& exp) {
  std::vector<Mask> in;
  for (std::size_t i = 0; i < file.inputs.size(); ++i) in.push_back(i < 63 ? Mask{1} << i : 0);
  Flow f;
  flow(exp.jaxpr, in, f);
  std::map<const Eqn*, std::vector<int>> out;
  for (const Operand& op : f.operands) {
    int input = -1;
    for (std::size_t i = 0; i < file.inputs.size() && i < 63; ++i) {
      if (op.depends == (Mask{1} << i) &&
          op.outer_type == declared(exp.jaxpr.types[exp.jaxpr.invars[i]])) {
        input = static_cast<int>(i);
      }
    }
    out[op.shard_map].push_back(input);
  }
  return out;
}

StructuralRule inputs_given_rule(const ProgramFile& file, const ProgramDef& exercise,
                                 const Export& exp) {
  std::string missing;
  for (const ArgDef& a : exercise.inputs) {
    if (input_index(file, a.name) < 0) missing += (missing.empty() ? "" : ", ") + a.name;
  }
  const std::size_t consts = constants(exp.jaxpr);
  return static_rule(
      "every input of " + exercise.name + " is an input of the program, never closed over",
      missing.empty() ? std::nullopt
                      : std::optional<std::string>(
                            missing + " not among the program's inputs" +
                            (consts ? " (it holds " + std::to_string(consts) +
                                          " closed-over constant" + (consts > 1 ? "s" : "") + ")"
                                    : "")));
}

namespace {

// What the outputs of `exp` depend on, with the flow's operands.
Mask outputs_reach(const ProgramFile& file, const Export& exp, Flow& f) {
  std::vector<Mask> in;
  for (std::size_t i = 0; i < file.inputs.size(); ++i) in.push_back(i < 63 ? Mask{1} << i : 0);
  Mask reaches = 0;
  for (Mask m : flow(exp.jaxpr, in, f)) reaches |= m;
  return reaches;
}

std::string either(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

}  // namespace

StructuralRule traced_rule(const ProgramFile& file, const Export& exp, const std::string& name) {
  Flow f;
  const Mask reaches = outputs_reach(file, exp, f);
  const int i = input_index(file, name);
  std::optional<std::string> why;
  if (i < 0) {
    why = name + " is not an input of the program";
  } else if (i >= 63 || (reaches & (Mask{1} << i)) == 0) {
    why = "no output depends on " + name + ": the update uses a number baked into the program";
  }
  return static_rule(name + " is traced: the update reads the input " + name + ", not a literal",
                     why);
}

StructuralRule enters_split_rule(const ProgramFile& file, const Export& exp,
                                 const std::vector<std::string>& names, int dim,
                                 const std::string& axis) {
  // The inputs reach the body only as their blocks along `dim` over `axis`: no operand derived
  // from them is otherwise split, and no closed-over array (a full x baked in) flows in.
  Flow f;
  const Mask reaches = outputs_reach(file, exp, f);
  const std::string blocks = dim == 0 ? "rows" : "dimension " + std::to_string(dim);
  std::optional<std::string> why;
  for (std::size_t k = 0; k < f.operands.size() && !why; ++k) {
    const Operand& op = f.operands[k];
    const auto& dims = op.spec.dims();
    const bool split = static_cast<std::size_t>(dim) < dims.size() &&
                       std::find(dims[static_cast<std::size_t>(dim)].begin(),
                                 dims[static_cast<std::size_t>(dim)].end(),
                                 axis) != dims[static_cast<std::size_t>(dim)].end();
    for (const std::string& name : names) {
      const int i = input_index(file, name);
      if (i >= 0 && i < 63 && (op.depends & (Mask{1} << i)) && !split) {
        why = "shard_map operand " + std::to_string(k) + " (" + op.type + ", " + op.spec.str() +
              ") is derived from " + name + " but not split by " + blocks + " over '" + axis + "'";
      }
    }
    if (!why && (op.depends & kConstant)) {
      why = "shard_map operand " + std::to_string(k) + " (" + op.type + ", " + op.spec.str() +
            ") is a closed-over array";
    }
  }
  if (!why && !f.body_constants.empty()) {
    why = "the body closes over an array " + f.body_constants.front();
  }
  for (const std::string& name : names) {
    const int i = input_index(file, name);
    if (!why && i >= 0 && i < 63 && (reaches & (Mask{1} << i)) == 0) {
      why = "no output depends on the input " + name;
    }
  }
  return static_rule("no full " + either(names) + " flows into the body: they reach it as " +
                         (dim == 0 ? std::string("row blocks") : blocks + " blocks") + " only",
                     why);
}

// `rule` on the arrays the trace recorded under these names: a program computing around its
// shard_map (x concatenated with y before it, the loss's mean or b2 added after it) hands the body
// no array named x, returns none named out -- what the trace cannot say, the rules on what the
// body holds say (a whole x held anywhere fails "no device holds a full x").
StructuralRule where_recorded(StructuralRule rule, std::vector<std::string> inputs,
                              std::vector<std::string> outputs) {
  auto check = std::move(rule.check);
  rule.check = [check = std::move(check), inputs = std::move(inputs),
                outputs = std::move(outputs)](const Trace& t) -> std::optional<std::string> {
    const auto recorded = [](const std::vector<ArrayRecord>& list, const std::string& name) {
      return std::any_of(list.begin(), list.end(),
                         [&](const ArrayRecord& a) { return a.name == name; });
    };
    for (const auto& n : inputs)
      if (!recorded(t.inputs, n)) return std::nullopt;
    for (const auto& n : outputs)
      if (!recorded(t.outputs, n)) return std::nullopt;
    return check(t);
  };
  return rule;
}

}  // namespace meshrun::interp
