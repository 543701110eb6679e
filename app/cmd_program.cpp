// `meshrun <program> CASE`: read the case, run the program on a mesh, print the result dict, and
// grade it against the case's `expected` when there is one.
#include <cmath>
#include <iostream>
#include <limits>
#include <cstdlib>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/case_reader.hpp"
#include "flag_checks.hpp"
#include "io/compare.hpp"
#include "io/file_set.hpp"
#include "io/npy.hpp"
#include "io/output.hpp"
#include "io/result_writer.hpp"
#include "mesh/injection.hpp"
#include "run_profile.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"
#include "trace/trace.hpp"

#ifdef MESHRUN_HAVE_MPI
#include "mpi/mpi_runner.hpp"
#include "mpi/mpi_shard_map.hpp"
#include "mpi_ranks.hpp"
#endif

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
  RunFlags run;
};

// --trace: the program as it ran, with the structural verdict (or the failure that ended it).
std::string trace_text(const Trace& trace, const StructuralVerdict* verdict,
                       const std::string& failure) {
  std::string text = format_trace(trace);
  if (!failure.empty()) return text + "failed: " + failure + "\n";
  text += "structure:\n";
  for (const auto& ok : verdict->passed) text += "  ok: " + ok + "\n";
  for (const auto& bad : verdict->failures) text += "  FAILED: " + bad + "\n";
  return text;
}

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
      std::cerr << text << std::flush;
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
  const StructuralVerdict verdict = check_structure(program.structure, trace);
  if (p.trace_out.active()) p.trace_out.write(trace_text(trace, &verdict, ""));
  if (flags.show_sharding) std::cerr << format_sharding(trace) << std::flush;
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
  throw CLI::RuntimeError(kExitDiffers);
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

// `trace` carries the run's Profile (when --timings or --profile asked for one).
void run_in_process(const ProgramDef& program, const ProgramFlags& flags, Prepared& p, Trace& trace,
                    RunProfile& profile) {
  Mesh mesh(p.mesh, p.options);
  std::vector<Tensor> outputs;
  profile.mesh_started();
  try {
    outputs = shard_map(mesh, program, p.c.input_refs(), &trace);
  } catch (const Error& e) {
    // The trace matters most now: it shows which device entered which collective.
    if (p.trace_out.active()) p.trace_out.write(trace_text(trace, nullptr, e.what()));
    profile.save(e.what());  // so does the timeline: who waited for whom
    throw;
  }
  std::vector<std::uint64_t> entered;
  entered.reserve(static_cast<std::size_t>(mesh.size()));
  for (int d = 0; d < mesh.size(); ++d) entered.push_back(mesh.collectives_entered(d));
  finish_run(program, flags, p, outputs, trace, mesh.unfired_injections(), entered, profile);
}

#ifdef MESHRUN_HAVE_MPI
// One mesh over the job's ranks (mpi/mpi_shard_map.hpp). Rank 0 reads the case and tells every
// rank the mesh, or the error that stops the run before it starts; only rank 0 prints, and only
// rank 0 opens the --trace and --profile files. --timings and --profile: every device records
// its spans on its own rank, and rank 0 gathers them into its Profile (one track per device).
void run_on_ranks(MpiJob& job, const ProgramDef& program, const ProgramFlags& flags) {
  const bool profiling = flags.timings || !flags.profile.empty();
  Trace trace;  // declared first: the profile's destructor may still read it
  std::optional<RunProfile> profile;
  std::optional<Prepared> p;
  MeshShape mesh;
  if (job.rank() == 0) {
    Wire setup;
    try {
      check_launch(job);
      p.emplace(prepare(program, flags, &trace, &profile));
      check_mpi_mesh(p->mesh, job.ranks());
    } catch (const Error& e) {
      setup.put(static_cast<std::uint64_t>(exit_code_of(e)));
      job.from_root(setup.bytes());
      throw;
    }
    setup.put(std::uint64_t{0});
    setup.put(p->mesh);
    job.from_root(setup.bytes());
    mesh = p->mesh;
  } else {
    check_launch(job);
    Wire setup(job.from_root({}));
    if (const auto code = static_cast<int>(setup.u64())) throw CLI::RuntimeError(code);
    mesh = setup.mesh();
  }
  const MeshOptions options = p ? p->options : mesh_options(flags.run);
  MpiShardMapResult r;
  if (profile) profile->mesh_started();
  try {
    r = mpi_shard_map(job, mesh, program.body, program.inputs, program.outputs,
                      p ? p->c.input_refs() : std::vector<TensorRef>{}, options,
                      p ? &trace : nullptr, profiling);
  } catch (const Error& e) {
    if (p) {
      p->trace_out.write(trace_text(trace, nullptr, e.what()));
      profile->save(e.what());  // the timeline of a failed run: who waited for whom
    }
    throw;
  }
  if (!p) return;
  trace.program = program.name;
  finish_run(program, flags, *p, r.outputs, trace, r.unfired, r.entered, *profile);
}

