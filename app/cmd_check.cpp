// `meshrun check PATH...`: run every case under the paths and grade it against its `expected`.
// One line per case on stdout (PASS / FAIL / ERROR), then "N passed, M failed" where M counts
// FAIL and ERROR. A case without `expected` is an ERROR: there is nothing to grade.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/case_reader.hpp"
#include "io/compare.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"

namespace meshrun {
namespace {

namespace fs = std::filesystem;

struct CheckFlags {
  std::vector<std::string> paths;
  RunFlags run;
};

// The *.json files under a directory, recursively and sorted; a file path as given. All paths are
// resolved before any case runs, so a typo fails fast (exit 2) instead of after a long run.
std::vector<std::string> collect_cases(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw InputError(path, "no such file or directory");
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(path, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file() && it->path().extension() == ".json") {
        found.push_back(it->path().string());
      }
    }
    if (ec) throw InputError(path, "cannot list: " + ec.message());
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

// The error message without the leading "path: " that read_case puts there (the line already
// starts with the path).
std::string without_file(const std::string& message, const std::string& file) {
  const std::string prefix = file + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// "PASS path", "FAIL path: ...", "ERROR path: ..."; sets `passed`.
std::string grade(const std::string& file, const RunFlags& flags, bool& passed) {
  passed = false;
  try {
    const MeshShape asked = flag_mesh(flags);
    const Case c = read_case(file, nullptr, flags.devices, asked);
    if (!c.expected) return "ERROR " + file + ": no \"expected\" to grade against";
    const ProgramDef& program = *find_program(c.problem);
    Mesh mesh(run_mesh(program, asked, c.mesh, flags.devices), mesh_options(flags));
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
    passed = n == 0 && verdict.ok();
    return (passed ? "PASS " : "FAIL ") + file + ": " + numbers + "; " + structure;
  } catch (const Error& e) {  // input, device and collective errors grade this case only
    return "ERROR " + file + ": " + without_file(e.what(), file);
  }
}

void run_check(const CheckFlags& flags) {
  const std::vector<std::string> files = collect_cases(flags.paths);
  std::size_t passed = 0;
  std::size_t failed = 0;
  for (const std::string& file : files) {
    bool ok = false;
    std::cout << grade(file, flags.run, ok) << '\n' << std::flush;
    ++(ok ? passed : failed);
  }
  std::cout << passed << " passed, " << failed << " failed\n" << std::flush;
  if (failed > 0) throw CLI::RuntimeError(kExitDiffers);
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* command =
      app.add_subcommand("check", "Run every case (files, or *.json under directories) and grade it");
  command->add_option("PATH", flags->paths, "Case files or directories")->required();
  add_run_flags(*command, flags->run, false);
  command->callback([flags] { run_check(*flags); });
}

}  // namespace meshrun
