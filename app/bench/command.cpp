// `meshrun bench allreduce`: flags only; the benchmark itself (sizes, timing, verification, the
// table and JSON) lives in lib/bench.
#include "cli.hpp"

#include "bench/allreduce_bench.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "flag_checks.hpp"
#include "io/output.hpp"
#include "progress.hpp"
#include "support/errors.hpp"

#include <chrono>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <exception>
#include <ostream>
#include <sstream>

#ifdef MESHRUN_HAVE_MPI
#include <mpi.h>

#include "bench/mpi/mpi_bench.hpp"
#include "io/mpi/mpi_command.hpp"
#include "process.hpp"
#endif

namespace meshrun {

namespace {

#ifdef MESHRUN_HAVE_MPI
// Rank 0's table goes to the checked stdout a row at a time (each row ends with std::endl, which
// syncs): a write that fails is kept and reported once the ranks are done, as exit 6.
class StdoutRows : public std::stringbuf {
 public:
  std::exception_ptr error;

 protected:
  int sync() override {
    if (!error) {
      try {
        write_stdout(str());
      } catch (const OutputError&) {
        error = std::current_exception();
      }
    }
    str("");
    return 0;
  }
};
#endif

// `mpirun -np R meshrun bench allreduce`: the same table for the devices spread over R ranks
// (lib/bench/mpi/mpi_bench.hpp), printed by rank 0, which also says what went wrong. A command
// across ranks as a program's run is (run_on_job, share_setup: lib/io/mpi/mpi_command.hpp): every
// wait bounded, a lost rank named with its host, every rank ending with rank 0's code.
void run_mpi_bench(const bench::AllReduceBenchOptions& o, double timeout_s) {
#ifdef MESHRUN_HAVE_MPI
  run_on_job(timeout_s, [&](MpiJob& job) {
    share_setup(job, command_words(), [] { return MeshShape{}; });
    MpiOptions mpi;
    mpi.timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    StdoutRows rows;
    std::ostream out(&rows);
    const bench::BenchResult result = bench::run_mpi_allreduce_bench(job, o, mpi, &out);
    out.flush();
    if (rows.error) std::rethrow_exception(rows.error);  // exit 6
    if (result.wrong() != 0) {
      report_error("bench allreduce: some element(s) differed from the expected result");
      throw ExitWith(kExitDiffers);
    }
  });
#else
  (void)o;
  (void)timeout_s;
  throw InputError("--backend",
                   "this meshrun was built without MPI (apt-get install libopenmpi-dev "
                   "and rebuild); --backend inprocess runs one process");
#endif
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* bench =
      app.add_subcommand("bench", "Benchmarks (tables in the format of shared/peers)");
  bench->require_subcommand(1);
  add_bench_programs_command(*bench);

  struct Flags {
    bench::AllReduceBenchOptions options;
    std::string op = "psum";
    std::string backend = "auto";
    double timeout_s = 30;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* ar = bench->add_subcommand(
      "allreduce",
      "Time one collective over N devices, 4 B to 64 MiB per device; results are "
      "verified before timing and the exit status is 1 if any element was wrong");
  ar->add_option("--devices", flags->options.devices, "Devices on the mesh axis")
      ->transform(decimal_integer(1, 1024))
      ->capture_default_str();
  // Decimal, from 1: CLI11 alone read "-1" as 2^64 - 1 ("--min-bytes: is larger than --max-bytes").
  ar->add_option("--min-bytes", flags->options.min_bytes,
                 "Smallest size to time (bytes per device)")
      ->transform(decimal_integer(1, std::numeric_limits<long>::max()))
      ->capture_default_str();
  ar->add_option("--max-bytes", flags->options.max_bytes, "Largest size to time (bytes per device)")
      ->transform(decimal_integer(1, std::numeric_limits<long>::max()))
      ->capture_default_str();
  ar->add_option("--op", flags->op,
                 "Collective: psum, pmean, pmax, pmin, all_gather or psum_scatter")
      ->check(CLI::IsMember({"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter"}))
      ->capture_default_str();
  ar->add_option("--groups", flags->options.groups,
                 "Run the op over axis_index_groups of this many devices each, interleaved "
                 "([[0, n/K, ...], [1, ...], ...]); 0: the whole axis")
      ->transform(decimal_integer(0, 1024))
      ->capture_default_str();
  // Finite: CLI11's PositiveNumber let "nan" through (no comparison with NaN fails).
  ar->add_option("--size-budget", flags->options.size_budget_s, "Seconds of timed calls per size")
      ->check(finite_real(0.001, 86400.0, " seconds"))
      ->capture_default_str();
  ar->add_option("--total-budget", flags->options.total_budget_s, "Seconds for the whole table")
      ->check(finite_real(0.001, 86400.0, " seconds"))
      ->capture_default_str();
  ar->add_flag("--json", flags->options.json, "One JSON document instead of the table");
  ar->add_flag("--no-pin{false}", flags->options.pin_devices,
               "Leave device threads unpinned even when they outnumber the CPUs");
  ar->add_option("--backend", flags->backend,
                 "auto (mpi when started by mpirun), inprocess, or mpi: the devices spread over "
                 "the job's ranks, devices/R threads each (psum only)")
      ->check(CLI::IsMember({"auto", "inprocess", "mpi"}))
      ->capture_default_str();
  ar->add_option("--timeout", flags->timeout_s, "Across ranks: bound on every wait, seconds")
      ->check(finite_real(1.0, 86400.0, " seconds"))
      ->capture_default_str();
  ar->callback([flags] {
    bench::AllReduceBenchOptions o = flags->options;
    o.op = bench::parse_bench_op(flags->op);
    if (use_mpi(flags->backend)) {
      // Every rank parsed the same flags: rank 0 says what is refused, the others exit quietly.
      const bool quiet = quiet_rank();
      auto refuse = [quiet](const std::string& flag, const std::string& why) {
        if (quiet) throw ExitWith(kExitOk);  // rank 0 says it and exits 2 (main.cpp)
        throw InputError(flag, why);
      };
      if (flags->op != "psum") refuse("--op", "across ranks only psum is timed, not " + flags->op);
      if (o.json) refuse("--json", "not available across ranks yet; the table is printed");
      if (o.groups != 0) refuse("--groups", "not available across ranks yet");
      try {
        bench::check_size_range(o);
      } catch (const InputError&) {
        if (quiet) throw ExitWith(kExitOk);
        throw;
      }
      run_mpi_bench(o, flags->timeout_s);
      return;
    }
    Progress progress("bench allreduce", bench::planned_sizes(o), "sizes");
    std::uint64_t wrong_so_far = 0;
    o.on_row = [&](std::size_t done, std::size_t, const bench::BenchRow& row) {
      wrong_so_far += row.wrong;
      progress.update(
          done, std::to_string(wrong_so_far) + " wrong, last " + std::to_string(row.bytes) + " B");
    };
    // The table goes to the checked stdout, as a program's result does (a full disk or a closed
    // stdout is exit 6), with the progress line erased before each row and drawn again after.
    const bench::BenchResult result = bench::run_allreduce_bench(o, [&](const std::string& lines) {
      progress.clear();
      write_stdout(lines);
      progress.redraw();
    });
    progress.clear();
    if (const std::uint64_t wrong = result.wrong(); wrong != 0) {
      report_error("bench allreduce: " + std::to_string(wrong) +
                   " element(s) differed from the expected result");
      throw ExitWith(kExitDiffers);
    }
  });
}

}  // namespace meshrun
