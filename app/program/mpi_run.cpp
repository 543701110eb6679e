// `meshrun <program> CASE` under mpirun: one mesh over the job's ranks (mpi/mpi_shard_map.hpp).
#ifdef MESHRUN_HAVE_MPI
#include <pthread.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include <CLI/CLI.hpp>

#include "exit_codes.hpp"
#include "io/compare.hpp"
#include "io/file_set.hpp"
#include "io/result_writer.hpp"
#include "program/run.hpp"
#include "support/errors.hpp"
#include "io/mpi/mpi_runner.hpp"
#include "io/mpi/mpi_shard_map.hpp"
#include "program/mpi_ranks.hpp"

namespace meshrun {

namespace {

// While rank 0 works alone -- evaluates what a program computes outside its shard_map (any
// amount of work: a user's equations), or grades the run (the rules that run the program again)
// -- the others wait for its next message; it sends {kEvaluating} (mpi_ranks.hpp) every
// kKeepalive so each of those waits, bounded by the job's bound, sees it alive. A stopped rank 0
// is then still found within the bound. The keepalive is a message of the step those waits are
// at: kStart before the shard_map, kEnd after it.
constexpr auto kKeepalive = std::chrono::seconds(5);

class Keepalive {
 public:
  Keepalive(MpiJob& job, Step step)
      : thread_([&job, step](std::stop_token stop) {
#if defined(__linux__)
          // Named for top -H and gdb (and the hosts' fault test's cue for rank 0's phase).
          pthread_setname_np(pthread_self(),
                             step == Step::kStart ? "meshrun-eval" : "meshrun-after");
#endif
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock(m);
          while (true) {
            cv.wait_for(lock, stop, kKeepalive, [] { return false; });
            if (stop.stop_requested()) return;
            try {
              Wire alive;
              alive.put(kEvaluating);
              job.from_root(step, alive.bytes());
            } catch (...) {  // a peer gone: its own wait, or mpirun, reports it
              return;
            }
          }
        }) {
  }
  // Joined before rank 0 sends anything else, so the messages keep their order.
  void stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }
  ~Keepalive() { stop(); }

 private:
  std::jthread thread_;
};

// Rank 0's engine: the program runs on rank 0, on the global arrays, and hands its shard_map here
// (a program runs at most one under mpirun). Protocol, after the setup: rank 0 -> all
// {kEvaluating} every 5 s while it evaluates what a program file computes before its shard_map,
// then {u64 0, str key} as the shard_map starts (the key names the call: Computation::call), and
// the mesh runs the call over the ranks (mpi_shard_map); {u64 0, ""} when the run ended without a
// shard_map, or {u64 exit code} when it failed before one (the others then end with that code).
// After the shard_map the others go on to the job's end and wait there (run_on_job), rank 0
// sending {kEvaluating} every 5 s again while it computes after the shard_map and grades.
class RootEngine final : public Engine {
 public:
  RootEngine(MpiJob& job, const MeshShape& mesh, const MeshOptions& options, Trace& trace,
             bool profiling)
      : job_(job), mesh_(mesh), options_(options), trace_(trace), profiling_(profiling) {}

  const MeshShape& shape() const override { return mesh_; }

  std::vector<Tensor> shard_map(const ShardMapCall& call,
                                const std::vector<TensorRef>& global) override {
    MESHRUN_CHECK(!started_, "mpirun: a second shard_map in one run");
    keepalive_.stop();
    Wire start;
    start.put(std::uint64_t{0});
    start.put(call.key);
    job_.from_root(Step::kStart, start.bytes());
    started_ = true;
    result_ = mpi_shard_map(job_, mesh_, call.body, call.in, call.out, global, options_, &trace_,
                            profiling_);
    after_.emplace(job_, Step::kEnd);
    return std::move(result_.outputs);
  }

  // The run failed with `code`: before its shard_map, the others still wait for it and end with
  // this code instead.
  void failed(int code) {
    keepalive_.stop();
    if (started_) return;
    Wire stop;
    stop.put(static_cast<std::uint64_t>(code));
    job_.from_root(Step::kStart, stop.bytes());
  }

