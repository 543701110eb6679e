// CostMeter (cost.hpp).
#include "interp/cost.hpp"

#include <algorithm>
#include <bit>
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

// What one element of a primitive that computes more than its memory traffic counts (issue #31
// again: a file of 29 erf_invs of f32[2^27] was within both budgets, at one flop an element, and
// ran for 47 s). A flop of the budget is one of dot_general's, which the interpreter does at
// about 100 a nanosecond of CPU on the 2-core AMD EPYC the budget was set on (8 chained products
// of f32[1024,1024], 1.7e10 flops, took 0.16 s of user time; bench/results/
// 2026-11-30T23-08Z-programs/table.md has 172-199 GFLOP/s of compute on its two cores); an
// element of such a primitive counts its time in those flops.
inline constexpr std::uint64_t kFlopsPerNs = 100;
struct ElementCost {
  const char* name;
  std::uint64_t ns;  // a bound on one element's time, nanoseconds, rounded up
};
// Nanoseconds an element, the worst over the inputs tried: a throwaway loop o[i] = f(x[i]) over
// 2^20 elements calling scalar_ops.hpp's function (unary.cpp's erf_inv copied), g++ 12 -O2
// -ffp-contract=off, the best of 7 rounds of thread CPU time on that machine. Beside each, the
// figure measured and the inputs that gave it; x in (-1, 1) unless said.
inline constexpr ElementCost kElementCosts[] = {
    // ---- issue #49: XLA's own exp, log, log1p, expm1, erf, erfc (scalar_ops.hpp: a call to the
    // C library's fmaf a multiply-add) and the float math family (ops/float_math.cpp). Measured
    // as below but on a loaded machine (load 11 on 2 cores), then divided by 5.5, tanh's ratio
    // in the same run (52 ns against the 9.4 below), the worst of (-100, 100) and (-1, 1).
    {"lgamma", 61},    // 333 loaded, (-1, 1)
    {"atanh", 33},     // 177 loaded, (-1, 1)
    {"sinh", 30},      // 164 loaded
    {"digamma", 26},   // 141 loaded
    {"cosh", 25},      // 135 loaded
    {"erfc", 18},      // 94.6 loaded
    {"acosh", 17},     // 92.9 loaded
    {"exp", 12},       // 58.4 loaded
    {"exp2", 12},      // exp of x ln 2
    {"logistic", 12},  // 1 / (exp(-x) + 1)
    {"erf", 12},       // 11 fmas in (-3.8, 3.8)
    {"asinh", 12},     // 55.4 loaded
    {"acos", 11},      // 56.9 loaded
    {"asin", 10},      // 48.8 loaded
    {"atan", 10},      // 35.2 loaded; atan2's below
    {"expm1", 10},     // 50.1 loaded
    {"tan", 9},        // 33.2 loaded; range reduction as sin's
    {"log1p", 8},      // 40.3 loaded
    {"log", 8},        // 38.6 loaded
    // ---- end of issue #49's block
    // ---- issue #49, jax.random: Threefry-2x32's 20 rounds per element (ops/random.cpp), 17.0 ns
    // under load 10.4 on 2 cores, 2^20 counters, taken as it is (a bound)
    {"threefry2x32", 17},
    {"random_bits", 17},
    {"random_split", 17},
    {"random_fold_in", 17},
    {"erf_inv", 14},   // 13.2
    {"tanh", 10},      // 9.4; 4.8 for x in (-100, 100)
    {"atan2", 10},     // 9.3
    {"cbrt", 9},       // 8.5 for x in (0.001, 100)
    {"sin", 9},        // 8.0 for |x| up to 1e30 (range reduction); 2.9 in (-1, 1)
    {"cos", 9},        // 8.1 for |x| up to 1e30; 2.9 in (-1, 1)
    {"pow", 5},        // 4.3 for x in (0.001, 100), y in (0.5, 2.3)
    {"sqrt", 4},       // 3.0
    {"rsqrt", 4},      // 3.3
    {"nextafter", 4},  // 3.2
    {"round", 3},      // 2.4
    {"floor", 2},      // 1.2
    {"ceil", 2},       // 1.2
};
// f32 rem is fmod, whose time grows with the exponents' distance: 272 ns an element for x near
// 3.4e38 and y in (0.3, 6.3), 3.8 for x in (-1, 1). (i32 rem is the integer %.)
inline constexpr std::uint64_t kRemF32Ns = 273;
// integer_pow beyond |y| = 3 multiplies by repeated squaring (scalar_ops.hpp), about 0.6 ns a bit
// of |y|: 1.9 ns for y = 5, 17.3 for 2^31 - 1, 36.6 for 2^62 - 1 (checked_y allows |y| <= 2^30).
inline constexpr std::uint64_t kIntegerPowFlopsPerBit = 60;

