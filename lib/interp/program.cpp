// A program file as a ProgramDef (program.hpp).
#include "interp/program.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "interp/eval.hpp"
#include "interp/program_impl.hpp"
#include "interp/reader.hpp"
#include "interp/data_flow.hpp"
#include "io/json_text.hpp"
#include "mesh/device.hpp"
#include "mesh/shard_map.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

int position(const std::vector<int>& vars, int var) {
  const auto it = std::find(vars.begin(), vars.end(), var);
  return it == vars.end() ? -1 : static_cast<int>(it - vars.begin());
}

// The shard_map a plain program is, and how its operands and results are the program's inputs
// and outputs.
struct Plain {
  CompiledShardMap* shard_map = nullptr;
  std::vector<int> operand_input;  // operand k is program input operand_input[k]
  std::vector<int> output_result;  // program output j is result output_result[j]
  std::vector<PartitionSpec> in_specs, out_specs;
  bool check_vma = true;
};

// jit(jit(... shard_map(inputs) ...)) with nothing else at any level; nullopt otherwise.
std::optional<Plain> plain_of(const Jaxpr& top, const CompiledExport& compiled) {
  const Jaxpr* jx = &top;
  for (int depth = 0; depth <= 64; ++depth) {
    if (!jx->constvars.empty() || jx->eqns.size() != 1) return std::nullopt;
    const Eqn& eqn = jx->eqns.front();
    for (const Atom& a : eqn.in) {
      if (a.is_literal() || position(jx->invars, a.var) < 0) return std::nullopt;
    }
    for (const Atom& a : jx->outvars) {
      if (a.is_literal() || position(eqn.out, a.var) < 0) return std::nullopt;
    }
    if (eqn.primitive == "shard_map") {
      Plain p;
      // Its one shard_map, whose params compile_program read.
      p.shard_map = compiled.shard_maps.front().get();
      MESHRUN_CHECK(p.shard_map->eqn == &eqn, "a plain program's one shard_map");
      if (!p.shard_map->specs_read) return std::nullopt;  // check_export says what is wrong
      p.check_vma = p.shard_map->check_vma;
      for (const Atom& a : eqn.in) p.operand_input.push_back(position(jx->invars, a.var));
      for (const Atom& a : jx->outvars) p.output_result.push_back(position(eqn.out, a.var));
      p.in_specs = p.shard_map->in_specs;
      p.out_specs = p.shard_map->out_specs;
      if (p.in_specs.size() != eqn.in.size() || p.out_specs.size() != eqn.out.size()) {
        return std::nullopt;
      }
      // One input handed twice with different specs cannot be one ArgDef: the whole program
      // then runs as one with equations around its shard_map (each operand cut by its own spec).
      for (std::size_t k = 0; k < p.operand_input.size(); ++k) {
        for (std::size_t l = 0; l < k; ++l) {
          if (p.operand_input[k] == p.operand_input[l] &&
              p.in_specs[k].dims() != p.in_specs[l].dims()) {
            return std::nullopt;
          }
        }
      }
      return p;
    }
    if (eqn.primitive != "jit" && eqn.primitive != "pjit") return std::nullopt;
    // A jit's operands and results pass straight through, in order.
    const Jaxpr& sub = *eqn.sub("jaxpr");
    if (eqn.in.size() != jx->invars.size() || jx->outvars.size() != eqn.out.size()) {
      return std::nullopt;
    }
    for (std::size_t i = 0; i < eqn.in.size(); ++i) {
      if (eqn.in[i].var != jx->invars[i]) return std::nullopt;
    }
    for (std::size_t j = 0; j < eqn.out.size(); ++j) {
      if (jx->outvars[j].var != eqn.out[j]) return std::nullopt;
    }
    jx = &sub;
  }
  return std::nullopt;
}

// An ArgDef of `rank` dimensions named d0, d1, ...
ArgDef arg_def(std::string name, std::size_t rank, PartitionSpec spec) {
  ArgDef a{std::move(name), {}, std::move(spec)};
  for (std::size_t d = 0; d < rank; ++d) a.dims.push_back("d" + std::to_string(d));
  return a;
}

using namespace detail;

bool same_specs(const Plain& a, const Plain& b) {
  const auto eq = [](const std::vector<PartitionSpec>& x, const std::vector<PartitionSpec>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].dims() != y[i].dims()) return false;
    }
    return true;
  };
  return a.operand_input == b.operand_input && a.output_result == b.output_result &&
         eq(a.in_specs, b.in_specs) && eq(a.out_specs, b.out_specs);
}

