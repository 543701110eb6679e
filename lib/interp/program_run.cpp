// The run side of a loaded program (program_impl.hpp): a plain program's body on a device, and
// the whole run of one with equations around its shard_maps.
#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "interp/compiled.hpp"
#include "interp/eval.hpp"
#include "interp/program_impl.hpp"
#include "interp/rounded_int32.hpp"
#include "interp/scalar_ops.hpp"
#include "mesh/device.hpp"
#include "mesh/mesh.hpp"
#include "shard/partition_spec.hpp"
#include "support/errors.hpp"

namespace meshrun::interp::detail {
namespace {

// The body of one shard_map, on a device.
std::vector<Value> run_body(const std::string& file, const CompiledShardMap& sm,
                            const DimBindings& dims, Device& dev, std::vector<Value> args,
                            std::uint64_t max_while_iterations, ValueObserver* observer = nullptr) {
  // XLA:CPU runs a program with denormals flushed (FTZ and DAZ): every operation of the body --
  // additions, products, dots, comparisons, the collectives' folds -- flushes as JAX's does
  // (exp(-100) and 2e-38 * 0.5 are 0 in JAX). The case's inputs are read and the outputs written
  // outside, so a subnormal passes through a program that does not compute on it.
  const prim::FlushDenormals flush;
  PrimContext ctx;
  ctx.observer = observer;
  ctx.max_while_iterations = max_while_iterations;
  ctx.file = file;
  ctx.dims = &dims;
  ctx.mesh = &dev.mesh();
  ctx.declared_mesh = &sm.mesh;
  ctx.device = &dev;
  return eval_jaxpr(*sm.body, std::move(args), ctx, nullptr);
}

// The binding of a plain program's run, made by the first of its devices to need it and shared
// by the others (every device of a run computes the same global shapes from its blocks).
std::shared_ptr<const Binding> run_binding(const LoadedProgram& lp, const MeshShape& mesh,
                                           const std::vector<Shape>& shapes) {
  LoadedProgram::BindCache& c = *lp.bind_cache;
  const std::lock_guard<std::mutex> lock(c.mutex);
  if (c.binding == nullptr || c.mesh != mesh || c.shapes != shapes) {
    c.binding = std::make_shared<const Binding>(bind(lp.file, mesh, shapes, {}));
    c.mesh = mesh;
    c.shapes = shapes;
  }
  return c.binding;
}

// The ShardMapCall of `sm` under `dims`: its body and its ArgDefs (compile time's), and the key
// "e k name=size ..." by which the other ranks build the same call (Computation::call,
// call_of_key).
ShardMapCall make_call(const LoadedProgram& lp, const CompiledShardMap& sm,
                       std::shared_ptr<const DimBindings> dims, ValueObserver* observer = nullptr) {
  ShardMapCall call;
  call.key = std::to_string(sm.export_index) + " " + std::to_string(sm.index);
  for (const auto& [name, size] : *dims) call.key += " " + name + "=" + std::to_string(size);
  call.in = sm.in;
  call.out = sm.out;
  const std::string path = lp.file.path;
  const CompiledShardMap* m = &sm;
  const std::uint64_t iterations = lp.budget.max_while_iterations;
  call.body = [path, m, dims, iterations, observer](Device& dev, std::vector<Tensor>& blocks) {
    const Jaxpr& body = *m->body->jaxpr;
    std::vector<Value> vals;
    for (std::size_t q = 0; q < blocks.size(); ++q) {
      vals.emplace_back(body.types[body.invars[q]].dtype, std::move(blocks[q]));
    }
    std::vector<Value> res = run_body(path, *m, *dims, dev, std::move(vals), iterations, observer);
    std::vector<Tensor> out;
    for (Value& v : res) out.push_back(std::move(v.t));
    return out;
  };
  return call;
}

std::vector<Shape> file_shapes(const LoadedProgram& lp, const std::vector<TensorRef>& inputs) {
  std::vector<Shape> s;
  for (std::size_t i : lp.def_input) s.push_back(inputs.at(i).shape);
  return s;
}

// The program's output j, for messages.
std::string output_name(const LoadedProgram& lp, std::size_t j) {
  return j < lp.file.outputs.size() ? "output " + lp.file.outputs[j].name
                                    : "output " + std::to_string(j);
}

std::vector<Tensor> plain_body(const LoadedProgram& lp, Device& dev, std::vector<Tensor>& blocks,
                               ValueObserver* observer = nullptr) {
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
  const std::shared_ptr<const Binding> b = run_binding(lp, mesh, shapes);
  const CompiledShardMap& p = *lp.compiled.of(b->exp).shard_maps.at(0);
  const Jaxpr& body = *p.body->jaxpr;
  std::vector<Value> args;
  for (std::size_t k = 0; k < p.operand_input.size(); ++k) {
    const std::size_t i = lp.def_input.at(static_cast<std::size_t>(p.operand_input[k]));
    const bool again = std::count(p.operand_input.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                                  p.operand_input.end(), p.operand_input[k]) > 0;
    const DType t = body.types[body.invars[k]].dtype;
    args.emplace_back(t, again ? blocks[i] : std::move(blocks[i]));
  }
  std::vector<Value> results = run_body(lp.file.path, p, b->dims, dev, std::move(args),
                                        lp.budget.max_while_iterations, observer);
  std::vector<Tensor> out;
  for (std::size_t j = 0; j < p.result_output.size(); ++j) {
    const auto r = static_cast<std::size_t>(p.result_output[j]);
    if (const std::string why = rounded_int32_output(results[r], output_name(lp, j)); !why.empty())
      throw UnimplementedError(lp.file.path + ": " + why);
    const bool again = std::count(p.result_output.begin() + static_cast<std::ptrdiff_t>(j) + 1,
                                  p.result_output.end(), p.result_output[j]) > 0;
    out.push_back(again ? results[r].t : std::move(results[r].t));
  }
  return out;
}

ShardMapCall call_of_key(const LoadedProgram& lp, const std::string& key) {
  std::istringstream in(key);
  std::size_t e = 0, k = 0;
  auto dims = std::make_shared<DimBindings>();
  in >> e >> k;
  for (std::string item; in >> item;) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw InternalError("internal error: shard_map key " + key);
    dims->emplace(item.substr(0, eq), std::stoll(item.substr(eq + 1)));
  }
  if (!in.eof() || e >= lp.compiled.exports.size() ||
      k >= lp.compiled.exports[e].shard_maps.size()) {
    throw InternalError("internal error: shard_map key " + key);
  }
  return make_call(lp, *lp.compiled.exports[e].shard_maps[k], std::move(dims));
}

// The run of a program with equations around its shard_maps: they are evaluated on the global
// arrays, and each shard_map the evaluation reaches goes to `engine`.
std::vector<Tensor> whole_run(const LoadedProgram& lp, Engine& engine,
                              const std::vector<TensorRef>& inputs,
                              ValueObserver* observer = nullptr) {
  const Binding b = bind(lp.file, engine.shape(), file_shapes(lp, inputs), {});
  const Jaxpr& top = b.exp->jaxpr;
  std::vector<Value> args;
  for (std::size_t i = 0; i < lp.def_input.size(); ++i) {
    const TensorRef& in = inputs.at(lp.def_input[i]);
    Tensor t(in.shape);
    std::copy(in.data, in.data + t.size(), t.data.begin());
    args.emplace_back(top.types[top.invars[i]].dtype, std::move(t));
  }
  const auto dims = std::make_shared<const DimBindings>(b.dims);
  const ShardMapRunner runner = [&](const CompiledShardMap& sm, std::vector<Value>& in) {
    std::vector<Tensor> global;
    for (Value& v : in) global.push_back(std::move(v.t));
    std::vector<Tensor> outs = engine.shard_map(make_call(lp, sm, dims, observer), refs(global));
    const Jaxpr& body = *sm.body->jaxpr;
    std::vector<Value> result;
    for (std::size_t q = 0; q < outs.size(); ++q) {
      result.emplace_back(dtype_of(body, body.outvars[q]), std::move(outs[q]));
    }
    return result;
  };
  const prim::FlushDenormals flush;  // as run_body's: the equations around the shard_maps too
  PrimContext ctx;
  ctx.dims = dims.get();
  ctx.file = lp.file.path;
  ctx.max_while_iterations = lp.budget.max_while_iterations;
  ctx.observer = observer;
  std::vector<Value> out = eval_jaxpr(*lp.compiled.of(b.exp).jaxpr, std::move(args), ctx, &runner);
  std::vector<Tensor> tensors;
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (const std::string why = rounded_int32_output(out[j], output_name(lp, j)); !why.empty())
      throw InputError(lp.file.path, why);
    tensors.push_back(std::move(out[j].t));
  }
  return tensors;
}

