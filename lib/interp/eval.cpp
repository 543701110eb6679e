// The evaluator and the check before it (eval.hpp).
#include "interp/eval.hpp"

#include <algorithm>
#include <utility>

#include "interp/contract.hpp"
#include "interp/fusion.hpp"
#include "interp/prim_util.hpp"
#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

// jit and custom_jvp/vjp calls: inlined (shard_map, the other holder of a jaxpr, is not).
bool is_call(const std::string& p) { return nested_jaxpr_param(p) != nullptr && p != "shard_map"; }

const Jaxpr& callee(const Eqn& eqn) { return *eqn.sub(nested_jaxpr_param(eqn.primitive)); }

ValueType concrete(const Type& t, const DimBindings& dims, const std::string& at) {
  ValueType v{t.dtype, {}};
  for (const DimExpr& d : t.shape) v.shape.push_back(static_cast<std::size_t>(d.eval(dims, at)));
  return v;
}

MeshShape mesh_param(const Eqn& eqn) {
  const json& m = eqn.params.value("mesh", json());
  MeshShape mesh;
  if (!m.is_array()) throw PrimitiveError("param 'mesh' must be a list of [axis, size]");
  for (const json& a : m) {
    if (!a.is_array() || a.size() != 2 || !a[0].is_string() || !a[1].is_number_integer()) {
      throw PrimitiveError("param 'mesh' must be a list of [axis, size]");
    }
    mesh.emplace_back(a[0].get<std::string>(), a[1].get<int>());
  }
  return mesh;
}

class Checker {
 public:
  Checker(const ProgramFile& file, const Binding& b) : file_(file), b_(b) {}

  std::vector<ValueType> jaxpr(const Jaxpr& jx, const std::vector<ValueType>& in,
                               const MeshShape* mesh) {
    std::vector<ValueType> env(jx.types.size());
    if (in.size() != jx.invars.size()) {
      throw InputError(jx.where + ".invars", "takes " + std::to_string(jx.invars.size()) +
                                                 " operands, given " + std::to_string(in.size()));
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::string at = jx.where + ".invars[" + std::to_string(i) + "]";
      const int v = jx.invars[i];
      const ValueType declared = concrete(jx.types[v], b_.dims, at);
      if (!(declared == in[i])) {
        throw InputError(at, "declared " + type_str(declared) + ", given " + type_str(in[i]));
      }
      env[v] = in[i];
    }
    for (std::size_t i = 0; i < jx.constvars.size(); ++i) {
      env[jx.constvars[i]] = {jx.consts[i].dtype, jx.consts[i].shape};
    }
    for (const Eqn& eqn : jx.eqns) {
      std::vector<ValueType> ops;
      for (const Atom& a : eqn.in)
        ops.push_back(a.is_literal() ? ValueType{a.dtype, {}} : env[a.var]);
      std::vector<ValueType> outs;
      try {
        outs = equation(eqn, ops, mesh);
      } catch (const PrimitiveError& e) {
        throw InputError(eqn.place(), e.what());
      }
      if (outs.size() != eqn.out.size()) {
        throw InputError(eqn.place(), "defines " + std::to_string(eqn.out.size()) +
                                          " results, its primitive gives " +
                                          std::to_string(outs.size()));
      }
      for (std::size_t k = 0; k < outs.size(); ++k) {
        budget(eqn, outs[k], mesh);
        const std::string at = eqn.where + ".out[" + std::to_string(k) + "]";
        const ValueType declared = concrete(jx.types[eqn.out[k]], b_.dims, at);
        if (!(declared == outs[k])) {
          throw InputError(at, "declared " + type_str(declared) + ", but " + eqn.primitive +
                                   " gives " + type_str(outs[k]));
        }
        env[eqn.out[k]] = outs[k];
      }
    }
    std::vector<ValueType> out;
    for (const Atom& a : jx.outvars)
      out.push_back(a.is_literal() ? ValueType{a.dtype, {}} : env[a.var]);
    return out;
  }

