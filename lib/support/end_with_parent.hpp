// A process of a job that ends by itself when the process that started it does (issue 51): the
// kernel's parent-death signal (prctl PR_SET_PDEATHSIG, SIGKILL), which needs neither MPI nor a
// network. A rank whose orted ends -- killed, or killed by its watch (app/launch/meshrun_watch.cpp)
// -- is killed with it, whether it is in MPI_Init, held at a start-up point or computing; and
// orted, started by meshrun-watch, ends when its watch does. Linux only (elsewhere: nothing).
//
// The signal comes when the *thread* that forked the process ends, not the whole parent: OpenMPI
// 4.1's mpirun and orted start their local ranks from their main thread (its event loop), which
// lives as long as they do -- below 32 ranks on a host (odls_base_cutoff); with more, from helper
// threads (odls_base_max_threads), not checked here.
#pragma once

#include <sys/types.h>

namespace meshrun {

// Under mpirun (OMPI_COMM_WORLD_RANK set), else nothing: this process is killed when its parent
// (orted, or mpirun on mpirun's own host) ends; and at once if it has already ended (the parent
// now init, pid 1: it died before the signal was asked for). A plain `meshrun` run from a shell
// is left alone (a shell that exits must not kill a `nohup meshrun ... &`). First thing in main.
void end_with_parent_under_mpirun();

// In a child just forked by `parent`, before its exec: the same, the parent known (a child whose
// getppid() is no longer `parent` is killed at once). The signal survives exec.
void end_with_parent(pid_t parent);

}  // namespace meshrun