// For each shard_map reached from `jx` through jit calls, the program output each of its results
// is (-1: none): `out_of[v]` is the output jaxpr variable v is.
void result_outputs(const Jaxpr& jx, const std::map<int, int>& out_of,
                    std::map<const Eqn*, std::vector<int>>& names, int depth = 0) {
  for (const Eqn& eqn : jx.eqns) {
    if (eqn.primitive == "shard_map") {
      std::vector<int>& n = names[&eqn];
      for (int v : eqn.out) {
        const auto it = out_of.find(v);
        n.push_back(it == out_of.end() ? -1 : it->second);
      }
    } else if ((eqn.primitive == "jit" || eqn.primitive == "pjit") && depth < 64) {
      const Jaxpr& sub = *eqn.sub("jaxpr");
      std::map<int, int> inner;
      for (std::size_t q = 0; q < eqn.out.size() && q < sub.outvars.size(); ++q) {
        const auto it = out_of.find(eqn.out[q]);
        if (it != out_of.end() && !sub.outvars[q].is_literal())
          inner[sub.outvars[q].var] = it->second;
      }
      result_outputs(sub, inner, names, depth + 1);
    }
  }
}

class Builder {
 public:
  explicit Builder(LoadedProgram& lp) : lp_(lp), file_(lp.file) {}

