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
    auto is_stalled = [&](int d) { return !stalled_at[static_cast<std::size_t>(d)].empty(); };
    auto at_cause = [&](int d) { return is_stalled(d) || wait_of(d) == 0; };
    const std::vector<std::vector<std::string>> tuples = mesh_axis_tuples(shape);
    std::vector<std::optional<AxisGroups>> layouts(tuples.size());  // those the waits lead to
    // The members of the group device m waits in (w) that are not in the same collective.
    auto blockers_of = [&](int m, std::uint64_t w, std::string& label) {
      const std::size_t tuple = CollectiveWhere::group(w);
      if (!layouts[tuple]) layouts[tuple] = mesh_axis_groups(shape, tuples[tuple]);
      const AxisGroups& set = *layouts[tuple];
      const int group = set.group_of[static_cast<std::size_t>(m)];
      std::vector<int> blockers;
      for (int d = 0; d < size; ++d)
        if (set.group_of[static_cast<std::size_t>(d)] == group && wait_of(d) != w)
          blockers.push_back(d);
      label = collective_label(CollectiveWhere::op(w), CollectiveWhere::seq(w), set.label);
      return blockers;
    };
    auto causes = [&](const std::vector<int>& devices) {
      std::vector<int> stalled, late;
      for (int d : devices) (is_stalled(d) ? stalled : late).push_back(d);
      std::sort(stalled.begin(), stalled.end());
      std::sort(late.begin(), late.end());
      std::string s;
      if (!stalled.empty()) s += list(stalled) + " stalled by --inject; ";
      if (!late.empty())
        s += list(late) + " late: still running the body, a longer --timeout may help; ";
      return s;
    };

    // The waits followed from the members the device missed, each device once, to the devices
    // they end at: stalled and late ones.
    std::string why;  // "4 waiting in psum #1 on 'model' for 6; "
    std::vector<int> chain = e.missing();
    std::vector<int> ends;
    std::vector<bool> seen(static_cast<std::size_t>(size), false);
    seen[static_cast<std::size_t>(failed)] = true;
    for (int m : chain) seen[static_cast<std::size_t>(m)] = true;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const int m = chain[i];
      if (at_cause(m)) {
        ends.push_back(m);
        continue;
      }
      std::string label;
      const std::vector<int> blockers = blockers_of(m, wait_of(m), label);
      for (int d : blockers) {
        if (!seen[static_cast<std::size_t>(d)]) chain.push_back(d);
        seen[static_cast<std::size_t>(d)] = true;
      }
      why += std::to_string(m) + " waiting in " + label +
             (blockers.empty() ? "" : " for " + list(blockers)) + "; ";
    }

    // The headline: the collective at the cause -- one whose missing members are all stalled or
    // late (not waiting elsewhere), among them one the chain ended at; first the one a stalled
    // member stalled at, then the one with the lowest missing members. Its timeout and those it
    // led to (a group that went on to a collective with the blocked devices) fall due at nearly
    // the same moment, and which one a device reaches first is a race; the report is the same
    // whichever it was. Its "timed out after" is the --timeout, not how long that collective
    // itself had waited.
    struct Root {
      bool at_stall = false;
      std::vector<int> blockers;
      std::string label;
    };
    std::optional<Root> root;
    for (int d = 0; d < size && !ends.empty(); ++d) {
      const std::uint64_t w = wait_of(d);
      if (w == 0 || is_stalled(d)) continue;
      std::string label;
      std::vector<int> blockers = blockers_of(d, w, label);
      if (blockers.empty() || !std::ranges::all_of(blockers, at_cause) ||
          std::ranges::none_of(blockers, [&](int b) { return std::ranges::count(ends, b) > 0; }))
        continue;
      const bool at_stall = std::ranges::any_of(blockers, [&](int b) {
        return stalled_at[static_cast<std::size_t>(b)].starts_with(label + " (");
      });
      if (!root || (at_stall && !root->at_stall) ||
          (at_stall == root->at_stall && blockers < root->blockers))
        root = Root{at_stall, std::move(blockers), std::move(label)};
    }
    if (root) {
      std::string root_why = causes(root->blockers);
      root_why.resize(root_why.size() - 2);  // the last "; "
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count();
      return std::make_exception_ptr(
          TimeoutError(root->label + ": timed out after " + std::to_string(ms) + " ms; device(s) " +
                           list(root->blockers) + " never arrived (" + root_why + ")",
                       root->blockers));
    }

    // No such collective (a cycle of waits, say): the device's own timeout and the chain.
    why += causes(ends);
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
