// How many CPUs this process may run on: its affinity mask (sched_getaffinity), not the host's
// core count -- in a 2-CPU cpuset on a 64-core host, hardware_concurrency() says 64 and 8 device
// threads would spin as if each had a core. The collectives' waiting strategy and the mesh's
// pinning both ask here, so they always agree.
#pragma once

#include <vector>

namespace meshrun {

// The CPU ids in the affinity mask, ascending; {} where the platform cannot tell.
std::vector<int> usable_cpu_ids();
// usable_cpu_ids().size(), at least 1.
unsigned usable_cpus();
// The same count from ids usable_cpu_ids() returned: their number, or, when it returned none
// (the platform cannot tell), the host's CPU count, at least 1.
unsigned usable_cpus(const std::vector<int>& ids);

}  // namespace meshrun
