// meshrun's exit codes and the one mapping from its typed errors (errors.hpp) to them, beside the
// errors themselves so that a layer which ends a command (io/mpi's job, app/) maps them the same
// way. The table, with what each code means to a script, is app/exit_codes.hpp's.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace meshrun {

enum ExitCode : int {
  kExitOk = 0,
  kExitDiffers = 1,
  kExitUsage = 2,
  kExitMesh = 3,
  kExitInternal = 4,
  kExitNoCases = 5,
  kExitOutput = 6,
  kExitNonFinite = 7,
};

class Error;
// The exit code of one of meshrun's typed errors.
int exit_code_of(const Error& e);

// Prints "meshrun: <message>" as one line on stderr (newlines inside become spaces, any other
// control byte \xHH), in one write.
void report_error(const std::string& message);

// Writes `text` to stderr (file descriptor 2) whole: short writes and EINTR are retried, and a
// full non-blocking stderr is waited for, up to a second. A write that fails otherwise is
// dropped, as std::cerr drops it: stderr is where failures are said. Returns whether every byte
// was written (errno says why not). meshrun does not use std::cerr, whose stream objects a run
// never builds (app/cli.hpp says why).
bool write_stderr(std::string_view text);

// A report the user asked for on stderr (--trace, --show-sharding, --timings), written as
// write_stderr writes it; one that could not be written whole, or that would go to a stderr the
// process was started with closed (see stderr_was_closed), is an OutputError naming `flag` (exit
// 6), not a success with the report lost. Its message goes to the same stderr, so the exit status
// may be all that says it.
void write_stderr_report(std::string_view text, const char* flag);

// The process was started with stderr closed (`2>&-`) and meshrun put /dev/null there, so that no
// file it opens takes descriptor 2 (app/process.cpp): a report written there would vanish.
void stderr_was_closed();

// An outcome already reported (or one a rank leaves to rank 0 to say): the command ends with
// `code` and nothing more is said. The app's exception ladder (app/exit.cpp) maps it.
class ExitWith : public std::exception {
 public:
  explicit ExitWith(int code) : code_(code) {}
  int code() const noexcept { return code_; }
  const char* what() const noexcept override {
    return "meshrun: exit with an outcome already said";
  }

 private:
  int code_;
};

}  // namespace meshrun
