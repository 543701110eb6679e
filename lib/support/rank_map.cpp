#include "support/rank_map.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

namespace meshrun {

namespace {

struct Host {
  std::string name;
  long slots = 0;
};

std::optional<long> number(std::string_view s) {
  long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  // Beyond 2^16 (slots, ranks, ranks a node) no placement is worked out: a line of the
  // launcher's must not build a list of 10^18 names nor overflow the total.
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > 65536) return std::nullopt;
  return v;
}

// A host's name as mpirun keeps it (orte_keep_fqdn_hostnames false, its default): up to its first
// dot ("node4.test" is node4: checked, it placed rank 1 of "node4.test slots=1, node1.test
// slots=1" on node4), an address whole.
std::string short_name(const std::string& n) {
  const bool address =
      n.find(':') != std::string::npos || n.find_first_not_of("0123456789.") == std::string::npos;
  return address ? n : n.substr(0, n.find('.'));
}

// OpenMPI's hostfile: "HOST [slots=N] [max_slots=M]" a line, '#' to the end of a line a comment.
// nullopt for anything else, a host without slots (its core count), or a host on two lines.
std::optional<std::vector<Host>> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::vector<Host> hosts;
  std::set<std::string> seen;
  for (std::string line; std::getline(in, line);) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    Host h{.name = short_name(name)};
    bool has_slots = false;
    for (std::string w; words >> w;) {
      const auto eq = w.find('=');
      if (eq == std::string::npos) return std::nullopt;
      const std::string key = w.substr(0, eq);
      const auto v = number(std::string_view(w).substr(eq + 1));
      if (!v) return std::nullopt;
      if (key == "slots" || key == "slot" || key == "cpu" || key == "count") {
        h.slots = *v;
        has_slots = true;
      } else if (key != "max_slots" && key != "max-slots") {
        return std::nullopt;
      }
    }
    if (!has_slots || !seen.insert(h.name).second) return std::nullopt;
    hosts.push_back(h);
  }
  if (hosts.empty()) return std::nullopt;
  return hosts;
}

// Whether `word` is one of the space-separated words of `list`.
bool one_of(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const std::size_t space = std::min(list.find(' '), list.size());
    if (list.substr(0, space) == word) return true;
    list.remove_prefix(std::min(space + 1, list.size()));
  }
  return false;
}

// mpirun 4.1's options that take a value (mpirun --help all), without their leading dashes; mca
// and gmca take two.
bool takes_value(const std::string& o) {
  return one_of(
      "am app bind-to c np n cf cartofile cpu-list cpu-set cpus-per-proc cpus-per-rank debugger "
      "default-hostfile H host hnp hostfile launch-agent machinefile map-by max-restarts "
      "max-vm-size N npernode npersocket ompi-server output-filename path personality ppr prefix "
      "preload-files rank-by report-events report-pid report-uri rf rankfile stdin timeout tune "
      "wd wdir x xml-file xterm",
      o);
}

// Options that change the placement in ways not computed here.
bool unknown_placement(const std::string& o) {
  return one_of(
      "app am tune cf cartofile cpu-list cpu-set cpus-per-proc cpus-per-rank default-hostfile H "
      "host hnp dvm npersocket ppr rank-by rf rankfile nolocal bycore",
      o);
}

bool placement_mca(std::string_view name) {
  return name.starts_with("rmaps_") || name.starts_with("ras_") ||
         name == "orte_default_hostfile" || name == "orte_hostfile" ||
         name == "orte_keep_fqdn_hostnames";
}

}  // namespace

std::optional<std::vector<std::string>> mpirun_rank_hosts(const std::vector<std::string>& words,
                                                          const std::vector<std::string>& env,
                                                          const std::vector<std::string>& local) {
  for (const std::string& e : env)
    if (e.starts_with("OMPI_MCA_") &&
        placement_mca(std::string_view(e).substr(
            9, e.find('=') == std::string::npos ? std::string::npos : e.find('=') - 9)))
      return std::nullopt;
  std::optional<long> np, per_node;
  std::string hostfile, policy = "slot";
  bool have_hostfile = false;
  std::size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 2 || w[0] != '-') break;  // the program
    if (w.find('=') != std::string::npos) return std::nullopt;
    const std::string o = w.substr(w[1] == '-' ? 2 : 1);
    const bool two = o == "mca" || o == "gmca";
    const std::size_t values = two ? 2 : takes_value(o) ? 1 : 0;
    if (i + values >= words.size()) return std::nullopt;
    const std::string v = values > 0 ? words[i + 1] : "";
    if (unknown_placement(o)) return std::nullopt;
    if (two && placement_mca(v)) return std::nullopt;
    if (o == "np" || o == "n" || o == "c") {
      np = number(v);
      if (!np) return std::nullopt;
    } else if (o == "hostfile" || o == "machinefile") {
      if (have_hostfile) return std::nullopt;
      hostfile = v;
      have_hostfile = true;
    } else if (o == "npernode" || o == "N") {
      per_node = number(v);
      if (!per_node || *per_node == 0) return std::nullopt;
    } else if (o == "pernode") {
      per_node = 1;
    } else if (o == "bynode") {
      policy = "node";
    } else if (o == "byslot") {
      policy = "slot";
    } else if (o == "map-by") {
      if (v.starts_with("ppr:") && v.ends_with(":node")) {
        per_node = number(std::string_view(v).substr(4, v.size() - 9));
        if (!per_node || *per_node == 0) return std::nullopt;
      } else if (v == "node") {
        policy = "node";
      } else if (one_of("slot hwthread core l1cache l2cache l3cache socket numa board", v)) {
        policy = "slot";
      } else {
        return std::nullopt;
      }
    }
    i += values;
  }
  for (; i < words.size(); ++i)
    if (words[i] == ":") return std::nullopt;  // several applications
  if (!have_hostfile) return std::nullopt;
  auto hosts = read_hostfile(hostfile);
  if (!hosts) return std::nullopt;
  // OpenMPI's node list starts with mpirun's own host (checked: hostfile "node4, node2, node1",
  // mpirun on node1 -> rank 0 on node1).
  const auto here = std::find_if(hosts->begin(), hosts->end(), [&](const Host& h) {
    return std::any_of(local.begin(), local.end(),
                       [&](const std::string& l) { return short_name(l) == h.name; });
  });
  if (here != hosts->end()) std::rotate(hosts->begin(), here, here + 1);
  long total = 0;
  for (const Host& h : *hosts) total += h.slots;
  std::vector<std::string> at;
  if (per_node) {
    const long n = np.value_or(*per_node * static_cast<long>(hosts->size()));
    for (const Host& h : *hosts) {
      if (h.slots < *per_node) return std::nullopt;
      for (long k = 0; k < *per_node && static_cast<long>(at.size()) < n; ++k) at.push_back(h.name);
    }
    if (static_cast<long>(at.size()) != n) return std::nullopt;
    return at;
  }
  const long n = np.value_or(total);
  if (n > total) return std::nullopt;  // oversubscribed: spread as OpenMPI balances it
  if (policy == "node") {
    for (const Host& h : *hosts)
      if (h.slots != hosts->front().slots) return std::nullopt;
    for (long r = 0; r < n; ++r) at.push_back((*hosts)[r % hosts->size()].name);
    return at;
  }
  for (const Host& h : *hosts)
    for (long k = 0; k < h.slots && static_cast<long>(at.size()) < n; ++k) at.push_back(h.name);
  return at;
}

}  // namespace meshrun
