// Does OpenMPI crash when one thread frees a communicator while another thread's MPI calls
// progress eager messages arriving for it?
#include <mpi.h>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>
int main(int argc, char** argv) {
  int level = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const int mode = argc > 2 ? atoi(argv[2]) : 0;  // 1: rank 0 leaves the comm unfreed
  std::atomic<bool> stop{false};
  MPI_Comm side;
  MPI_Comm_dup(MPI_COMM_WORLD, &side);
  std::thread watcher([&] {  // progresses, like MpiAbortChannel's watcher
    char b[64];
    MPI_Request r;
    MPI_Irecv(b, 64, MPI_CHAR, MPI_ANY_SOURCE, 0, side, &r);
    while (!stop.load()) {
      int got = 0;
      MPI_Test(&r, &got, MPI_STATUS_IGNORE);
    }
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  });
  float x[5] = {};
  for (int i = 0; i < iters; ++i) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rank != 0) {  // send into c, which rank 0 never receives from and frees at once
      std::vector<MPI_Request> reqs(4);
      for (auto& q : reqs) MPI_Isend(x, 5, MPI_FLOAT, 0, 7, c, &q);
      for (auto& q : reqs) MPI_Request_free(&q);
    }
    if (rank != 0 || mode == 0) MPI_Comm_free(&c);
  }
  stop = true;
  watcher.join();
  MPI_Comm_free(&side);
  if (rank == 0) std::printf("done %d\n", iters);
  MPI_Finalize();
}
