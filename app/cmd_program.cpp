// `meshrun <program> CASE`: read the case, run the program on a mesh, print the result dict, and
// grade it against the case's `expected` when there is one.
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/case_reader.hpp"
#include "io/compare.hpp"
#include "io/result_writer.hpp"
#include "mesh/injection.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"
#include "trace/trace.hpp"

namespace meshrun {
namespace {

// Differing elements listed on stderr before the summary line; a 50 MB case that is wrong
// everywhere should not print millions of lines.
constexpr std::size_t kMaxListed = 20;

struct ProgramFlags {
  std::string case_path;
  int precision = 6;
  bool exact = false;
  std::string trace;  // "" off, "-" stderr, else a file
  bool show_sharding = false;
  RunFlags run;
};

// --trace: the program as it ran, with the structural verdict, to stderr or a file.
void write_trace(const std::string& where, const Trace& trace, const StructuralVerdict& verdict) {
  std::string text = format_trace(trace) + "structure:\n";
  for (const auto& ok : verdict.passed) text += "  ok: " + ok + "\n";
  for (const auto& bad : verdict.failures) text += "  FAILED: " + bad + "\n";
  if (where == "-") {
    std::cerr << text << std::flush;
    return;
  }
  std::ofstream out(where);
  out << text;
  if (!out.flush()) throw InputError("--trace", "cannot write " + where);
}

void report_mismatches(const std::vector<Mismatch>& mismatches, std::size_t total_elements) {
  for (std::size_t i = 0; i < mismatches.size() && i < kMaxListed; ++i) {
    report_error(describe(mismatches[i]));
  }
  if (mismatches.size() > kMaxListed) {
    report_error("... and " + std::to_string(mismatches.size() - kMaxListed) + " more");
  }
  report_error(std::to_string(mismatches.size()) + " of " + std::to_string(total_elements) +
               " output elements differ from expected");
}

void run_program(const ProgramDef& program, const ProgramFlags& flags) {
  MeshOptions options = mesh_options(flags.run);  // flag errors before input errors
  const MeshShape asked = flag_mesh(flags.run);
  const Case c = read_case(flags.case_path, &program, flags.run.devices, asked);
  Mesh mesh(run_mesh(program, asked, c.mesh, flags.run.devices), std::move(options));
  Trace trace;
  const std::vector<Tensor> outputs = shard_map(mesh, program, c.inputs, &trace);
  const StructuralVerdict verdict = check_structure(program.structure, trace);
  if (!flags.trace.empty()) write_trace(flags.trace, trace, verdict);
  if (flags.show_sharding) std::cerr << format_sharding(trace) << std::flush;
  std::cout << write_result(program, outputs, {flags.precision, flags.exact}) << '\n'
            << std::flush;
  if (!c.expected) return;
  // Graded: the numbers against `expected`, and the structure of what ran against the program's
  // rules. Silent when both hold; each failure is listed on stderr, and the exit code is 1.
  const auto mismatches =
      compare_outputs(program, outputs, *c.expected, flags.run.atol, flags.run.rtol);
  if (mismatches.empty() && verdict.ok()) return;
  if (!mismatches.empty()) {
    std::size_t total = 0;
    for (const Tensor& t : *c.expected) total += t.size();
    report_mismatches(mismatches, total);
  }
  for (const std::string& failure : verdict.failures) report_error("structure: " + failure);
  throw CLI::RuntimeError(kExitDiffers);
}

}  // namespace

void add_run_flags(CLI::App& command, RunFlags& flags, bool with_inject) {
  command.add_option("--devices", flags.devices,
                     "Devices on a one-axis program's axis (default: the case's mesh, else 8)")
      ->check(CLI::Range(1, 1024));
  command.add_option("--mesh", flags.mesh,
                     "Mesh axes and sizes, e.g. data=2,model=4 (overrides the case's \"mesh\"; "
                     "mlp-train's default)");
  command.add_option("--timeout", flags.timeout_s, "Seconds any collective may wait")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  command.add_option("--atol", flags.atol, "Absolute tolerance against expected")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_option("--rtol", flags.rtol, "Relative tolerance against expected")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  if (with_inject) {
    command.add_option("--inject", flags.injections,
                       "Deliberate failure: fail:D@K or stall:D@K (repeatable)");
  }
}

MeshOptions mesh_options(const RunFlags& flags) {
  MeshOptions options;
  // Rounded up so a tiny positive --timeout never becomes 0 ms.
  options.timeout = std::chrono::milliseconds(static_cast<long>(std::ceil(flags.timeout_s * 1000)));
  for (const std::string& spec : flags.injections) {
    options.injections.push_back(parse_injection(spec, "--inject"));
  }
  return options;
}

MeshShape flag_mesh(const RunFlags& flags) {
  return flags.mesh.empty() ? MeshShape{} : parse_mesh(flags.mesh, "--mesh");
}

void add_program_command(CLI::App& app, const ProgramDef& program) {
  auto flags = std::make_shared<ProgramFlags>();
  CLI::App* command = app.add_subcommand(program.name, program.summary);
  command->add_option("CASE", flags->case_path, "Case file (JSON), or - for stdin")->required();
  command->add_option("--precision", flags->precision, "Decimals printed")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  command->add_flag("--exact", flags->exact, "Print each float32's shortest exact form");
  // A flag that takes an optional =FILE: never consumes the next argument (the CASE).
  command->add_flag("--trace{-}", flags->trace,
                    "Print the program as it ran (mesh, blocks, collectives, structure) to stderr, "
                    "or --trace=FILE");
  command->add_flag("--show-sharding", flags->show_sharding,
                    "Draw which device holds which block of each input and output (stderr)");
  add_run_flags(*command, flags->run, true);
  command->callback([&program, flags] { run_program(program, *flags); });
}

}  // namespace meshrun