  void build() {
    lp_.compiled = compile_program(file_);
    for (const CompiledExport& ce : lp_.compiled.exports) {
      const Export& exp = *ce.exp;
      plains_.push_back(plain_of(exp.jaxpr, ce));
      if (!plains_.back()) continue;
      // A spec naming an axis the mesh lacks is the file's fault, named in the file -- not in
      // the case, where the reader would otherwise find it.
      const Plain& p = *plains_.back();
      for (const auto& [key, specs] :
           {std::pair{"in_specs", &p.in_specs}, {"out_specs", &p.out_specs}}) {
        for (std::size_t k = 0; k < specs->size(); ++k) {
          const std::string field = file_.path + ": " + p.shard_map->eqn->where + ".params." + key +
                                    "[" + std::to_string(k) + "]";
          // An axis of size 1 the shard_map's mesh has besides the export's (check.cpp).
          for (const auto& axes : (*specs)[k].dims())
            for (const std::string& a : axes)
              if (const int at = mesh_axis_position(p.shard_map->mesh, a);
                  mesh_axis_position(exp.mesh, a) < 0 && at >= 0 &&
                  p.shard_map->mesh[static_cast<std::size_t>(at)].second == 1) {
                throw InputError(field, (*specs)[k].str() + " names '" + a +
                                            "', an axis of size 1 of its shard_map's mesh that "
                                            "its export's mesh " +
                                            mesh_str(exp.mesh) +
                                            " lacks: meshrun runs such an axis only where no "
                                            "spec or collective names it");
              }
          check_spec_axes(field, (*specs)[k], exp.mesh);
        }
      }
    }
    lp_.plain = std::all_of(plains_.begin(), plains_.end(),
                            [&](const auto& p) { return p && same_specs(*p, *plains_.front()); });
    ProgramDef& def = lp_.def;
    def.name = file_.exercise.empty() ? file_.name : file_.exercise;
    def.summary = "the program in " + file_.path;
    def.user_program = true;
    // The mesh it runs on unless told otherwise: its exercise's, when exported for it (the
    // exporter may list the meshes in any order), else the first export's.
    def.mesh = file_.exports.front().mesh;
    if (const ProgramDef* ex = lp_.exercise ? &lp_.exercise->def : nullptr) {
      for (const Export& exp : file_.exports)
        if (exp.mesh == ex->mesh) def.mesh = ex->mesh;
    }
    def.axis = one_axis();
    const ProgramDef* exercise = lp_.exercise ? &lp_.exercise->def : nullptr;
    if (exercise != nullptr) {
      for (const ArgDef& a : exercise->inputs) def.inputs.push_back({a.name, a.dims, P()});
      if (file_.outputs.size() != exercise->outputs.size()) {
        throw InputError(file_.path, "outputs: " + file_.exercise + " returns " +
                                         std::to_string(exercise->outputs.size()) +
                                         " outputs, the program " +
                                         std::to_string(file_.outputs.size()));
      }
    }
    for (std::size_t i = 0; i < file_.inputs.size(); ++i) {
      const ArgInfo& in = file_.inputs[i];
      const auto it = std::find_if(def.inputs.begin(), def.inputs.end(),
                                   [&](const ArgDef& a) { return a.name == in.name; });
      if (exercise != nullptr && it == def.inputs.end()) {
        throw InputError(file_.path, "inputs[" + std::to_string(i) + "].name: " + in.name +
                                         " is not an input of " + file_.exercise);
      }
      if (it == def.inputs.end()) {
        def.inputs.push_back({in.name, in.shape, P()});
        lp_.def_input.push_back(def.inputs.size() - 1);
      } else {
        lp_.def_input.push_back(static_cast<std::size_t>(it - def.inputs.begin()));
      }
      if (exercise != nullptr) {  // the case holds the exercise's dtypes: an i32 w is not its w
        const DType want = lp_.exercise->input_dtypes.at(lp_.def_input[i]);
        if (in.dtype != want) {
          throw InputError(file_.path, "inputs[" + std::to_string(i) + "].dtype: " +
                                           dtype_name(in.dtype) + ", but " + file_.exercise +
                                           " takes " + in.name + " as " + dtype_name(want));
        }
      }
      if (lp_.plain) {
        const Plain& p = *plains_.front();
        for (std::size_t k = 0; k < p.operand_input.size(); ++k) {
          if (p.operand_input[k] == static_cast<int>(i)) {
            def.inputs[lp_.def_input[i]].spec = p.in_specs[k];
            def.inputs[lp_.def_input[i]].manual_axes = p.shard_map->manual_axes;
          }
        }
      }
    }
    const Jaxpr& top = file_.exports.front().jaxpr;
    check_output_ranks(file_);
    check_input_ranks(file_);
    for (std::size_t j = 0; j < file_.outputs.size(); ++j) {
      const Atom& a = top.outvars[j];
      const std::size_t rank = rank_of(top, a);
      PartitionSpec spec =
          lp_.plain ? plains_.front()
                          ->out_specs[static_cast<std::size_t>(plains_.front()->output_result[j])]
                    : P();
      ArgDef out = arg_def(file_.outputs[j].name, rank, std::move(spec));
      out.check_replicas = !lp_.plain || plains_.front()->check_vma;
      if (lp_.plain) out.manual_axes = plains_.front()->shard_map->manual_axes;
      if (exercise != nullptr) {
        // The exercise's outputs, in its order: the case's expected names them so.
        if (j >= exercise->outputs.size() || exercise->outputs[j].name != out.name) {
          std::string names;
          for (const ArgDef& o : exercise->outputs) names += (names.empty() ? "" : ", ") + o.name;
          throw InputError(file_.path, "outputs[" + std::to_string(j) +
                                           "].name: " + file_.exercise + " returns " + names +
                                           ", in that order");
        }
        out.dims = exercise->outputs[j].dims;
        // Graded by value within a tolerance, an i32 or bool result could pass for the f32 one
        // the exercise asks for (a loss rounded to an integer, a mask for a weight).
        const DType want = lp_.exercise->output_dtypes.at(j);
        for (const Export& exp : file_.exports) {
          const DType got = dtype_of(exp.jaxpr, exp.jaxpr.outvars[j]);
          if (got == want) continue;
          throw InputError(file_.path, exp.where + ".jaxpr.outvars[" + std::to_string(j) +
                                           "]: output " + out.name + " is " + dtype_name(got) +
                                           ", but " + file_.exercise + " returns it as " +
                                           dtype_name(want));
        }
      } else {
        // By the inputs' dimension names where the output's size is one of them; otherwise a
        // name of its own, bound by nothing else.
        out.dims.clear();
        for (std::size_t d = 0; d < rank; ++d) {
          std::string name;
          std::int64_t factor = 0;
          const bool named =
              top.types[a.var].shape[d].solvable(&name, &factor) && factor == 1 &&
              std::any_of(file_.inputs.begin(), file_.inputs.end(), [&](const ArgInfo& in) {
                return std::find(in.shape.begin(), in.shape.end(), name) != in.shape.end();
              });
          out.dims.push_back(named ? name : out.name + "." + std::to_string(d));
        }
      }
      def.outputs.push_back(std::move(out));
    }
    LoadedProgram* lp = &lp_;
    // A case holds numbers: an i32 input must get integers meshrun holds exactly, a bool input
    // 0 or 1 (else 1.5 would flow on as an "i32" into select_n and dynamic_slice).
    std::function<void(const std::vector<TensorRef>&)> also;
    if (exercise != nullptr) also = exercise->check_values;
    def.check_values = [lp, also](const std::vector<TensorRef>& inputs) {
      check_input_values(*lp, inputs);
      if (also) also(inputs);
    };
    if (lp_.plain) {
      for (std::size_t e = 0; e < plains_.size(); ++e) {
        CompiledShardMap& sm = *plains_[e]->shard_map;
        sm.operand_input = plains_[e]->operand_input;
        sm.result_output = plains_[e]->output_result;
      }
    } else {
      for (CompiledExport& ce : lp_.compiled.exports) name_shard_maps(ce);
    }
    def.computation = file_computation(lp_);
    if (lp_.exercise && lp_.exercise->rules_for) def.structure = lp_.exercise->rules_for(lp_);
    def.flops = [lp](const std::vector<TensorRef>&) { return lp->flops; };
  }

