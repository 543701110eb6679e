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

// A program with equations around its one shard_map (ProgramDef::run_with): rank 0 evaluates
// them on the global arrays; when the evaluation reaches the shard_map it sends every rank the
// call's key (which export, which shard_map, the dimension sizes) and the mesh runs it over the
// ranks as a plain program's body. Protocol, after the setup: rank 0 -> all {kEvaluating} every
// 5 s while it evaluates before the shard_map, then {u64 0, str key} as the shard_map starts,
// {u64 0, ""} when the evaluation ended without one (a program of no shard_map), or {u64 exit
// code} when it failed before one (the others then end with that code). After the shard_map the
// others go on to the job's end and wait there (run_on_job), rank 0 sending {kEvaluating} every
// 5 s again while it computes after the shard_map and grades.
void run_whole_on_ranks(MpiJob& job, const ProgramDef& program, const ProgramFlags& flags,
                        Prepared* p, const MeshShape& mesh, const MeshOptions& options,
                        Trace& trace, std::optional<RunProfile>& profile) {
  const bool profiling = flags.timings || !flags.profile.empty();
  if (p == nullptr) {
    std::uint64_t code = kEvaluating;
    std::optional<Wire> start;
    while (code == kEvaluating) {
      start.emplace(job.from_root(Step::kStart, {}));
      code = start->u64();
    }
    if (code != 0) throw CLI::RuntimeError(static_cast<int>(code));
    const std::string key = start->str();
    if (key.empty()) return;
    const ProgramDef::ShardMapCall call = program.call_of(key);
    mpi_shard_map(job, mesh, call.body, call.in, call.out, {}, options, nullptr, profiling);
    return;
  }
  MpiShardMapResult r;
  bool started = false;
  Keepalive keepalive(job, Step::kStart);
  std::optional<Keepalive> after;  // from the shard_map's end: what follows it, and the grading
  const ProgramDef::RunShardMap over_ranks = [&](const ProgramDef::ShardMapCall& call,
                                                 std::vector<Tensor>& global) {
    keepalive.stop();
    Wire start;
    start.put(std::uint64_t{0});
    start.put(call.key);
    job.from_root(Step::kStart, start.bytes());
    started = true;
    std::vector<TensorRef> refs;
    for (const Tensor& t : global) refs.emplace_back(t);
    r = mpi_shard_map(job, mesh, call.body, call.in, call.out, refs, options, &trace, profiling);
    after.emplace(job, Step::kEnd);
    return std::move(r.outputs);
  };
  std::vector<Tensor> outputs;
  try {
    try {
      outputs = program.run_with(mesh, p->c.input_refs(), over_ranks);
    } catch (const ReplicationError& e) {
      throw replication_input_error(program, e);
    }
  } catch (const Error& e) {
    keepalive.stop();
    if (!started) {  // the others still wait for the shard_map: they end with this code
      Wire stop;
      stop.put(static_cast<std::uint64_t>(exit_code_of(e)));
      job.from_root(Step::kStart, stop.bytes());
    }
    p->trace_out.write(trace_text(trace, nullptr, e.what()));
    profile->save(e.what());
    throw;
  } catch (...) {  // a bug (exit 4): the others end with it too, not on a mistaken message
    keepalive.stop();
    if (!started) {
      Wire stop;
      stop.put(static_cast<std::uint64_t>(kExitInternal));
      job.from_root(Step::kStart, stop.bytes());
    }
    throw;
  }
  keepalive.stop();
  if (!started) {  // no shard_map: the others are done
    Wire none;
    none.put(std::uint64_t{0});
    none.put(std::string());
    job.from_root(Step::kStart, none.bytes());
    r.entered.assign(static_cast<std::size_t>(mesh_devices(mesh)), 0);
    r.unfired = options.injections;
    after.emplace(job, Step::kEnd);  // the others wait at the job's end while this rank grades
  }
  trace.program = program.name;
  finish_run(program, flags, *p, outputs, trace, r.unfired, r.entered, *profile);
}

}  // namespace

// One mesh over the job's ranks (mpi/mpi_shard_map.hpp). Rank 0 reads the case and tells every
// rank the mesh, or the error that stops the run before it starts; only rank 0 prints, and only
// rank 0 opens the --trace and --profile files. --timings and --profile: every device records
// its spans on its own rank, and rank 0 gathers them into its Profile (one track per device).
void run_on_ranks(MpiJob& job, const ProgramDef& program, const ProgramFlags& flags) {
  const bool profiling = flags.timings || !flags.profile.empty();
  Trace trace;  // declared first: the profile's destructor may still read it
  std::optional<RunProfile> profile;
  std::optional<Prepared> p;
  Wire setup = share_setup(job, [&](Wire& w) {
    p.emplace(prepare(program, flags, &trace, &profile));
    check_mpi_mesh(p->mesh, job.ranks());
    if (!program.body && (!program.run_with || program.shard_maps > 1)) {
      throw UnimplementedError(program.summary + " runs " + std::to_string(program.shard_maps) +
                               " shard_maps, which run in one process only (--backend "
                               "inprocess); under mpirun a program runs at most one");
    }
    if (program.check_run) program.check_run(p->mesh, p->c.input_refs());
    w.put(p->mesh);
  });
  const MeshShape mesh = setup.mesh();
  const MeshOptions options = p ? p->options : mesh_options(flags.run);
  MpiShardMapResult r;
  if (profile) profile->mesh_started();
  if (!program.body) {
    run_whole_on_ranks(job, program, flags, p ? &*p : nullptr, mesh, options, trace, profile);
    return;
  }
  try {
    r = mpi_shard_map(job, mesh, program.body, program.inputs, program.outputs,
                      p ? p->c.input_refs() : std::vector<TensorRef>{}, options,
                      p ? &trace : nullptr, profiling);
  } catch (const ReplicationError& e) {
    if (!program.user_program) throw;
    throw replication_input_error(program, e);
  } catch (const Error& e) {
    if (p) {
      p->trace_out.write(trace_text(trace, nullptr, e.what()));
      profile->save(e.what());  // the timeline of a failed run: who waited for whom
    }
    throw;
  }
  if (!p) return;
  trace.program = program.name;
  const Keepalive grading(job, Step::kEnd);  // the others wait in run_on_job's last wait meanwhile
  finish_run(program, flags, *p, r.outputs, trace, r.unfired, r.entered, *profile);
}

// Every rank ends with rank 0's exit code; rank 0 alone says why (run_on_job, mpi_ranks.hpp).
void run_program_mpi(const ProgramDef& program, const ProgramFlags& flags) {
  run_on_job(flags.run.timeout_s, [&](MpiJob& job) { run_on_ranks(job, program, flags); });
}

}  // namespace meshrun
#endif
