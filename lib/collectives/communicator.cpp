#include "collectives/communicator.hpp"

#include <string>

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

}  // namespace meshrun
