// A program run, between the command line and the mesh: the flags (ProgramFlags), what is opened
// and read before the run (prepare), the local run, and what happens after it (finish_run: the
// --inject check, the trace, the grading, the result). command.cpp parses the flags; run.cpp runs
// in one process; mpi_run.cpp over the ranks of mpirun.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "io/case_reader.hpp"
#include "io/npy.hpp"
#include "io/output.hpp"
#include "mesh/injection.hpp"
#include "program/profile.hpp"
#include "support/exit_code.hpp"
#include "trace/structure.hpp"
#include "trace/trace.hpp"

namespace meshrun {

struct ProgramFlags {
  std::string case_path;
  int precision = 6;
  bool exact = false;
  std::string trace;  // "" off, "-" stderr, else a file
  bool show_sharding = false;
  std::string save_npy;          // "" off, else a directory
  std::string backend = "auto";  // auto, inprocess, mpi
  std::string profile;           // --profile FILE: the run's timeline; "" off
  bool timings = false;          // --timings: the phases' times on stderr
  std::string output;            // --output FILE: the result there instead of stdout; "" or "-" off
  std::string program_path;      // `meshrun run PROG.json CASE`: the program file; "" otherwise
  int repeat = 1;                // --repeat N: N runs on one mesh, the last one's result (warm)
  RunFlags run;
};

// Where --trace goes: stderr for "-", else a file opened before the run (a bad path fails at
// once, with the OS's reason) and written when the run ends.
class TraceSink {
 public:
  TraceSink(const std::string& where, std::chrono::milliseconds open_wait) : where_(where) {
    if (where.empty() || where == "-") return;
    file_ = std::make_unique<OutputFile>(where, "--trace", OutputFile::Mode::kInPlace, open_wait);
  }
  // Whether --trace was given: the trace's text is made only then.
  bool active() const { return !where_.empty(); }
  void write(const std::string& text) {
    if (where_.empty()) return;
    if (!file_) {
      write_stderr_report(text, "--trace");
      return;
    }
    file_->commit(text);
  }

 private:
  std::string where_;
  std::unique_ptr<OutputFile> file_;
};

// Everything before the run, in the order a user's mistakes are reported: flags, the --trace
// file, the --output file, the case and the mesh it runs on.
struct Prepared {
  MeshOptions options;
  TraceSink trace_out;
  std::unique_ptr<OutputFile> result_out;  // --output: opened before the run, written at the end
  std::unique_ptr<NpyFiles> npy_out;       // --save-npy: the same, once the case is read
  Case c;
  MeshShape mesh;
};

// --trace: the program as it ran, with the structural verdict (or the failure that ended it).
std::string trace_text(const Trace& trace, const StructuralVerdict* verdict,
                       const std::string& failure);

// With `profile`, opens it (--timings, --profile FILE) and attaches it to `trace`, which must
// outlive it. Throws what the flags, the files and the case can fail with.
Prepared prepare(const ProgramDef& program, const ProgramFlags& flags, Trace* trace,
                 std::optional<RunProfile>* profile);

// After the run: the --inject check, the trace, the grading, stdout. `entered` is each device's
// count of collectives entered (for the --inject message).
void finish_run(const ProgramDef& program, const ProgramFlags& flags, Prepared& p,
                const std::vector<Tensor>& outputs, const Trace& trace,
                const std::vector<Injection>& unfired, const std::vector<std::uint64_t>& entered,
                RunProfile& profile);

// The flags every program run takes (all but CASE), bound to `flags`.
void add_program_flags(CLI::App& command, const std::shared_ptr<ProgramFlags>& flags);

// The whole run: in one process, or handed to run_program_mpi (mpi_run.cpp) when use_mpi.
void run_program(const ProgramDef& program, const ProgramFlags& flags);
#ifdef MESHRUN_HAVE_MPI
void run_program_mpi(const ProgramDef& program, const ProgramFlags& flags);
#endif

}  // namespace meshrun
