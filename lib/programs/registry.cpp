#include "programs/program.hpp"

#include <cmath>

#include "support/errors.hpp"

namespace meshrun {

const ProgramDef& dp_step_program();
const ProgramDef& tp_mlp_program();
const ProgramDef& mlp_train_program();

void check_learning_rate(const Tensor& lr) {
  const float v = lr.data.at(0);
  if (!std::isfinite(v) || !(v > 0.0f)) throw InputError("input.lr", "must be a finite number > 0");
}

std::vector<Tensor> shard_map(Mesh& mesh, const ProgramDef& program,
                              const std::vector<Tensor>& inputs, Trace* trace) {
  if (trace) trace->program = program.name;
  return shard_map(mesh, program.body, program.inputs, program.outputs, inputs, trace);
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

const std::vector<const ProgramDef*>& all_programs() {
  static const std::vector<const ProgramDef*> programs{&dp_step_program(), &tp_mlp_program(),
                                                       &mlp_train_program()};
  return programs;
}

const ProgramDef* find_program(const std::string& name) {
  for (const ProgramDef* p : all_programs())
    if (p->name == name) return p;
  return nullptr;
}

}  // namespace meshrun
