// What a program run under mpirun checks and does beside the run itself (program/mpi_run.cpp runs
// it): that every rank runs the same command and that mpirun's exit code can carry meshrun's, and
// how a rank that gave up on a peer ends the job.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace meshrun {

// The words after "meshrun" on the command line; main records them first.
void record_command_line(int argc, char** argv);
const std::vector<std::string>& command_words();

#ifdef MESHRUN_HAVE_MPI
class MpiJob;
class Wire;

// PROTOCOL (at setup, before rank 0 reads the case; every rank calls it): every rank sends its
// command words and its host's name (MPI_Get_processor_name) to rank 0 (MpiJob::to_root, bounded
// by the job's bound), which keeps the hosts (rank_hosts). On rank 0, InputError
// naming the first rank whose words differ from rank 0's (an MPMD launch, `mpirun -np 1 meshrun
// A : -np 1 meshrun B`, would run different programs as one mesh), and InputError under
// `mpirun --enable-recovery`, whose exit code is 0 whatever the ranks exit. Returns elsewhere.
void check_launch(MpiJob& job);

// A rank that gave up on a peer (the wait timed out: the peer may be dead, so MPI_Finalize could
// wait for it forever) ends the job with MPI_Abort(code), saying why in one line unless another
// rank already did (MpiJob::tell_reported). Rank 0 says it at once. Rank r > 0 only ever waits
// for rank 0, and says it r - 1 seconds later: the lowest rank still running reports, and the
// later ones find its note. So which rank reports depends on which ranks stopped, not on whose
// wait ended first.
[[noreturn]] void give_up(MpiJob& job, const std::string& message, int code);

// Each rank's host, as check_launch gathered them: rank 0 puts them on the setup it sends every
// rank (put_hosts), the others take them from it (take_hosts); both hand them to set_rank_hosts
// (mpi_runner.hpp), so whichever rank reports a lost peer names its machine too.
void put_hosts(Wire& w);
void take_hosts(Wire& w);

// The verdict for a launcher (app/launch/meshrun-mpirun), which cannot always get it from mpirun's
// exit code (mpirun reports a lost daemon as its own 205, a killed rank as 137): when
// MESHRUN_STATUS_FILE names a file, rank 0 writes there, at setup, one line "host R NAME" per rank,
// and at the end "exit CODE"; a rank that reports a lost peer (give_up) appends its "exit CODE"
// before it ends the job. Best effort: a file that cannot be written is skipped.
void status_hosts();
void status_exit(int code);

// The setup every command across ranks starts with (rank 0 -> all, after check_launch): rank 0
// runs `prepare`, which puts on the setup what the others need (it may throw); the setup carries
// {u64 0, hosts, what prepare put} or {u64 exit code} when check_launch or prepare threw (rank 0
// rethrows, the others end quietly with that code: CLI::RuntimeError). Rank 0 writes the hosts
// to the status file (status_hosts); every rank keeps them (set_rank_hosts). Returns the setup
// on every rank, read past the hosts (rank 0's `prepare` is not called elsewhere).
Wire share_setup(MpiJob& job, const std::function<void(Wire&)>& prepare);

// What rank 0 sends every 5 s while it works alone and the others wait for its next message
// (run_whole_on_ranks evaluating before the shard_map, finish_run grading after the run): each
// of their waits, bounded by the job's bound, sees it alive; a stopped rank 0 is still found
// within the bound. Never an exit code: run_on_job's last wait skips it.
constexpr std::uint64_t kEvaluating = ~std::uint64_t{0};

// A command across the job's ranks, from MPI_Init to MPI_Finalize: `run` on every rank in an
// MpiJob whose waits are bounded by `timeout_s` + 60 s. Every rank ends with rank 0's exit code
// (an Error's, or a CLI::RuntimeError's for an outcome already said), rank 0 alone saying why in
// one line (the others skip the {kEvaluating} rank 0 sends while it grades); a wait that timed out
// (job.broken(): a peer may be dead and MPI_Finalize could wait for it forever) ends the job with
// MPI_Abort instead, the lowest rank still running saying why (give_up) and the status file getting
// the code. Throws CLI::RuntimeError(code) unless 0.
void run_on_job(double timeout_s, const std::function<void(MpiJob&)>& run);
#endif

}  // namespace meshrun
