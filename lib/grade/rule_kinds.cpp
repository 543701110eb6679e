// The rule kinds (rule_kinds.hpp) and the rules of a program's exercise built from them.
#include "grade/rule_kinds.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "grade/exercise.hpp"
#include "grade/held.hpp"
#include "interp/program.hpp"
#include "grade/every_device.hpp"
#include "grade/outside_work.hpp"
#include "grade/rules.hpp"
#include "grade/same_function.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

std::vector<std::string> strings(const json& j) {
  std::vector<std::string> out;
  for (const json& s : j) out.push_back(s.get<std::string>());
  return out;
}

std::string text(const json& spec, const char* key, const std::string& otherwise = "") {
  return spec.contains(key) ? spec[key].get<std::string>() : otherwise;
}

int dim(const json& spec) { return spec.at("dim").get<int>(); }

bool flag(const json& spec, const char* key) { return spec.contains(key) && spec[key].get<bool>(); }

std::string either(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

// The axes a collective equation names ("axes", or "axis_name" as a string or a list).
std::vector<std::string> axes_of(const Eqn& e) {
  std::vector<std::string> out;
  for (const char* key : {"axes", "axis_name"}) {
    const auto it = e.params.find(key);
    if (it == e.params.end()) continue;
    if (it->is_string()) out.push_back(it->get<std::string>());
    if (it->is_array())
      for (const json& a : *it)
        if (a.is_string()) out.push_back(a.get<std::string>());
  }
  return out;
}

// Every ppermute over `axis` in `jx` (any depth) whose pairs are not ring neighbours on an axis
// of n devices: the first such pair, as "ppermute at ...: 0 -> 3".
std::optional<std::string> non_neighbour(const Jaxpr& jx, const std::string& axis, int n,
                                         int depth = 0) {
  for (const Eqn& e : jx.eqns) {
    if (e.primitive == "ppermute") {
      const std::vector<std::string> axes = axes_of(e);
      const auto perm = e.params.find("perm");
      if (axes.size() == 1 && axes[0] == axis && perm != e.params.end() && perm->is_array()) {
        for (const json& p : *perm) {
          if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() ||
              !p[1].is_number_integer())
            continue;  // the interpreter refuses it
          const long long s = p[0].get<long long>(), d = p[1].get<long long>();
          const long long step = ((d - s) % n + n) % n;
          if (n > 2 && step != 1 && step != n - 1) {
            return "ppermute at " + e.where + (e.source.empty() ? "" : " (" + e.source + ")") +
                   " sends from device " + std::to_string(s) + " to " + std::to_string(d) +
                   ", not a neighbour on the ring of " + std::to_string(n);
          }
        }
      }
    }
    if (depth < 64)
      for (const auto& [key, sub] : e.subs)
        if (auto why = non_neighbour(*sub, axis, n, depth + 1)) return why;
  }
  return std::nullopt;
}

// The first collective equation in `jx` (any depth: every branch of a cond, every loop's body,
// run or not) that names `axis` and is not one of `ops` over that axis alone, as "psum at ...".
// JAX's spellings of one collective (psum_invariant, all_gather_invariant, reduce_scatter) count
// as the trace names it.
std::optional<std::string> other_collective(const Jaxpr& jx, const std::string& axis,
                                            const std::vector<std::string>& ops, int depth = 0) {
  for (const Eqn& e : jx.eqns) {
    const Primitive* p = find_primitive(e.primitive);
    if (p != nullptr && p->collective) {
      const std::vector<std::string> axes = axes_of(e);
      if (std::find(axes.begin(), axes.end(), axis) != axes.end()) {
        std::string op = e.primitive;
        if (op == "psum_invariant") op = "psum";
        if (op == "all_gather_invariant") op = "all_gather";
        if (op == "reduce_scatter") op = "psum_scatter";
        if (axes.size() != 1 || std::find(ops.begin(), ops.end(), op) == ops.end()) {
          return e.primitive + " over '" + axis + "' at " + e.where +
                 (e.source.empty() ? "" : " (" + e.source + ")") +
                 ", whether the case runs it or not (a branch, a loop's body)";
        }
      }
    }
    if (depth < 64)
      for (const auto& [key, sub] : e.subs)
        if (auto why = other_collective(*sub, axis, ops, depth + 1)) return why;
  }
  return std::nullopt;
}