 private:
  std::vector<ValueType> equation(const Eqn& eqn, const std::vector<ValueType>& ops,
                                  const MeshShape* mesh) {
    if (is_call(eqn.primitive)) return jaxpr(callee(eqn), ops, mesh);
    if (eqn.primitive == "shard_map") return shard_map(eqn, ops, mesh);
    const Primitive* prim = find_primitive(eqn.primitive);
    MESHRUN_CHECK(prim != nullptr, "the reader refuses unknown primitives");
    PrimContext ctx;
    ctx.dims = &b_.dims;
    ctx.mesh = mesh;
    std::vector<ValueType> outs = prim->infer(eqn, ops, ctx);
    if (eqn.primitive == "dot_general" && outs.size() == 1 && ops.size() == 2) {
      // Multiply-adds: every output element times the contracted extent (lhs size / the lhs
      // dims the output keeps), on every device of a body.
      const double out = static_cast<double>(shape_size(outs[0].shape));
      std::size_t contracted = 1;
      const auto c = eqn.params.find("contracting");
      if (c != eqn.params.end() && c->is_array() && !c->empty() && (*c)[0].is_array()) {
        for (const auto& d : (*c)[0]) {
          if (d.is_number_unsigned() && d.get<std::size_t>() < ops[0].shape.size())
            contracted *= ops[0].shape[d.get<std::size_t>()];
        }
      }
      flops_ += 2.0 * out * static_cast<double>(contracted) *
                (mesh != nullptr ? static_cast<double>(mesh_devices(*mesh)) : 1.0);
    }
    return outs;
  }

  std::vector<ValueType> shard_map(const Eqn& eqn, const std::vector<ValueType>& ops,
                                   const MeshShape* outer) {
    if (outer != nullptr) throw PrimitiveError("a shard_map inside a shard_map body");
    const MeshShape mesh = mesh_param(eqn);
    if (mesh != b_.exp->mesh) {
      throw PrimitiveError("its mesh " + mesh_str(mesh) + " is not its export's, " +
                           mesh_str(b_.exp->mesh));
    }
    const std::vector<PartitionSpec> in_specs = shard_map_specs(eqn, "in_specs");
    const std::vector<PartitionSpec> out_specs = shard_map_specs(eqn, "out_specs");
    if (in_specs.size() != ops.size()) {
      throw PrimitiveError(std::to_string(in_specs.size()) + " in_specs for " +
                           std::to_string(ops.size()) + " operands");
    }
    std::vector<ValueType> blocks;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const std::string at = eqn.where + ".params.in_specs[" + std::to_string(i) + "]";
      try {
        check_spec_axes(at, in_specs[i], mesh);
      } catch (const InputError& e) {
        throw PrimitiveError(e.what());
      }
      if (in_specs[i].dims().size() > ops[i].shape.size()) {
        throw PrimitiveError("in_specs[" + std::to_string(i) + "] " + in_specs[i].str() +
                             " has more entries than its operand " + type_str(ops[i]) +
                             " has dimensions");
      }
      ValueType block = ops[i];
      for (std::size_t d = 0; d < block.shape.size(); ++d) {
        const std::size_t n = static_cast<std::size_t>(shard_count(in_specs[i], d, mesh));
        if (block.shape[d] % n != 0) {
          throw PrimitiveError("operand " + std::to_string(i) + " " + type_str(ops[i]) + " with " +
                               in_specs[i].str() + ": " + std::to_string(n) +
                               " does not evenly divide " + std::to_string(block.shape[d]) +
                               ", the size of its dimension " + std::to_string(d));
        }
        block.shape[d] /= n;
      }
      blocks.push_back(block);
    }
    std::vector<ValueType> outs = jaxpr(*eqn.sub("jaxpr"), blocks, &mesh);
    if (out_specs.size() != outs.size()) {
      throw PrimitiveError(std::to_string(out_specs.size()) + " out_specs for " +
                           std::to_string(outs.size()) + " results");
    }
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const std::string at = eqn.where + ".params.out_specs[" + std::to_string(i) + "]";
      try {
        check_spec_axes(at, out_specs[i], mesh);
      } catch (const InputError& e) {
        throw PrimitiveError(e.what());
      }
      if (out_specs[i].dims().size() > outs[i].shape.size()) {
        throw PrimitiveError("out_specs[" + std::to_string(i) + "] " + out_specs[i].str() +
                             " has more entries than its result " + type_str(outs[i]) +
                             " has dimensions");
      }
      for (std::size_t d = 0; d < outs[i].shape.size(); ++d)
        outs[i].shape[d] *= static_cast<std::size_t>(shard_count(out_specs[i], d, mesh));
    }
    return outs;
  }

  // Memory, bounded before anything runs: no value above kMaxValueElements, and every value of
  // the run together (on every device, as if none were released) within kMaxRunElements.
  void budget(const Eqn& eqn, const ValueType& t, const MeshShape* mesh) {
    const double n = static_cast<double>(shape_size(t.shape));
    if (n > static_cast<double>(kMaxValueElements)) {
      throw InputError(eqn.place(), type_str(t) + " holds " + number_text(n) +
                                        " elements, more than 2^28 (1 GiB), the most one value "
                                        "may hold");
    }
    elements_ += n * (mesh != nullptr ? static_cast<double>(mesh_devices(*mesh)) : 1.0);
    if (elements_ > static_cast<double>(kMaxRunElements)) {
      throw InputError(eqn.place(),
                       "the run's values add up to more than 2^32 elements (16 "
                       "GiB) by this equation, the most a run may hold");
    }
  }

  const ProgramFile& file_;
  const Binding& b_;
  double flops_ = 0;
  double elements_ = 0;

 public:
  std::uint64_t flops() const { return static_cast<std::uint64_t>(flops_); }
};