 private:
  // The ArgDefs of each shard_map of `ce`, for the ShardMapCalls of its runs: operands named after
  // the program inputs they are (so the trace's rules find x), results after the outputs they are
  // (through jit calls), else by position.
  void name_shard_maps(CompiledExport& ce) const {
    const Export& exp = *ce.exp;
    const std::map<const Eqn*, std::vector<int>> operands = shard_map_operand_inputs(file_, exp);
    std::map<int, int> out_of;
    for (std::size_t j = 0; j < exp.jaxpr.outvars.size(); ++j) {
      if (!exp.jaxpr.outvars[j].is_literal()) out_of.emplace(exp.jaxpr.outvars[j].var, int(j));
    }
    std::map<const Eqn*, std::vector<int>> results;
    result_outputs(exp.jaxpr, out_of, results);
    for (const auto& owned : ce.shard_maps) {
      CompiledShardMap& sm = *owned;
      const Jaxpr& body = *sm.body->jaxpr;
      if (const auto it = operands.find(sm.eqn); it != operands.end())
        sm.operand_input = it->second;
      if (const auto it = results.find(sm.eqn); it != results.end()) sm.result_output = it->second;
      for (std::size_t q = 0; q < body.invars.size() && q < sm.in_specs.size(); ++q) {
        const int input = q < sm.operand_input.size() ? sm.operand_input[q] : -1;
        sm.in.push_back(arg_def(input >= 0 ? file_.inputs[static_cast<std::size_t>(input)].name
                                           : "operand " + std::to_string(q),
                                body.types[body.invars[q]].shape.size(), sm.in_specs[q]));
        sm.in.back().manual_axes = sm.manual_axes;
      }
      for (std::size_t q = 0; q < sm.out_specs.size(); ++q) {
        const std::size_t rank = rank_of(body, body.outvars[q]);
        const int output = q < sm.result_output.size() ? sm.result_output[q] : -1;
        sm.out.push_back(arg_def(output >= 0 ? file_.outputs[static_cast<std::size_t>(output)].name
                                             : "result " + std::to_string(q),
                                 rank, sm.out_specs[q]));
        sm.out.back().check_replicas = sm.check_vma;
        sm.out.back().manual_axes = sm.manual_axes;
      }
    }
  }

  // The axis --devices sizes: the one axis every export's mesh has, or "".
  std::string one_axis() const {
    std::string axis;
    for (const Export& exp : file_.exports) {
      if (exp.mesh.size() != 1 || (!axis.empty() && exp.mesh[0].first != axis)) return "";
      axis = exp.mesh[0].first;
    }
    return axis;
  }

  LoadedProgram& lp_;
  const ProgramFile& file_;
  std::vector<std::optional<Plain>> plains_;
};

}  // namespace

std::unique_ptr<LoadedProgram> build_program(ProgramFile file,
                                             std::shared_ptr<const Graded> exercise) {
  auto lp = std::make_unique<LoadedProgram>();
  lp->file = std::move(file);
  lp->exercise = std::move(exercise);
  lp->file.exercise = lp->exercise ? lp->exercise->name : "";
  Builder(*lp).build();
  return lp;
}

std::unique_ptr<LoadedProgram> load_reference_program(const std::string& path) {
  auto lp = std::make_unique<LoadedProgram>();
  lp->file = read_program_file(path, std::uint64_t{1} << 30, std::chrono::milliseconds(10000));
  lp->file.exercise.clear();
  Builder(*lp).build();
  return lp;
}

}  // namespace meshrun::interp
