// `meshrun <program> CASE` under mpirun: one mesh over the job's ranks (mpi/mpi_shard_map.hpp).
#ifdef MESHRUN_HAVE_MPI
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

// While rank 0 evaluates what a program computes outside its shard_map (any amount of work: a
// user's equations), the others wait for its next message; it sends {kEvaluating} every
// kKeepalive so each of those waits, bounded by the job's bound, sees it alive. A stopped rank 0
// is then still found within the bound.
constexpr std::uint64_t kEvaluating = ~std::uint64_t{0};  // never an exit code
constexpr auto kKeepalive = std::chrono::seconds(5);

class Keepalive {
 public:
  explicit Keepalive(MpiJob& job)
      : thread_([&job](std::stop_token stop) {
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock lock(m);
          while (true) {
            cv.wait_for(lock, stop, kKeepalive, [] { return false; });
            if (stop.stop_requested()) return;
            try {
              Wire alive;
              alive.put(kEvaluating);
              job.from_root(alive.bytes());
            } catch (...) {  // a peer gone: its own wait, or mpirun, reports it
              return;
            }
          }
        }) {}
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
// others go on to the job's end, whose wait (2 x --timeout + 60 s) bounds what rank 0 computes
// after it.
void run_whole_on_ranks(MpiJob& job, const ProgramDef& program, const ProgramFlags& flags,
                        Prepared* p, const MeshShape& mesh, const MeshOptions& options,
                        Trace& trace, std::optional<RunProfile>& profile) {
  const bool profiling = flags.timings || !flags.profile.empty();
  if (p == nullptr) {
    std::uint64_t code = kEvaluating;
    std::optional<Wire> start;
    while (code == kEvaluating) {
      start.emplace(job.from_root({}));
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
  Keepalive keepalive(job);
  const ProgramDef::RunShardMap over_ranks = [&](const ProgramDef::ShardMapCall& call,
                                                 std::vector<Tensor>& global) {
    keepalive.stop();
    Wire start;
    start.put(std::uint64_t{0});
    start.put(call.key);
    job.from_root(start.bytes());
    started = true;
    std::vector<TensorRef> refs;
    for (const Tensor& t : global) refs.emplace_back(t);
    r = mpi_shard_map(job, mesh, call.body, call.in, call.out, refs, options, &trace, profiling);
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
      job.from_root(stop.bytes());
    }
    p->trace_out.write(trace_text(trace, nullptr, e.what()));
    profile->save(e.what());
    throw;
  } catch (...) {  // a bug (exit 4): the others end with it too, not on a mistaken message
    keepalive.stop();
    if (!started) {
      Wire stop;
      stop.put(static_cast<std::uint64_t>(kExitInternal));
      job.from_root(stop.bytes());
    }
    throw;
  }
  keepalive.stop();
  if (!started) {  // no shard_map: the others are done
    Wire none;
    none.put(std::uint64_t{0});
    none.put(std::string());
    job.from_root(none.bytes());
    r.entered.assign(static_cast<std::size_t>(mesh_devices(mesh)), 0);
    r.unfired = options.injections;
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
  MeshShape mesh;
  if (job.rank() == 0) {
    Wire setup;
    try {
      check_launch(job);
      status_hosts();
      p.emplace(prepare(program, flags, &trace, &profile));
      check_mpi_mesh(p->mesh, job.ranks());
      if (!program.body && (!program.run_with || program.shard_maps > 1)) {
        throw UnimplementedError(program.summary + " runs " + std::to_string(program.shard_maps) +
                                 " shard_maps, which run in one process only (--backend "
                                 "inprocess); under mpirun a program runs at most one");
      }
      if (program.check_run) program.check_run(p->mesh, p->c.input_refs());
    } catch (const Error& e) {
      setup.put(static_cast<std::uint64_t>(exit_code_of(e)));
      job.from_root(setup.bytes());
      throw;
    }
    setup.put(std::uint64_t{0});
    setup.put(p->mesh);
    put_hosts(setup);
    job.from_root(setup.bytes());
    mesh = p->mesh;
  } else {
    check_launch(job);
    Wire setup(job.from_root({}));
    if (const auto code = static_cast<int>(setup.u64())) throw CLI::RuntimeError(code);
    mesh = setup.mesh();
    take_hosts(setup);
  }
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
  finish_run(program, flags, *p, r.outputs, trace, r.unfired, r.entered, *profile);
}

// Every rank ends with rank 0's exit code; rank 0 alone says why. A wait that timed out means a
// peer may be dead (MPI_Finalize could wait for it forever): MPI_Abort ends the job instead, and
// the lowest rank still running says why (give_up, mpi_ranks.hpp).
void run_program_mpi(const ProgramDef& program, const ProgramFlags& flags) {
  init_mpi_threads(nullptr, nullptr);
  // Waits on rank 0's own work (reading the case, grading, printing) get a minute beyond the
  // collectives' timeout.
  const auto timeout =
      std::chrono::milliseconds(static_cast<long>(std::ceil(flags.run.timeout_s * 1000)));
  const auto bound = timeout + std::chrono::seconds(60);
  int code = kExitOk;
  std::string message;
  int rank = 0;
  {
    MpiJob job(bound);
    rank = job.rank();
    try {
      run_on_ranks(job, program, flags);
    } catch (const CLI::RuntimeError& e) {
      code = e.get_exit_code();
    } catch (const TimeoutError& e) {  // a wait of the job's own: on the ranks e names
      code = kExitMesh;
      message = job.broken() ? stopped_answering(e, "") : e.what();
    } catch (const Error& e) {
      code = exit_code_of(e);
      message = e.what();
    } catch (const std::exception& e) {
      code = kExitInternal;
      message = std::string("internal error: ") + e.what();
    }
    // A wait that timed out: a peer may be dead and the code could not reach it. MPI_Abort
    // ends every rank (with mpirun's exit code, not ours).
    if (job.broken()) give_up(job, message, code == kExitOk ? kExitMesh : code);
    // A rank 0 stopped and continued (by the kill after another rank gave up on it) is quiet.
    if (rank == 0 && job.reported_elsewhere()) MPI_Abort(MPI_COMM_WORLD, kExitMesh);
    // Said before the code goes out: mpirun ends the job as soon as one rank exits non-zero.
    if (rank == 0 && !message.empty()) report_error(message);
    try {
      Wire w;
      w.put(static_cast<std::uint64_t>(code));
      // Longer than rank 0 can take to answer, so rank 0 gives up on a stopped peer first: after
      // a failure it gathers outcomes (bounded by the timeout) and answers; after a success its
      // wait for them is bounded by `bound`.
      const auto wait = (code == kExitOk ? bound : timeout) + timeout + std::chrono::seconds(1);
      code = static_cast<int>(Wire(job.from_root(w.bytes(), wait)).u64());
    } catch (const TimeoutError& e) {
      give_up(job, stopped_answering(e, message), code == kExitOk ? kExitMesh : code);
    } catch (const Error& e) {
      give_up(job, e.what(), code == kExitOk ? kExitMesh : code);
    }
  }
  if (rank == 0) status_exit(code);
  MPI_Finalize();
  if (code != kExitOk) throw CLI::RuntimeError(code);
}

}  // namespace meshrun
#endif