// Binds `exp`'s dimension variables to `shapes`; InputError naming the input otherwise.
DimBindings bind_export(const ProgramFile& file, const Export& exp,
                        const std::vector<Shape>& shapes, const std::vector<DType>& dtypes) {
  DimBindings dims;
  std::map<std::string, std::string> bound_by;
  const Jaxpr& jx = exp.jaxpr;
  const auto field = [&](std::size_t i) { return "input." + file.inputs.at(i).name; };
  for (std::size_t i = 0; i < jx.invars.size(); ++i) {
    const Type& t = jx.types[jx.invars[i]];
    if (i < dtypes.size() && dtypes[i] != t.dtype) {
      throw InputError(field(i), std::string("is ") + dtype_name(dtypes[i]) +
                                     ", the program takes " + dtype_name(t.dtype));
    }
    if (t.shape.size() != shapes.at(i).size()) {
      std::string declared;
      for (const DimExpr& d : t.shape) declared += (declared.empty() ? "" : ",") + d.str();
      throw InputError(field(i), "has shape " + prim::dims_str(shapes[i]) + ", the program takes " +
                                     dtype_name(t.dtype) + "[" + declared + "]");
    }
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      std::string name;
      std::int64_t factor = 0;
      if (!t.shape[d].solvable(&name, &factor)) continue;
      const auto size = static_cast<std::int64_t>(shapes[i][d]);
      if (size % factor != 0) {
        throw InputError(field(i), std::to_string(factor) + " does not evenly divide " +
                                       std::to_string(size) + ", the size of its dimension " +
                                       std::to_string(d) + " (" + t.shape[d].str() + ")");
      }
      const auto [it, fresh] = dims.emplace(name, size / factor);
      if (!fresh && it->second != size / factor) {
        throw InputError(field(i), "dimension " + std::to_string(d) + " (" + t.shape[d].str() +
                                       ") makes " + name + " = " + std::to_string(size / factor) +
                                       ", but " + bound_by[name] + " made it " +
                                       std::to_string(it->second));
      }
      bound_by.emplace(name, field(i));
    }
  }
  for (const std::string& name : exp.dims) {
    if (!dims.contains(name)) {
      throw InputError(exp.where + ".dims", "dimension variable " + excerpt(name) +
                                                " cannot be solved from the inputs' shapes");
    }
  }
  for (std::size_t i = 0; i < jx.invars.size(); ++i) {
    const Type& t = jx.types[jx.invars[i]];
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      const std::int64_t want = t.shape[d].eval(dims, field(i));
      if (want != static_cast<std::int64_t>(shapes[i][d])) {
        if (t.shape[d].is_constant()) {  // a fixed size: say the shapes, not "1 = 1"
          std::string declared;
          for (const DimExpr& e : t.shape) declared += (declared.empty() ? "" : ",") + e.str();
          throw InputError(field(i), "has shape " + prim::dims_str(shapes[i]) +
                                         ", the program takes " + dtype_name(t.dtype) + "[" +
                                         declared + "]");
        }
        throw InputError(field(i), "dimension " + std::to_string(d) + " is " +
                                       std::to_string(shapes[i][d]) + ", the program's " +
                                       t.shape[d].str() + " = " + std::to_string(want));
      }
    }
  }
  return dims;
}

