// `meshrun <program> CASE` under mpirun: the command's setup, rank 0's run on a RootEngine and the
// others' share of each of its shard_map calls (lib/io/mpi/mpi_engine.hpp), and the job's end
// (mpi_command.hpp).
#ifdef MESHRUN_HAVE_MPI
#include <optional>
#include <vector>

#include "exit_codes.hpp"
#include "io/mpi/mpi_command.hpp"
#include "io/mpi/mpi_engine.hpp"
#include "process.hpp"
#include "program/run.hpp"
#include "support/errors.hpp"

namespace meshrun {

namespace {

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
  const SetupMessage setup = share_setup(job, command_words(), [&] {
    p.emplace(prepare(program, flags, &trace, &profile));
    // --inject against the mesh, as one process's Mesh checks it before the run: here the first
    // call's would, and a run of no call has none.
    { const Mesh probe(p->mesh, p->options); }
    // A program of no shard_map (a plain jit, on a mesh of one device) runs on rank 0 alone, the
    // others waiting for its end: any number of ranks runs it.
    if (computation.shard_maps() > 0) check_mpi_mesh(p->mesh, job.ranks());
    computation.check(p->mesh, p->c.input_refs());
    return p->mesh;
  });
  const MeshShape& mesh = setup.mesh;
  const MeshOptions options = p ? p->options : mesh_options(flags.run);
  if (profile) profile->mesh_started();
  if (!p) {
    run_share(job, program, mesh, options, profiling);
    return;
  }
  RootEngine engine(job, mesh, options, trace, profiling);
  trace.program = program.name;  // before the run, as in one process: a failed run's trace too
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
  finish_run(program, flags, *p, outputs, trace, r.unfired, r.entered, *profile);
}

}  // namespace

// Every rank ends with rank 0's exit code; rank 0 alone says why (run_on_job, mpi_command.hpp).
void run_program_mpi(const ProgramDef& program, const ProgramFlags& flags) {
  run_on_job(flags.run.timeout_s, [&](MpiJob& job) { run_on_ranks(job, program, flags); });
}

}  // namespace meshrun
#endif
