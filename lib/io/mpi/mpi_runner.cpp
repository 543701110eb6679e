#include "io/mpi/mpi_runner.hpp"

#include <cstdio>

#include "support/errors.hpp"

namespace meshrun {

void init_mpi_threads(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw InternalError("MPI provides thread level " + std::to_string(provided) +
                        ", the MPI backend needs MPI_THREAD_MULTIPLE");
}

std::string stopped_answering(const TimeoutError& e, const std::string& failure) {
  std::string who;
  for (int r : e.missing()) who += (who.empty() ? "" : ", ") + std::to_string(r);
  who = (e.missing().size() == 1 ? "rank " : "ranks ") + who;
  return who + " stopped answering (stopped, killed or hung): " + e.what() +
         (failure.empty() ? "" : "; the run had failed: " + failure);
}

void abort_job(const std::string& message, int code) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "meshrun: rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace meshrun
