// The one exception ladder that turns every outcome into an exit code (exit_codes.hpp), and the
// one-line error report.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include <chrono>
#include <thread>

#include "cli.hpp"

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/output.hpp"
#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun {

namespace {

// CLI11 reports `meshrun frob` as "A subcommand is required"; name the word instead.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<std::string> rest = app.remaining();
  if (app.get_subcommands().empty() && !rest.empty() && !rest.front().starts_with("-")) {
    return "unknown subcommand '" + rest.front() + "' (see meshrun --help)";
  }
  // An empty word (`--trace ''`, `--trace "$FILE"` with FILE unset: --trace takes its file only
  // as --trace=FILE) would be printed as nothing at all: show it as ''.
  const std::vector<std::string> extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr
                                              ? app.remaining(true)
                                              : std::vector<std::string>{};
  if (std::find(extras.begin(), extras.end(), std::string()) != extras.end()) {
    std::string words;
    for (const std::string& w : extras)
      words += (words.empty() ? "" : " ") + (w.empty() ? "''" : w);
    return std::string(extras.size() == 1 ? "The following argument was"
                                          : "The following arguments were") +
           " not expected: " + words + " ('' is an empty argument)";
  }
  return e.what();
}

// Under mpirun every rank parses the same command line, before MPI starts: a usage error (or
// --help) is printed by rank 0 alone (usage_error says how the other ranks behave).
// OpenMPI tells each process its rank in OMPI_COMM_WORLD_RANK.
}  // namespace

bool quiet_rank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank != nullptr && std::string_view(rank) != "0";
}

int run_guarded(const CLI::App* app, const std::function<void()>& work) {
  try {
    work();
    return kExitOk;
  } catch (const ExitWith& e) {
    return e.code();  // a command's own outcome, already reported
  } catch (const CLI::ParseError& e) {
    if (app == nullptr) {  // only CLI11's parse throws these, and it has an app
      report_error(std::string("internal error: ") + e.what());
      return kExitInternal;
    }
    if (e.get_exit_code() == 0) {  // --help, --version: printed on stdout, checked like a result
      if (quiet_rank()) return kExitOk;
      // CLI11's App::exit takes the standard error stream (it writes nothing there for these),
      // which no translation unit builds before main (cli.hpp): built here, the one place meshrun
      // hands it out.
      static const std::ios_base::Init standard_streams;
      std::ostringstream text;
      app->exit(e, text, std::cerr);
      try {
        write_stdout(text.str());
      } catch (const OutputError& out) {
        report_error(out.what());
        return kExitOutput;
      }
      return kExitOk;
    }
    return usage_error(parse_error_message(*app, e));
  } catch (const Error& e) {  // meshrun's own: the message says what happened
    report_error(e.what());
    return exit_code_of(e);
  } catch (const std::bad_alloc&) {  // anywhere: one line, not an abort
    report_error("out of memory");
    return kExitInternal;
  } catch (const std::exception& e) {
    report_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  } catch (...) {
    report_error("internal error: unknown exception");
    return kExitInternal;
  }
}

int usage_error(const std::string& message) {
  // Under mpirun every rank finds the same usage error before MPI starts. Rank 0 says it and
  // exits 2, which is mpirun's exit code, and mpirun then ends the job at once. Another rank
  // first gives it that moment (the line would otherwise come once per rank, or be cut off by
  // the kill); one still alive after it is one whose command differs from rank 0's (an MPMD
  // launch, `-np 1 meshrun ... : -np 1 meshrun ... --bogus`), where rank 0 waits in MPI_Init for
  // it: it says its error itself and exits 2, so the job ends instead of waiting forever.
  if (quiet_rank()) {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    report_error(std::string("rank ") + rank + ": " + message);
  } else {
    report_error(message);
  }
  return kExitUsage;
}

int run_app(CLI::App& app, int argc, char** argv) {
  return run_guarded(&app, [&] { app.parse(argc, argv); });
}

int finish(int code) {
  try {
    close_stdout();
  } catch (const OutputError& e) {
    if (code == kExitOk || code == kExitDiffers) {
      report_error(e.what());
      return kExitOutput;
    }
  }
  return code;
}

}  // namespace meshrun