// Every rank ends with rank 0's exit code; rank 0 alone says why. A wait that timed out means a
// peer may be dead (MPI_Finalize could wait for it forever): MPI_Abort ends the job instead, and
// the lowest rank still running says why (give_up, mpi_ranks.hpp).
void run_program_mpi(const ProgramDef& program, const ProgramFlags& flags) {
  init_mpi_threads(nullptr, nullptr);
  // Waits on rank 0's own work (reading the case, grading, printing) get a minute beyond the
  // collectives' timeout.
  const auto timeout =
      std::chrono::milliseconds(static_cast<long>(std::ceil(flags.run.timeout_s * 1000)));
  const auto bound = timeout + std::chrono::seconds(60);
  int code = kExitOk;
  std::string message;
  int rank = 0;
  {
    MpiJob job(bound);
    rank = job.rank();
    try {
      run_on_ranks(job, program, flags);
    } catch (const CLI::RuntimeError& e) {
      code = e.get_exit_code();
    } catch (const TimeoutError& e) {  // a wait of the job's own: on the ranks e names
      code = kExitMesh;
      message = job.broken() ? stopped_answering(e, "") : e.what();
    } catch (const Error& e) {
      code = exit_code_of(e);
      message = e.what();
    } catch (const std::exception& e) {
      code = kExitInternal;
      message = std::string("internal error: ") + e.what();
    }
    // A wait that timed out: a peer may be dead and the code could not reach it. MPI_Abort
    // ends every rank (with mpirun's exit code, not ours).
    if (job.broken()) give_up(job, message, code == kExitOk ? kExitMesh : code);
    // A rank 0 stopped and continued (by the kill after another rank gave up on it) is quiet.
    if (rank == 0 && job.reported_elsewhere()) MPI_Abort(MPI_COMM_WORLD, kExitMesh);
    // Said before the code goes out: mpirun ends the job as soon as one rank exits non-zero.
    if (rank == 0 && !message.empty()) report_error(message);
    try {
      Wire w;
      w.put(static_cast<std::uint64_t>(code));
      // Longer than rank 0 can take to answer, so rank 0 gives up on a stopped peer first: after
      // a failure it gathers outcomes (bounded by the timeout) and answers; after a success its
      // wait for them is bounded by `bound`.
      const auto wait = (code == kExitOk ? bound : timeout) + timeout + std::chrono::seconds(1);
      code = static_cast<int>(Wire(job.from_root(w.bytes(), wait)).u64());
    } catch (const TimeoutError& e) {
      give_up(job, stopped_answering(e, message), code == kExitOk ? kExitMesh : code);
    } catch (const Error& e) {
      give_up(job, e.what(), code == kExitOk ? kExitMesh : code);
    }
  }
  MPI_Finalize();
  if (code != kExitOk) throw CLI::RuntimeError(code);
}
#endif