// A loaded program's computation. A plain program (jit of one shard_map of its inputs) is that
// shard_map, its body binding the run's sizes on the devices; another evaluates its equations
// around its shard_maps (whole_run), naming each call by its export, its index and the sizes.
class FileComputation final : public Computation {
 public:
  explicit FileComputation(LoadedProgram& lp) : lp_(lp) {
    if (lp.plain) {
      plain_.key = "shard_map";
      plain_.body = [&lp](Device& dev, std::vector<Tensor>& blocks) {
        return plain_body(lp, dev, blocks);
      };
      plain_.in = lp.def.inputs;
      plain_.out = lp.def.outputs;
    } else {
      shard_maps_ = 0;
      for (const CompiledExport& ce : lp.compiled.exports)
        shard_maps_ = std::max(shard_maps_, static_cast<int>(ce.shard_maps.size()));
    }
  }

  // The equations against the run's mesh and the case's shapes, and the run's cost against the
  // budget, before anything runs; InputError naming the file. Keeps the flops the run counts.
  void check(const MeshShape& mesh, const std::vector<TensorRef>& inputs) const override {
    try {
      const Binding b = bind(lp_.file, mesh, file_shapes(lp_, inputs), {});
      lp_.flops = check_export(lp_.compiled.of(b.exp), b, lp_.budget);
      check_output_sizes(lp_.file, b);
    } catch (const InputError& e) {
      throw InputError(lp_.file.path, e.what());
    }
  }

