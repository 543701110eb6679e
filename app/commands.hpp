// The subcommands. Each adds itself to the app with its flags and does its work in its CLI11
// callback; errors are thrown as meshrun exceptions and mapped to exit codes in one place
// (exit_codes.hpp / exit.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

// CLI11 is included only where options are registered: every file that includes it constructs
// its own copies of CLI11's eight predefined validators at start-up and destroys them at exit.
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace meshrun::interp {
struct CostBudget;
}  // namespace meshrun::interp

#include "mesh/mesh.hpp"
#include "programs/program.hpp"

namespace meshrun {

// `meshrun <program> CASE`: one per registered program (program/command.cpp).
void add_program_command(CLI::App& app, const ProgramDef& program);
// `meshrun <program> CASE` with every flag at its default, without CLI11 (main.cpp says when).
void run_plain_program(const ProgramDef& program, const std::string& case_path);
// `meshrun run PROG.json CASE`: a program file's program (program/run_file.cpp).
void add_run_file_command(CLI::App& app);
// --max-flops and --max-bytes-moved, a program file's compute budget (interp/cost.hpp), bound to
// `budget` (program/run_file.cpp); `needs`, when given, is the option they need (check's
// --program).
void add_cost_flags(CLI::App& command, interp::CostBudget& budget, CLI::Option* needs = nullptr);
// `meshrun check PATH...` (check/command.cpp).
void add_check_command(CLI::App& app);
// --backend: auto is mpi when started by OpenMPI's mpirun (it sets OMPI_COMM_WORLD_SIZE).
bool use_mpi(const std::string& backend);
// Under mpirun, a rank other than 0 (OMPI_COMM_WORLD_RANK): it leaves saying why to rank 0, so
// a usage error or --help is printed once (and exits 0, leaving mpirun's code to rank 0).
bool quiet_rank();

// `meshrun bench` (bench/command.cpp), whose `bench programs` is in bench/programs.cpp.
void add_bench_command(CLI::App& app);
void add_bench_programs_command(CLI::App& bench);

constexpr long kMaxDevices = 1024;
// --repeat: a warm-step measurement, not a load test.
constexpr long kMaxRepeat = 100000;
// The smallest --timeout: a healthy run on this 2-core machine never trips it (measured: every
// documented example 1000 times at 1 s with builds loading the machine: 0 of 6000 failed; at 0.1 s
// 1 of 6000 did -- a device not scheduled for 100 ms; see README).
constexpr double kMinTimeoutSeconds = 1.0;

// Flags shared by the commands that run a mesh and grade results.
struct RunFlags {
  int devices = 0;   // --devices; 0: not given (the case's or the program's mesh)
  std::string mesh;  // --mesh "data=2,model=4"; "": not given
  double timeout_s = 10;
  double atol = 1e-5;
  double rtol = 1e-5;
  std::vector<std::string> injections;  // --inject specs, parsed when the command runs
  std::uint64_t max_input_bytes = std::uint64_t{1} << 30;  // --max-input-bytes
};

// Adds --devices, --mesh, --timeout, --atol, --rtol, --max-input-bytes (and --inject when
// `with_inject`) bound to `flags`.
void add_run_flags(CLI::App& command, RunFlags& flags, bool with_inject);

// MeshOptions from the flags; throws InputError for a malformed --inject.
MeshOptions mesh_options(const RunFlags& flags);
// --mesh parsed (empty when not given); throws InputError for a malformed one.
MeshShape flag_mesh(const RunFlags& flags);

}  // namespace meshrun
