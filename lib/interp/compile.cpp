// A program file compiled once, at load (compiled.hpp).
#include <algorithm>
#include <string>
#include <utility>

#include "interp/compiled.hpp"
#include "interp/eval.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

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

// Whether an operand or a result of `eqn` is a uint32 (held as its bits, ir.hpp).
bool touches_u32(const Jaxpr& jx, const Eqn& eqn) {
  for (const Atom& a : eqn.in)
    if (dtype_of(jx, a) == DType::kU32) return true;
  for (int v : eqn.out)
    if (jx.types[static_cast<std::size_t>(v)].dtype == DType::kU32) return true;
  return false;
}

// Per operand of `eqn`: lent at its last use, when it is not also another operand of it.
std::unique_ptr<bool[]> owned_of(const Eqn& eqn) {
  std::unique_ptr<bool[]> owned(new bool[eqn.in.size() + 1]);
  for (std::size_t i = 0; i < eqn.in.size(); ++i) {
    const Atom& a = eqn.in[i];
    if (a.is_literal()) {
      owned[i] = true;
      continue;
    }
    const bool last =
        std::find(eqn.last_use.begin(), eqn.last_use.end(), a.var) != eqn.last_use.end();
    const auto uses =
        std::count_if(eqn.in.begin(), eqn.in.end(), [&](const Atom& b) { return b.var == a.var; });
    owned[i] = last && uses == 1;
  }
  return owned;
}

// `jx` with the later uses of each identity equation's operand renamed to its result (see
// CompiledJaxpr::run), or null when that would change nothing -- or change which products are
// contracted into an FMA. The values are the same (an identity's result is its operand's value),
// so only which equation may take over a buffer changes: the identity itself, where it copied
// before. But a rename also moves last uses, and the contraction plan depends on them (a product
// whose operand is released before its add is not contracted; one whose product lives longer may
// be): where the plan of the renamed jaxpr differs from `plan`, the file's, the file's jaxpr runs
// as it is, so every run has the bits the file's own order gives. The copy holds neither the
// constants (the evaluator reads them from the file's jaxpr) nor anything else the rename does not
// touch but the equations and outvars.
std::unique_ptr<const Jaxpr> rename_identity_operands(const Jaxpr& jx,
                                                      const ContractionPlan& plan) {
  // next[v] >= 0: v's later uses read next[v] (chains follow identities of identities; resolve
  // shortens each chain it walks, so a file of a million identities stays linear).
  std::vector<int> next(jx.types.size(), -1);
  auto resolve = [&](int v) {
    int r = v;
    while (next[static_cast<std::size_t>(r)] >= 0) r = next[static_cast<std::size_t>(r)];
    while (next[static_cast<std::size_t>(v)] >= 0 && next[static_cast<std::size_t>(v)] != r) {
      const int n = next[static_cast<std::size_t>(v)];
      next[static_cast<std::size_t>(v)] = r;
      v = n;
    }
    return r;
  };
  auto run = std::make_unique<Jaxpr>();
  run->types = jx.types;
  run->invars = jx.invars;
  run->constvars = jx.constvars;  // (their values: jx.consts)
  run->eqns = jx.eqns;
  run->outvars = jx.outvars;
  run->where = jx.where;
  bool renamed = false;
  for (Eqn& eqn : run->eqns) {
    for (Atom& a : eqn.in) {
      if (a.is_literal()) continue;
      const int r = resolve(a.var);
      renamed = renamed || r != a.var;
      a.var = r;
    }
    const Primitive* prim = find_primitive(eqn.primitive);
    if (prim == nullptr || !prim->identity || eqn.in.size() != eqn.out.size()) continue;
    for (std::size_t k = 0; k < eqn.in.size(); ++k) {
      const Atom& a = eqn.in[k];
      if (a.is_literal() || jx.types[a.var].dtype != jx.types[eqn.out[k]].dtype) continue;
      const auto uses = std::count_if(eqn.in.begin(), eqn.in.end(),
                                      [&](const Atom& b) { return b.var == a.var; });
      if (uses == 1) next[static_cast<std::size_t>(a.var)] = eqn.out[k];
    }
  }
  for (Atom& a : run->outvars) {
    if (a.is_literal()) continue;
    const int r = resolve(a.var);
    renamed = renamed || r != a.var;
    a.var = r;
  }
  if (!renamed) return nullptr;
  mark_last_uses(*run);
  mark_narrow_uses(*run);
  if (!(plan_contractions(*run) == plan)) return nullptr;
  return run;
}