  std::vector<Tensor> run(Engine& engine, const ProgramDef&,
                          const std::vector<TensorRef>& inputs) const override {
    if (lp_.plain) return engine.shard_map(plain_, inputs);
    return whole_run(lp_, engine, inputs);
  }

  ShardMapCall call(const ProgramDef&, const std::string& key) const override {
    return lp_.plain ? plain_ : call_of_key(lp_, key);
  }

  int shard_maps() const override { return shard_maps_; }

 private:
  LoadedProgram& lp_;
  ShardMapCall plain_;
  int shard_maps_ = 1;
};

}  // namespace

std::shared_ptr<const Computation> file_computation(LoadedProgram& lp) {
  return std::make_shared<const FileComputation>(lp);
}

}  // namespace meshrun::interp::detail

namespace meshrun::interp {

std::vector<Tensor> run_observed(const LoadedProgram& lp, const MeshShape& mesh,
                                 const std::vector<TensorRef>& inputs, ValueObserver& observer,
                                 Trace* trace) {
  Mesh m(mesh);
  InProcessEngine engine(m, trace);
  if (!lp.plain) return detail::whole_run(lp, engine, inputs, &observer);
  ShardMapCall call;
  call.key = "shard_map";
  call.body = [&lp, &observer](Device& dev, std::vector<Tensor>& blocks) {
    return detail::plain_body(lp, dev, blocks, &observer);
  };
  call.in = lp.def.inputs;
  call.out = lp.def.outputs;
  return engine.shard_map(call, inputs);
}

}  // namespace meshrun::interp
