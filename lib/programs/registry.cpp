#include "programs/program.hpp"

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "support/errors.hpp"

namespace meshrun {

const ProgramDef& dp_step_program();
const ProgramDef& tp_mlp_program();
const ProgramDef& mlp_train_program();

void check_learning_rate(const TensorRef& lr) {
  MESHRUN_CHECK(lr.size() == 1 && lr.data != nullptr, "input.lr: not a scalar");
  const float v = lr.data[0];
  if (!std::isfinite(v) || !(v > 0.0f)) throw InputError("input.lr", "must be a finite number > 0");
}

InputError replication_input_error(const ProgramDef& program, const ReplicationError& e) {
  return InputError(program.summary, std::string(e.what()) +
                                         ": a value that differs per device leaves the shard_map "
                                         "with a spec that replicates it (psum or pmean it first, "
                                         "or split it in out_specs)");
}

void Computation::check(const MeshShape&, const std::vector<TensorRef>&) const {}

namespace {
class OneShardMap final : public Computation {
 public:
  explicit OneShardMap(Body body) : body_(std::move(body)) {}
  std::vector<Tensor> run(Engine& engine, const ProgramDef& program,
                          const std::vector<TensorRef>& inputs) const override {
    return engine.shard_map(call(program, "shard_map"), inputs);
  }
  ShardMapCall call(const ProgramDef& program, const std::string&) const override {
    return {.key = "shard_map", .body = body_, .in = program.inputs, .out = program.outputs};
  }
  const Body& body() const { return body_; }

 private:
  Body body_;
};
}  // namespace

std::shared_ptr<const Computation> one_shard_map(Body body) {
  return std::make_shared<const OneShardMap>(std::move(body));
}

const Body& body_of(const ProgramDef& program) {
  const auto* one = dynamic_cast<const OneShardMap*>(program.computation.get());
  MESHRUN_CHECK(one != nullptr, program.name + " is not one shard_map of its inputs");
  return one->body();
}

std::vector<Tensor> run_program(Engine& engine, const ProgramDef& program,
                                const std::vector<TensorRef>& inputs) {
  try {
    return program.computation->run(engine, program, inputs);
  } catch (const ReplicationError& e) {
    if (!program.user_program) throw;
    throw replication_input_error(program, e);
  }
}

std::vector<Tensor> shard_map(Mesh& mesh, const ProgramDef& program,
                              const std::vector<TensorRef>& inputs, Trace* trace) {
  if (trace) {
    trace->program = program.name;
    trace->calls = 0;  // every shard_map call of this run is recorded
  }
  program.computation->check(mesh.shape(), inputs);
  InProcessEngine engine(mesh, trace);
  return run_program(engine, program, inputs);
}

std::vector<Tensor> shard_map(Mesh& mesh, const ProgramDef& program,
                              const std::vector<Tensor>& inputs, Trace* trace) {
  return shard_map(mesh, program, refs(inputs), trace);
}

MeshShape run_mesh(const ProgramDef& program, const MeshShape& flag_mesh,
                   const MeshShape& case_mesh, int flag_devices) {
  if (flag_devices > 0 && program.axis.empty()) {
    throw InputError("--devices", program.name + " runs on a mesh of several axes " +
                                      mesh_str(program.mesh) + "; give their sizes with --mesh");
  }
  if (flag_devices > 0 && !flag_mesh.empty()) {
    throw InputError("--devices", "give either --devices or --mesh, not both");
  }
  if (!flag_mesh.empty()) return flag_mesh;
  if (flag_devices > 0) return {{program.axis, flag_devices}};
  if (!case_mesh.empty()) return case_mesh;
  return program.mesh;
}

namespace {
// Each program's name beside the function that builds its definition (once, on first use): a
// process builds only the program it runs (issue 9: start-up).
struct Entry {
  std::string_view name;
  const ProgramDef& (*def)();
};
constexpr Entry kPrograms[] = {
    {"dp-step", &dp_step_program}, {"tp-mlp", &tp_mlp_program}, {"mlp-train", &mlp_train_program}};

const ProgramDef& built(const Entry& e) {
  const ProgramDef& p = e.def();
  MESHRUN_CHECK(p.name == e.name, "program table: " + std::string(e.name) + " builds " + p.name);
  return p;
}
}  // namespace

const std::vector<const ProgramDef*>& all_programs() {
  static const std::vector<const ProgramDef*> programs = [] {
    std::vector<const ProgramDef*> all;
    for (const Entry& e : kPrograms) all.push_back(&built(e));
    return all;
  }();
  return programs;
}

const ProgramDef* find_program(const std::string& name) {
  for (const Entry& e : kPrograms)
    if (e.name == name) return &built(e);
  return nullptr;
}

}  // namespace meshrun