// The end of the run of psums from `e` that one collective can carry: the same primitive over
// the same axes, f32, each operand defined before the run (none the result of another member).
std::size_t combinable_psums(const Jaxpr& jx, std::size_t e) {
  const Eqn& first = jx.eqns[e];
  if (first.primitive != "psum" && first.primitive != "psum_invariant") return e + 1;
  std::vector<int> results(first.out.begin(), first.out.end());
  std::size_t end = e + 1;
  for (; end < jx.eqns.size(); ++end) {
    const Eqn& q = jx.eqns[end];
    if (q.primitive != first.primitive || q.params != first.params) break;
    bool independent = true;
    for (const Atom& a : q.in) {
      if (!a.is_literal() && std::find(results.begin(), results.end(), a.var) != results.end())
        independent = false;
      if (!a.is_literal() && jx.types[a.var].dtype != DType::kF32) independent = false;
    }
    if (!independent) break;
    results.insert(results.end(), q.out.begin(), q.out.end());
  }
  for (const Atom& a : first.in)
    if (!a.is_literal() && jx.types[a.var].dtype != DType::kF32) return e + 1;
  return end;
}

Value literal(const Atom& a) {
  return Value(a.dtype, Tensor::scalar(static_cast<float>(a.literal)));
}

}  // namespace

std::vector<PartitionSpec> shard_map_specs(const Eqn& eqn, const char* key) {
  const json& list = eqn.params.value(key, json());
  if (!list.is_array()) throw PrimitiveError(std::string("param '") + key + "' must be a list");
  std::vector<PartitionSpec> specs;
  for (const json& spec : list) {
    if (!spec.is_array())
      throw PrimitiveError(std::string("param '") + key + "': a spec must be a list");
    std::vector<std::vector<std::string>> dims;
    for (const json& entry : spec) {
      std::vector<std::string> axes;
      if (entry.is_string()) {
        axes.push_back(entry.get<std::string>());
      } else if (entry.is_array()) {
        for (const json& a : entry) {
          if (!a.is_string())
            throw PrimitiveError(std::string("param '") + key + "': an axis must be a name");
          axes.push_back(a.get<std::string>());
        }
      } else if (!entry.is_null()) {
        throw PrimitiveError(std::string("param '") + key +
                             "': an entry must be null, an axis or a list of axes");
      }
      dims.push_back(std::move(axes));
    }
    specs.emplace_back(std::move(dims));
  }
  return specs;
}

