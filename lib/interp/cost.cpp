// CostMeter (cost.hpp).
#include "interp/cost.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
std::uint64_t elements(const Shape& s) {
  std::uint64_t n = 1;
  for (std::size_t d : s) n = sat_mul(n, d);
  return n;
}

// "f32[4,8], f32[8,2] -> f32[4,2]": an equation's types, for the message.
std::string signature(const std::vector<ValueType>& ops, const std::vector<ValueType>& outs) {
  std::string s;
  for (const ValueType& t : ops) s += (s.empty() ? "" : ", ") + type_str(t);
  s += " ->";
  for (std::size_t i = 0; i < outs.size(); ++i) s += (i ? ", " : " ") + type_str(outs[i]);
  return s;
}

}  // namespace

void CostMeter::add(const Eqn& eqn, const Primitive& prim, const std::vector<ValueType>& ops,
                    const std::vector<ValueType>& outs, int devices) {
  std::uint64_t in = 0, out = 0;
  for (const ValueType& t : ops) in = sat_add(in, elements(t.shape));
  for (const ValueType& t : outs) out = sat_add(out, elements(t.shape));
  std::uint64_t flops = std::max(in, out);
  if (prim.flops != nullptr) flops = prim.flops(eqn, ops, outs);
  std::uint64_t bytes = sat_mul(4, out);
  if (prim.collective) bytes = sat_add(bytes, sat_mul(4, in));
  const auto n = static_cast<std::uint64_t>(std::max(devices, 1));
  flops_ = sat_add(flops_, sat_mul(flops, n));
  bytes_ = sat_add(bytes_, sat_mul(bytes, n));
  const auto refuse = [&](std::uint64_t total, std::uint64_t limit, const char* what,
                          const char* flag) {
    throw InputError(eqn.place(),
                     eqn.primitive + " of " + signature(ops, outs) + " on " + std::to_string(n) +
                         (n == 1 ? " device" : " devices") + " brings the program to " +
                         (total == UINT64_MAX ? "more than 2^64" : std::to_string(total)) + " " +
                         what + ", beyond the budget of " + std::to_string(limit) + " (" + flag +
                         " N raises it)");
  };
  if (flops_ > budget_.flops) refuse(flops_, budget_.flops, "flops", "--max-flops");
  if (bytes_ > budget_.bytes) refuse(bytes_, budget_.bytes, "bytes moved", "--max-bytes-moved");
}

}  // namespace meshrun::interp
