// `meshrun <program> CASE` in one process: read the case, run the program on a mesh, print the
// result dict, and grade it against the case's `expected` when there is one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <optional>

#include "cli.hpp"

#include "exit_codes.hpp"
#include "io/compare.hpp"
#include "io/file_set.hpp"
#include "io/result_writer.hpp"
#include "program/run.hpp"
#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun {
namespace {

// Differing elements listed on stderr before the summary line; a 50 MB case that is wrong
// everywhere should not print millions of lines.
constexpr std::size_t kMaxListed = 20;

std::size_t expected_size(const std::vector<Tensor>& expected) {
  std::size_t total = 0;
  for (const Tensor& t : expected) total += t.size();
  return total;
}

}  // namespace

std::string trace_text(const Trace& trace, const StructuralVerdict* verdict,
                       const std::string& failure) {
  std::string text = format_trace(trace);
  // The failure quotes files (an ESC of a program's key, a case's field): escaped, as on stderr.
  if (!failure.empty()) return text + "failed: " + escape_controls(failure) + "\n";
  text += "structure:\n";
  for (const auto& ok : verdict->passed) text += "  ok: " + ok + "\n";
  for (const auto& bad : verdict->failures) text += "  FAILED: " + bad + "\n";
  return text;
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

// After the run: the --inject check, the trace, the grading, stdout. `entered` is each device's
// count of collectives entered (for the --inject message).
void finish_run(const ProgramDef& program, const ProgramFlags& flags, Prepared& p,
                const std::vector<Tensor>& outputs, const Trace& trace,
                const std::vector<Injection>& unfired, const std::vector<std::uint64_t>& entered,
                RunProfile& profile) {
  const Case& c = p.c;
  for (const Injection& inj : unfired) {  // it tested nothing: say so
    throw InputError("--inject",
                     unfired_message(inj, entered.at(static_cast<std::size_t>(inj.device))));
  }
  const std::vector<TensorRef> inputs = c.input_refs();
  // The rules only where a verdict is shown (graded against `expected`, or --trace): a program
  // file's exercise rules run the program again (b2 moved, the reference, lr doubled), three
  // more runs that a case with nothing to grade would pay for nothing.
  const StructuralVerdict verdict = c.expected || p.trace_out.active()
                                        ? check_structure(program.structure, trace, inputs, outputs)
                                        : StructuralVerdict{};
  if (p.trace_out.active()) p.trace_out.write(trace_text(trace, &verdict, ""));
  if (flags.show_sharding) write_stderr_report(format_sharding(trace), "--show-sharding");
  // Graded: the numbers against `expected`, and the structure of what ran against the program's
  // rules. Silent when both hold; each failure is listed on stderr.
  std::vector<Mismatch> mismatches;
  if (c.expected) {
    mismatches = compare_outputs(program, outputs, *c.expected, flags.run.atol, flags.run.rtol);
  }
  // NaN and infinities have no JSON spelling: such a result is never printed, nor a success.
  if (const std::string bad = find_non_finite(program, outputs); !bad.empty()) {
    if (!mismatches.empty()) report_mismatches(mismatches, expected_size(*c.expected));
    throw NonFiniteError(bad);
  }
  {
    const ProfilePhase phase(trace.profile, "write");
    std::string text = write_result(program, outputs, {flags.precision, flags.exact});
    text += '\n';  // appended in place: `+ "\n"` copied the whole result once more
    if (p.result_out) {
      p.result_out->commit(text);
    } else {
      write_stdout(text);
    }
    if (p.npy_out) p.npy_out->commit(outputs);
  }
  profile.save("");
  profile.print_timings(program.flops ? program.flops(c.input_refs()) : 0, c.bytes);
  if (!c.expected || (mismatches.empty() && verdict.ok())) return;
  if (!mismatches.empty()) report_mismatches(mismatches, expected_size(*c.expected));
  for (const std::string& failure : verdict.failures) report_error("structure: " + failure);
  throw ExitWith(kExitDiffers);
}

// Every file the run writes, beside the case file it reads: two that are one file (by any
// spelling, link or hard link) are refused before anything is opened (io/file_set.hpp). The
// .npy files the case names join the set once the case is read, still before the run.
FileSet run_files(const ProgramDef& program, const ProgramFlags& flags) {
  FileSet files;
  if (flags.case_path == "-") {
    files.read("the case file being read (on stdin)", "-", stdin_id());
  } else {
    files.read("the case file being read", flags.case_path);
  }
  if (!flags.program_path.empty()) files.read("the program file being read", flags.program_path);
  if (!flags.trace.empty() && flags.trace != "-") files.write("--trace", flags.trace);
  if (!flags.output.empty() && flags.output != "-") {
    files.write("--output", flags.output);
  } else {
    files.standard_output();
  }
  if (!flags.profile.empty()) files.write("--profile", flags.profile);
  if (flags.trace == "-" || flags.show_sharding || flags.timings) files.standard_error();
  if (!flags.save_npy.empty()) {
    for (const ArgDef& out : program.outputs) {
      files.write("--save-npy", npy_path(flags.save_npy, out.name));
    }
  }
  return files;
}

// With `profile`, opens it (--timings, --profile FILE: the file is checked after the flags and
// the --trace file) and attaches it to `trace`, which must outlive it.
Prepared prepare(const ProgramDef& program, const ProgramFlags& flags, Trace* trace,
                 std::optional<RunProfile>* profile) {
  MeshOptions options = mesh_options(flags.run);  // flag errors before input errors
  if (flags.repeat > 1) {
    if (!options.injections.empty()) {
      throw InputError("--repeat",
                       "not with --inject: a failure injected into one of several runs "
                       "tests nothing the single run does not");
    }
    // Warm steps: the device threads stay between runs, and with them their kernels' scratch
    // buffers. Otherwise as one run is made (unpinned: on tp-mlp's and mlp-train's warm steps with
    // 8 devices on 2 CPUs, pinning 4 to each was no faster, within this machine's noise).
    options.keep_threads = true;
  }
  FileSet files = run_files(program, flags);
  TraceSink trace_out(flags.trace, options.timeout);
  std::unique_ptr<OutputFile> result_out;
  if (!flags.output.empty() && flags.output != "-") {
    result_out = std::make_unique<OutputFile>(flags.output, "--output", OutputFile::Mode::kAtomic,
                                              options.timeout);
  }
  Profile* timeline = nullptr;
  if (profile != nullptr) {
    profile->emplace(flags.profile, flags.timings, options.timeout);
    timeline = (*profile)->attach(*trace);
  }
  const MeshShape asked = flag_mesh(flags.run);
  Case c = [&] {
    const ProfilePhase phase(timeline, "read");
    return read_case(flags.case_path, &program, flags.run.devices, asked, flags.run.max_input_bytes,
                     options.timeout);
  }();
  for (const NpyFile& npy : c.npy_files) {
    files.read("the .npy file " + npy.field + " reads", npy.path);
  }
  MeshShape mesh = run_mesh(program, asked, c.mesh, flags.run.devices);
  std::unique_ptr<NpyFiles> npy_out;
  if (!flags.save_npy.empty()) {
    std::vector<std::string> names;
    for (const ArgDef& out : program.outputs) names.push_back(out.name);
    npy_out = std::make_unique<NpyFiles>(flags.save_npy, names, "--save-npy", options.timeout);
  }
  return {std::move(options), std::move(trace_out), std::move(result_out),
          std::move(npy_out), std::move(c),         std::move(mesh)};
}

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// --repeat: every run's outputs are those of the first, bit for bit.
void check_repeat(const ProgramDef& program, const std::vector<Tensor>& first,
                  const std::vector<Tensor>& outputs, int run) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!same_bits(first.at(i), outputs[i])) {
      throw InternalError("internal error: --repeat: run " + std::to_string(run) +
                          " gave other bits than run 1 in '" + program.outputs.at(i).name + "'");
    }
  }
}

