// A program file as a ProgramDef: what `meshrun run PROG.json CASE` and `meshrun check
// --program` hand the same runner the built-in programs use -- the case reader, every flag, the
// trace, the grading, the MPI backend.
//
// A program whose top level is only jit around one shard_map of its inputs (what
// `jax.jit(jax.shard_map(f, ...))` exports) is a body with specs, like a built-in program, and
// runs in one process or under mpirun. One with equations outside its shard_map evaluates them
// on the global arrays around the mesh's run (ProgramDef::run, run_with): under mpirun on rank 0,
// its one shard_map over the ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "interp/ir.hpp"
#include "programs/program.hpp"

namespace meshrun::interp {

struct LoadedProgram {
  ProgramFile file;
  ProgramDef def;      // its functions refer to `file`: keep the LoadedProgram alive while it runs
  bool plain = false;  // jit(shard_map(inputs)) only: body and specs
  // The program's inputs are the file's, or -- for a file that names an exercise -- the
  // exercise's (a case for dp-step holds x even when the program closes over it: the rules then
  // say so). def_input[i]: the def's input that is the file's input i.
  std::vector<std::size_t> def_input;
  // Per export, per shard_map: the program input each operand is (-1: none), for the trace's
  // names of a program with equations around its shard_map (shard_map_operand_inputs).
  std::vector<std::map<const Eqn*, std::vector<int>>> operand_inputs;
  // ... and the program output each result is (-1: none).
  std::vector<std::map<const Eqn*, std::vector<int>>> result_outputs;
  // The flops the last checked run counts (check_run, before it runs): what def.flops returns.
  std::uint64_t flops = 0;
};

// Reads `path` (read_program_file) and builds its ProgramDef; InputError naming the file.
// `exercise`, when not empty, replaces the file's "exercise" (--exercise).
std::unique_ptr<LoadedProgram> load_program(const std::string& path, std::uint64_t max_bytes,
                                            std::chrono::milliseconds open_wait,
                                            const std::string& exercise);

}  // namespace meshrun::interp