void run_program(const ProgramDef& program, const ProgramFlags& flags) {
  if (use_mpi(flags.backend)) {
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

}  // namespace

void run_plain_program(const ProgramDef& program, const std::string& case_path) {
  ProgramFlags flags;
  flags.case_path = case_path;
  run_program(program, flags);
}

bool use_mpi(const std::string& backend) {
  if (backend == "auto") return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  return backend == "mpi";
}

void add_run_flags(CLI::App& command, RunFlags& flags, bool with_inject) {
  command
      .add_option("--devices", flags.devices,
                  "Devices on a one-axis program's axis (default: the case's mesh, else 8)")
      ->transform(decimal_integer(1, kMaxDevices));
  command.add_option("--mesh", flags.mesh,
                     "Mesh axes and sizes, e.g. data=2,model=4 (overrides the case's \"mesh\"; "
                     "mlp-train's default)");
  command.add_option("--timeout", flags.timeout_s, "Seconds any collective may wait")
      ->check(finite_real(kMinTimeoutSeconds, 86400.0, " seconds"))
      ->capture_default_str();
  constexpr double kHuge = 1e30;  // any finite tolerance a person means
  command.add_option("--atol", flags.atol, "Absolute tolerance against expected")
      ->check(finite_real(0, kHuge))
      ->capture_default_str();
  command.add_option("--rtol", flags.rtol, "Relative tolerance against expected")
      ->check(finite_real(0, kHuge))
      ->capture_default_str();
  command
      .add_option("--max-input-bytes", flags.max_input_bytes,
                  "Refuse a case file larger than this (bytes)")
      ->transform(decimal_integer(1, std::numeric_limits<long>::max()))
      ->capture_default_str();
  if (with_inject) {
    // One spec per --inject: `check --inject fail:0@1 cases/` must not take cases/ for a second.
    command
        .add_option("--inject", flags.injections,
                    "Deliberate failure: fail:D@K, stall:D@K or internal:D@K (repeatable)")
        ->allow_extra_args(false);
  }
}

MeshOptions mesh_options(const RunFlags& flags) {
  MeshOptions options;
  // A program is one run of the mesh (two with large inputs, whose blocks the devices cut in the
  // first), a few collectives long: pinning pays off over the many collectives of `bench
  // allreduce` (which keeps it), but at start-up it sends half the new device threads onto the
  // CPU of the thread still creating the others (the first example's median went from 3.96 to
  // 1.85 ms, measured under load; bench/README.md).
  options.pin_devices = false;
  // And its device threads end with the run instead of parking, to be woken again by ~Mesh only
  // to exit (the first example went from 1.33x to 1.20x floor_threads; bench/README.md).
  options.keep_threads = false;
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
  command
      ->add_option("-o,--output", flags->output,
                   "Write the result to FILE instead of stdout (a regular file: whole or not at "
                   "all). Under mpirun, the checked way: mpirun does not report a failed write of "
                   "its stdout")
      ->check(path_to_write("FILE"));
  command
      ->add_option("--save-npy", flags->save_npy,
                   "Also write each output as DIR/NAME.npy (float32), creating DIR")
      ->check(path_to_write("DIR"));
  command
      ->add_option("--backend", flags->backend,
                   "inprocess (one process), mpi (one mesh over the ranks of mpirun), or auto: "
                   "mpi when started by mpirun")
      ->check(CLI::IsMember({"auto", "inprocess", "mpi"}))
      ->capture_default_str();
  command
      ->add_option("--profile", flags->profile,
                   "Write the run's timeline to FILE (Trace Event JSON for ui.perfetto.dev)")
      ->check(path_to_write("FILE"));
  command->add_flag("--timings", flags->timings,
                    "Print the phases' times, flops and GFLOP/s as one JSON line on stderr");
  add_run_flags(*command, flags->run, true);
  command->callback([&program, flags] { run_program(program, *flags); });
}

}  // namespace meshrun
