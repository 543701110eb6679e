// `meshrun bench allreduce`: flags only; the benchmark itself (sizes, timing, verification, the
// table and JSON) lives in lib/bench.
#include "bench/allreduce_bench.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "io/output.hpp"
#include "progress.hpp"

namespace meshrun {

void add_bench_command(CLI::App& app) {
  CLI::App* bench =
      app.add_subcommand("bench", "Benchmarks (tables in the format of shared/peers)");
  bench->require_subcommand(1);
  add_bench_programs_command(*bench);

  struct Flags {
    bench::AllReduceBenchOptions options;
    std::string op = "psum";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* ar = bench->add_subcommand(
      "allreduce",
      "Time one collective over N devices, 4 B to 64 MiB per device; results are "
      "verified before timing and the exit status is 1 if any element was wrong");
  ar->add_option("--devices", flags->options.devices, "Devices on the mesh axis")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  ar->add_option("--min-bytes", flags->options.min_bytes,
                 "Smallest size to time (bytes per device)")
      ->capture_default_str();
  ar->add_option("--max-bytes", flags->options.max_bytes, "Largest size to time (bytes per device)")
      ->capture_default_str();
  ar->add_option("--op", flags->op, "Collective: psum, pmean, all_gather or psum_scatter")
      ->check(CLI::IsMember({"psum", "pmean", "all_gather", "psum_scatter"}))
      ->capture_default_str();
  ar->add_option("--size-budget", flags->options.size_budget_s, "Seconds of timed calls per size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  ar->add_option("--total-budget", flags->options.total_budget_s, "Seconds for the whole table")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  ar->add_flag("--json", flags->options.json, "One JSON document instead of the table");
  ar->add_flag("--no-pin{false}", flags->options.pin_devices,
               "Leave device threads unpinned even when they outnumber the CPUs");
  ar->callback([flags] {
    bench::AllReduceBenchOptions o = flags->options;
    o.op = bench::parse_bench_op(flags->op);
    Progress progress("bench allreduce", bench::planned_sizes(o), "sizes");
    std::uint64_t wrong_so_far = 0;
    o.on_row = [&](std::size_t done, std::size_t, const bench::BenchRow& row) {
      wrong_so_far += row.wrong;
      progress.update(done, std::to_string(wrong_so_far) + " wrong, last " +
                                std::to_string(row.bytes) + " B");
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
      throw CLI::RuntimeError(kExitDiffers);
    }
  });
}

}  // namespace meshrun
