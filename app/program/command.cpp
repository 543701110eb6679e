// `meshrun <program> CASE`: the subcommand and its flags (the run itself: program/run.hpp).
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "cli.hpp"

#include "commands.hpp"
#include "flag_checks.hpp"
#include "program/run.hpp"
#include "support/errors.hpp"

namespace meshrun {

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
  command
      .add_option("--mesh", flags.mesh,
                  "Mesh axes and sizes, e.g. data=2,model=4 (overrides the case's \"mesh\"; "
                  "mlp-train's default)")
      ->check(names("the mesh's axes and sizes, e.g. data=2,model=4", "AXES"));
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
  command->add_option("CASE", flags->case_path, "Case file (JSON), or - for stdin")
      ->required()
      ->check(names("a case file (or - for stdin)", "FILE"));
  add_program_flags(*command, flags);
  command->callback([&program, flags] { run_program(program, *flags); });
}

void add_program_flags(CLI::App& app, const std::shared_ptr<ProgramFlags>& flags) {
  CLI::App* command = &app;
  command->add_option("--precision", flags->precision, "Decimals printed")
      ->transform(decimal_integer(0, 20))
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
  command
      ->add_option(
          "--repeat", flags->repeat,
          "Run N times on one mesh (its threads kept), printing the last "
          "run's result; every run must give the same bits. --timings: compute and "
          "collectives are the median of runs 2..N (warm steps). N > 1: not with --inject, "
          "not under mpirun")
      ->transform(decimal_integer(1, kMaxRepeat))
      ->capture_default_str();
  add_run_flags(*command, flags->run, true);
}

}  // namespace meshrun
