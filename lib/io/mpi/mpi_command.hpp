// A command across an MPI job's ranks, from MPI_Init to MPI_Finalize: the launch check, the setup
// rank 0 shares, the job's end with rank 0's exit code on every rank, and how a rank that gave up
// on a peer ends the job. The messages are job_messages.hpp's; a program's run between setup and
// end is mpi_engine.hpp's.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "io/mpi/job_messages.hpp"
#include "io/mpi/mpi_job.hpp"

namespace meshrun {

// PROTOCOL (at setup, before rank 0 reads the case; every rank calls it): every rank sends its
// command words and its host's name (MPI_Get_processor_name) to rank 0 (LaunchMessage, bounded
// by the job's bound), which keeps the hosts (rank_hosts). On rank 0, InputError naming the first
// rank whose words differ from rank 0's (an MPMD launch, `mpirun -np 1 meshrun A : -np 1 meshrun
// B`, would run different programs as one mesh), and InputError under `mpirun
// --enable-recovery`, whose exit code is 0 whatever the ranks exit. Returns elsewhere.
void check_launch(MpiJob& job, const std::vector<std::string>& words);

// A rank that gave up on a peer (the wait timed out: the peer may be dead, so MPI_Finalize could
// wait for it forever) ends the job with MPI_Abort(code), saying why in one line unless another
// rank already did (MpiJob::tell_reported). Rank 0 says it at once. Rank r > 0 only ever waits
// for rank 0, and says it r - 1 seconds later: the lowest rank still running reports, and the
// later ones find its note. So which rank reports depends on which ranks stopped, not on whose
// wait ended first.
[[noreturn]] void give_up(MpiJob& job, const std::string& message, int code);

// The verdict for a launcher (app/launch/meshrun-mpirun), which cannot always get it from mpirun's
// exit code (mpirun reports a lost daemon as its own 205, a killed rank as 137): when
// MESHRUN_STATUS_FILE names a file, rank 0 writes there, at setup, one line "host R NAME" per rank,
// and at the end "exit CODE"; a rank that reports a lost peer (give_up) appends its "exit CODE"
// before it ends the job. Best effort: a file that cannot be written is skipped.
void status_hosts();
void status_exit(int code);

// The setup every command across ranks starts with (rank 0 -> all, after check_launch of
// `words`): rank 0 runs `prepare`, which returns the run's mesh (empty for a command without one;
// it may throw); the SetupMessage carries the hosts and that mesh, or the exit code when
// check_launch or prepare threw (rank 0 rethrows, the others end quietly with that code:
// ExitWith). Rank 0 writes the hosts to the status file (status_hosts); every rank keeps them
// (set_rank_hosts, so whichever rank reports a lost peer names its machine too). Returns the
// setup on every rank (rank 0's `prepare` is not called elsewhere).
SetupMessage share_setup(MpiJob& job, const std::vector<std::string>& words,
                         const std::function<MeshShape()>& prepare);

// `run` on every rank in an MpiJob whose waits are bounded by `timeout_s` + 60 s. Every rank ends
// with rank 0's exit code (an Error's, or an ExitWith's for an outcome already said), rank 0
// alone saying why in one line (the others skip the EndMessage{alive} rank 0 sends while it
// grades); a wait that timed out (job.broken(): a peer may be dead and MPI_Finalize could wait
// for it forever) ends the job with MPI_Abort instead, the lowest rank still running saying why
// (give_up) and the status file getting the code. Throws ExitWith(code) unless 0.
void run_on_job(double timeout_s, const std::function<void(MpiJob&)>& run);

}  // namespace meshrun