// The warm run whose step (compute + collectives) is the median one (of an even count, the
// lower of the middle two): its own compute and collectives, so they add up to a real step.
WarmSteps median_step(int repeat, std::vector<TimingSums> runs) {
  const auto step = [](const TimingSums& t) { return t.compute_s + t.collectives_s; };
  const auto mid = runs.begin() + static_cast<std::ptrdiff_t>((runs.size() - 1) / 2);
  std::nth_element(runs.begin(), mid, runs.end(),
                   [&](const TimingSums& a, const TimingSums& b) { return step(a) < step(b); });
  return {repeat, mid->compute_s, mid->collectives_s};
}

}  // namespace

// `trace` carries the run's Profile (when --timings or --profile asked for one). With --repeat N,
// every run records into `trace` afresh (the mesh resets its collectives and device spans, the
// shard_map its inputs and outputs) and only the last run's phases are kept: what --trace,
// --profile and the structural rules see is one run -- the last, or the one that failed.
void run_in_process(const ProgramDef& program, const ProgramFlags& flags, Prepared& p, Trace& trace,
                    RunProfile& profile) {
  Mesh mesh(p.mesh, p.options);
  std::vector<Tensor> outputs;
  std::vector<Tensor> first;
  std::vector<TimingSums> warm;  // runs 2..N
  profile.mesh_started();
  int r = 1;
  try {
    for (; r <= flags.repeat; ++r) {
      const std::size_t phases = trace.profile ? trace.profile->phases.size() : 0;
      outputs = shard_map(mesh, program, p.c.input_refs(), &trace);
      if (flags.repeat == 1) break;
      if (r == 1) {
        first = outputs;
      } else {
        check_repeat(program, first, outputs, r);
        if (trace.profile) warm.push_back(sum_timings(*trace.profile));
      }
      if (trace.profile && r < flags.repeat) trace.profile->phases.resize(phases);
    }
  } catch (const Error& e) {
    // The trace matters most now: it shows which device entered which collective.
    const std::string failure = flags.repeat > 1
                                    ? "run " + std::to_string(r) + " of " +
                                          std::to_string(flags.repeat) + " (--repeat): " + e.what()
                                    : std::string(e.what());
    if (p.trace_out.active()) p.trace_out.write(trace_text(trace, nullptr, failure));
    profile.save(failure);  // so does the timeline: who waited for whom
    throw;
  }
  if (!warm.empty()) profile.set_warm(median_step(flags.repeat, std::move(warm)));
  std::vector<std::uint64_t> entered;
  entered.reserve(static_cast<std::size_t>(mesh.size()));
  for (int d = 0; d < mesh.size(); ++d) entered.push_back(mesh.collectives_entered(d));
  finish_run(program, flags, p, outputs, trace, mesh.unfired_injections(), entered, profile);
}

void run_program(const ProgramDef& program, const ProgramFlags& flags) {
  if (use_mpi(flags.backend)) {
    if (flags.repeat > 1) {
      throw InputError("--repeat",
                       "in one process only (--backend inprocess): the MPI backend runs a "
                       "program once");
    }
#ifdef MESHRUN_HAVE_MPI
    run_program_mpi(program, flags);
    return;
#else
    throw InputError("--backend",
                     std::string(flags.backend == "mpi" ? "" : "started by mpirun, but ") +
                         "this meshrun was built without MPI (apt-get install "
                         "libopenmpi-dev and rebuild); --backend inprocess runs one process");
#endif
  }
  Trace trace;  // declared first: the profile's destructor may still read it
  std::optional<RunProfile> profile;
  Prepared p = prepare(program, flags, &trace, &profile);
  run_in_process(program, flags, p, trace, *profile);
}

}  // namespace meshrun
