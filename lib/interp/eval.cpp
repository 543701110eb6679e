// The evaluator (eval.hpp): a jaxpr's equations in order on values.
#include "interp/eval.hpp"

#include <algorithm>
#include <utility>

#include "interp/compiled.hpp"
#include "interp/contract.hpp"
#include "interp/fusion.hpp"
#include "interp/int32_bits.hpp"
#include "interp/prim_util.hpp"
#include "interp/rounded_int32.hpp"
#include "io/json_text.hpp"
#include "mesh/device.hpp"
#include "shard/partition_spec.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

// Issue #49: the results of a primitive that computes bf16 and f16 in float32 (and i8 ... u16
// exactly), brought into their dtype, once per equation as XLA:CPU's convert after each op.
void fit_narrow(const Eqn& eqn, std::vector<Value>& outs) {
  bool any = false;
  for (const Value& v : outs) any = any || is_narrow(v.dtype);
  if (!any) return;
  const NarrowSupport* s = narrow_dtype_support(eqn.primitive);
  if (s == nullptr || !s->fit || eqn.narrow_use == Eqn::NarrowUse::kUnrounded) return;
  for (Value& v : outs) {
    if (!is_narrow(v.dtype)) continue;
    float (*fit)(float) = dtype_info(v.dtype).fit;
    for (float& x : v.t.data) x = fit(x);
  }
}

Value literal(const Atom& a) {
  if (a.dtype == DType::kU32)  // its bits (ir.hpp)
    return Value(a.dtype, Tensor::scalar(u32_to_slot(static_cast<std::uint32_t>(a.literal))));
  return Value(a.dtype, Tensor::scalar(static_cast<float>(a.literal)));
}

// What the values made impossible (an integer beyond what meshrun holds exactly, an index out of
// range, a while beyond its iteration limit): the program's input cannot run here, exit 2, named
// in the file -- on a device as the engine's own limit (the Mesh keeps it), else as an input
// error.
[[noreturn]] void rethrow_at(const PrimitiveError& err, const Eqn& eqn, const PrimContext& ctx) {
  const std::string what =
      std::string(ctx.file) + (ctx.file.empty() ? "" : ": ") + eqn.place() + ": " + err.what();
  if (ctx.device != nullptr) throw UnimplementedError(what);
  throw InputError("", what);
}

// A jaxpr's result held as bits (int32_bits.hpp) leaves it as int32's values -- but a call's,
// whose caller takes the bits: a loop, a branch, a shard_map and the program read values.
void result_as_values(const Jaxpr& jx, const Atom& a, Value& v, const PrimContext& ctx) {
  if (!v.bits32) return;
  try {
    v = int32_as_rounded(v, "its result");
  } catch (const PrimitiveError& err) {
    for (const Eqn& e : jx.eqns)
      for (const int o : e.out)
        if (o == a.var) rethrow_at(err, e, ctx);
    throw UnimplementedError(std::string(ctx.file) + ": " + err.what());
  }
}

// A shard_map inside a shard_map body (one nested in a partial shard_map, check_export has
// checked it is manual over axes the enclosing ones are not), on this device: its operands cut
// to this device's blocks along its in_specs (local, no communication), its body run here, and
// each result split along its out_specs gathered back over those axes (a tiled all_gather per
// split dimension, the collective XLA's partitioner inserts at the nested shard_map's exit).
std::vector<Value> run_nested(const CompiledShardMap& sm, std::vector<Value> in, PrimContext& ctx) {
  Device& dev = *ctx.device;
  const MeshShape& mesh = dev.mesh();
  std::vector<Value> args;
  args.reserve(in.size());
  for (std::size_t i = 0; i < in.size() && i < sm.in_specs.size(); ++i)
    args.emplace_back(in[i].dtype, block_of(in[i].t, sm.in_specs[i], mesh, dev.index()));
  const MeshShape* outer_declared = ctx.declared_mesh;
  ctx.declared_mesh = &sm.mesh;
  std::vector<Value> outs;
  try {
    outs = eval_jaxpr(*sm.body, std::move(args), ctx, nullptr);
  } catch (...) {
    ctx.declared_mesh = outer_declared;
    throw;
  }
  ctx.declared_mesh = outer_declared;
  const Primitive* gather = find_primitive("all_gather");
  MESHRUN_CHECK(gather != nullptr, "all_gather is registered");
  for (std::size_t i = 0; i < outs.size() && i < sm.out_specs.size(); ++i) {
    const auto& dims = sm.out_specs[i].dims();
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d].empty()) continue;
      Eqn e;
      e.primitive = "all_gather";
      e.params = nlohmann::json{{"axes", dims[d]}, {"all_gather_dimension", d}, {"tiled", true}};
      e.where = sm.eqn->where;
      e.source = sm.eqn->source;
      Value* op = &outs[i];
      const bool owned = true;
      std::vector<Value> g =
          gather->eval(e, std::span<Value* const>(&op, 1), std::span<const bool>(&owned, 1), ctx);
      outs[i] = std::move(g.at(0));
    }
  }
  return outs;
}

}  // namespace

