// `meshrun run PROG.json CASE`: the program a program file holds (lib/interp), run as the
// built-in programs run -- every flag, the grading, the MPI backend.
#include <limits>
#include <memory>

#include "cli.hpp"

#include "commands.hpp"
#include "flag_checks.hpp"
#include "grade/load.hpp"
#include "interp/program.hpp"
#include "program/run.hpp"

namespace meshrun {

void add_cost_flags(CLI::App& command, interp::CostBudget& budget, CLI::Option* needs) {
  constexpr long kMax = std::numeric_limits<long>::max();
  CLI::Option* flops =
      command
          .add_option("--max-flops", budget.flops,
                      "Refuse a program file whose equations add up to more floating-point "
                      "operations than this, on every device, before it runs")
          ->transform(decimal_integer(1, kMax))
          ->capture_default_str();
  CLI::Option* bytes = command
                           .add_option("--max-bytes-moved", budget.bytes,
                                       "Refuse a program file whose results and collectives add "
                                       "up to more bytes than this, before it runs")
                           ->transform(decimal_integer(1, kMax))
                           ->capture_default_str();
  CLI::Option* iterations =
      command
          .add_option("--max-while-iterations", budget.max_while_iterations,
                      "Stop a program file's while loop (lax.while_loop, fori_loop with traced "
                      "bounds) that is still running after this many iterations (exit 2)")
          ->transform(decimal_integer(1, kMax))
          ->capture_default_str();
  if (needs != nullptr) {
    flops->needs(needs);
    bytes->needs(needs);
    iterations->needs(needs);
  }
}

void add_run_file_command(CLI::App& app) {
  auto flags = std::make_shared<ProgramFlags>();
  auto exercise = std::make_shared<std::string>();
  auto budget = std::make_shared<interp::CostBudget>();
  CLI::App* command = app.add_subcommand(
      "run", "Run the JAX program a program file holds (python -m meshrun_export) on a case");
  command->add_option("PROG", flags->program_path, "Program file (JSON, docs/program-format.md)")
      ->required()
      ->check(names("a program file", "FILE"));
  command->add_option("CASE", flags->case_path, "Case file (JSON), or - for stdin")
      ->required()
      ->check(names("a case file (or - for stdin)", "FILE"));
  command
      ->add_option(
          "--exercise", *exercise,
          "Grade it as this exercise (a shipped one's name, or a folder holding exercise.json): "
          "overrides the file's \"exercise\"")
      ->check(names("an exercise (a shipped one's name, or a folder holding exercise.json)",
                    "EXERCISE"));
  add_program_flags(*command, flags);
  add_cost_flags(*command, *budget);
  command->callback([flags, exercise, budget] {
    const auto wait = mesh_options(flags->run).timeout;
    // Kept until the process ends: the run's threads and the trace refer to it.
    static std::unique_ptr<interp::LoadedProgram> loaded;
    loaded = interp::load_program(flags->program_path, flags->run.max_input_bytes, wait, *exercise);
    loaded->budget = *budget;
    run_program(loaded->def, *flags);
  });
}

}  // namespace meshrun
