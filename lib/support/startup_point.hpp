// The moments of an MPI rank's start-up (issue 51), where a rank run by meshrun-mpirun tells the
// launcher's watch (app/launch/meshrun_watch.cpp) how far it got, and where the host tests hold it
// to strike a fault there (tests/hosts/startup_test.sh). In the order a rank meets them:
//   "exec"    meshrun, about to exec meshrun-mpi (before MPI exists in the process)
//   "init"    meshrun-mpi, about to call MPI_Init
//   "up"      MPI_Init returned
//   "groups"  about to create the mesh's groups (the first shard_map)
//   "after"   the groups created
// Each does nothing outside a job of meshrun-mpirun (no MESHRUN_WATCH) and no test hook.
#pragma once

#include <string>

namespace meshrun {

// A non-blocking TCP connection to the numeric address `addr` (IPv4 or IPv6), port `port`, made
// within `wait_ms`; -1 when `addr` is not numeric or none was made. (The notes below, and
// meshrun-watch's connection to its server.)
int connect_numeric(const std::string& addr, int port, int wait_ms);

// Under mpirun (OMPI_COMM_WORLD_RANK set), the first time each moment is reached:
//  - with MESHRUN_WATCH ("ID PORT ADDR[,ADDR...]", set by meshrun-mpirun), one line "rank ID R N
//    HOST MOMENT" to the launcher's watch over TCP (each address tried for at most 1 s; best
//    effort: a watch that cannot be reached is skipped);
//  - the test hook: when MESHRUN_HOOK_DIR is set, MESHRUN_HOOK_RANK is this rank and
//    MESHRUN_HOOK_AT is `moment`, the file DIR/MOMENT is written (this process's pid), then, if
//    the fifo DIR/MOMENT.go exists, the rank waits until a writer has opened and closed it.
void startup_point(const char* moment);

}  // namespace meshrun
