#include "support/end_with_parent.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdlib>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace meshrun {

void end_with_parent(pid_t parent) {
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died between the fork and the prctl: then no signal comes.
  if (::getppid() != parent) ::kill(::getpid(), SIGKILL);
#else
  (void)parent;
#endif
}

void end_with_parent_under_mpirun() {
#ifdef __linux__
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr) return;
  // The parent as it is now (orted, or mpirun itself -- PID 1 in a container that starts the
  // job with mpirun): if it changes across the prctl, it died in between and no signal comes.
  // Not "the parent is PID 1", which every rank of `docker run ... mpirun` would take for dead.
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::kill(::getpid(), SIGKILL);
#endif
}

}  // namespace meshrun
