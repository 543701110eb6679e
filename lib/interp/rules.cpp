// The exercises' structural rules on a program file (rules.hpp).
#include "interp/rules.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "interp/eval.hpp"
#include "programs/program.hpp"

namespace meshrun::interp {
namespace {

using Mask =
    std::uint64_t;  // which of the program's inputs (bit i: input i, up to 64) a value depends on

// A reduction met in the program: its axes and what its operands depend on.
struct Reduction {
  std::vector<std::string> axes;
  Mask depends = 0;
};

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
  std::vector<Reduction> reductions;
  std::vector<Operand> operands;            // of every shard_map
  std::vector<std::string> body_constants;  // arrays closed over inside a body: their types
};

std::string declared(const Type& t) {
  std::string dims;
  for (const DimExpr& d : t.shape) dims += (dims.empty() ? "" : ",") + d.str();
  return std::string(dtype_name(t.dtype)) + "[" + dims + "]";
}

bool is_reduction(const std::string& p) {
  return p == "psum" || p == "psum_invariant" || p == "pmean" || p == "psum2";
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
      Reduction r;
      const auto it = e.params.find("axes");
      if (it != e.params.end() && it->is_array()) {
        for (const auto& a : *it)
          if (a.is_string()) r.axes.push_back(a.get<std::string>());
      }
      r.depends = all;
      f.reductions.push_back(std::move(r));
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

bool known_exercise(const std::string& name) {
  return name == "dp-step" || name == "tp-mlp" || name == "mlp-train";
}

// The rules on the file, as `exp` holds the program (each export is checked: the case may run
// any of them).
std::vector<StructuralRule> file_rules(const ProgramFile& file, const ProgramDef* built_in,
                                       const Export& exp) {
  std::vector<StructuralRule> rules;
  std::string missing;
  for (const ArgDef& a : built_in->inputs) {
    if (input_index(file, a.name) < 0) missing += (missing.empty() ? "" : ", ") + a.name;
  }
  const std::size_t consts = constants(exp.jaxpr);
  rules.push_back(static_rule(
      "every input of " + file.exercise + " is an input of the program, never closed over",
      missing.empty() ? std::nullopt
                      : std::optional<std::string>(
                            missing + " not among the program's inputs" +
                            (consts ? " (it holds " + std::to_string(consts) +
                                          " closed-over constant" + (consts > 1 ? "s" : "") + ")"
                                    : ""))));
  std::vector<Mask> in;
  for (std::size_t i = 0; i < file.inputs.size(); ++i) in.push_back(i < 63 ? Mask{1} << i : 0);
  Flow f;
  const std::vector<Mask> outs = flow(exp.jaxpr, in, f);
  Mask reaches = 0;
  for (Mask m : outs) reaches |= m;

  if (input_index(file, "lr") >= 0 || std::any_of(built_in->inputs.begin(), built_in->inputs.end(),
                                                  [](const ArgDef& a) { return a.name == "lr"; })) {
    const int lr = input_index(file, "lr");
    std::optional<std::string> why;
    if (lr < 0) {
      why = "lr is not an input of the program";
    } else if ((reaches & (Mask{1} << lr)) == 0) {
      why = "no output depends on lr: the update uses a number baked into the program";
    }
    rules.push_back(static_rule("lr is traced: the update reads the input lr, not a literal", why));
  }
  if (file.exercise == "dp-step" || file.exercise == "mlp-train") {
    // x and y reach the body only as their row blocks: no replicated operand is derived from
    // them, and no closed-over array (a full x baked in) flows in.
    const char* axis = "data";
    std::optional<std::string> why;
    for (std::size_t k = 0; k < f.operands.size() && !why; ++k) {
      const Operand& op = f.operands[k];
      const bool split = !op.spec.dims().empty() &&
                         std::find(op.spec.dims()[0].begin(), op.spec.dims()[0].end(), axis) !=
                             op.spec.dims()[0].end();
      for (const char* name : {"x", "y"}) {
        const int i = input_index(file, name);
        if (i >= 0 && (op.depends & (Mask{1} << i)) && !split) {
          why = "shard_map operand " + std::to_string(k) + " (" + op.type + ", " + op.spec.str() +
                ") is derived from " + name + " but not split by rows over 'data'";
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
    for (const char* name : {"x", "y"}) {
      const int i = input_index(file, name);
      if (!why && i >= 0 && (reaches & (Mask{1} << i)) == 0) {
        why = std::string("no output depends on the input ") + name;
      }
    }
    rules.push_back(
        static_rule("no full x or y flows into the body: they reach it as row blocks only", why));
  }
  if (file.exercise == "tp-mlp" || file.exercise == "mlp-train") {
    const int b2 = input_index(file, "b2");
    std::optional<std::string> why;
    if (b2 >= 0) {
      for (const Reduction& r : f.reductions) {
        if (std::find(r.axes.begin(), r.axes.end(), "model") == r.axes.end()) continue;
        if (r.depends & (Mask{1} << b2)) {
          why = "b2 flows into a psum over 'model': every device adds it before the sum";
          break;
        }
      }
    }
    rules.push_back(static_rule("b2 is added once, after the psum over 'model'", why));
  }
  return rules;
}

std::vector<StructuralRule> exercise_rules(const ProgramFile& file) {
  std::vector<StructuralRule> rules;
  const ProgramDef* built_in =
      known_exercise(file.exercise) ? find_program(file.exercise) : nullptr;
  if (built_in == nullptr) return rules;

  // On the file: a rule holds when it holds in every export, else the first export's failure
  // says why (naming the export when it is not the first).
  const Trace none;
  rules = file_rules(file, built_in, file.exports.front());
  for (std::size_t e = 1; e < file.exports.size(); ++e) {
    const std::vector<StructuralRule> other = file_rules(file, built_in, file.exports[e]);
    for (std::size_t r = 0; r < rules.size() && r < other.size(); ++r) {
      if (rules[r].check(none)) continue;
      if (auto why = other[r].check(none)) {
        rules[r] = static_rule(rules[r].description, file.exports[e].where + ": " + *why);
      }
    }
  }
  // Then, on the trace: what the built-in program's grader checks, now of the user's program
  // (after the file's rules, so the first broken rule a line shows is the most telling).
  rules.insert(rules.end(), built_in->structure.begin(), built_in->structure.end());
  if (file.exercise == "dp-step") {
    // The mean gradient, never n times it: a body that reduces its gradients twice (the naive
    // program without pcast, whose implicit pvary transposes to a psum) reduces more.
    rules.push_back(reduced_exactly_over("data", "the loss and the gradients of w and b",
                                         output_blocks({"loss", "w", "b"})));
    rules.push_back(only_reductions_over({"data"}, "nothing gathered"));
  } else if (file.exercise == "tp-mlp") {
    rules.push_back(only_reductions_over({"model"}, "w1 and w2 stayed split"));
  }
  return rules;
}

}  // namespace meshrun::interp
