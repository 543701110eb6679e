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
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent's pid is not known here: reparented to init means it died before the prctl.
  if (::getppid() == 1) ::kill(::getpid(), SIGKILL);
#endif
}

}  // namespace meshrun