// Every collective over `axis` is one of `ops` (over that axis alone), and with `neighbours` each
// ppermute's pairs are ring neighbours: checked on what each device called (the trace) and on
// the collectives and permutations the program's exports hold, so that a branch the case does not
// take counts too.
StructuralRule collectives_only(const LoadedProgram& lp, std::vector<std::string> ops,
                                const std::string& axis, bool neighbours) {
  std::string description = "every collective over '" + axis + "' is a " + either(ops);
  if (neighbours) description += " between neighbours on the ring";
  return {description, [&lp, ops, axis, neighbours](const Trace& t) -> std::optional<std::string> {
            for (std::size_t d = 0; d < t.collectives.size(); ++d) {
              for (const CollectiveRecord& c : t.collectives[d]) {
                const bool over = c.axis == axis || c.axis.find("(" + axis + ",") == 0 ||
                                  c.axis.find("," + axis + ",") != std::string::npos ||
                                  c.axis.find("," + axis + ")") != std::string::npos;
                if (!over) continue;
                if (c.axis == axis && std::find(ops.begin(), ops.end(), c.op) != ops.end())
                  continue;
                return "device " + std::to_string(d) + " called " + c.op + " over '" + c.axis +
                       "' (collective #" + std::to_string(c.seq) + ")";
              }
            }
            for (const Export& exp : lp.file.exports)
              if (auto why = other_collective(exp.jaxpr, axis, ops)) return why;
            const int pos = mesh_axis_position(t.mesh, axis);
            if (!neighbours || pos < 0) return std::nullopt;
            const int n = t.mesh[static_cast<std::size_t>(pos)].second;
            for (const Export& exp : lp.file.exports)
              if (auto why = non_neighbour(exp.jaxpr, axis, n)) return why;
            return std::nullopt;
          }};
}

std::string dims_text(const Shape& s) {
  std::string out;
  for (std::size_t k = 0; k < s.size(); ++k) out += (k ? "," : "") + std::to_string(s[k]);
  return "f32[" + out + "]";
}

// Whether a shard_map nested in a body of `lp` is manual over `axis` and returns a result split
// over it -- along any dimension: a block returned transposed, P('model', None), and transposed
// back in the enclosing body is out's block (sneaky16's
// right-nested-inner-returns-transposed-block).
bool nested_returns_split(const LoadedProgram& lp, const std::string& axis) {
  for (const CompiledExport& ce : lp.compiled.exports)
    for (const auto& sm : ce.nested_shard_maps) {
      if (std::find(sm->manual_axes.begin(), sm->manual_axes.end(), axis) == sm->manual_axes.end())
        continue;
      for (const PartitionSpec& out : sm->out_specs)
        for (const auto& axes : out.dims())
          if (std::find(axes.begin(), axes.end(), axis) != axes.end()) return true;
    }
  return false;
}

// `output` left split as `spec` says (an axis or none per dimension): every device returned
// exactly its block -- each dimension the global one divided by the sizes of its axes. Along an
// axis the returning shard_map is not manual over (a partial one's: its body holds that axis
// whole), the block is the shard_map nested in it's to return: one of those manual over the axis
// must return a result split over it, along any dimension (the trace records the top-level calls
// only).
StructuralRule output_spec(const std::string& output, std::vector<std::string> spec,
                           const LoadedProgram& lp) {
  std::string text;
  for (const std::string& a : spec)
    text += (text.empty() ? "" : ", ") + (a.empty() ? "None" : "'" + a + "'");
  return {
      output + " left split as P(" + text + "): each device returned only its block",
      [output, spec, &lp](const Trace& t) -> std::optional<std::string> {
        const ArrayRecord* a = nullptr;
        for (const ArrayRecord& r : t.outputs)
          if (r.name == output) a = &r;
        if (a == nullptr) return std::nullopt;
        Shape want = a->global;
        const auto& manual = a->manual_axes;
        for (std::size_t k = 0; k < spec.size() && k < want.size(); ++k) {
          const int pos = spec[k].empty() ? -1 : mesh_axis_position(t.mesh, spec[k]);
          if (pos < 0) continue;
          if (!manual.empty() && std::find(manual.begin(), manual.end(), spec[k]) == manual.end()) {
            if (!nested_returns_split(lp, spec[k]))
              return output + " is returned by a shard_map not manual over '" + spec[k] +
                     "', and no shard_map nested in it returns a result split over '" + spec[k] +
                     "'";
            continue;
          }
          want[k] /= static_cast<std::size_t>(t.mesh[static_cast<std::size_t>(pos)].second);
        }
        for (std::size_t d = 0; d < a->blocks.size(); ++d) {
          if (a->blocks[d] == want) continue;
          return "device " + std::to_string(d) + " returned " + dims_text(a->blocks[d]) +
                 ", not its block " + dims_text(want) + " of the " + dims_text(a->global) + " " +
                 output;
        }
        return std::nullopt;
      }};
}

