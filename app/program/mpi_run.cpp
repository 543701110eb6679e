// `meshrun <program> CASE` under mpirun: one mesh over the job's ranks (mpi/mpi_shard_map.hpp).
#ifdef MESHRUN_HAVE_MPI
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

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
      if (!program.body) {
        throw UnimplementedError(program.summary +
                                 " computes outside its shard_map, which runs "
                                 "in one process only (--backend inprocess)");
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
