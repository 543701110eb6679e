// mpi_allreduce_groups.cpp - OpenMPI's counterpart of `meshrun bench allreduce --groups K`:
// MPI_Allreduce(MPI_SUM, MPI_FLOAT) on sub-communicators of K ranks each, interleaved as meshrun's
// bench lists its axis_index_groups (group s = ranks s, s + n/K, s + 2n/K, ..., ranked in that
// order: MPI_Comm_split with color r % (n/K), key r / (n/K)), all groups at once. The method and
// table are ../shared/peers' (common.hpp), as its mpi_allreduce.cpp; participants = K, busbw by K.
//
//   mpicxx -O2 -std=c++20 -I../shared/peers mpi_allreduce_groups.cpp -o mpi_allreduce_groups
//   mpirun --oversubscribe -np 8 ./mpi_allreduce_groups --only 4
#include <mpi.h>

#include <string>

#include "common.hpp"

using namespace peers;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Options o = parse_options(argc, argv);
  const int k = o.only.empty() ? n : std::stoi(o.only);
  if (k < 1 || n % k != 0) {
    if (rank == 0) std::fprintf(stderr, "--only K: K must divide the %d ranks\n", n);
    MPI_Finalize();
    return 2;
  }
  const int count = n / k;
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, rank % count, rank / count, &group);
  const double t_start = MPI_Wtime();
  if (rank == 0)
    print_header("mpi_allreduce_groups", o.variant + "/groups=" + std::to_string(k), k,
                 "groups=" + std::to_string(count) + "x" + std::to_string(k));

  for (size_t elems : kSizes) {
    if (elems > o.max_elems) break;
    const size_t bytes = elems * sizeof(float);
    std::vector<float> sbuf(elems), rbuf(elems, 0.0f);
    for (size_t e = 0; e < elems; ++e) sbuf[e] = test_value(rank, e);

    MPI_Allreduce(sbuf.data(), rbuf.data(), (int)elems, MPI_FLOAT, MPI_SUM, group);
    long bad = 0;
    for (size_t e = 0; e < elems; ++e) {
      float want = 0.0f;  // integer-valued: exact in any order
      for (int p = 0; p < k; ++p) want += test_value(rank % count + p * count, e);
      bad += rbuf[e] != want;
    }
    long bad_all = 0;
    MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (bad_all != 0) {
      if (rank == 0) print_stop(elems, "WRONG RESULT");
      break;
    }

    const int w = warmup_iters(bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < w; ++i)
      MPI_Allreduce(sbuf.data(), rbuf.data(), (int)elems, MPI_FLOAT, MPI_SUM, group);
    double tw = (MPI_Wtime() - t0) / w, tw_max = 0;
    MPI_Allreduce(&tw, &tw_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int iters = 0;
    if (rank == 0) iters = plan_iters(tw_max, bytes, o, o.total_budget_s - (MPI_Wtime() - t_start));
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (iters == 0) {
      if (rank == 0) print_stop(elems, "would exceed the total time budget");
      break;
    }

    std::vector<double> times(iters), sum(iters);
    MPI_Barrier(MPI_COMM_WORLD);
    double T0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      double a = MPI_Wtime();
      MPI_Allreduce(sbuf.data(), rbuf.data(), (int)elems, MPI_FLOAT, MPI_SUM, group);
      times[i] = MPI_Wtime() - a;
    }
    double wall = MPI_Wtime() - T0, wall_max = 0;
    MPI_Reduce(times.data(), sum.data(), iters, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wall, &wall_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::vector<double> us(iters);
      for (int i = 0; i < iters; ++i) us[i] = sum[i] / n * 1e6;  // the mean over all n ranks
      print_row(elems, us, wall_max, k);
    }
  }
  MPI_Comm_free(&group);
  MPI_Finalize();
  return 0;
}
