// meshrun's exit codes, in one place:
//   0  ok
//   1  the output differs from the case's `expected` (or `check` found a FAIL/ERROR case)
//   2  usage or input error: CLI11's own parse errors (codes 100+) are folded into 2,
//      InputError (bad case file, bad flag value, missing path; UnimplementedError, a collective
//      the engine does not implement); `--help` and `--version` exit 0
//   3  mesh failure: DeviceError, CollectiveError (a device threw, a collective mismatched or
//      timed out)
//   4  internal error: InternalError, any other std::exception, anything else; running out of
//      memory ("meshrun: out of memory"; reading a program file it is exit 2 naming the file)
//   5  `check` found no case to grade under a PATH (NoCasesError; pytest's "no tests collected")
//   6  output not written: a write or close of stdout or of a file meshrun writes (--output,
//      --trace, --profile, --save-npy, reports) failed (OutputError), or `check --update` could
//      not bless a case it had to; takes precedence over 0, 1 and 2, which would claim a result
//      the reader never got
//   7  the result holds NaN or an infinity (NonFiniteError): nothing on stdout, the first such
//      element named on stderr
// The codes and the mapping from the typed errors live beside the errors, in
// lib/support/exit_code.hpp, for the layers that end a command (io/mpi's job) to share.
// Convention: every error is ONE line on stderr, prefixed "meshrun: "; stdout holds results only.
#pragma once

#include <functional>
#include <string>

#include "support/exit_code.hpp"  // the codes, exit_code_of, report_error, ExitWith

namespace CLI {
class App;
}

namespace meshrun {

// The one exception ladder: runs `work` and maps whatever escapes to an exit code, reporting it
// with report_error. `app` is the CLI11 app whose parse `work` is (its usage errors, --help and
// --version), or nullptr for a run that skipped CLI11. A callback that has already reported its
// outcome and wants a specific exit code throws ExitWith(code).
int run_guarded(const CLI::App* app, const std::function<void()>& work);
// A usage error found before the run: reported (under mpirun by rank 0, or by a rank whose
// command differs from rank 0's, see exit.cpp), exit 2.
int usage_error(const std::string& message);
// run_guarded of parsing the command line, which runs the chosen subcommand's callback.
int run_app(CLI::App& app, int argc, char** argv);
// The outcome once stdout is closed: a deferred write error (some file systems report ENOSPC only
// at close) turns 0 or 1 into exit 6, since the reader never got the result.
int finish(int code);

}  // namespace meshrun
