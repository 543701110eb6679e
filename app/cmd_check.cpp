// `meshrun check PATH...`: run every case under the paths and grade it against its `expected`.
// One line per case on stdout (PASS / FAIL / ERROR), then "N passed, M failed" where M counts
// FAIL and ERROR. A case without `expected` is an ERROR: there is nothing to grade.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include <sys/stat.h>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/case_reader.hpp"
#include "io/compare.hpp"
#include "io/json_text.hpp"
#include "io/output.hpp"
#include "support/printable.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"

namespace meshrun {
namespace {

namespace fs = std::filesystem;

struct CheckFlags {
  std::vector<std::string> paths;
  RunFlags run;
};

// One entry per case: its path, or the reason it cannot be a case (reported as an ERROR line).
struct Found {
  std::string path;
  std::string problem;  // "" for a readable file
};

// Walks `dir` recursively in sorted order, following symbolic links to directories (each
// directory once, by device and inode, so a link cycle ends). Every *.json entry is a case: a
// dangling link or a non-file named *.json is kept as an ERROR, never skipped silently.
void walk(const fs::path& dir, std::set<std::pair<dev_t, ino_t>>& seen, std::vector<Found>& out) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) return;
  std::error_code ec;
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(it->path());
  }
  if (ec) throw InputError(dir.string(), "cannot list: " + ec.message());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    const fs::file_status target = fs::status(p, ec);  // follows links
    if (fs::is_directory(target)) {
      walk(p, seen, out);
    } else if (p.extension() == ".json") {
      if (fs::is_regular_file(target)) {
        out.push_back({p.string(), ""});
      } else if (!fs::exists(target)) {
        out.push_back({p.string(), fs::is_symlink(fs::symlink_status(p, ec))
                                       ? "dangling symbolic link"
                                       : "cannot read: " + ec.message()});
      } else {
        out.push_back({p.string(), "not a regular file"});
      }
    }
  }
}

// The cases under the paths: a file as given, the *.json files under a directory. All paths are
// resolved before any case runs, so a typo fails fast; a path that holds no case is an error of
// its own (exit 5): grading nothing must never read as a pass.
std::vector<Found> collect_cases(const std::vector<std::string>& paths) {
  std::vector<Found> cases;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw InputError(path, "no such file or directory");
    if (!fs::is_directory(path, ec)) {
      cases.push_back({path, ""});
      continue;
    }
    std::set<std::pair<dev_t, ino_t>> seen;
    const std::size_t before = cases.size();
    walk(path, seen, cases);
    if (cases.size() == before) {
      throw NoCasesError(printable(path) + ": no case files (*.json) in this directory");
    }
  }
  return cases;
}

// The error message without the leading "path: " that read_case puts there (the line already
// starts with the path).
std::string without_file(const std::string& message, const std::string& file) {
  const std::string prefix = file + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

struct Verdict {
  bool passed = false;
  std::string word;    // PASS, FAIL, ERROR
  std::string detail;  // after "path: "
};

// Runs and grades one case. Only the case's own failures grade it (input, device, collective
// errors): an internal error or an unwritable report ends the whole command with its own code.
Verdict grade_case(const std::string& file, const RunFlags& flags) {
  try {
    const Case c = read_case(file, nullptr, flags.devices);
    if (!c.expected) return {false, "ERROR", "no \"expected\" to grade against"};
    const ProgramDef& program = *find_program(c.problem);
    Mesh mesh(flags.devices, program.axis, mesh_options(flags));
    Trace trace;
    const auto outputs = shard_map(mesh, program, c.inputs, &trace);
    const auto mismatches = compare_outputs(program, outputs, *c.expected, flags.atol, flags.rtol);
    const StructuralVerdict verdict = check_structure(program.structure, trace);
    // The numeric verdict and the structural one, side by side.
    const std::size_t n = mismatches.size();
    const std::string numbers =
        n == 0 ? "numbers ok"
               : "numbers: " + std::to_string(n) + (n == 1 ? " element differs" : " elements differ") +
                     " (first: " + describe(mismatches.front()) + ")";
    const std::size_t rules = verdict.passed.size() + verdict.failures.size();
    const std::string structure =
        verdict.ok() ? "structure ok (" + std::to_string(rules) + " rules)"
                     : "structure: " + std::to_string(verdict.failures.size()) + " of " +
                           std::to_string(rules) + " rules broken (first: " + verdict.failures.front() + ")";
    const bool passed = n == 0 && verdict.ok();
    return {passed, passed ? "PASS" : "FAIL", numbers + "; " + structure};
  } catch (const InputError& e) {
    return {false, "ERROR", without_file(e.what(), display_name(file))};
  } catch (const CollectiveError& e) {
    return {false, "ERROR", e.what()};
  } catch (const DeviceError& e) {
    return {false, "ERROR", e.what()};
  }
}

// "PASS path: ...", "FAIL path: ...", "ERROR path: ...": the file name printed so that no byte
// of it (a newline, say) can forge a line of the report, and the details kept on the one line.
std::string report_line(const Found& c, const RunFlags& flags, bool& passed) {
  const Verdict v = c.problem.empty() ? grade_case(c.path, flags) : Verdict{false, "ERROR", c.problem};
  passed = v.passed;
  return v.word + " " + printable(c.path) + ": " + escape_controls(v.detail);
}

void run_check(const CheckFlags& flags) {
  const std::vector<Found> cases = collect_cases(flags.paths);
  std::size_t passed = 0;
  std::size_t failed = 0;
  for (const Found& c : cases) {
    bool ok = false;
    // Written as it is graded, and checked: a reader that went away (EPIPE) or a full disk ends
    // the run at once instead of grading every remaining case into the void.
    write_stdout(report_line(c, flags.run, ok) + "\n");
    ++(ok ? passed : failed);
  }
  write_stdout(std::to_string(passed) + " passed, " + std::to_string(failed) + " failed\n");
  if (failed > 0) throw CLI::RuntimeError(kExitDiffers);
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* command =
      app.add_subcommand("check", "Run every case (files, or *.json under directories) and grade it");
  command->add_option("PATH", flags->paths, "Case files or directories")->required();
  add_run_flags(*command, flags->run, true);  // --inject: into every case
  command->callback([flags] { run_check(*flags); });
}

}  // namespace meshrun
