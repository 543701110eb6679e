// Why a run failed, as the mesh alone can tell: the error Mesh::run reports.
#include <algorithm>
#include <optional>
#include <string>

#include "mesh/mesh_impl.hpp"
#include "shard/topology.hpp"
#include "support/errors.hpp"

namespace meshrun {

// The error run() reports for device `failed`'s, with what only the mesh knows: for a timeout,
// which missing devices were stalled (--inject), which were only late (still in their body, e.g.
// not scheduled on an oversubscribed machine) and which were waiting in a collective of another
// group -- followed to the members that group waited for, down to the stalled and late ones, the
// cause; for a stall that ended the run, every device that stalled, not just the first to give up.
// Only where this process runs every device of the mesh: elsewhere the other processes' devices
// cannot be followed, and the error is reported as the device saw it.
std::exception_ptr Mesh::Impl::explain(int failed) const {
  std::exception_ptr error = errors[static_cast<std::size_t>(failed)];  // returned, moved
  if (local != size) return error;  // from here on, every device is here: local index = index
  auto list = [](const std::vector<int>& devices) {
    std::string s;
    for (int d : devices) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return s;
  };
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    const std::vector<std::uint64_t>& waits = waits_at_timeout[static_cast<std::size_t>(failed)];
    auto wait_of = [&](int d) {
      return static_cast<std::size_t>(d) < waits.size() ? waits[static_cast<std::size_t>(d)] : 0;
    };
    const std::vector<std::vector<std::string>> tuples = mesh_axis_tuples(shape);
    std::vector<std::optional<AxisGroups>> layouts(tuples.size());  // those the waits lead to
    std::vector<int> stalled, late;
    std::string why;                       // "4 waiting in psum #1 on 'model' for 6; "
    std::vector<int> chain = e.missing();  // grows as waits are followed; each device once
    std::vector<bool> seen(static_cast<std::size_t>(size), false);
    seen[static_cast<std::size_t>(failed)] = true;
    for (int m : chain) seen[static_cast<std::size_t>(m)] = true;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const int m = chain[i];
      const std::uint64_t w = wait_of(m);
      if (!stalled_at[static_cast<std::size_t>(m)].empty()) {
        stalled.push_back(m);
      } else if (w == 0) {
        late.push_back(m);
      } else {  // waiting for the members of its group that were not in the same collective
        const std::size_t tuple = CollectiveWhere::group(w);
        if (!layouts[tuple]) layouts[tuple] = mesh_axis_groups(shape, tuples[tuple]);
        const AxisGroups& set = *layouts[tuple];
        const int group = set.group_of[static_cast<std::size_t>(m)];
        std::vector<int> blockers;
        for (int d = 0; d < size; ++d) {
          if (set.group_of[static_cast<std::size_t>(d)] != group || wait_of(d) == w) continue;
          blockers.push_back(d);
          if (!seen[static_cast<std::size_t>(d)]) chain.push_back(d);
          seen[static_cast<std::size_t>(d)] = true;
        }
        why += std::to_string(m) + " waiting in " +
               collective_label(CollectiveWhere::op(w), CollectiveWhere::seq(w), set.label) +
               (blockers.empty() ? "" : " for " + list(blockers)) + "; ";
      }
    }
    std::sort(stalled.begin(), stalled.end());
    std::sort(late.begin(), late.end());
    if (!stalled.empty()) why += list(stalled) + " stalled by --inject; ";
    if (!late.empty())
      why += list(late) + " late: still running the body, a longer --timeout may help; ";
    if (why.size() >= 2) why.resize(why.size() - 2);  // the last "; "
    return std::make_exception_ptr(
        TimeoutError(e.what() + std::string(" (") + why + ")", e.missing()));
  } catch (const CollectiveError&) {
    // A stall that ended the run (nobody else waited): name every device that stalled.
    std::vector<int> stalled;
    std::string where;
    for (std::size_t d = 0; d < stalled_at.size(); ++d) {
      if (stalled_at[d].empty()) continue;
      stalled.push_back(static_cast<int>(d));
      where += (where.empty() ? "" : "; ") + std::to_string(d) + " at " + stalled_at[d];
    }
    if (stalled.size() < 2 || stalled_at[static_cast<std::size_t>(failed)].empty()) return error;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count();
    return std::make_exception_ptr(CollectiveError("devices " + list(stalled) + " stalled (" +
                                                   where + ") and never arrived; gave up after " +
                                                   std::to_string(ms) + " ms"));
  } catch (...) {
  }
  return error;
}

}  // namespace meshrun
