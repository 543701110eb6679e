// meshrun's entry point: the CLI11 app (one subcommand per program, `check`, `bench`) and the one
// exception ladder that turns every outcome into an exit code (see exit_codes.hpp).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "support/errors.hpp"

namespace meshrun {

void report_error(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "meshrun: " << line << '\n' << std::flush;
}

namespace {

// CLI11 reports `meshrun frob` as "A subcommand is required"; name the word instead.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> rest = app.remaining();
  if (app.get_subcommands().empty() && !rest.empty() && !rest.front().starts_with("-")) {
    return "unknown subcommand '" + rest.front() + "' (see meshrun --help)";
  }
  return e.what();
}

}  // namespace

int run_app(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return kExitOk;
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own outcome, already reported
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: printed on stdout
    report_error(parse_error_message(app, e));
    return kExitUsage;
  } catch (const InputError& e) {
    report_error(e.what());
    return kExitUsage;
  } catch (const CollectiveError& e) {
    report_error(e.what());
    return kExitMesh;
  } catch (const DeviceError& e) {
    report_error(e.what());
    return kExitMesh;
  } catch (const InternalError& e) {  // its message already says "internal error"
    report_error(e.what());
    return kExitInternal;
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  } catch (...) {
    report_error("internal error: unknown exception");
    return kExitInternal;
  }
}

}  // namespace meshrun

int main(int argc, char** argv) {
  using namespace meshrun;
  CLI::App app{"meshrun: runs JAX shard_map-style SPMD programs, one thread per device",
               "meshrun"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshrun 0.1.0");
  try {
    for (const ProgramDef* program : all_programs()) add_program_command(app, *program);
    add_check_command(app);
    // ---- `meshrun bench`: registered here, implemented in app/cmd_bench.cpp ----
    add_bench_command(app);
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
  return run_app(app, argc, argv);
}