ReferenceFile reference_file_of(const Exercise& ex);

RuleKinds shipped() {
  using F = FieldType;
  RuleKinds k;
  k.add({"inputs_given",
         {},
         [](const json&, const RuleContext& cx, const Export& exp) {
           return inputs_given_rule(cx.lp.file, cx.exercise.def, exp);
         },
         nullptr});
  k.add({"traced",
         {{"input", F::kInput}},
         [](const json& s, const RuleContext& cx, const Export& exp) {
           return traced_rule(cx.lp.file, exp, s["input"].get<std::string>());
         },
         nullptr});
  k.add({"same_function",
         {{"columns", F::kInputs, false},
          {"column_outputs", F::kOutputs, false},
          {"apart", F::kInput, false},
          {"apart_along", F::kAlong, false},
          {"apart_outputs", F::kOutputs, false}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           std::vector<PartitionSpec> specs;
           std::vector<bool> columns, column_outputs;
           const auto named = [&s](const char* field, const std::string& name) {
             if (!s.contains(field)) return false;
             const std::vector<std::string> names = strings(s[field]);
             return std::find(names.begin(), names.end(), name) != names.end();
           };
           for (const ArgDef& in : cx.exercise.def.inputs) {
             specs.push_back(in.spec);
             columns.push_back(named("columns", in.name));
           }
           Apart apart;
           for (const ArgDef& out : cx.exercise.def.outputs) {
             column_outputs.push_back(named("column_outputs", out.name));
             apart.outputs.push_back(named("apart_outputs", out.name));
           }
           if (s.contains("apart")) {
             const auto& ins = cx.exercise.def.inputs;
             for (std::size_t i = 0; i < ins.size(); ++i)
               if (ins[i].name == s["apart"].get<std::string>()) apart.input = i;
             apart.columns = s.value("apart_along", "rows") == "columns";
           }
           return same_function(cx.lp, cx.exercise.positive, reference_file_of(cx.exercise),
                                std::move(specs), std::move(columns), std::move(column_outputs),
                                std::move(apart));
         }});
  k.add({"receives_little",
         {{"inputs", F::kInputs}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           const std::vector<std::string> names = strings(s["inputs"]);
           return receives_little(cx.lp, names,
                                  "no device receives as many numbers computed from the other "
                                  "devices' blocks of " +
                                      either(names) +
                                      " as one of them holds, where a right program receives "
                                      "far fewer (by values)",
                                  reference_file_of(cx.exercise), cx.memo);
         }});
  k.add({"enters_split",
         {{"inputs", F::kInputs}, {"dim", F::kDim}, {"axis", F::kAxis}},
         [](const json& s, const RuleContext& cx, const Export& exp) {
           return enters_split_rule(cx.lp, exp, strings(s["inputs"]), dim(s),
                                    s["axis"].get<std::string>(), cx.memo);
         },
         nullptr});
  k.add({"no_full_in_body",
         {{"inputs", F::kInputs},
          {"axis", F::kAxis},
          {"at_once", F::kFlag, false},
          {"over_the_run", F::kFlag, false}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           const std::vector<std::string> names = strings(s["inputs"]);
           return no_full_in_body(cx.lp, names, s["axis"].get<std::string>(),
                                  flag(s, "over_the_run")
                                      ? "no device holds a full " + either(names) +
                                            ", nor an element of another device's block (by "
                                            "values)"
                                      : "no device holds a full " + either(names) + " (by values)",
                                  flag(s, "over_the_run") ? HoldScope::kRun
                                  : flag(s, "at_once")    ? HoldScope::kAlive
                                                          : HoldScope::kValue,
                                  reference_file_of(cx.exercise), cx.memo);
         }});
  k.add({"input_split",
         {{"input", F::kInput}, {"dim", F::kDim}, {"axis", F::kAxis, false}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           const std::string in = s["input"].get<std::string>();
           return split_by_values(
               where_recorded(input_split(in, dim(s), text(s, "axis")), {in}, {}), cx.lp, in,
               dim(s), text(s, "axis"), cx.memo);
         }});
  k.add({"output_split",
         {{"output", F::kOutput}, {"dim", F::kDim}, {"axis", F::kAxis, false}},
         nullptr,
         [](const json& s, const RuleContext&) {
           const std::string out = s["output"].get<std::string>();
           return where_recorded(output_split(out, dim(s), text(s, "axis")), {}, {out});
         }});
  k.add({"output_spec",
         {{"output", F::kOutput}, {"spec", F::kSpec}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           const std::string out = s["output"].get<std::string>();
           std::vector<std::string> spec;
           for (const json& a : s["spec"]) spec.push_back(a.is_null() ? "" : a.get<std::string>());
           return where_recorded(output_spec(out, spec, cx.lp), {}, {out});
         }});
  k.add({"output_replicated",
         {{"output", F::kOutput}},
         nullptr,
         [](const json& s, const RuleContext&) {
           const std::string out = s["output"].get<std::string>();
           return where_recorded(output_replicated(out), {}, {out});
         }});
  k.add({"replicas_agree", {}, nullptr, [](const json&, const RuleContext&) {
           return replicas_agree();
         }});
  k.add({"every_device_holds",
         {{"output", F::kOutput}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           return every_device_holds(cx.lp, s["output"].get<std::string>());
         }});
  k.add({"not_combined_outside",
         {{"outputs", F::kOutputs}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           std::vector<PartitionSpec> specs;
           for (const ArgDef& in : cx.exercise.def.inputs) specs.push_back(in.spec);
           return not_combined_outside(cx.lp, std::move(specs), cx.exercise.positive,
                                       strings(s["outputs"]), cx.memo);
         }});
  k.add({"combined_over",
         {{"axis", F::kAxis}, {"outputs", F::kOutputs}},
         nullptr,
         [](const json& s, const RuleContext&) {
           return combined_over(s["axis"].get<std::string>(), strings(s["outputs"]));
         }});
  k.add({"added_once",
         {{"input", F::kInput}, {"output", F::kText}, {"through", F::kThrough, false}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           const json* through = s.contains("through") ? &s["through"] : nullptr;
           return added_once(cx.lp.def, s["input"].get<std::string>(),
                             s["output"].get<std::string>(),
                             through ? (*through)["target"].get<std::string>() : "",
                             through ? (*through)["loss"].get<std::string>() : "");
         }});
  k.add({"mean_gradient_update",
         {{"params", F::kInputs}, {"axis", F::kAxis}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           return mean_gradient_update(cx.lp.def, cx.reference, strings(s["params"]),
                                       s["axis"].get<std::string>());
         }});
  k.add({"collectives_only",
         {{"ops", F::kCollectives}, {"axis", F::kAxis}, {"neighbours", F::kFlag, false}},
         nullptr,
         [](const json& s, const RuleContext& cx) {
           return collectives_only(cx.lp, strings(s["ops"]), s["axis"].get<std::string>(),
                                   s.value("neighbours", false));
         }});
  return k;
}

