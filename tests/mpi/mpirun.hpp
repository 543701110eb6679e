// The MPI CLI tests' helpers: meshrun under `mpirun` (loopback, shared memory, as root where CI
// runs as root: the environment comes from ctest), its own lines on stderr, and the processes of
// its ranks.
#pragma once

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

namespace meshrun::testing {

// R, from MESHRUN_RANKS (one ctest entry per R, see CMakeLists.txt).
inline int ranks() {
  const char* r = std::getenv("MESHRUN_RANKS");
  return r ? std::atoi(r) : 2;
}

// `mpirun ... -np R meshrun`, `extra` (mpirun's flags) before -np.
inline RunOptions mpirun_options(int np, const std::vector<std::string>& extra = {}) {
  RunOptions o;
  o.command = {MESHRUN_MPIEXEC, "--oversubscribe",    "--mca", "btl", "self,vader",
               "--mca",         "oob_tcp_if_include", "lo"};
  o.command.insert(o.command.end(), extra.begin(), extra.end());
  o.command.insert(o.command.end(), {"-np", std::to_string(np), kBinary});
  return o;
}

inline Result mpirun(const std::vector<std::string>& args) {
  return run_with(args, mpirun_options(ranks()));
}

// The lines meshrun printed on stderr (mpirun adds its own report of the exit code).
inline std::vector<std::string> meshrun_lines(const std::string& err) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < err.size()) {
    const std::size_t end = std::min(err.find('\n', at), err.size());
    if (err.compare(at, 9, "meshrun: ") == 0) lines.push_back(err.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// The process of MPI rank `rank` among the children of `mpirun` (0 if there is none yet).
inline pid_t rank_process(pid_t mpirun, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = slurp(e.path().string() + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;  // after ") S ": the state, then the parent's pid
    if (std::sscanf(stat.c_str() + close + 1, " %*c %d", &ppid) != 1 || ppid != mpirun) continue;
    std::string env = slurp(e.path().string() + "/environ");
    for (std::size_t at = 0; at < env.size();) {
      const std::size_t end = std::min(env.find('\0', at), env.size());
      if (env.compare(at, end - at, want) == 0) return std::stoi(name);
      at = end + 1;
    }
  }
  return 0;
}

inline std::size_t threads_of(pid_t pid) {
  std::error_code ec;
  std::size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end;
       !ec && it != end; it.increment(ec))
    ++n;
  return n;
}

// Rank `rank`'s process once its device threads run (k of them, beside MPI's own), within 20 s;
// 0 if it never got there.
inline pid_t running_rank(pid_t mpirun, int rank, int np) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const std::size_t k = 8 / static_cast<std::size_t>(np);
  while (std::chrono::steady_clock::now() < until) {
    const pid_t p = rank_process(mpirun, rank);
    if (p != 0 && threads_of(p) >= k + 3) return p;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return 0;
}

}  // namespace meshrun::testing