// Reads a shard_map's params in the order check_export reports them.
void read_params(CompiledShardMap& sm) {
  const Eqn& eqn = *sm.eqn;
  try {
    sm.mesh = mesh_param(eqn);
  } catch (const PrimitiveError& e) {
    sm.mesh_error = e.what();
  }
  try {
    const json& m = eqn.params.value("manual_axes", json());
    if (!m.is_null()) {
      if (!m.is_array() || m.empty())
        throw PrimitiveError("param 'manual_axes' must be a non-empty list of mesh axis names");
      for (const json& a : m) {
        if (!a.is_string())
          throw PrimitiveError("param 'manual_axes' must be a non-empty list of mesh axis names");
        sm.manual_axes.push_back(a.get<std::string>());
      }
    }
  } catch (const PrimitiveError& e) {
    sm.manual_axes.clear();
    sm.param_error = e.what();
  }
  try {
    // A "false" string or a 0 read as the default true would change the run without a word.
    const bool vma = param_bool(eqn, "check_vma", true);
    const bool rep = param_bool(eqn, "check_rep", true);
    const auto it = eqn.params.find("check_vma");
    sm.check_vma = it != eqn.params.end() && !it->is_null() ? vma : rep;
  } catch (const PrimitiveError& e) {
    if (sm.param_error.empty()) sm.param_error = e.what();
  }
  try {
    sm.in_specs = shard_map_specs(eqn, "in_specs");
    sm.out_specs = shard_map_specs(eqn, "out_specs");
    sm.specs_read = true;
  } catch (const PrimitiveError& e) {
    sm.in_specs.clear();
    if (sm.param_error.empty()) sm.param_error = e.what();
  }
}

class Compiler {
 public:
  // `shard_maps`: where the shard_maps reached from the top level go; null in a body or a bare
  // jaxpr, where a shard_map is refused.
  Compiler(std::size_t export_index, std::vector<std::unique_ptr<CompiledShardMap>>* shard_maps)
      : export_index_(export_index), shard_maps_(shard_maps) {}

  std::unique_ptr<CompiledJaxpr> jaxpr(const Jaxpr& jx, bool in_body, int depth = 0) {
    auto cj = std::make_unique<CompiledJaxpr>();
    cj->jaxpr = &jx;
    ++compile_counters().plans;
    cj->contractions = plan_contractions(jx);
    cj->renamed = rename_identity_operands(jx, cj->contractions);
    cj->run = cj->renamed ? cj->renamed.get() : &jx;
    const Jaxpr& run = *cj->run;
    cj->fusion = plan_fusion_symbolic(run, cj->contractions);
    cj->steps.resize(run.eqns.size());
    for (std::size_t e = 0; e < run.eqns.size(); ++e) {
      const Eqn& eqn = run.eqns[e];
      Step& s = cj->steps[e];
      s.eqn = &eqn;
      s.psums_end = e + 1;
      if (is_call(eqn.primitive)) {
        s.kind = Step::Kind::kCall;
        const Jaxpr* callee = eqn.sub(nested_jaxpr_param(eqn.primitive));
        MESHRUN_CHECK(callee != nullptr, "the reader checks nested jaxprs");
        cj->subs.push_back(jaxpr(*callee, in_body, depth + 1));
        s.callee = cj->subs.back().get();
      } else if (const Primitive* holder = find_primitive(eqn.primitive);
                 holder != nullptr && holder->control != Primitive::Control::kNone) {
        // scan, while, cond: their jaxprs compiled once, held by the step (as a call's callee).
        s.kind = Step::Kind::kControl;
        auto plan = std::make_unique<ControlPlan>();
        plan->kind = holder->control;
        read_control_params(eqn, *plan);
        for (const char* key : {holder->holds_jaxpr, holder->holds_jaxpr2}) {
          if (key == nullptr) continue;
          for (const Jaxpr* sub : eqn.subs_of(key)) {
            cj->subs.push_back(jaxpr(*sub, in_body, depth + 1));
            plan->bodies.push_back(cj->subs.back().get());
          }
        }
        s.control = std::move(plan);
      } else if (eqn.primitive == "shard_map") {
        s.kind = Step::Kind::kShardMap;
        if (!in_body && shard_maps_ != nullptr) s.shard_map = shard_map(jx.eqns[e], depth);
        if (in_body && nested_ != nullptr) s.shard_map = nested(jx.eqns[e], depth);
      } else {
        s.prim = s.declared = find_primitive(eqn.primitive);
        MESHRUN_CHECK(s.prim != nullptr, "the reader refuses unknown primitives");
        if (touches_u32(run, eqn)) {  // issue #49: computed on uint32's bits (ops/uint32.cpp)
          if (const Primitive* u = u32_primitive(eqn.primitive)) s.prim = s.declared = u;
        }
        if (cj->contractions.absorbed[e]) s.kind = Step::Kind::kAbsorbed;
        if (const int d = cj->contractions.swapped_dot[e]; d >= 0) {
          s.rewritten = std::make_unique<const Eqn>(
              swapped_dot_eqn(run.eqns[static_cast<std::size_t>(d)], eqn));
          s.eqn = s.rewritten.get();
          s.prim = find_primitive(s.eqn->primitive);
          MESHRUN_CHECK(s.prim != nullptr, "a dot_general");
        }
        s.psums_end = combinable_psums(run, e);
        if (s.psums_end > e + 1) {
          auto combined = std::make_unique<Eqn>(eqn);
          combined->in.clear();
          combined->out.clear();
          combined->last_use.clear();
          for (std::size_t k = e; k < s.psums_end; ++k) {
            const Eqn& q = run.eqns[k];
            combined->in.insert(combined->in.end(), q.in.begin(), q.in.end());
            combined->out.insert(combined->out.end(), q.out.begin(), q.out.end());
            combined->last_use.insert(combined->last_use.end(), q.last_use.begin(),
                                      q.last_use.end());
          }
          s.combined_owned = owned_of(*combined);
          s.combined = std::move(combined);
        }
      }
      s.owned = owned_of(*s.eqn);
    }
    return cj;
  }

