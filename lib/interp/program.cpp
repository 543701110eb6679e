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
#include "interp/reader.hpp"
#include "interp/rules.hpp"
#include "io/json_text.hpp"
#include "mesh/device.hpp"
#include "mesh/shard_map.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

// The shard_map a plain program is, and how its operands and results are the program's inputs
// and outputs.
struct Plain {
  const Eqn* shard_map = nullptr;
  std::vector<int> operand_input;  // operand k is program input operand_input[k]
  std::vector<int> output_result;  // program output j is result output_result[j]
  std::vector<PartitionSpec> in_specs, out_specs;
};

int position(const std::vector<int>& vars, int var) {
  const auto it = std::find(vars.begin(), vars.end(), var);
  return it == vars.end() ? -1 : static_cast<int>(it - vars.begin());
}

// jit(jit(... shard_map(inputs) ...)) with nothing else at any level; nullopt otherwise.
std::optional<Plain> plain_of(const Jaxpr& top) {
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
      p.shard_map = &eqn;
      for (const Atom& a : eqn.in) p.operand_input.push_back(position(jx->invars, a.var));
      for (const Atom& a : jx->outvars) p.output_result.push_back(position(eqn.out, a.var));
      try {
        p.in_specs = shard_map_specs(eqn, "in_specs");
        p.out_specs = shard_map_specs(eqn, "out_specs");
      } catch (const PrimitiveError&) {
        return std::nullopt;  // check_export says what is wrong
      }
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

// The body of one shard_map equation, on a device.
std::vector<Value> run_body(const std::string& file, const Eqn& eqn, const DimBindings& dims,
                            Device& dev, std::vector<Value> args) {
  PrimContext ctx;
  ctx.file = file;
  ctx.dims = &dims;
  ctx.mesh = &dev.mesh();
  ctx.device = &dev;
  return eval_jaxpr(*eqn.sub("jaxpr"), std::move(args), ctx, nullptr);
}

ArgDef arg_def(std::string name, std::size_t rank, PartitionSpec spec) {
  ArgDef a{std::move(name), {}, std::move(spec)};
  for (std::size_t d = 0; d < rank; ++d) a.dims.push_back("d" + std::to_string(d));
  return a;
}

class Builder {
 public:
  explicit Builder(LoadedProgram& lp) : lp_(lp), file_(lp.file) {}

  void build() {
    for (const Export& exp : file_.exports) {
      plains_.push_back(plain_of(exp.jaxpr));
      if (!plains_.back()) continue;
      // A spec naming an axis the mesh lacks is the file's fault, named in the file -- not in
      // the case, where the reader would otherwise find it.
      const Plain& p = *plains_.back();
      for (const auto& [key, specs] :
           {std::pair{"in_specs", &p.in_specs}, {"out_specs", &p.out_specs}}) {
        for (std::size_t k = 0; k < specs->size(); ++k) {
          check_spec_axes(file_.path + ": " + p.shard_map->where + ".params." + key + "[" +
                              std::to_string(k) + "]",
                          (*specs)[k], exp.mesh);
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
    if (const ProgramDef* ex =
            known_exercise(file_.exercise) ? find_program(file_.exercise) : nullptr) {
      for (const Export& exp : file_.exports)
        if (exp.mesh == ex->mesh) def.mesh = ex->mesh;
    }
    def.axis = one_axis();
    const ProgramDef* exercise =
        known_exercise(file_.exercise) ? find_program(file_.exercise) : nullptr;
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
      if (lp_.plain) {
        const Plain& p = *plains_.front();
        for (std::size_t k = 0; k < p.operand_input.size(); ++k) {
          if (p.operand_input[k] == static_cast<int>(i))
            def.inputs[lp_.def_input[i]].spec = p.in_specs[k];
        }
      }
    }
    const Jaxpr& top = file_.exports.front().jaxpr;
    check_output_ranks();
    check_input_ranks();
    for (std::size_t j = 0; j < file_.outputs.size(); ++j) {
      const Atom& a = top.outvars[j];
      const std::size_t rank = a.is_literal() ? 0 : top.types[a.var].shape.size();
      PartitionSpec spec =
          lp_.plain ? plains_.front()
                          ->out_specs[static_cast<std::size_t>(plains_.front()->output_result[j])]
                    : P();
      ArgDef out = arg_def(file_.outputs[j].name, rank, std::move(spec));
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
    def.check_run = [lp](const MeshShape& mesh, const std::vector<TensorRef>& inputs) {
      try {
        const Binding b = bind(lp->file, mesh, file_shapes(*lp, inputs), {});
        lp->flops = check_export(lp->file, b);
        check_output_sizes(lp->file, b);
      } catch (const InputError& e) {
        throw InputError(lp->file.path, e.what());
      }
    };
    if (lp_.plain) {
      def.body = [lp](Device& dev, std::vector<Tensor>& blocks) {
        return plain_body(*lp, dev, blocks);
      };
    } else {
      for (const Export& exp : file_.exports) {
        lp_.operand_inputs.push_back(shard_map_operand_inputs(file_, exp));
        std::map<int, int> out_of;
        for (std::size_t j = 0; j < exp.jaxpr.outvars.size(); ++j) {
          if (!exp.jaxpr.outvars[j].is_literal()) out_of.emplace(exp.jaxpr.outvars[j].var, int(j));
        }
        result_outputs(exp.jaxpr, out_of, lp_.result_outputs.emplace_back());
      }
      def.run = [lp](Mesh& mesh, const std::vector<TensorRef>& inputs, Trace* trace) {
        return whole_run(*lp, mesh.shape(), inputs,
                         [&](const ProgramDef::ShardMapCall& call, std::vector<Tensor>& global) {
                           return shard_map(mesh, call.body, call.in, call.out, global, trace);
                         });
      };
      def.run_with = [lp](const MeshShape& mesh, const std::vector<TensorRef>& inputs,
                          const ProgramDef::RunShardMap& run) {
        return whole_run(*lp, mesh, inputs, run);
      };
      def.call_of = [lp](const std::string& key) { return call_of_key(*lp, key); };
      for (const Export& exp : file_.exports) {
        std::vector<const Eqn*> eqns;
        shard_map_eqns(exp.jaxpr, eqns);
        def.shard_maps = std::max(def.shard_maps, static_cast<int>(eqns.size()));
      }
    }
    def.structure = exercise_rules(file_);
    def.flops = [lp](const std::vector<TensorRef>&) { return lp->flops; };
  }

 private:
  // A case holds arrays of rank 0, 1 or 2 (docs/cases.md): an input of higher rank is the
  // file's to refuse, before a case reader would meet it.
  void check_input_ranks() const {
    for (std::size_t i = 0; i < file_.inputs.size(); ++i) {
      const std::size_t r = file_.inputs[i].shape.size();
      if (r > 2) {
        throw InputError(file_.path, "inputs[" + std::to_string(i) + "].shape: input " +
                                         file_.inputs[i].name + " has rank " + std::to_string(r) +
                                         ": a case holds arrays of rank 0, 1 or 2 (reshape it "
                                         "inside the program)");
      }
    }
  }

  // Results are written as JSON of rank 0, 1 or 2 (the case format's), and every export gives
  // each output the same rank (the def has one): else the writer's invariants broke, exit 4.
  void check_output_ranks() const {
    const auto rank = [](const Jaxpr& jx, std::size_t j) {
      const Atom& a = jx.outvars[j];
      return a.is_literal() ? std::size_t{0} : jx.types[a.var].shape.size();
    };
    for (std::size_t e = 0; e < file_.exports.size(); ++e) {
      const Jaxpr& jx = file_.exports[e].jaxpr;
      for (std::size_t j = 0; j < jx.outvars.size(); ++j) {
        const std::string at = file_.exports[e].where + ".jaxpr.outvars[" + std::to_string(j) + "]";
        const std::size_t r = rank(jx, j);
        if (r > 2) {
          throw InputError(file_.path, at + ": output " + file_.outputs[j].name + " has rank " +
                                           std::to_string(r) +
                                           ": meshrun writes results of rank 0, 1 or 2");
        }
        if (e > 0 && r != rank(file_.exports.front().jaxpr, j)) {
          throw InputError(file_.path, at + ": output " + file_.outputs[j].name + " has rank " +
                                           std::to_string(r) + ", in exports[0] rank " +
                                           std::to_string(rank(file_.exports.front().jaxpr, j)));
        }
      }
    }
  }

  // A result with no elements is refused, as an input with none is (JSON's [] has no shape).
  static void check_output_sizes(const ProgramFile& file, const Binding& b) {
    const Jaxpr& jx = b.exp->jaxpr;
    for (std::size_t j = 0; j < jx.outvars.size(); ++j) {
      const Atom& a = jx.outvars[j];
      if (a.is_literal()) continue;
      const std::string at = b.exp->where + ".jaxpr.outvars[" + std::to_string(j) + "]";
      std::string dims;
      bool empty = false;
      for (const DimExpr& d : jx.types[a.var].shape) {
        const std::int64_t n = d.eval(b.dims, at);
        if (!dims.empty()) dims += ',';
        dims += std::to_string(n);
        empty = empty || n == 0;
      }
      if (empty) {
        std::string what = "output " + file.outputs[j].name + " is ";
        what += dtype_name(jx.types[a.var].dtype);
        what += "[" + dims;
        what += "]: a result needs at least one element";
        throw InputError(at, what);
      }
    }
  }

  static void check_input_values(const LoadedProgram& lp, const std::vector<TensorRef>& inputs) {
    for (std::size_t i = 0; i < lp.file.inputs.size(); ++i) {
      const ArgInfo& in = lp.file.inputs[i];
      if (in.dtype == DType::kF32) continue;
      const TensorRef& t = inputs.at(lp.def_input[i]);
      for (std::size_t k = 0; k < t.size(); ++k) {
        const float v = t.data[k];
        const bool ok = in.dtype == DType::kBool
                            ? (v == 0.0f || v == 1.0f)
                            : (v == std::floor(v) && std::fabs(v) <= float(1 << 24));
        if (ok) continue;
        std::string at = "input." + in.name;
        std::size_t rest = k;
        std::vector<std::size_t> index(t.rank());
        for (std::size_t d = t.rank(); d-- > 0;) {
          index[d] = rest % t.shape[d];
          rest /= t.shape[d];
        }
        for (std::size_t d : index) {
          at += '[';
          at += std::to_string(d);
          at += ']';
        }
        throw InputError(at, number_text(v) + " is not " +
                                 (in.dtype == DType::kBool
                                      ? std::string("a bool (0 or 1)")
                                      : std::string("an i32 meshrun holds exactly (|v| <= 2^24)")) +
                                 ": the program's input " + in.name + " is " +
                                 dtype_name(in.dtype));
      }
    }
  }

  // The file's inputs' shapes, in the file's order, from the def's inputs.
  static std::vector<Shape> file_shapes(const LoadedProgram& lp,
                                        const std::vector<TensorRef>& inputs) {
    std::vector<Shape> s;
    for (std::size_t i : lp.def_input) s.push_back(inputs.at(i).shape);
    return s;
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

  static std::vector<Tensor> plain_body(const LoadedProgram& lp, Device& dev,
                                        std::vector<Tensor>& blocks) {
    const MeshShape& mesh = dev.mesh();
    // The global shapes from the blocks and the specs: the export is picked and bound on every
    // device alike (under mpirun a rank has only its own blocks).
    std::vector<Shape> shapes;
    for (std::size_t i : lp.def_input) {
      Shape s = blocks.at(i).shape;
      for (std::size_t d = 0; d < s.size(); ++d)
        s[d] *= static_cast<std::size_t>(shard_count(lp.def.inputs[i].spec, d, mesh));
      shapes.push_back(std::move(s));
    }
    const Binding b = bind(lp.file, mesh, shapes, {});
    const std::size_t e = static_cast<std::size_t>(b.exp - lp.file.exports.data());
    const Plain p = *plain_of(lp.file.exports[e].jaxpr);
    const Jaxpr& body = *p.shard_map->sub("jaxpr");
    std::vector<Value> args;
    for (std::size_t k = 0; k < p.operand_input.size(); ++k) {
      const std::size_t i = lp.def_input.at(static_cast<std::size_t>(p.operand_input[k]));
      const bool again = std::count(p.operand_input.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                                    p.operand_input.end(), p.operand_input[k]) > 0;
      const DType t = body.types[body.invars[k]].dtype;
      args.emplace_back(t, again ? blocks[i] : std::move(blocks[i]));
    }
    std::vector<Value> results = run_body(lp.file.path, *p.shard_map, b.dims, dev, std::move(args));
    std::vector<Tensor> out;
    for (std::size_t j = 0; j < p.output_result.size(); ++j) {
      const auto r = static_cast<std::size_t>(p.output_result[j]);
      const bool again = std::count(p.output_result.begin() + static_cast<std::ptrdiff_t>(j) + 1,
                                    p.output_result.end(), p.output_result[j]) > 0;
      out.push_back(again ? results[r].t : std::move(results[r].t));
    }
    return out;
  }

  // The shard_map equations of `jx` in evaluation order, through jit and custom calls (not into
  // shard_map bodies): the k of a ShardMapCall's key.
  static void shard_map_eqns(const Jaxpr& jx, std::vector<const Eqn*>& out, int depth = 0) {
    for (const Eqn& e : jx.eqns) {
      if (e.primitive == "shard_map") {
        out.push_back(&e);
      } else if (depth < 64) {
        for (const auto& [key, sub] : e.subs) shard_map_eqns(*sub, out, depth + 1);
      }
    }
  }

  // The k-th shard_map of export e under `dims`: its body and specs, operands named after the
  // program inputs they are (so the trace's rules find x), results after the outputs. The key
  // is "e k name=size ...", for the ranks that build the same call (call_of).
  static ProgramDef::ShardMapCall make_call(const LoadedProgram& lp, std::size_t e, std::size_t k,
                                            std::shared_ptr<const DimBindings> dims) {
    std::vector<const Eqn*> eqns;
    shard_map_eqns(lp.file.exports.at(e).jaxpr, eqns);
    const Eqn& eqn = *eqns.at(k);
    ProgramDef::ShardMapCall call;
    call.key = std::to_string(e) + " " + std::to_string(k);
    for (const auto& [name, size] : *dims) call.key += " " + name + "=" + std::to_string(size);
    const std::vector<PartitionSpec> in_specs = shard_map_specs(eqn, "in_specs");
    const std::vector<PartitionSpec> out_specs = shard_map_specs(eqn, "out_specs");
    const Jaxpr& body = *eqn.sub("jaxpr");
    const auto named = lp.operand_inputs.at(e).find(&eqn);
    for (std::size_t q = 0; q < body.invars.size() && q < in_specs.size(); ++q) {
      const int input = named != lp.operand_inputs.at(e).end() && q < named->second.size()
                            ? named->second[q]
                            : -1;
      call.in.push_back(arg_def(input >= 0 ? lp.file.inputs[static_cast<std::size_t>(input)].name
                                           : "operand " + std::to_string(q),
                                body.types[body.invars[q]].shape.size(), in_specs[q]));
    }
    const auto outs_named = lp.result_outputs.at(e).find(&eqn);
    for (std::size_t q = 0; q < out_specs.size(); ++q) {
      const std::size_t rank =
          body.outvars[q].is_literal() ? 0 : body.types[body.outvars[q].var].shape.size();
      // Named after the program output it is (through jit calls), else by position.
      const int output =
          outs_named != lp.result_outputs.at(e).end() && q < outs_named->second.size()
              ? outs_named->second[q]
              : -1;
      call.out.push_back(arg_def(output >= 0
                                     ? lp.file.outputs[static_cast<std::size_t>(output)].name
                                     : "result " + std::to_string(q),
                                 rank, out_specs[q]));
    }
    const std::string path = lp.file.path;
    call.body = [path, &eqn, &body, dims](Device& dev, std::vector<Tensor>& blocks) {
      std::vector<Value> vals;
      for (std::size_t q = 0; q < blocks.size(); ++q) {
        vals.emplace_back(body.types[body.invars[q]].dtype, std::move(blocks[q]));
      }
      std::vector<Value> res = run_body(path, eqn, *dims, dev, std::move(vals));
      std::vector<Tensor> out;
      for (Value& v : res) out.push_back(std::move(v.t));
      return out;
    };
    return call;
  }

  // make_call of a key it made (on another rank, from the same file).
  static ProgramDef::ShardMapCall call_of_key(const LoadedProgram& lp, const std::string& key) {
    std::istringstream in(key);
    std::size_t e = 0, k = 0;
    auto dims = std::make_shared<DimBindings>();
    in >> e >> k;
    for (std::string item; in >> item;) {
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos) throw InternalError("internal error: shard_map key " + key);
      dims->emplace(item.substr(0, eq), std::stoll(item.substr(eq + 1)));
    }
    std::vector<const Eqn*> eqns;
    if (!in.eof() || e >= lp.file.exports.size() ||
        (shard_map_eqns(lp.file.exports[e].jaxpr, eqns), k >= eqns.size())) {
      throw InternalError("internal error: shard_map key " + key);
    }
    return make_call(lp, e, k, std::move(dims));
  }

  static std::vector<Tensor> whole_run(const LoadedProgram& lp, const MeshShape& mesh,
                                       const std::vector<TensorRef>& inputs,
                                       const ProgramDef::RunShardMap& run) {
    const Binding b = bind(lp.file, mesh, file_shapes(lp, inputs), {});
    const Jaxpr& top = b.exp->jaxpr;
    std::vector<Value> args;
    for (std::size_t i = 0; i < lp.def_input.size(); ++i) {
      const TensorRef& in = inputs.at(lp.def_input[i]);
      Tensor t(in.shape);
      std::copy(in.data, in.data + t.size(), t.data.begin());
      args.emplace_back(top.types[top.invars[i]].dtype, std::move(t));
    }
    const auto dims = std::make_shared<const DimBindings>(b.dims);
    const std::size_t e = static_cast<std::size_t>(b.exp - lp.file.exports.data());
    std::vector<const Eqn*> eqns;
    shard_map_eqns(top, eqns);
    const ShardMapRunner runner = [&](const Eqn& eqn, std::vector<Value>& in) {
      const auto k =
          static_cast<std::size_t>(std::find(eqns.begin(), eqns.end(), &eqn) - eqns.begin());
      const ProgramDef::ShardMapCall call = make_call(lp, e, k, dims);
      std::vector<Tensor> global;
      for (Value& v : in) global.push_back(std::move(v.t));
      std::vector<Tensor> outs = run(call, global);
      const Jaxpr& body = *eqn.sub("jaxpr");
      std::vector<Value> result;
      for (std::size_t q = 0; q < outs.size(); ++q) {
        const Atom& a = body.outvars[q];
        result.emplace_back(a.is_literal() ? a.dtype : body.types[a.var].dtype, std::move(outs[q]));
      }
      return result;
    };
    PrimContext ctx;
    ctx.dims = dims.get();
    ctx.file = lp.file.path;
    std::vector<Value> out = eval_jaxpr(top, std::move(args), ctx, &runner);
    std::vector<Tensor> tensors;
    for (Value& v : out) tensors.push_back(std::move(v.t));
    return tensors;
  }

  LoadedProgram& lp_;
  const ProgramFile& file_;
  std::vector<std::optional<Plain>> plains_;
};

}  // namespace

std::unique_ptr<LoadedProgram> load_program(const std::string& path, std::uint64_t max_bytes,
                                            std::chrono::milliseconds open_wait,
                                            const std::string& exercise) {
  auto lp = std::make_unique<LoadedProgram>();
  lp->file = read_program_file(path, max_bytes, open_wait);
  if (!exercise.empty()) {
    if (!known_exercise(exercise)) {
      throw InputError("--exercise", exercise +
                                         " is not an exercise meshrun grades (dp-step, "
                                         "tp-mlp, mlp-train)");
    }
    lp->file.exercise = exercise;
  }
  Builder(*lp).build();
  return lp;
}

}  // namespace meshrun::interp
