// `meshrun run PROG.json CASE`: the program a program file holds (lib/interp), run as the
// built-in programs run -- every flag, the grading, the MPI backend.
#include <memory>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "flag_checks.hpp"
#include "interp/program.hpp"
#include "program/run.hpp"

namespace meshrun {

void add_run_file_command(CLI::App& app) {
  auto flags = std::make_shared<ProgramFlags>();
  auto exercise = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "run", "Run the JAX program a program file holds (python -m meshrun_export) on a case");
  command->add_option("PROG", flags->program_path, "Program file (JSON, docs/program-format.md)")
      ->required();
  command->add_option("CASE", flags->case_path, "Case file (JSON), or - for stdin")->required();
  command->add_option("--exercise", *exercise,
                      "Grade it as this exercise (dp-step, tp-mlp, mlp-train): overrides the "
                      "file's \"exercise\"");
  add_program_flags(*command, flags);
  command->callback([flags, exercise] {
    const auto wait = mesh_options(flags->run).timeout;
    // Kept until the process ends: the run's threads and the trace refer to it.
    static std::unique_ptr<interp::LoadedProgram> loaded;
    loaded = interp::load_program(flags->program_path, flags->run.max_input_bytes, wait, *exercise);
    run_program(loaded->def, *flags);
  });
}

}  // namespace meshrun
