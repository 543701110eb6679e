// meshrun's entry point: the CLI11 app (one subcommand per program, `check`, `bench`), run through
// the one exception ladder (exit.cpp) that turns every outcome into an exit code (exit_codes.hpp).
#include <cerrno>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "cli.hpp"

#include "commands.hpp"
#include "exit_codes.hpp"
#include "process.hpp"
#include "support/end_with_parent.hpp"
#include "support/errors.hpp"

namespace {

// `--NAME=` with nothing after the `=` (`--json=$REPORT` with REPORT unset in a script): CLI11
// would take the next word as the value -- the case file, which the report then replaced -- and
// reads `--trace=` as a bare `--trace`. Every such word is refused before CLI11 sees it: the
// option named, "" when there is none. Words after `--` are not options.
std::string empty_option_value(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") return "";
    if (word.size() > 3 && word.starts_with("--") && word.ends_with('=') &&
        word.find('=') == word.size() - 1)
      return std::string(word.substr(0, word.size() - 1));
  }
  return "";
}

bool plain_case_word(int argc, char** argv) {
  if (argc != 3) return false;
  const std::string_view word = argv[2];
  return !word.empty() && !word.starts_with('-') && word != "++";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace meshrun;
  // Issue 51: a rank ends with its orted (or mpirun), MPI or not (kept across the exec of
  // meshrun-mpi, and asked again there).
  end_with_parent_under_mpirun();
  record_command_line(argc, argv);  // what every rank of an MPI job must agree on
  tune_process();
#ifndef MESHRUN_HAVE_MPI
  exec_mpi_build_if_asked(argc, argv);
#endif
  if (!reserve_standard_fds()) {
    report_error("stdout: " + std::string(std::strerror(EBADF)));
    return kExitOutput;
  }
  const ProgramDef* asked = argc >= 2 ? find_program(argv[1]) : nullptr;
  if (asked != nullptr && plain_case_word(argc, argv)) {
    return finish(run_guarded(nullptr, [&] { run_plain_program(*asked, argv[2]); }));
  }
  if (const std::string option = empty_option_value(argc, argv); !option.empty()) {
    return usage_error(option + ": '" + option + "=' gives no value" +
                       (option == "--trace" ? " (--trace=FILE, or --trace alone for stderr)" : ""));
  }
  CLI::App app{"meshrun: runs JAX shard_map-style SPMD programs, one thread per device", "meshrun"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshrun 0.1.0");
  try {
    // A program run registers its own subcommand only: CLI11 builds every option's parser and
    // help text up front, and that was half of a small run's instructions (issue 9 item 6). The
    // words after a program name are parsed as they would be with every command registered.
    if (asked != nullptr) {
      add_program_command(app, *asked);
    } else if (argc >= 2 && std::string_view(argv[1]) == "run") {
      add_run_file_command(app);  // the same for a program file's run
    } else {
      for (const ProgramDef* program : all_programs()) add_program_command(app, *program);
      add_run_file_command(app);
      add_check_command(app);
      // ---- `meshrun bench`: registered here, implemented in app/bench/ ----
      add_bench_command(app);
    }
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
  return finish(run_app(app, argc, argv));
}