// The exercise's reference program file, run by the rules that compare what a program does
// with what a right one does: read with the exercise's folder, else on first use (a built-in
// program stands in for the file elsewhere); null when it cannot be read.
ReferenceFile reference_file_of(const Exercise& ex) {
  if (std::shared_ptr<const LoadedProgram> read = ex.reference_program)
    return [read]() -> const LoadedProgram* { return read.get(); };
  struct Lazy {
    std::once_flag once;
    std::unique_ptr<LoadedProgram> lp;
  };
  auto lazy = std::make_shared<Lazy>();
  const std::string path = reference_path(ex);
  return [lazy, path]() -> const LoadedProgram* {
    std::call_once(lazy->once, [&] {
      try {
        lazy->lp = load_reference_program(path);
      } catch (const std::exception&) {
        lazy->lp = nullptr;  // not judged by what a right program receives
      }
    });
    return lazy->lp.get();
  };
}

// The exercise's reference program, loaded once on first use: the built-in program of its name
// when meshrun has one (bit-identical to JAX's on every documented case, and what the grader
// used before exercises were files), else its reference program file, read as a plain program
// (already, when the exercise's folder was loaded).
Reference reference_of(const Exercise& ex) {
  if (const ProgramDef* built_in = find_program(ex.name)) {
    return [built_in]() -> const ProgramDef& { return *built_in; };
  }
  if (std::shared_ptr<const LoadedProgram> read = ex.reference_program) {
    return [read]() -> const ProgramDef& { return read->def; };
  }
  struct Lazy {
    std::once_flag once;
    std::unique_ptr<LoadedProgram> lp;
  };
  auto lazy = std::make_shared<Lazy>();
  const std::string path = reference_path(ex);
  return [lazy, path]() -> const ProgramDef& {
    std::call_once(lazy->once, [&] { lazy->lp = load_reference_program(path); });
    return lazy->lp->def;
  };
}

}  // namespace

