// The exercises' structural rules on a program file (rules.hpp).
#include "grade/rules.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "interp/data_flow.hpp"
#include "interp/eval.hpp"
#include "grade/held.hpp"
#include "interp/ops/control_flow.hpp"
#include "interp/program.hpp"
#include "grade/semantic_rules.hpp"
#include "programs/program.hpp"

namespace meshrun::interp {
namespace {

using Mask = InputMask;
constexpr Mask kConstant = kConstantInput;
using Operand = FlowOperand;

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

// Whether a constant of `exp` (at any depth) holds the whole array of one of the inputs `names`
// on the run's case, bit for bit and in its order (an input of 4 distinct numbers or more).
bool constants_hold(const LoadedProgram& lp, const Export& exp, const Trace& t,
                    const std::vector<std::string>& names) {
  std::vector<std::vector<float>> arrays;
  for (const std::string& name : names) {
    const int i = input_index(lp.file, name);
    if (i < 0 || static_cast<std::size_t>(i) >= lp.def_input.size() ||
        lp.def_input[static_cast<std::size_t>(i)] >= t.input_values->size())
      continue;
    const TensorRef& in = t.input_values->at(lp.def_input[static_cast<std::size_t>(i)]);
    std::vector<float> data(in.data, in.data + in.size());
    std::vector<float> distinct = data;
    std::sort(distinct.begin(), distinct.end());
    if (std::unique(distinct.begin(), distinct.end()) - distinct.begin() >= 4)
      arrays.push_back(std::move(data));
  }
  const auto same = [](float a, float b) {
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
  };
  const std::function<bool(const Jaxpr&, int)> walk = [&](const Jaxpr& jx, int depth) {
    for (const Const& c : jx.consts)
      for (const std::vector<float>& a : arrays)
        if (c.data.size() >= a.size() &&
            std::search(c.data.begin(), c.data.end(), a.begin(), a.end(), same) != c.data.end())
          return true;
    if (depth > 64) return false;
    for (const Eqn& e : jx.eqns)
      for (const auto& [key, sub] : e.subs)
        if (walk(*sub, depth + 1)) return true;
    return false;
  };
  return walk(exp.jaxpr, 0);
}

// Every shard_map operand derived from `names` (not through a shard_map's result combined over
// `axis`: Flow::combined_over), in the export the run bound.
DerivedOperands derived_operands(const LoadedProgram& lp, const std::vector<std::string>& names,
                                 const std::string& axis) {
  return [&lp, names, axis](const Export& bound) {
    Flow g;
    g.combined_over = axis;
    outputs_reach(lp.file, bound, g);
    std::vector<std::pair<const Eqn*, std::size_t>> out;
    std::map<const Eqn*, std::size_t> index;  // its place among its shard_map's operands
    for (const FlowOperand& op : g.operands) {
      const std::size_t k = index[op.shard_map]++;
      if (!axis.empty() && !op.enters_axis(axis)) continue;  // (enters_split_rule)
      for (const std::string& n : names) {
        const int i = input_index(lp.file, n);
        if (i >= 0 && i < 63 && (op.depends & (Mask{1} << i))) {
          out.emplace_back(op.shard_map, k);
          break;
        }
      }
    }
    return out;
  };
}

StructuralRule split_by_values(StructuralRule rule, const LoadedProgram& lp,
                               const std::string& input, int dim, const std::string& axis,
                               std::shared_ptr<CaseMemo> memo) {
  if (axis.empty()) return rule;
  auto check = std::move(rule.check);
  // Which of the input's elements each device holds as received: operands computed from it (a
  // later shard_map's gradients) hold none and are not asked to be a re-layout of it.
  const DerivedOperands none = [](const Export&) {
    return std::vector<std::pair<const Eqn*, std::size_t>>{};
  };
  rule.check = [check = std::move(check), &lp, input, dim, axis, none,
                memo](const Trace& t) -> std::optional<std::string> {
    if (auto why = check(t)) return why;
    const auto [seen, broken] = handed_slices(lp, t, {input}, dim, axis, none, memo.get());
    return seen ? broken : std::nullopt;
  };
  return rule;
}

StructuralRule enters_split_rule(const LoadedProgram& lp, const Export& exp,
                                 const std::vector<std::string>& names, int dim,
                                 const std::string& axis, std::shared_ptr<CaseMemo> memo) {
  // The inputs reach the body only as their blocks along `dim` over `axis`: no operand derived
  // from them is otherwise split, and no closed-over array (a full x baked in) flows in. An
  // operand derived from them and split otherwise (x.T split by columns, x reshaped to (N/n, n,
  // D) and split in the middle) is judged by values: each device must be handed whole rows, its
  // share of them (handed_slices).
  const ProgramFile& file = lp.file;
  std::optional<std::string> split_why, const_why;
  Flow all;
  const Mask reaches = outputs_reach(file, exp, all);
  // The operands as derived from the inputs by the code outside the bodies: what a shard_map
  // returns combined over `axis` (the gradients a second shard_map applies) its own body made of
  // the blocks, and the rules judge that body.
  Flow f;
  f.combined_over = axis;
  (void)outputs_reach(file, exp, f);
  const std::string blocks = dim == 0 ? "rows" : "dimension " + std::to_string(dim);
  std::optional<std::string> why;
  for (std::size_t k = 0; k < f.operands.size() && !why; ++k) {
    const Operand& op = f.operands[k];
    // Only where the body is split over `axis`: a partial shard_map's body sees an automatic axis
    // whole, as the code around it does (w1 handed P() to a body manual over 'data' only, and on
    // to one nested in it, manual over 'model', as P(None, 'model')); a nested one's operand is
    // the enclosing body's block already (x's rows over 'data', handed on P()).
    const bool judged = axis.empty() || op.enters_axis(axis);
    const auto& dims = op.spec.dims();
    const bool split = static_cast<std::size_t>(dim) < dims.size() &&
                       std::find(dims[static_cast<std::size_t>(dim)].begin(),
                                 dims[static_cast<std::size_t>(dim)].end(),
                                 axis) != dims[static_cast<std::size_t>(dim)].end();
    for (const std::string& name : names) {
      const int i = input_index(file, name);
      if (judged && i >= 0 && i < 63 && (op.depends & (Mask{1} << i)) && !split && !split_why) {
        split_why = "shard_map operand " + std::to_string(k) + " (" + op.type + ", " +
                    op.spec.str() + ") is derived from " + name + " but not split by " + blocks +
                    " over '" + axis + "'";
      }
    }
    if (!const_why && (op.depends & kConstant)) {
      const_why = "shard_map operand " + std::to_string(k) + " (" + op.type + ", " + op.spec.str() +
                  ") is a closed-over array";
    }
  }
  if (!const_why && !f.body_constants.empty()) {
    const_why = "the body closes over an array " + f.body_constants.front();
  }
  for (const std::string& name : names) {
    const int i = input_index(file, name);
    if (!why && i >= 0 && i < 63 && (reaches & (Mask{1} << i)) == 0) {
      why = "no output depends on the input " + name;
    }
  }
  StructuralRule rule =
      static_rule("no full " + either(names) + " flows into the body: they reach it as " +
                      (dim == 0 ? std::string("row blocks") : blocks + " blocks") + " only",
                  why);
  if (!why && (split_why || const_why)) {
    // Judged by values: every operand derived from the inputs (split or not), in the export
    // the run bound.
    const DerivedOperands derived = derived_operands(lp, names, axis);
    rule.check = [&lp, &exp, names, dim, axis, split_why, const_why, derived,
                  memo](const Trace& t) -> std::optional<std::string> {
      // A closed-over array is x baked in when it holds the case's x, bit for bit; a small
      // table of the program's own (the weights of a mean, np.full(n, 1 / n)) is not.
      if (const_why && (t.input_values == nullptr || constants_hold(lp, exp, t, names)))
        return const_why;
      if (!split_why) return std::nullopt;
      const auto [seen, broken] = handed_slices(lp, t, names, dim, axis, derived, memo.get());
      // Broken by values too: the operand the syntax names says where.
      return seen && !broken ? std::nullopt : split_why;
    };
  }
  return rule;
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
