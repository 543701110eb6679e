// mpirun_rank_hosts (support/rank_map.hpp): where meshrun-mpirun says mpirun will place each rank,
// before it runs. Every expected placement below is what OpenMPI 4.1.4's mpirun (Debian bookworm)
// really did, run on node1 of 4 network-namespace hosts (tests/hosts/hosts.sh), each rank printing
// its rank and host:
//
//   source tests/hosts/hosts.sh; hosts_up 4; printf '%s\n' HOSTFILE-LINES >$HOSTS_DIR/hf
//   $(hosts_enter 1) mpirun $(hosts_mpirun_args) --hostfile $HOSTS_DIR/hf OPTIONS
//     sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' | sort -n; hosts_down
//
// (the mpirun line one line),
//
// (as root, OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1). The same runs showed
// what is left unknown here: a hostfile without slots= gave node1 and node2 2 ranks each (their
// core count), "node1" on two lines failed ("multiple definitions of the slot count"), -np 9 on 8
// slots failed and -np 10 --oversubscribe balanced 3, 3, 2, 2, and --map-by node over slots
// 1, 3, 2, 1 put rank 5 on node2, not node3.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/rank_map.hpp"

namespace {

using meshrun::mpirun_rank_hosts;
using Words = std::vector<std::string>;

struct Dir {
  std::filesystem::path path;
  Dir() {
    char tmpl[] = "/tmp/rank_map_test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  // A hostfile of these lines; its path.
  std::string hostfile(const Words& lines) {
    const auto p = path / ("hf" + std::to_string(++n));
    std::ofstream out(p);
    for (const auto& l : lines) out << l << '\n';
    return p.string();
  }
  int n = 0;
};

const Words kEven{"node1 slots=2", "node2 slots=2", "node3 slots=2", "node4 slots=2"};
const Words kUneven{"node1 slots=1", "node2 slots=3", "node3 slots=2", "node4 slots=1"};
const Words kLocal{"node1", "localhost", "10.77.0.1"};  // mpirun on node1

// The placement as "node1 node1 node2 ..." ("unknown" for nullopt), for mpirun's words
// `--hostfile HF OPTIONS... meshrun mlp-train c.json`.
std::string placed(Dir& d, const Words& hostfile, const std::string& options,
                   const Words& env = {}) {
  Words words{
      "--mca", "btl", "tcp,self", "-x", "MESHRUN_STATUS_FILE", "--hostfile", d.hostfile(hostfile)};
  std::istringstream in(options);
  for (std::string w; in >> w;) words.push_back(w);
  for (const char* w : {"/build/meshrun", "mlp-train", "c.json", "--timeout", "3"})
    words.push_back(w);
  const auto hosts = mpirun_rank_hosts(words, env, kLocal);
  if (!hosts) return "unknown";
  std::string s;
  for (const auto& h : *hosts) s += (s.empty() ? "" : " ") + h;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(by_slot_fills_each_host_in_the_hostfiles_order) {
  Dir d;
  BOOST_TEST(placed(d, kEven, "-np 8") == "node1 node1 node2 node2 node3 node3 node4 node4");
  BOOST_TEST(placed(d, kEven, "-np 5") == "node1 node1 node2 node2 node3");
  BOOST_TEST(placed(d, kEven, "-np 2") == "node1 node1");
  BOOST_TEST(placed(d, kEven, "-np 3") == "node1 node1 node2");
  BOOST_TEST(placed(d, kUneven, "-np 7") == "node1 node2 node2 node2 node3 node3 node4");
  BOOST_TEST(placed(d, kUneven, "-np 4") == "node1 node2 node2 node2");
  BOOST_TEST(placed(d, {"node1 slots=1", "node2 slots=1", "node3 slots=1", "node4 slots=1"},
                    "-np 4") == "node1 node2 node3 node4");
  BOOST_TEST(placed(d, kEven, "-np 4 --map-by slot") == "node1 node1 node2 node2");
  BOOST_TEST(placed(d, kEven, "-np 8 --map-by core") ==
             "node1 node1 node2 node2 node3 node3 node4 node4");
  BOOST_TEST(placed(d, kEven, "-np 6 --map-by socket") == "node1 node1 node2 node2 node3 node3");
  BOOST_TEST(placed(d, kEven, "-np 7 --map-by numa") ==
             "node1 node1 node2 node2 node3 node3 node4");
}

BOOST_AUTO_TEST_CASE(comments_blank_lines_and_max_slots_are_read_as_mpirun_reads_them) {
  Dir d;
  BOOST_TEST(placed(d,
                    {"# the test hosts", "node1 slots=2   # rank 0's", "",
                     "node2 slots=2 max_slots=4", "node3 slots=2", "node4 slots=2"},
                    "-np 8 --map-by node") == "node1 node2 node3 node4 node1 node2 node3 node4");
}

BOOST_AUTO_TEST_CASE(mpiruns_own_host_comes_first) {
  Dir d;
  BOOST_TEST(placed(d, {"node4 slots=1", "node2 slots=2", "node1 slots=1"}, "-np 4") ==
             "node1 node4 node2 node2");
  // Names with a domain: mpirun keeps them up to the first dot (orte_keep_fqdn_hostnames).
  BOOST_TEST(placed(d, {"node4.test slots=1", "node1.test slots=1", "node2.test slots=2"},
                    "-np 4") == "node1 node4 node2 node2");
  BOOST_TEST(placed(d, {"node4.test slots=1", "node2 slots=2", "node1 slots=1"}, "-np 4") ==
             "node1 node4 node2 node2");
  BOOST_TEST(placed(d, kEven, "-np 4 --mca orte_keep_fqdn_hostnames 1") == "unknown");
  // Addresses, whole (not run: the test hosts' rsh agent takes names only).
  BOOST_TEST(placed(d, {"10.77.0.4 slots=1", "10.77.0.1 slots=1"}, "-np 2") ==
             "10.77.0.1 10.77.0.4");
  BOOST_TEST(placed(d, {"10.77.0.4 slots=1", "10.77.0.10 slots=1"}, "-np 2") ==
             "10.77.0.4 10.77.0.10");
}

BOOST_AUTO_TEST_CASE(by_node_is_round_robin_over_hosts_of_equal_slots) {
  Dir d;
  BOOST_TEST(placed(d, kEven, "-np 5 --map-by node") == "node1 node2 node3 node4 node1");
  // Unequal slots: OpenMPI balances by their share (rank 5 went to node2), not computed here.
  BOOST_TEST(placed(d, kUneven, "-np 6 --map-by node") == "unknown");
}

BOOST_AUTO_TEST_CASE(n_per_node_places_that_many_on_each_host_in_order) {
  Dir d;
  BOOST_TEST(placed(d, kEven, "-np 4 -npernode 1") == "node1 node2 node3 node4");
  BOOST_TEST(placed(d, kEven, "-np 6 --npernode 2") == "node1 node1 node2 node2 node3 node3");
  BOOST_TEST(placed(d, kEven, "-np 4 --map-by ppr:1:node") == "node1 node2 node3 node4");
  BOOST_TEST(placed(d, kEven, "-np 3 -N 1") == "node1 node2 node3");
  BOOST_TEST(placed(d, kEven, "-np 4 --pernode") == "node1 node2 node3 node4");
}

BOOST_AUTO_TEST_CASE(what_cannot_be_computed_is_unknown) {
  Dir d;
  // No slots=: each host's core count (2 here: node1 node1 node2 node2), unknown before the run.
  BOOST_TEST(placed(d, {"node1", "node2", "node3", "node4"}, "-np 4") == "unknown");
  BOOST_TEST(placed(d, {"node1 slots=2", "node3 slots=1", "node1 slots=1"}, "-np 3") ==
             "unknown");                                                // mpirun refuses it
  BOOST_TEST(placed(d, kEven, "-np 9") == "unknown");                   // mpirun refuses it
  BOOST_TEST(placed(d, kEven, "-np 10 --oversubscribe") == "unknown");  // 3 3 2 2
  BOOST_TEST(placed(d, kEven, "-np 4 --rank-by node") == "unknown");
  BOOST_TEST(placed(d, kEven, "-np 4 --map-by node:PE=2") == "unknown");
  BOOST_TEST(placed(d, kEven, "-np 4 --host node1,node2") == "unknown");
  BOOST_TEST(placed(d, kEven, "-np 4 --mca rmaps_base_mapping_policy node") == "unknown");
  BOOST_TEST(placed(d, kEven, "-np 4", {"OMPI_MCA_rmaps_base_mapping_policy=node"}) == "unknown");
  BOOST_TEST(placed(d, kEven, "-np 4 --nolocal") == "unknown");
  BOOST_TEST(placed(d, {"node1 slots=2 weird"}, "-np 2") == "unknown");
  // No hostfile at all, or one that cannot be read.
  BOOST_TEST(!mpirun_rank_hosts({"-np", "2", "meshrun"}, {}, kLocal));
  BOOST_TEST(
      !mpirun_rank_hosts({"--hostfile", "/nonexistent/hf", "-np", "2", "meshrun"}, {}, kLocal));
  // Several applications.
  BOOST_TEST(!mpirun_rank_hosts(
      {"--hostfile", d.hostfile(kEven), "-np", "2", "meshrun", ":", "-np", "2", "meshrun"}, {},
      kLocal));
  // Without -np: every slot.
  BOOST_TEST(placed(d, {"node1 slots=1", "node2 slots=1"}, "") == "node1 node2");
  // Numbers past 2^16: no list of 10^18 names is built, no total overflows.
  BOOST_TEST(placed(d, {"node1 slots=999999999999999999", "node2 slots=1"}, "") == "unknown");
  BOOST_TEST(placed(d, kEven, "-np 100000") == "unknown");
}