void RuleKinds::add(RuleKind kind) {
  if (find(kind.kind) != nullptr)
    throw std::logic_error("rule kind " + kind.kind + " registered twice");
  if (!kind.on_file && !kind.on_run)
    throw std::logic_error("rule kind " + kind.kind + " has no implementation");
  kinds_.push_back(std::move(kind));
}

const RuleKind* RuleKinds::find(const std::string& kind) const {
  for (const RuleKind& k : kinds_)
    if (k.kind == kind) return &k;
  return nullptr;
}

std::string RuleKinds::names() const {
  std::vector<std::string> n;
  for (const RuleKind& k : kinds_) n.push_back(k.kind);
  std::sort(n.begin(), n.end());
  std::string s;
  for (const auto& name : n) s += (s.empty() ? "" : ", ") + name;
  return s;
}

const std::vector<std::string>& collective_names() {
  static const std::vector<std::string> names = {
      "all_gather", "all_to_all", "pmax", "pmean", "pmin", "ppermute", "psum", "psum_scatter"};
  return names;
}

const RuleKinds& rule_kinds() {
  static const RuleKinds kinds = shipped();
  return kinds;
}

std::vector<StructuralRule> exercise_rules(const LoadedProgram& lp) {
  std::vector<StructuralRule> rules;
  if (!lp.exercise) return rules;
  // Grading made it (exercise_from_json): an Exercise.
  const auto* ex = dynamic_cast<const Exercise*>(lp.exercise.get());
  if (ex == nullptr) return rules;
  const RuleContext cx{lp, *ex, reference_of(*ex)};
  const Trace none;
  for (const json& spec : ex->rules) {
    const RuleKind& kind = *rule_kinds().find(spec["rule"].get<std::string>());  // parse checked
    StructuralRule rule;
    if (kind.on_file) {
      // A rule holds when it holds in every export, else the first export's failure says why
      // (naming the export when it is not the first).
      rule = kind.on_file(spec, cx, lp.file.exports.front());
      for (std::size_t e = 1; e < lp.file.exports.size() && !rule.check(none); ++e) {
        if (auto why = kind.on_file(spec, cx, lp.file.exports[e]).check(none)) {
          const std::string failure = lp.file.exports[e].where + ": " + *why;
          rule.check = [failure](const Trace&) { return std::optional<std::string>(failure); };
        }
      }
    } else {
      rule = kind.on_run(spec, cx);
    }
    if (spec.contains("says")) rule.description = spec["says"].get<std::string>();
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace meshrun::interp
