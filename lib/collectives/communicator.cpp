#include "collectives/communicator.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "support/errors.hpp"

namespace meshrun {

const char* op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "psum";
    case CollectiveOp::kAllReduceMean:
      return "pmean";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "psum_scatter";
    case CollectiveOp::kPermute:
      return "ppermute";
    case CollectiveOp::kAllReduceMax:
      return "pmax";
    case CollectiveOp::kAllReduceMin:
      return "pmin";
  }
  return "?";
}

std::string collective_label(std::string_view op, std::uint64_t seq) {
  std::string s(op);
  s += " #";
  s += std::to_string(seq);
  return s;
}

std::string collective_label(CollectiveOp op, std::uint64_t seq) {
  return collective_label(op_name(op), seq);
}

std::string collective_label(CollectiveOp op, std::uint64_t seq, std::string_view group) {
  std::string s = collective_label(op, seq);
  s += " on '";
  s += group;
  s += '\'';
  return s;
}

std::uint64_t permutation_hash(std::span<const int> source_of) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (int v : source_of) h = (h ^ static_cast<std::uint32_t>(v)) * 1099511628211ull;
  return h;
}

std::string IndexGroups::invalid(const std::vector<std::vector<int>>& groups, int n) {
  if (groups.empty()) return "no groups";
  std::vector<int> seen(static_cast<std::size_t>(std::max(n, 0)), 0);
  for (const std::vector<int>& g : groups) {
    if (g.size() != groups.front().size()) {
      return "groups of " + std::to_string(groups.front().size()) + " and " +
             std::to_string(g.size()) + " members (they must be of one size)";
    }
    for (int r : g) {
      if (r < 0 || r >= n)
        return "member " + std::to_string(r) + " is not in [0, " + std::to_string(n) + ")";
      if (seen[static_cast<std::size_t>(r)]++ != 0)
        return "member " + std::to_string(r) + " is in two groups";
    }
  }
  for (int r = 0; r < n; ++r)
    if (seen[static_cast<std::size_t>(r)] == 0)
      return "member " + std::to_string(r) + " is in no group";
  return "";
}

IndexGroups::IndexGroups(std::vector<std::vector<int>> groups, int n)
    : groups_(std::move(groups)),
      subgroup_of_(static_cast<std::size_t>(n), -1),
      position_(static_cast<std::size_t>(n), -1) {
  MESHRUN_CHECK(invalid(groups_, n).empty(), "IndexGroups: not a partition into equal groups");
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, a group's end marked by -1
  for (std::size_t s = 0; s < groups_.size(); ++s) {
    for (std::size_t p = 0; p < groups_[s].size(); ++p) {
      const auto r = static_cast<std::size_t>(groups_[s][p]);
      subgroup_of_[r] = static_cast<int>(s);
      position_[r] = static_cast<int>(p);
      h = (h ^ static_cast<std::uint32_t>(groups_[s][p])) * 1099511628211ull;
    }
    h = (h ^ 0xffffffffu) * 1099511628211ull;
  }
  hash_ = h | 1;
}

std::string IndexGroups::str() const {
  std::string s = "[";
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    s += g ? ",[" : "[";
    for (std::size_t p = 0; p < groups_[g].size(); ++p)
      (s += p ? "," : "") += std::to_string(groups_[g][p]);
    s += "]";
  }
  return s + "]";
}

void Communicator::unimplemented(CollectiveOp op) const {
  throw UnimplementedError(std::string(engine()) + " does not implement " + op_name(op));
}

void Communicator::all_reduce_sum(std::span<const float>, std::span<float>) {
  unimplemented(CollectiveOp::kAllReduce);
}

void Communicator::all_reduce_mean(std::span<const float>, std::span<float>) {
  unimplemented(CollectiveOp::kAllReduceMean);
}

void Communicator::all_reduce_max(std::span<const float>, std::span<float>) {
  unimplemented(CollectiveOp::kAllReduceMax);
}

void Communicator::all_reduce_min(std::span<const float>, std::span<float>) {
  unimplemented(CollectiveOp::kAllReduceMin);
}

void Communicator::all_gather(std::span<const float>, std::span<float>) {
  unimplemented(CollectiveOp::kAllGather);
}

void Communicator::reduce_scatter_sum(std::span<const float>, std::span<float>) {
  unimplemented(CollectiveOp::kReduceScatter);
}

void Communicator::permute(std::span<const float>, std::span<float>, std::span<const int>) {
  unimplemented(CollectiveOp::kPermute);
}

void Communicator::grouped(CollectiveOp op, const IndexGroups&, std::span<const float>,
                           std::span<float>) {
  unimplemented(op);
}

}  // namespace meshrun