std::vector<Value> eval_jaxpr(const CompiledJaxpr& cj, std::vector<Value> args, PrimContext& ctx,
                              const ShardMapRunner* shard_map) {
  const Jaxpr& jx = *cj.run;
  std::vector<Value> env(jx.types.size());
  for (std::size_t i = 0; i < args.size() && i < jx.invars.size(); ++i) {
    env[jx.invars[i]] = std::move(args[i]);
  }
  for (std::size_t i = 0; i < cj.jaxpr->constvars.size(); ++i) {
    const Const& c = cj.jaxpr->consts[i];  // (the file's: `run` holds no constants)
    env[cj.jaxpr->constvars[i]] = Value(c.dtype, Tensor(c.shape, c.data));
  }
  const int device = ctx.device != nullptr ? ctx.device->index() : -1;
  // Whether this jaxpr may return an int32 held as bits (int32_bits.hpp): a call's, whose caller
  // takes them as its own values; not a loop's, a branch's, a shard_map's or the program's.
  const bool returns_bits = std::exchange(ctx.bits_may_leave, false);
  if (ctx.observer != nullptr) {
    for (std::size_t i = 0; i < args.size() && i < jx.invars.size(); ++i)
      ctx.observer->seen(device, jx, nullptr, i, env[jx.invars[i]]);
  }
  std::vector<Value> literals;
  std::vector<Value> as_values;  // int32s held as bits, as values for what takes no bits
  std::vector<Value*> ops;
  const ContractionPlan& plan = cj.contractions;
  const FusionPlan& fusion = cj.fusion;
  std::size_t fused_to = 0;     // eqns before this ran in a fused group
  std::size_t combined_to = 0;  // eqns before this ran in an earlier combined psum
  for (std::size_t e = 0; e < cj.steps.size(); ++e) {
    if (e < fused_to) continue;
    // Chains of elementwise equations over large arrays run as one chunked loop (fusion.hpp).
    // (Not on an observed run: each equation's result is seen.)
    if (const int g = fusion.group_at[e];
        g >= 0 && ctx.observer == nullptr &&
        run_fusion_group(fusion.groups[static_cast<std::size_t>(g)], env)) {
      fused_to = fusion.groups[static_cast<std::size_t>(g)].end;
      for (std::size_t k = e; k < fused_to; ++k)
        for (int v : jx.eqns[k].last_use) env[v] = Value();
      continue;
    }
    const Step& step = cj.steps[e];
    if (e < combined_to || step.kind == Step::Kind::kAbsorbed) continue;  // ran already
    const Eqn* run = step.eqn;
    const bool* owned = step.owned.get();
    if (ctx.device != nullptr && step.psums_end > e + 1) {
      // XLA's all-reduce combiner: consecutive psums over the same axes as one psum (its small
      // operands in one collective; the same sums, element by element, in the same rank order:
      // the same bits).
      run = step.combined.get();
      owned = step.combined_owned.get();
      combined_to = step.psums_end;
    }
    const Eqn& eqn = *run;
    literals.clear();
    literals.reserve(eqn.in.size());
    ops.clear();
    for (const Atom& a : eqn.in) {
      if (a.is_literal()) {
        literals.push_back(literal(a));
        ops.push_back(&literals.back());
      } else {
        ops.push_back(&env[a.var]);
      }
    }
    std::vector<Value> outs;
    if (const Contraction& c = plan.at[e]; c.mul >= 0) {
      const Eqn& mul = jx.eqns[static_cast<std::size_t>(c.mul)];
      const auto value = [&](const Atom& a) { return a.is_literal() ? literal(a) : Value(); };
      const Value lb = value(mul.in[0]), lc = value(mul.in[1]);
      const Value& b = mul.in[0].is_literal() ? lb : env[mul.in[0].var];
      const Value& cc = mul.in[1].is_literal() ? lc : env[mul.in[1].var];
      if (ctx.observer != nullptr) {
        // The product the FMA absorbs, computed on its own for the observer (not used on).
        if (const Primitive* p = find_primitive(mul.primitive); p != nullptr && p->eval) {
          Value* mops[2] = {const_cast<Value*>(&b), const_cast<Value*>(&cc)};
          const bool mown[2] = {false, false};
          try {
            const std::vector<Value> prod =
                p->eval(mul, std::span<Value* const>(mops, 2), std::span<const bool>(mown, 2), ctx);
            for (std::size_t k = 0; k < prod.size(); ++k)
              ctx.observer->seen(device, jx, &mul, k, prod[k]);
          } catch (const PrimitiveError&) {
          }
        }
      }
      const auto a = static_cast<std::size_t>(c.addend);
      outs.push_back(fused_multiply_add(
          ops[a],
          owned[a] && (eqn.in[a].is_literal() ||
                       (eqn.in[a].var != mul.in[0].var && eqn.in[a].var != mul.in[1].var)),
          b, cc, c.negate_product, c.negate_addend));
      for (int v : mul.last_use) env[v] = Value();
      // The add's results, as any primitive's, before they are seen or used (grading moves them
      // to see what follows from the add: the work outside the shard_maps, outside_work.cpp).
      if (ctx.observer != nullptr) ctx.observer->pin(device, eqn, outs);
    } else if (step.kind == Step::Kind::kPrimitive) {
      try {
        if (wants_int32_bits(eqn, ops)) {
          outs = eval_on_int32_bits(eqn, ops, ctx);
        } else {
          if (holds_int32_bits(ops)) {  // what does not take the bits takes int32's values
            as_values.clear();
            as_values.reserve(ops.size());
            for (Value*& op : ops) {
              if (!op->bits32) continue;
              as_values.push_back(int32_as_rounded(*op, eqn.primitive));
              op = &as_values.back();
            }
          }
          check_rounded_int32(eqn, ops);
          outs = step.prim->eval(eqn, ops, std::span<const bool>(owned, ops.size()), ctx);
        }
        fit_narrow(eqn, outs);
        if (ctx.observer != nullptr) ctx.observer->pin(device, eqn, outs);
      } catch (const PrimitiveError& err) {
        rethrow_at(err, eqn, ctx);
      }
    } else {
      std::vector<Value> in;
      in.reserve(ops.size());
      for (std::size_t i = 0; i < ops.size(); ++i)
        in.push_back(owned[i] ? std::move(*ops[i]) : *ops[i]);
      if (step.kind != Step::Kind::kCall) {  // a loop, a branch, a shard_map: int32's values
        try {
          for (Value& v : in) v = int32_as_rounded(v, "an operand");
        } catch (const PrimitiveError& err) {
          rethrow_at(err, eqn, ctx);
        }
      }
      if (step.kind == Step::Kind::kCall) {
        // An int32 literal beyond 2^24 handed to a call (randint's clip to [-2^31, 2^31 - 1] in
        // a jit) enters it as its exact bits (int32_bits.hpp).
        for (std::size_t i = 0; i < in.size() && i < eqn.in.size(); ++i)
          if (eqn.in[i].is_literal()) in[i] = int32_literal(eqn.in[i], std::move(in[i]));
        ctx.bits_may_leave = true;  // an inlined call's results are its caller's values
        outs = eval_jaxpr(*step.callee, std::move(in), ctx, shard_map);
      } else if (step.kind == Step::Kind::kControl) {
        const BodyRunner body = [&](const CompiledJaxpr& sub, std::vector<Value> sub_args) {
          return eval_jaxpr(sub, std::move(sub_args), ctx, shard_map);
        };
        try {
          outs = control_eval(*step.control, eqn, std::move(in), ctx, body);
        } catch (const PrimitiveError& err) {
          rethrow_at(err, eqn, ctx);  // a while beyond its limit, a branch index out of range
        }
      } else {
        if (step.shard_map == nullptr)
          throw PrimitiveError(eqn.place() + ": a shard_map inside a shard_map body");
        if (shard_map != nullptr) {
          outs = (*shard_map)(*step.shard_map, in);
        } else if (ctx.device != nullptr) {
          try {
            outs = run_nested(*step.shard_map, std::move(in), ctx);
          } catch (const PrimitiveError& err) {
            rethrow_at(err, eqn, ctx);
          }
        } else {
          throw PrimitiveError(eqn.place() + ": a shard_map inside a shard_map body");
        }
      }
    }
    if (ctx.observer != nullptr) {
      for (std::size_t k = 0; k < outs.size() && k < eqn.out.size(); ++k)
        ctx.observer->seen(device, jx, &eqn, k, outs[k]);
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
    if (!returns_bits) result_as_values(jx, a, out.back(), ctx);
  }
  return out;
}

std::vector<Value> eval_jaxpr(const Jaxpr& jx, std::vector<Value> args, PrimContext& ctx) {
  const std::unique_ptr<CompiledJaxpr> cj = compile_jaxpr(jx);
  return eval_jaxpr(*cj, std::move(args), ctx, nullptr);
}

}  // namespace meshrun::interp
