// What main() does to the process before any command runs: thread stacks and malloc arenas sized
// for the device threads, SIGXFSZ ignored, closed standard descriptors reserved, and -- in the
// binary without MPI -- a run that asks for MPI handed to meshrun-mpi.
#pragma once

#include <string>
#include <vector>

namespace meshrun {

// The words after "meshrun" on the command line; main records them first (every rank of an MPI
// job must run the same: check_launch, io/mpi/mpi_command.hpp).
void record_command_line(int argc, char** argv);
const std::vector<std::string>& command_words();

// Thread stacks, malloc arenas, SIGXFSZ, the SIGBUS exit code (io/signal_cleanup.hpp).
void tune_process();
// Reopens a closed stdin, stdout or stderr on /dev/null; false when stdout was closed.
bool reserve_standard_fds();
// Execs meshrun-mpi (beside this binary) for a run that asks for MPI; returns when it does not
// ask, or when there is no meshrun-mpi (the run then reports MPI as absent).
void exec_mpi_build_if_asked(int argc, char** argv);

}  // namespace meshrun
