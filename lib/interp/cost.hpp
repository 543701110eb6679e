// The compute a program file may ask for, bounded before anything runs (issue #31): a file of
// 24 dot_generals of f32[4096,4096] (3.3e12 flops) passed every element budget and ran for
// minutes. check_export (eval.hpp) adds every equation's cost, from its inferred types, to a
// CostMeter, which refuses the one that brings the program beyond the budget.
#pragma once

#include <cstdint>
#include <vector>

#include "interp/ir.hpp"
#include "interp/primitives.hpp"

namespace meshrun::interp {

// Bounds on compute, checked on the inferred types before a run (check_export), summed over the
// program's equations on every device of a body: flops (dot_general 2 x its multiply-adds, every
// other primitive one per element of its larger side, operands or results, times its weight: an
// element's time in dot_general flops for the transcendentals, f32 rem and integer_pow, cost.cpp
// says how each was measured; 1 for the rest, whose time is their bytes) and bytes moved (4
// per element of every result, and of every collective's operands, which cross between devices).
// The defaults admit every shipped case and program and `meshrun bench programs`' big sizes (about
// 3e9 flops) a hundredfold; --max-flops and --max-bytes-moved raise them.
inline constexpr std::uint64_t kDefaultMaxFlops = std::uint64_t{1} << 38;       // 2.7e11
inline constexpr std::uint64_t kDefaultMaxBytesMoved = std::uint64_t{1} << 34;  // 16 GiB
// What one iteration of a scan or while costs beyond its body's work, in flops: the evaluator's
// own time per equation of the body and per iteration (of the order of 100 ns), so that a scan of
// 10^9 trivial steps is refused before it runs rather than interpreted for minutes.
inline constexpr std::uint64_t kIterationFlops = 10000;
// A while's trip count is known only as it runs: it may take this many iterations at most.
inline constexpr std::uint64_t kDefaultMaxWhileIterations = std::uint64_t{1} << 20;
struct CostBudget {
  std::uint64_t flops = kDefaultMaxFlops;
  std::uint64_t bytes = kDefaultMaxBytesMoved;
  std::uint64_t max_while_iterations = kDefaultMaxWhileIterations;
};

// The program's cost so far; add() throws InputError(eqn.place(), ...) naming the equation, its
// types, the total and the flag that raises the budget once the total is beyond it. Saturating
// arithmetic: a cost beyond 2^64 is beyond every budget, never a wrapped small one.
class CostMeter {
 public:
  explicit CostMeter(const CostBudget& budget) : budget_(budget) {}
  // One equation of primitive `prim` and types `ops` -> `outs`, on `devices` devices (1 outside
  // a shard_map body), `times` over (inside loops: the product of their trip counts): the
  // primitive's flops and whether its operands cross devices.
  void add(const Eqn& eqn, const Primitive& prim, const std::vector<ValueType>& ops,
           const std::vector<ValueType>& outs, int devices, std::uint64_t times = 1);
  // A loop's own cost beyond its body's (kIterationFlops per equation and iteration), `what`
  // naming it in a refusal ("scan of 1000000000 iterations of 3 equations").
  void add_overhead(const Eqn& eqn, std::uint64_t flops, const std::string& what);
  std::uint64_t flops() const { return flops_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  CostBudget budget_;
  std::uint64_t flops_ = 0, bytes_ = 0;
};

}  // namespace meshrun::interp