 private:
  const CompiledShardMap* shard_map(const Eqn& eqn, int depth) {
    auto sm = std::make_unique<CompiledShardMap>();
    sm->eqn = &eqn;
    sm->export_index = export_index_;
    sm->index = shard_maps_->size();
    read_params(*sm);
    CompiledShardMap* raw = sm.get();
    shard_maps_->push_back(std::move(sm));
    // Its body after it is listed: the shard_maps are numbered in evaluation order.
    const Jaxpr* body = eqn.sub("jaxpr");
    MESHRUN_CHECK(body != nullptr, "the reader checks a shard_map's jaxpr");
    bodies_.push_back(jaxpr(*body, true, depth + 1));
    raw->body = bodies_.back().get();
    return raw;
  }

  // A shard_map in a body: its params and body, kept apart from the numbered ones.
  const CompiledShardMap* nested(const Eqn& eqn, int depth) {
    auto sm = std::make_unique<CompiledShardMap>();
    sm->eqn = &eqn;
    sm->export_index = export_index_;
    read_params(*sm);
    const Jaxpr* body = eqn.sub("jaxpr");
    MESHRUN_CHECK(body != nullptr, "the reader checks a shard_map's jaxpr");
    bodies_.push_back(jaxpr(*body, true, depth + 1));
    sm->body = bodies_.back().get();
    nested_->push_back(std::move(sm));
    return nested_->back().get();
  }

  std::size_t export_index_;
  std::vector<std::unique_ptr<CompiledShardMap>>* shard_maps_;

 public:
  std::vector<std::unique_ptr<CompiledShardMap>>* nested_ = nullptr;

 public:
  std::vector<std::unique_ptr<CompiledJaxpr>> bodies_;
};

}  // namespace

CompileCounters& compile_counters() {
  static CompileCounters counters;
  return counters;
}

const CompiledExport& CompiledProgram::of(const Export* exp) const {
  for (const CompiledExport& ce : exports)
    if (ce.exp == exp) return ce;
  throw InternalError("internal error: an export the program was not compiled with");
}

CompiledProgram compile_program(const ProgramFile& file) {
  CompiledProgram p;
  for (std::size_t e = 0; e < file.exports.size(); ++e) {
    CompiledExport ce;
    ce.exp = &file.exports[e];
    Compiler c(e, &ce.shard_maps);
    c.nested_ = &ce.nested_shard_maps;
    ce.jaxpr = c.jaxpr(ce.exp->jaxpr, false);
    for (auto& body : c.bodies_) ce.jaxpr->subs.push_back(std::move(body));
    p.exports.push_back(std::move(ce));
  }
  return p;
}

std::unique_ptr<CompiledJaxpr> compile_jaxpr(const Jaxpr& jx) {
  Compiler c(0, nullptr);
  return c.jaxpr(jx, false);
}

}  // namespace meshrun::interp
