// What a program run under mpirun checks and does beside the run itself (program/mpi_run.cpp runs
// it): that every rank runs the same command and that mpirun's exit code can carry meshrun's, and
// how a rank that gave up on a peer ends the job.
#pragma once

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
#endif

}  // namespace meshrun