Binding bind(const ProgramFile& file, const MeshShape& mesh, const std::vector<Shape>& shapes,
             const std::vector<DType>& dtypes) {
  std::string exported;
  std::optional<InputError> first;
  std::size_t tried = 0;
  for (const Export& exp : file.exports) {
    exported += (exported.empty() ? "" : ", ") + mesh_str(exp.mesh);
    if (exp.mesh != mesh) continue;
    ++tried;
    try {
      return {&exp, bind_export(file, exp, shapes, dtypes)};
    } catch (const InputError& e) {
      if (!first) first = e;
    }
  }
  // The first export's reason; with several (one per shape signature), that none fits.
  if (first && tried > 1) {
    const std::string what = first->what();
    const std::string reason =
        first->field().empty() ? what : what.substr(first->field().size() + 2);
    throw InputError(first->field(), reason + " (the first of its " + std::to_string(tried) +
                                         " exports for " + mesh_str(mesh) +
                                         "; none takes these shapes)");
  }
  if (first) throw *first;
  throw InputError("mesh", "the program has no export for " + mesh_str(mesh) +
                               " (it was exported for " + excerpt(exported) + ")");
}

std::uint64_t check_export(const ProgramFile& file, const Binding& binding) {
  const Jaxpr& jx = binding.exp->jaxpr;
  std::vector<ValueType> in;
  for (int v : jx.invars) in.push_back(concrete(jx.types[v], binding.dims, jx.where));
  Checker checker(file, binding);
  checker.jaxpr(jx, in, nullptr);
  return checker.flops();
}