// The flops one element of `eqn` counts: 1 for a primitive that moves more than it computes (its
// time is its bytes, which the bytes budget bounds), its cost above otherwise.
std::uint64_t flops_per_element(const Eqn& eqn, const std::vector<ValueType>& ops) {
  if (eqn.primitive == "rem")
    return !ops.empty() && ops[0].dtype == DType::kF32 ? kRemF32Ns * kFlopsPerNs : 1;
  if (eqn.primitive == "integer_pow") {
    const std::int64_t y = param_int(eqn, "y");
    const std::uint64_t m =
        y < 0 ? 0 - static_cast<std::uint64_t>(y) : static_cast<std::uint64_t>(y);
    return m > 3 ? kIntegerPowFlopsPerBit * static_cast<std::uint64_t>(std::bit_width(m)) : 1;
  }
  for (const ElementCost& c : kElementCosts)
    if (eqn.primitive == c.name) return c.ns * kFlopsPerNs;
  return 1;
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
                    const std::vector<ValueType>& outs, int devices, std::uint64_t times) {
  std::uint64_t in = 0, out = 0;
  for (const ValueType& t : ops) in = sat_add(in, elements(t.shape));
  for (const ValueType& t : outs) out = sat_add(out, elements(t.shape));
  std::uint64_t flops = sat_mul(std::max(in, out), flops_per_element(eqn, ops));
  if (prim.flops != nullptr) flops = prim.flops(eqn, ops, outs);
  std::uint64_t bytes = sat_mul(4, out);
  if (prim.collective) bytes = sat_add(bytes, sat_mul(4, in));
  const auto n = static_cast<std::uint64_t>(std::max(devices, 1));
  flops_ = sat_add(flops_, sat_mul(sat_mul(flops, n), times));
  bytes_ = sat_add(bytes_, sat_mul(sat_mul(bytes, n), times));
  const auto refuse = [&](std::uint64_t total, std::uint64_t limit, const char* what,
                          const char* flag) {
    throw InputError(eqn.place(),
                     eqn.primitive + " of " + signature(ops, outs) + " on " + std::to_string(n) +
                         (n == 1 ? " device" : " devices") +
                         (times == 1 ? "" : ", " + std::to_string(times) + " times (in loops),") +
                         " brings the program to " +
                         (total == UINT64_MAX ? "more than 2^64" : std::to_string(total)) + " " +
                         what + ", beyond the budget of " + std::to_string(limit) + " (" + flag +
                         " N raises it)");
  };
  if (flops_ > budget_.flops) refuse(flops_, budget_.flops, "flops", "--max-flops");
  if (bytes_ > budget_.bytes) refuse(bytes_, budget_.bytes, "bytes moved", "--max-bytes-moved");
}

void CostMeter::add_overhead(const Eqn& eqn, std::uint64_t flops, const std::string& what) {
  flops_ = sat_add(flops_, flops);
  if (flops_ > budget_.flops) {
    throw InputError(eqn.place(),
                     what + " brings the program to " +
                         (flops_ == UINT64_MAX ? "more than 2^64" : std::to_string(flops_)) +
                         " flops, beyond the budget of " + std::to_string(budget_.flops) +
                         " (--max-flops N raises it)");
  }
}

}  // namespace meshrun::interp
