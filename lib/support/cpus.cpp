#include "support/cpus.hpp"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace meshrun {

std::vector<int> usable_cpu_ids() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  const auto count =
      static_cast<std::size_t>(CPU_COUNT(&allowed));  // stop at the last one, not at 1024
  cpus.reserve(count);
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < count; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
#endif
  return cpus;
}

unsigned usable_cpus() { return usable_cpus(usable_cpu_ids()); }

unsigned usable_cpus(const std::vector<int>& ids) {
  if (!ids.empty()) return static_cast<unsigned>(ids.size());
  return std::max(1u, std::thread::hardware_concurrency());  // no affinity API: the host's count
}

}  // namespace meshrun
