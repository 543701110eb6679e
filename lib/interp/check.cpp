// The check before a run (eval.hpp): every equation's types inferred from the bound shapes and
// compared with the declared ones, memory and compute bounded; and a shard_map's specs read.
#include "interp/eval.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "interp/compiled.hpp"
#include "interp/cost.hpp"
#include "interp/prim_util.hpp"
#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

ValueType concrete(const Type& t, const DimBindings& dims, const std::string& at) {
  ValueType v{t.dtype, {}};
  for (const DimExpr& d : t.shape) v.shape.push_back(static_cast<std::size_t>(d.eval(dims, at)));
  return v;
}

class Checker {
 public:
  Checker(const Binding& b, const CostBudget& budget) : b_(b), cost_(budget) {}

  std::vector<ValueType> jaxpr(const CompiledJaxpr& cj, const std::vector<ValueType>& in,
                               const MeshShape* mesh) {
    const Jaxpr& jx = *cj.jaxpr;
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
    for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
      const Eqn& eqn = jx.eqns[e];
      const Step& step = cj.steps[e];
      std::vector<ValueType> ops;
      for (const Atom& a : eqn.in)
        ops.push_back(a.is_literal() ? ValueType{a.dtype, {}} : env[a.var]);
      std::vector<ValueType> outs;
      try {
        outs = equation(step, eqn, ops, mesh);
      } catch (const PrimitiveError& err) {
        throw InputError(eqn.place(), err.what());
      }
      if (outs.size() != eqn.out.size()) {
        throw InputError(eqn.place(), "defines " + std::to_string(eqn.out.size()) +
                                          " results, its primitive gives " +
                                          std::to_string(outs.size()));
      }
      if (step.kind == Step::Kind::kPrimitive || step.kind == Step::Kind::kAbsorbed) {
        cost_.add(eqn, *step.declared, ops, outs, devices(mesh), times_);
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
  std::vector<ValueType> equation(const Step& step, const Eqn& eqn,
                                  const std::vector<ValueType>& ops, const MeshShape* mesh) {
    if (step.kind == Step::Kind::kCall) return jaxpr(*step.callee, ops, mesh);
    if (step.kind == Step::Kind::kControl) return control(*step.control, eqn, ops, mesh);
    if (step.kind == Step::Kind::kShardMap) return shard_map(step.shard_map, ops, mesh);
    const Primitive* prim = step.declared;
    PrimContext ctx;
    ctx.dims = &b_.dims;
    ctx.mesh = mesh;
    narrow_check(eqn, ops, {});  // before infer: a primitive not listed never sees these dtypes
    std::vector<ValueType> outs = prim->infer(eqn, ops, ctx);
    narrow_check(eqn, ops, outs);
    if (prim->flops != nullptr) {
      // What --timings divides by: the products' flops, on every device of a body.
      flops_ += static_cast<double>(prim->flops(eqn, ops, outs)) *
                static_cast<double>(devices(mesh)) * static_cast<double>(times_);
    }
    return outs;
  }

  // Issue #49: an operand or a result of bf16, f16, i8, u8, i16 or u16 only where the primitive
  // is listed for it (narrow_dtype_support): refused here, before anything runs.
  static void narrow_check(const Eqn& eqn, const std::vector<ValueType>& ops,
                           const std::vector<ValueType>& outs) {
    const NarrowSupport* s = narrow_dtype_support(eqn.primitive);
    if (eqn.narrow_use == Eqn::NarrowUse::kRefused) {
      throw InputError(eqn.place(),
                       "its bf16 result converted to f32 (and also used otherwise, "
                       "or of a primitive whose fold meshrun has not verified): "
                       "XLA:CPU's excess precision there is not meshrun's "
                       "(docs/program-format.md, Dtypes)");
    }
    for (const auto* list : {&ops, &outs}) {
      for (const ValueType& t : *list) {
        if (!is_narrow(t.dtype)) continue;
        const unsigned kind = t.dtype == DType::kU32 ? NarrowSupport::kU32
                              : dtype_info(t.dtype).kind == DKind::kFloat
                                  ? NarrowSupport::kHalf
                                  : NarrowSupport::kSmallInt;
        if (s == nullptr || (s->kinds & kind) == 0) {
          throw InputError(eqn.place(), std::string("meshrun does not run ") + eqn.primitive +
                                            " on " + dtype_info(t.dtype).word +
                                            " (docs/program-format.md, Dtypes)");
        }
      }
    }
  }

  // A scan, while or cond (ops/control_flow.hpp): each jaxpr checked on its operands' types. A
  // scan's body counts `length` times over, with the evaluator's own cost per iteration
  // (kIterationFlops per equation); a while's cond and body once (its trip count is bounded as it
  // runs: --max-while-iterations); a cond's costliest branch.
  std::vector<ValueType> control(const ControlPlan& plan, const Eqn& eqn,
                                 const std::vector<ValueType>& ops, const MeshShape* mesh) {
    std::vector<CostMeter> branches;  // a cond's: the meter after each branch
    const CostMeter before = cost_;
    const BodyChecker body = [&](const CompiledJaxpr& cj, const std::vector<ValueType>& in,
                                 std::uint64_t times) {
      if (plan.kind == Primitive::Control::kCond) cost_ = before;
      const std::uint64_t outer = times_;
      times_ = sat_times(times_, times);
      std::vector<ValueType> outs;
      try {
        outs = jaxpr(cj, in, mesh);
      } catch (...) {
        times_ = outer;
        throw;
      }
      const auto per_iteration = static_cast<std::uint64_t>(cj.jaxpr->eqns.size() + 1);
      const auto devices = static_cast<std::uint64_t>(this->devices(mesh));
      if (plan.kind == Primitive::Control::kScan) {
        cost_.add_overhead(eqn,
                           sat_times(sat_times(times_, per_iteration), kIterationFlops * devices),
                           "scan of " + std::to_string(times) + " iterations of " +
                               std::to_string(per_iteration - 1) +
                               (per_iteration == 2 ? " equation" : " equations"));
      }
      times_ = outer;
      if (plan.kind == Primitive::Control::kCond) branches.push_back(cost_);
      return outs;
    };
    std::vector<ValueType> outs = control_infer(plan, eqn, ops, body);
    for (const CostMeter& m : branches)
      if (m.flops() >= cost_.flops()) cost_ = m;
    return outs;
  }

  static std::uint64_t sat_times(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
  }

  // Its params as compile_program read them (and refused them, in this order).
  std::vector<ValueType> shard_map(const CompiledShardMap* sm, const std::vector<ValueType>& ops,
                                   const MeshShape* outer) {
    if (sm == nullptr) throw PrimitiveError("a shard_map inside a shard_map body");
    if (!sm->mesh_error.empty()) throw PrimitiveError(sm->mesh_error);
    // A mesh of the export's axes in another order (jax.make_mesh((4, 2), ('model', 'data')) where
    // the exercise's is ('data', 'model')) is the same mesh: blocks, specs and collectives name
    // their axes, so the body runs on the export's mesh, its devices numbered in the export's
    // order. An axis of size 1 the export lacks (a mesh ('data', 'pipe') of shape (8, 1) reused
    // from a pipeline setup) splits nothing and moves nothing: the body runs without it, and a
    // spec or collective that names it is refused as naming an axis the mesh lacks.
    MeshShape sorted_mesh;
    for (const auto& axis : sm->mesh) {
      if (axis.second != 1 || mesh_axis_position(b_.exp->mesh, axis.first) >= 0) {
        sorted_mesh.push_back(axis);
      } else if (const std::string where = names_axis(*sm, axis.first); !where.empty()) {
        throw PrimitiveError("its mesh's axis '" + axis.first +
                             "' (of size 1, which its export's mesh " + mesh_str(b_.exp->mesh) +
                             " lacks) is named by " + where +
                             ": meshrun runs such an axis only where no spec or collective "
                             "names it");
      }
    }
    MeshShape sorted_export = b_.exp->mesh;
    std::sort(sorted_mesh.begin(), sorted_mesh.end());
    std::sort(sorted_export.begin(), sorted_export.end());
    if (sorted_mesh != sorted_export) {
      throw PrimitiveError("its mesh " + mesh_str(sm->mesh) + " is not its export's, " +
                           mesh_str(b_.exp->mesh) +
                           " (in any order of its axes, with axes of size 1 besides)");
    }
    const MeshShape& mesh = b_.exp->mesh;
    if (!sm->param_error.empty()) throw PrimitiveError(sm->param_error);
    const Eqn& eqn = *sm->eqn;
    const std::vector<PartitionSpec>& in_specs = sm->in_specs;
    const std::vector<PartitionSpec>& out_specs = sm->out_specs;
    // Its specs split over its own manual axes; its body is manual over those and the enclosing
    // shard_maps' (a shard_map nested in a partial one, over some of the remaining axes).
    const MeshShape spec_mesh = manual_mesh(*sm, mesh);
    MeshShape body_mesh = spec_mesh;
    if (outer != nullptr) {
      for (const auto& axis : spec_mesh) {
        if (mesh_axis_position(*outer, axis.first) >= 0) {
          throw PrimitiveError("manual over '" + axis.first +
                               "', which its enclosing shard_map is manual over already");
        }
      }
      body_mesh.clear();
      for (const auto& axis : mesh)
        if (mesh_axis_position(*outer, axis.first) >= 0 ||
            mesh_axis_position(spec_mesh, axis.first) >= 0)
          body_mesh.push_back(axis);
    }
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
      automatic_axis(spec_mesh, outer, "in_specs[" + std::to_string(i) + "]", in_specs[i]);
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
    // A partial shard_map's body on its manual axes only: a collective or axis_index naming an
    // automatic axis is refused as naming no axis of the mesh (JAX refuses it as it traces). The
    // devices run it on the whole mesh, where a collective over the manual axes runs within the
    // devices that share their automatic coordinates, as JAX's does.
    const int enclosing = automatic_devices_;
    automatic_devices_ = mesh_devices(mesh) / mesh_devices(body_mesh);
    std::vector<ValueType> outs;
    try {
      outs = jaxpr(*sm->body, blocks, &body_mesh);
    } catch (...) {
      automatic_devices_ = enclosing;
      throw;
    }
    automatic_devices_ = enclosing;
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
      automatic_axis(spec_mesh, outer, "out_specs[" + std::to_string(i) + "]", out_specs[i]);
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

  // Where sm names `axis`: "in_specs[2]", "out_specs[0]", or a body equation's place (its "axes"
  // or "axis_name" param, at any depth: a collective, axis_index, pvary); "" nowhere.
  static std::string names_axis(const CompiledShardMap& sm, const std::string& axis) {
    const auto in_spec = [&axis](const PartitionSpec& spec) {
      for (const auto& axes : spec.dims())
        if (std::find(axes.begin(), axes.end(), axis) != axes.end()) return true;
      return false;
    };
    for (std::size_t k = 0; k < sm.in_specs.size(); ++k)
      if (in_spec(sm.in_specs[k])) return "in_specs[" + std::to_string(k) + "]";
    for (std::size_t k = 0; k < sm.out_specs.size(); ++k)
      if (in_spec(sm.out_specs[k])) return "out_specs[" + std::to_string(k) + "]";
    const std::function<std::string(const Jaxpr&, int)> walk = [&](const Jaxpr& jx,
                                                                   int depth) -> std::string {
      for (const Eqn& e : jx.eqns) {
        for (const char* key : {"axes", "axis_name"}) {
          const auto it = e.params.find(key);
          if (it == e.params.end()) continue;
          const bool named = it->is_string()
                                 ? it->get<std::string>() == axis
                                 : it->is_array() && std::find(it->begin(), it->end(),
                                                               nlohmann::json(axis)) != it->end();
          if (named) return e.place();
        }
        if (depth < 64)
          for (const auto& [key, sub] : e.subs)
            if (std::string w = walk(*sub, depth + 1); !w.empty()) return w;
      }
      return "";
    };
    return sm.body != nullptr && sm.body->jaxpr != nullptr ? walk(*sm.body->jaxpr, 0) : "";
  }

  // The mesh restricted to sm's manual axes, in the mesh's order (the mesh itself when it has
  // no manual_axes); refuses a manual axis the mesh lacks or one named twice.
  static MeshShape manual_mesh(const CompiledShardMap& sm, const MeshShape& mesh) {
    if (sm.manual_axes.empty()) return mesh;
    for (std::size_t k = 0; k < sm.manual_axes.size(); ++k) {
      const std::string& a = sm.manual_axes[k];
      if (mesh_axis_position(sm.mesh, a) < 0) {
        throw PrimitiveError("manual_axes names '" + a +
                             "', which is not in the mesh's axis names " +
                             mesh_axis_names(sm.mesh));
      }
      if (std::find(sm.manual_axes.begin(), sm.manual_axes.begin() + static_cast<std::ptrdiff_t>(k),
                    a) != sm.manual_axes.begin() + static_cast<std::ptrdiff_t>(k)) {
        throw PrimitiveError("manual_axes names '" + a + "' more than once");
      }
    }
    MeshShape m;
    for (const auto& axis : mesh)
      if (std::find(sm.manual_axes.begin(), sm.manual_axes.end(), axis.first) !=
          sm.manual_axes.end())
        m.push_back(axis);
    return m;
  }

  // Refuses a spec of a partial shard_map that splits over an automatic axis (JAX: "in_specs
  // refers to ... not in axis_names"): the body sees the automatic axes whole; or, nested, over
  // an axis an enclosing shard_map is manual over (its blocks are cut along it already).
  static void automatic_axis(const MeshShape& spec_mesh, const MeshShape* outer,
                             const std::string& what, const PartitionSpec& spec) {
    for (const auto& axes : spec.dims()) {
      for (const std::string& a : axes) {
        if (mesh_axis_position(spec_mesh, a) >= 0) continue;
        const bool enclosing = outer != nullptr && mesh_axis_position(*outer, a) >= 0;
        throw PrimitiveError(
            what + " " + spec.str() + " splits over '" + a + "', " +
            (enclosing ? "which its enclosing shard_map is manual over" : "an automatic axis") +
            " (the shard_map is manual over " + mesh_axis_names(spec_mesh) + " only)");
      }
    }
  }

  // The devices a body runs on: a partial shard_map's on the whole mesh (those that differ only
  // in their automatic coordinates compute the same), though it is checked on its manual axes.
  int devices(const MeshShape* mesh) const {
    return mesh != nullptr ? mesh_devices(*mesh) * automatic_devices_ : 1;
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
    elements_ += n * static_cast<double>(devices(mesh));
    if (elements_ > static_cast<double>(kMaxRunElements)) {
      throw InputError(eqn.place(),
                       "the run's values add up to more than 2^32 elements (16 "
                       "GiB) by this equation, the most a run may hold");
    }
  }

  const Binding& b_;
  CostMeter cost_;
  std::uint64_t times_ =
      1;  // how often the equations being checked run: the enclosing scans' lengths
  double flops_ = 0;
  int automatic_devices_ = 1;  // in a partial shard_map's body: the automatic axes'
                               // devices (devices())
  double elements_ = 0;

 public:
  std::uint64_t flops() const { return static_cast<std::uint64_t>(flops_); }
};

}  // namespace

std::vector<PartitionSpec> shard_map_specs(const Eqn& eqn, const char* key) {
  ++compile_counters().spec_parses;
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

std::uint64_t check_export(const CompiledExport& compiled, const Binding& binding,
                           const CostBudget& budget) {
  MESHRUN_CHECK(compiled.exp == binding.exp, "the export bound is the one compiled");
  const Jaxpr& jx = binding.exp->jaxpr;
  std::vector<ValueType> in;
  for (int v : jx.invars) in.push_back(concrete(jx.types[v], binding.dims, jx.where));
  Checker checker(binding, budget);
  checker.jaxpr(*compiled.jaxpr, in, nullptr);
  return checker.flops();
}

std::uint64_t check_export(const ProgramFile& file, const Binding& binding,
                           const CostBudget& budget) {
  const CompiledProgram compiled = compile_program(file);
  return check_export(compiled.of(binding.exp), binding, budget);
}

}  // namespace meshrun::interp