  // The run ended. Without a shard_map, the others are done (they wait at the job's end while
  // this rank grades). Returns what the shard_map left: the injections that never fired, and each
  // device's count of collectives.
  const MpiShardMapResult& ended() {
    keepalive_.stop();
    if (!started_) {
      Wire none;
      none.put(std::uint64_t{0});
      none.put(std::string());
      job_.from_root(Step::kStart, none.bytes());
      result_.entered.assign(static_cast<std::size_t>(mesh_devices(mesh_)), 0);
      result_.unfired = options_.injections;
      after_.emplace(job_, Step::kEnd);
    }
    return result_;
  }

 private:
  MpiJob& job_;
  const MeshShape mesh_;
  const MeshOptions& options_;
  Trace& trace_;
  const bool profiling_;
  Keepalive keepalive_{job_, Step::kStart};
  std::optional<Keepalive> after_;  // from the shard_map's end: what follows it, and the grading
  bool started_ = false;
  MpiShardMapResult result_;
};

// A rank other than 0: waits for rank 0's run to reach its shard_map and runs its own devices'
// share of the call rank 0 names (RootEngine's protocol).
void run_share(MpiJob& job, const ProgramDef& program, const MeshShape& mesh,
               const MeshOptions& options, bool profiling) {
  std::uint64_t code = kEvaluating;
  std::optional<Wire> start;
  while (code == kEvaluating) {
    start.emplace(job.from_root(Step::kStart, {}));
    code = start->u64();
  }
  if (code != 0) throw CLI::RuntimeError(static_cast<int>(code));
  const std::string key = start->str();
  if (key.empty()) return;
  const ShardMapCall call = program.computation->call(key);
  mpi_shard_map(job, mesh, call.body, call.in, call.out, {}, options, nullptr, profiling);
}

}  // namespace

// One mesh over the job's ranks (mpi/mpi_shard_map.hpp). Rank 0 reads the case and tells every
// rank the mesh, or the error that stops the run before it starts; only rank 0 prints, and only
// rank 0 opens the --trace and --profile files. --timings and --profile: every device records
// its spans on its own rank, and rank 0 gathers them into its Profile (one track per device).
void run_on_ranks(MpiJob& job, const ProgramDef& program, const ProgramFlags& flags) {
  const bool profiling = flags.timings || !flags.profile.empty();
  const Computation& computation = *program.computation;
  Trace trace;  // declared first: the profile's destructor may still read it
  std::optional<RunProfile> profile;
  std::optional<Prepared> p;
  Wire setup = share_setup(job, [&](Wire& w) {
    p.emplace(prepare(program, flags, &trace, &profile));
    check_mpi_mesh(p->mesh, job.ranks());
    if (computation.shard_maps() > 1) {
      throw UnimplementedError(program.summary + " runs " +
                               std::to_string(computation.shard_maps()) +
                               " shard_maps, which run in one process only (--backend "
                               "inprocess); under mpirun a program runs at most one");
    }
    computation.check(p->mesh, p->c.input_refs());
    w.put(p->mesh);
  });
  const MeshShape mesh = setup.mesh();
  const MeshOptions options = p ? p->options : mesh_options(flags.run);
  if (profile) profile->mesh_started();
  if (!p) {
    run_share(job, program, mesh, options, profiling);
    return;
  }
  RootEngine engine(job, mesh, options, trace, profiling);
  std::vector<Tensor> outputs;
  try {
    outputs = run_program(engine, program, p->c.input_refs());
  } catch (const Error& e) {
    engine.failed(exit_code_of(e));
    p->trace_out.write(trace_text(trace, nullptr, e.what()));
    profile->save(e.what());  // the timeline of a failed run: who waited for whom
    throw;
  } catch (...) {  // a bug (exit 4): the others end with it too, not on a mistaken message
    engine.failed(kExitInternal);
    throw;
  }
  const MpiShardMapResult& r = engine.ended();
  trace.program = program.name;
  finish_run(program, flags, *p, outputs, trace, r.unfired, r.entered, *profile);
}

// Every rank ends with rank 0's exit code; rank 0 alone says why (run_on_job, mpi_ranks.hpp).
void run_program_mpi(const ProgramDef& program, const ProgramFlags& flags) {
  run_on_job(flags.run.timeout_s, [&](MpiJob& job) { run_on_ranks(job, program, flags); });
}

}  // namespace meshrun
#endif