std::vector<Value> eval_jaxpr(const Jaxpr& jx, std::vector<Value> args, PrimContext& ctx,
                              const ShardMapRunner* shard_map) {
  std::vector<Value> env(jx.types.size());
  for (std::size_t i = 0; i < args.size() && i < jx.invars.size(); ++i) {
    env[jx.invars[i]] = std::move(args[i]);
  }
  for (std::size_t i = 0; i < jx.constvars.size(); ++i) {
    const Const& c = jx.consts[i];
    env[jx.constvars[i]] = Value(c.dtype, Tensor(c.shape, c.data));
  }
  std::vector<Value> literals;
  std::vector<Value*> ops;
  std::vector<char> owned;
  const ContractionPlan plan = plan_contractions(jx);
  // Chains of elementwise equations over large arrays run as one chunked loop (fusion.hpp).
  const FusionPlan fusion = plan_fusion(jx, plan, ctx.dims);
  std::size_t fused_to = 0;     // eqns before this ran in a fused group
  std::size_t combined_to = 0;  // eqns before this ran in an earlier combined psum
  Eqn combined;
  for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
    if (e < fused_to) continue;
    if (const int g = fusion.group_at[e];
        g >= 0 && run_fusion_group(fusion.groups[static_cast<std::size_t>(g)], env)) {
      fused_to = fusion.groups[static_cast<std::size_t>(g)].end;
      for (std::size_t k = e; k < fused_to; ++k)
        for (int v : jx.eqns[k].last_use) env[v] = Value();
      continue;
    }
    if (e < combined_to || plan.absorbed[e]) continue;  // ran already, or runs in its consumer
    std::size_t run_end = ctx.device != nullptr ? combinable_psums(jx, e) : e + 1;
    if (run_end > e + 1) {
      // XLA's all-reduce combiner: consecutive psums over the same axes in one collective
      // (the same sums, element by element, in the same rank order: the same bits).
      combined = jx.eqns[e];
      combined.in.clear();
      combined.out.clear();
      combined.last_use.clear();
      for (std::size_t k = e; k < run_end; ++k) {
        const Eqn& q = jx.eqns[k];
        combined.in.insert(combined.in.end(), q.in.begin(), q.in.end());
        combined.out.insert(combined.out.end(), q.out.begin(), q.out.end());
        combined.last_use.insert(combined.last_use.end(), q.last_use.begin(), q.last_use.end());
      }
      combined_to = run_end;
    }
    const Eqn& eqn = run_end > e + 1 ? combined : jx.eqns[e];
    literals.clear();
    literals.reserve(eqn.in.size());
    ops.clear();
    owned.clear();
    for (const Atom& a : eqn.in) {
      if (a.is_literal()) {
        literals.push_back(literal(a));
        ops.push_back(&literals.back());
        owned.push_back(1);
        continue;
      }
      ops.push_back(&env[a.var]);
      // Lent only at its last use, and only when it is not also another operand of this one.
      const bool last =
          std::find(eqn.last_use.begin(), eqn.last_use.end(), a.var) != eqn.last_use.end();
      const auto uses = std::count_if(eqn.in.begin(), eqn.in.end(),
                                      [&](const Atom& b) { return b.var == a.var; });
      owned.push_back(last && uses == 1 ? 1 : 0);
    }
    std::vector<Value> outs;
    if (const Contraction& c = plan.at[e]; c.mul >= 0) {
      const Eqn& mul = jx.eqns[static_cast<std::size_t>(c.mul)];
      const auto value = [&](const Atom& a) { return a.is_literal() ? literal(a) : Value(); };
      const Value lb = value(mul.in[0]), lc = value(mul.in[1]);
      const Value& b = mul.in[0].is_literal() ? lb : env[mul.in[0].var];
      const Value& cc = mul.in[1].is_literal() ? lc : env[mul.in[1].var];
      const auto a = static_cast<std::size_t>(c.addend);
      outs.push_back(fused_multiply_add(
          ops[a],
          owned[a] != 0 && (eqn.in[a].is_literal() ||
                            (eqn.in[a].var != mul.in[0].var && eqn.in[a].var != mul.in[1].var)),
          b, cc, c.negate_product, c.negate_addend));
      for (int v : mul.last_use) env[v] = Value();
    } else if (is_call(eqn.primitive) || eqn.primitive == "shard_map") {
      std::vector<Value> in;
      in.reserve(ops.size());
      for (std::size_t i = 0; i < ops.size(); ++i)
        in.push_back(owned[i] ? std::move(*ops[i]) : *ops[i]);
      if (eqn.primitive == "shard_map") {
        if (shard_map == nullptr)
          throw PrimitiveError(eqn.place() + ": a shard_map inside a shard_map body");
        outs = (*shard_map)(eqn, in);
      } else {
        outs = eval_jaxpr(callee(eqn), std::move(in), ctx, shard_map);
      }
    } else {
      const Primitive* prim = find_primitive(eqn.primitive);
      MESHRUN_CHECK(prim != nullptr, "the reader refuses unknown primitives");
      std::unique_ptr<bool[]> flags(new bool[owned.size() + 1]);
      for (std::size_t i = 0; i < owned.size(); ++i) flags[i] = owned[i] != 0;
      try {
        outs = prim->eval(eqn, ops, std::span<const bool>(flags.get(), owned.size()), ctx);
      } catch (const PrimitiveError& e) {
        // What the values made impossible (an integer beyond what meshrun holds exactly, an
        // index out of range): the program's input cannot run here, exit 2, named in the file --
        // on a device as the engine's own limit (the Mesh keeps it), else as an input error.
        const std::string what =
            std::string(ctx.file) + (ctx.file.empty() ? "" : ": ") + eqn.place() + ": " + e.what();
        if (ctx.device != nullptr) throw UnimplementedError(what);
        throw InputError("", what);
      }
    }
    for (std::size_t k = 0; k < outs.size() && k < eqn.out.size(); ++k) {
      env[eqn.out[k]] = std::move(outs[k]);
    }
    for (int v : eqn.last_use) env[v] = Value();
  }
  std::vector<Value> out;
  out.reserve(jx.outvars.size());
  for (std::size_t i = 0; i < jx.outvars.size(); ++i) {
    const Atom& a = jx.outvars[i];
    if (a.is_literal()) {
      out.push_back(literal(a));
      continue;
    }
    const bool again = std::any_of(jx.outvars.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                   jx.outvars.end(), [&](const Atom& b) { return b.var == a.var; });
    out.push_back(again ? env[a.var] : std::move(env[a.var]));
  }
  return out;
}

}  // namespace meshrun::interp
