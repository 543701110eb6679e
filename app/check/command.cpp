// `meshrun check PATH...`: run every case under the paths and grade it against its `expected`.
// One line per case on stdout (PASS / FAIL / ERROR), then "N passed, M failed" where M counts
// FAIL and ERROR. A case without `expected` is an ERROR: there is nothing to grade.
// --junit FILE / --json FILE write the same verdicts for CI and scripts (io/check_report.hpp);
// --update blesses the expected values instead of grading them (check/update.cpp).
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli.hpp"

#include "check/cases.hpp"
#include "io/check_report.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "flag_checks.hpp"
#include "io/file_set.hpp"
#include "grade/load.hpp"
#include "interp/program.hpp"
#include "io/output.hpp"
#include "progress.hpp"
#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun {
namespace {

struct CheckFlags {
  std::vector<std::string> paths;
  std::string junit;  // "" = none
  std::string json;
  bool update = false;
  std::string program;        // --program PROG.json: grade every case with the program it holds
  std::string exercise;       // --exercise: as that exercise (overrides the file's)
  interp::CostBudget budget;  // --max-flops, --max-bytes-moved: with --program
  RunFlags run;
};

// "numbers ok; structure ok (3 rules)": the numeric verdict and the structural one, side by side.
std::string verdict_detail(const CaseReport& r) {
  const std::size_t n = r.mismatches.size();
  const std::string numbers = n == 0 ? "numbers ok"
                                     : "numbers: " + std::to_string(n) +
                                           (n == 1 ? " element differs" : " elements differ") +
                                           " (first: " + describe(r.mismatches.front()) + ")";
  const std::size_t rules = r.rules_passed.size() + r.rules_failed.size();
  const std::string structure = r.rules_failed.empty()
                                    ? "structure ok (" + std::to_string(rules) + " rules)"
                                    : "structure: " + std::to_string(r.rules_failed.size()) +
                                          " of " + std::to_string(rules) +
                                          " rules broken (first: " + r.rules_failed.front() + ")";
  return numbers + "; " + structure;
}

// Runs and grades one case. Only the case's own failures grade it (input, device, collective
// errors): an internal error or an unwritable report ends the whole command with its own code.
CaseReport grade_case(const Found& found, const RunFlags& flags, FileSet* files,
                      const ProgramDef* program) {
  CaseReport r;
  r.path = found.path;
  r.suite = found.suite;
  r.word = "ERROR";
  r.detail = found.problem;
  if (!found.problem.empty()) return r;
  const auto start = std::chrono::steady_clock::now();
  try {
    const RanCase ran = run_case(found.path, flags, files, program);
    r.problem = ran.program->name;
    if (!ran.unfired.empty()) {  // it tested nothing: not a verdict on the case
      r.unfired = true;
      r.detail = ran.unfired.front();
    } else if (!ran.c.expected) {
      r.detail = "no \"expected\" to grade against";
    } else {
      r.mismatches =
          compare_outputs(*ran.program, ran.outputs, *ran.c.expected, flags.atol, flags.rtol);
      r.rules_passed = ran.structure.passed;
      r.rules_failed = ran.structure.failures;
      r.word = r.mismatches.empty() && r.rules_failed.empty() ? "PASS" : "FAIL";
      r.detail = verdict_detail(r);
    }
  } catch (const FileClash&) {
    throw;  // ends the command before a report replaces the input
  } catch (const Error& e) {
    r.detail = case_error(e, found.path);
    if (r.detail.empty()) throw;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// The --junit and --json files: opened before any case runs (a bad path is exit 2 at once), and
// written whole at the end -- also when meshrun itself ends the run (exit 4 or 6), then holding the
// cases graded so far and saying the run is incomplete. Neither may be the other, a case file, or
// a .npy file a case reads (checked as each case is read, before anything is written): `files`.
class Reports {
 public:
  Reports(const CheckFlags& flags, const std::vector<Found>& cases) {
    summary_ = {flags.paths, flags.run.atol, flags.run.rtol, ""};
    for (const auto& [path, flag] : {std::pair{flags.junit, "--junit"}, {flags.json, "--json"}}) {
      // stdout holds the text report: a report there would be mixed into it (/dev/stdout says
      // so on purpose).
      if (path == "-")
        throw InputError(
            flag,
            "'-' would mix the report into check's lines on stdout; name a file (or /dev/stdout)");
    }
    files_.emplace();
    files_->standard_output();  // the text report: `check c.json >> c.json` is refused too
    if (!flags.junit.empty()) files_->write("--junit", flags.junit);
    if (!flags.json.empty()) files_->write("--json", flags.json);
    if (!flags.program.empty()) files_->read("the program file", flags.program);
    for (const Found& c : cases) files_->read("a case file being graded", c.path);
    const auto wait = mesh_options(flags.run).timeout;
    if (!flags.junit.empty())
      junit_.emplace(flags.junit, "--junit", OutputFile::Mode::kAtomic, wait);
    if (!flags.json.empty()) json_.emplace(flags.json, "--json", OutputFile::Mode::kAtomic, wait);
  }
  // The files the command writes, for each case's .npy inputs.
  FileSet* files() { return &*files_; }
  const CaseReport& add(CaseReport r) { return cases_.emplace_back(std::move(r)); }
  void write(const std::string& incomplete) {
    summary_.incomplete = incomplete;
    if (junit_) junit_->commit(junit_report(cases_, summary_));
    if (json_) json_->commit(json_report(cases_, summary_));
  }

 private:
  CheckSummary summary_;
  std::vector<CaseReport> cases_;
  std::optional<FileSet> files_;
  std::optional<OutputFile> junit_, json_;
};

void run_check(const CheckFlags& flags) {
  const std::vector<Found> cases = collect_cases(flags.paths);
  Reports reports(flags, cases);
  std::unique_ptr<interp::LoadedProgram> program;
  if (!flags.program.empty()) {
    program = interp::load_program(flags.program, flags.run.max_input_bytes,
                                   mesh_options(flags.run).timeout, flags.exercise);
    program->budget = flags.budget;
  }
  std::size_t passed = 0;
  std::size_t failed = 0;
  bool unfired = false;
  Progress progress("check", cases.size(), "cases");
  try {
    for (const Found& c : cases) {
      const CaseReport& r =
          reports.add(grade_case(c, flags.run, reports.files(), program ? &program->def : nullptr));
      ++(r.passed() ? passed : failed);
      unfired = unfired || r.unfired;
      // Written as it is graded, and checked: a reader that went away (EPIPE) or a full disk ends
      // the run at once instead of grading every remaining case into the void. The file name is
      // printed so that no byte of it (a newline, say) can forge a line of the report.
      progress.clear();  // stdout may be the same terminal
      write_stdout(r.word + " " + printable(r.path) + ": " + escape_controls(r.detail) + "\n");
      progress.update(passed + failed, std::to_string(failed) + " failed");
    }
    progress.clear();
    write_stdout(std::to_string(passed) + " passed, " + std::to_string(failed) + " failed\n");
  } catch (const FileClash&) {
    progress.clear();
    throw;  // exit 2; no report is written over a case's input
  } catch (const std::exception& e) {
    // meshrun itself failed (exit 4 or 6): the reports still say what was graded before it.
    progress.clear();
    try {
      reports.write(std::string("run ended by meshrun: ") + e.what());
    } catch (const std::exception& report) {
      report_error(report.what());
    }
    throw;
  }
  reports.write("");
  // An --inject that never fired is a usage error, as for a program run: the ERROR lines say where.
  if (unfired) throw ExitWith(kExitUsage);
  if (failed > 0) throw ExitWith(kExitDiffers);
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* command = app.add_subcommand(
      "check", "Run every case (files, or *.json under directories) and grade it");
  command->add_option("PATH", flags->paths, "Case files or directories")
      ->required()
      ->check(names("a case file or directory", "PATH"));
  command->add_option("--junit", flags->junit, "Also write the verdicts as JUnit XML to FILE")
      ->check(path_to_write("FILE"));
  command->add_option("--json", flags->json, "Also write the verdicts as JSON to FILE")
      ->check(path_to_write("FILE"));
  CLI::Option* update = command->add_flag(
      "--update", flags->update,
      "Bless: rewrite each case's expected from what meshrun computes now where it is outside "
      "the tolerance (or missing); refuses cases that error or break a rule");
  CLI::Option* program =
      command
          ->add_option("--program", flags->program,
                       "Grade every case with the JAX program this program file holds (python -m "
                       "meshrun_export), and the program by its exercise's rules")
          ->check(names("a program file", "FILE"));
  command
      ->add_option("--exercise", flags->exercise,
                   "With --program: grade it as this exercise (a shipped one's name, or a folder "
                   "holding exercise.json)")
      ->check(names("an exercise (a shipped one's name, or a folder holding exercise.json)",
                    "EXERCISE"))
      ->needs(program);
  add_cost_flags(*command, flags->budget, program);
  update->excludes("--junit")->excludes("--json");
  add_run_flags(*command, flags->run, true);  // --inject: into every case
  command->callback([flags] {
    // check is not a program command: under mpirun (of more than one rank) every rank would
    // grade every case on its own and print every line R times. One line, exit 2, from rank 0.
    if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
        size != nullptr && std::string_view(size) != "1") {
      throw ExitWith(usage_error(
          std::string("check: runs in one process, not under mpirun (") + size +
          " ranks would each grade every case); under mpirun, run one case: meshrun run "
          "PROG.json CASE or meshrun <program> CASE"));
    }
    // Malformed flags are one usage error before any case, not one ERROR line per case.
    mesh_options(flags->run);
    flag_mesh(flags->run);
    if (flags->run.devices != 0 && !flags->run.mesh.empty()) {
      throw InputError("--devices", "give either --devices or --mesh, not both");
    }
    if (flags->update) {
      // With --program: the cases are blessed with what that program computes (a program file's
      // results may be of any rank the built-ins' are not).
      std::unique_ptr<interp::LoadedProgram> loaded;
      if (!flags->program.empty()) {
        loaded = interp::load_program(flags->program, flags->run.max_input_bytes,
                                      mesh_options(flags->run).timeout, flags->exercise);
        loaded->budget = flags->budget;
      }
      return run_update(flags->paths, flags->run, loaded ? &loaded->def : nullptr, flags->program);
    }
    run_check(*flags);
  });
}

}  // namespace meshrun
