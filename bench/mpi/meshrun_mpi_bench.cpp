// meshrun_mpi_bench: the all-reduce table for a mesh spread over MPI ranks, with the knobs of the
// protocol exposed (--chunk-bytes, --gather-max-bytes) for tuning; users run the same benchmark
// as `mpirun -np R meshrun bench allreduce`:
//
//   mpirun -np 2 --oversubscribe --mca btl self,vader build/release/meshrun_mpi_bench
//
// Exit status: 0; 1 if any element was wrong; 2 for bad flags; 3 if a collective failed (after a
// timeout, when a rank may be dead, the job ends with MPI_Abort).
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "bench/mpi/mpi_bench.hpp"
#include "io/mpi/mpi_job.hpp"
#include "io/mpi/mpi_runner.hpp"
#include "support/errors.hpp"

using namespace meshrun;

int main(int argc, char** argv) {
  bench::AllReduceBenchOptions o;
  MpiOptions mpi;
  double timeout_s = 30;
  CLI::App app("psum across MPI ranks x device threads, in the table of shared/peers");
  app.add_option("--devices", o.devices, "Devices in all (R must divide it)")
      ->capture_default_str();
  app.add_option("--min-bytes", o.min_bytes, "Smallest size (bytes per device)")
      ->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "Largest size (bytes per device)")
      ->capture_default_str();
  app.add_option("--size-budget", o.size_budget_s, "Seconds of timed calls per size")
      ->capture_default_str();
  app.add_option("--total-budget", o.total_budget_s, "Seconds for the whole table")
      ->capture_default_str();
  app.add_option("--timeout", timeout_s, "Bound on every collective wait, seconds")
      ->capture_default_str();
  app.add_option("--chunk-bytes", mpi.chunk_bytes, "Chain path chunk")->capture_default_str();
  app.add_option("--gather-max-bytes", mpi.gather_max_bytes,
                 "Largest gather-path message per device")
      ->capture_default_str();
  init_mpi_threads(&argc, &argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    MPI_Finalize();
    return rc == 0 ? 0 : 2;
  }
  mpi.timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  int code = 0;
  {
    MpiJob job(mpi.timeout + std::chrono::seconds(60));
    try {
      if (bench::run_mpi_allreduce_bench(job, o, mpi, &std::cout).wrong() != 0) code = 1;
    } catch (const InputError& e) {
      if (job.rank() == 0) std::cerr << "meshrun_mpi_bench: " << e.what() << "\n";
      code = 2;
    } catch (const std::exception& e) {
      // A rank that stopped answering: MPI_Finalize could wait for it forever.
      if (job.broken()) abort_job(e.what(), 3);
      if (job.rank() == 0) std::cerr << "meshrun_mpi_bench: " << e.what() << "\n";
      code = 3;
    }
  }
  MPI_Finalize();
  return code;
}
