#include "programs/program.hpp"

namespace meshrun {

const ProgramDef& dp_step_program();
const ProgramDef& tp_mlp_program();

const std::vector<const ProgramDef*>& all_programs() {
  static const std::vector<const ProgramDef*> programs{&dp_step_program(), &tp_mlp_program()};
  return programs;
}

const ProgramDef* find_program(const std::string& name) {
  for (const ProgramDef* p : all_programs())
    if (p->name == name) return p;
  return nullptr;
}

}  // namespace meshrun
