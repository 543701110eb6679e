// Which host mpirun (OpenMPI 4.1) places each rank on, computed from its command line before it
// runs (issue 51): meshrun-mpirun names the rank(s) of a host that could not be reached from the
// start, where no rank ever started to say so (docs/hosts.md). Computed only where OpenMPI's
// placement follows from the words alone, as a real mpirun placed them (the cases of
// tests/unit/support/rank_map_test.cpp):
//   - a hostfile (--hostfile/--machinefile FILE) whose every host has `slots=N` (OpenMPI's default
//     for a host without it is that host's core count, not known here), each host on one line;
//     mpirun's own host, when the hostfile names it, comes first, the others in the file's order;
//     a name is kept up to its first dot, as mpirun keeps it ("node4.test" is node4);
//   - mapped by slot (OpenMPI's default, whatever it maps by inside a node; --map-by slot, core,
//     socket, numa, ..., --byslot): each host filled to its slots in the hostfile's order;
//   - -npernode N, --npernode N, -N N, --map-by ppr:N:node, --pernode (N = 1): N ranks a host, in
//     order (N at most each host's slots);
//   - --map-by node, --bynode, every host with the same slots: round robin over the hosts;
//   - -np/-n/-c N, at most the slots there are (without it, every slot: by slot, or N a host).
// Anything else that may change the placement -- --host, a rankfile, --rank-by, --map-by with
// modifiers, more ranks than slots, several applications (`:`), an appfile, --nolocal, an rmaps_
// or ras_ MCA parameter on the line or in the environment (OMPI_MCA_...) -- makes it unknown.
// (An MCA parameter file, ~/.openmpi/mca-params.conf, is not read: one that sets the mapping
// makes the names wrong.)
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace meshrun {

// The host of each rank (index = rank), as the hostfile names it, for mpirun's words `words` (its
// options, up to the program; of the words after it only a `:` is looked for) and environment
// `env` ("NAME=VALUE" each), mpirun run on the host `local` names (its hostname, "localhost",
// its addresses: how OpenMPI tells its own host in a hostfile); nullopt when it cannot be computed
// (above), or the hostfile cannot be read or parsed.
std::optional<std::vector<std::string>> mpirun_rank_hosts(const std::vector<std::string>& words,
                                                          const std::vector<std::string>& env,
                                                          const std::vector<std::string>& local);

}  // namespace meshrun
