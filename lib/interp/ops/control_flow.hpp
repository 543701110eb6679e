// Control flow: `scan` (lax.scan, and fori_loop with static bounds), `while` (lax.while_loop,
// fori_loop with traced bounds) and `cond` (lax.cond, lax.switch), inside and outside shard_map
// bodies. Each is a compiled step (compiled.hpp's Step::Kind::kControl) that holds its jaxprs
// compiled once at load; a run evaluates them with the one evaluator (eval.hpp), iteration after
// iteration, so a collective inside a loop body is the same collective as anywhere else: rank-order
// folds, bounded waits, a mismatch named.
//
// What each runs (docs/program-format.md#control-flow):
//   scan   operands consts ++ carries ++ xs; for i in 0..length-1 (length-1..0 with reverse):
//          carries, y_i = body(consts, carries, x_i); results carries ++ ys (the y_i stacked).
//   while  operands cond consts ++ body consts ++ carries; while cond(cond consts, carries):
//          carries = body(body consts, carries); results the carries. At most
//          CostBudget::max_while_iterations iterations (its trip count is unknown before it runs).
//   cond   operands index ++ args; results branches[index](args); an index outside the branches is
//          refused (lax.switch clamps it before: the equation JAX writes never is).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "interp/primitives.hpp"
#include "interp/value.hpp"

namespace meshrun::interp {

struct CompiledJaxpr;
struct CompiledShardMap;

struct ControlPlan {
  Primitive::Control kind = Primitive::Control::kNone;
  // scan: length, reverse, num_consts, num_carry; while: cond_nconsts, body_nconsts.
  std::int64_t length = 0, num_consts = 0, num_carry = 0;
  bool reverse = false;
  std::int64_t cond_nconsts = 0, body_nconsts = 0;
  std::string param_error;  // a malformed param, reported by check_export at the equation
  std::vector<const CompiledJaxpr*> bodies;  // owned by the enclosing CompiledJaxpr's subs
};

// The plan's params from `eqn` (never throws: a malformed one is left in param_error).
void read_control_params(const Eqn& eqn, ControlPlan& plan);

// The result types of a control equation on operands of types `ops`, checking each of its jaxprs
// with `body(jaxpr, operand types, times)` -- the checker's own walk, which returns the jaxpr's
// result types and counts its cost `times` over (a scan's length). PrimitiveError for what does
// not fit (a carry whose type changes, a cond of branches of other result types).
using BodyChecker = std::function<std::vector<ValueType>(
    const CompiledJaxpr& body, const std::vector<ValueType>& ops, std::uint64_t times)>;
std::vector<ValueType> control_infer(const ControlPlan& plan, const Eqn& eqn,
                                     std::span<const ValueType> ops, const BodyChecker& body);

// Runs a control equation on its operands (moved in); `run` evaluates one of its jaxprs.
using BodyRunner =
    std::function<std::vector<Value>(const CompiledJaxpr& body, std::vector<Value> args)>;
std::vector<Value> control_eval(const ControlPlan& plan, const Eqn& eqn, std::vector<Value> in,
                                const PrimContext& ctx, const BodyRunner& run);

// A forward analysis through a control equation (the grading's data flow, rules.cpp and
// held.cpp): `body(jaxpr, facts of its operands)` gives the facts of its results, `join(a, b)`
// merges two facts (a union), `guard(fact, predicate)` adds to a result what a while's predicate or
// a cond's index decides (control dependence). A loop's carries are joined with what its body makes
// of them until they stop changing (at most kMaxRounds rounds: a fixpoint for facts that only grow
// and are bounded, as a union of input bits or an element count capped by the value's size),
// so a value that reaches the carry only in a later iteration counts; a cond's results are the
// union over its branches. A scan runs `length` rounds at most -- its trip count: an accumulator
// gains what `length` iterations add, not more (a scan of length 1 is its body once). A loop
// still changing after kMaxRounds (a buffer that gains a row an iteration, over more iterations
// than that) has its carries extended: a scan's by `extend(before, after, n)`, the change of its
// last round n more times (the growth of its remaining iterations, when each adds the same), a
// while's (whose trip count is unknown) by `widen(fact)`, the most the fact can say (every element
// count at its largest); then its bodies run once more on them, so that every value inside is
// seen with what it may hold at the end. Params it cannot read (check_export refuses them) give
// every result the union of every operand.
template <class Fact, class Body, class Join, class Guard, class Widen, class Extend>
std::vector<Fact> control_facts(const Eqn& e, const std::vector<Fact>& ops, std::size_t results,
                                Body body, Join join, Guard guard, Widen widen, Extend extend) {
  constexpr std::int64_t kMaxRounds = 64;
  const Primitive* prim = find_primitive(e.primitive);
  const auto all = [&] {
    Fact u{};
    for (const Fact& f : ops) u = join(u, f);
    return std::vector<Fact>(results, u);
  };
  const auto part = [&](std::size_t from, std::size_t to) {
    return std::vector<Fact>(ops.begin() + static_cast<std::ptrdiff_t>(std::min(from, ops.size())),
                             ops.begin() + static_cast<std::ptrdiff_t>(std::min(to, ops.size())));
  };
  const auto join_all = [&](std::vector<Fact>& into, const std::vector<Fact>& from) {
    bool changed = false;
    for (std::size_t k = 0; k < into.size() && k < from.size(); ++k) {
      Fact j = join(into[k], from[k]);
      changed = changed || !(j == into[k]);
      into[k] = std::move(j);
    }
    return changed;
  };
  ControlPlan p;
  p.kind = prim != nullptr ? prim->control : Primitive::Control::kNone;
  read_control_params(e, p);
  if (!p.param_error.empty()) return all();
  switch (p.kind) {
    case Primitive::Control::kScan: {
      const Jaxpr* jx = e.sub("jaxpr");
      const auto nc = static_cast<std::size_t>(p.num_consts);
      const auto nk = static_cast<std::size_t>(p.num_carry);
      if (jx == nullptr || nc + nk > ops.size()) return all();
      std::vector<Fact> carry = part(nc, nc + nk), outs;
      const auto once = [&] {
        std::vector<Fact> in = part(0, nc);
        in.insert(in.end(), carry.begin(), carry.end());
        const std::vector<Fact> xs = part(nc + nk, ops.size());
        in.insert(in.end(), xs.begin(), xs.end());
        return body(*jx, in);
      };
      bool stable = false;
      std::vector<Fact> before = carry;
      std::int64_t rounds = 0;
      for (; rounds < std::min(p.length, kMaxRounds) && !stable; ++rounds) {
        before = carry;
        outs = once();
        stable = !join_all(carry, outs);
      }
      if (!stable && rounds < p.length) {
        for (std::size_t k = 0; k < carry.size(); ++k)
          carry[k] = extend(before[k], carry[k], static_cast<std::uint64_t>(p.length - rounds));
        outs = once();
      }
      // A scan of length 0 ran no round: its carries are its initial ones, its ys empty.
      outs.resize(std::max(outs.size(), results));
      for (std::size_t k = 0; k < nk && k < outs.size(); ++k) outs[k] = carry[k];
      outs.resize(results);
      return outs;
    }
    case Primitive::Control::kWhile: {
      const Jaxpr* cj = e.sub("cond_jaxpr");
      const Jaxpr* bj = e.sub("body_jaxpr");
      const auto cn = static_cast<std::size_t>(p.cond_nconsts);
      const auto bn = static_cast<std::size_t>(p.body_nconsts);
      if (cj == nullptr || bj == nullptr || cn + bn > ops.size()) return all();
      std::vector<Fact> carry = part(cn + bn, ops.size());
      Fact pred{};
      const auto once = [&] {
        std::vector<Fact> cin = part(0, cn);
        cin.insert(cin.end(), carry.begin(), carry.end());
        const std::vector<Fact> c = body(*cj, cin);
        if (!c.empty()) pred = join(pred, c[0]);
        std::vector<Fact> bin = part(cn, cn + bn);
        bin.insert(bin.end(), carry.begin(), carry.end());
        return body(*bj, bin);
      };
      bool stable = false;
      for (std::int64_t round = 0; round < kMaxRounds && !stable; ++round)
        stable = !join_all(carry, once());
      if (!stable) {
        for (Fact& f : carry) f = widen(f);
        (void)once();
      }
      for (Fact& f : carry) f = guard(f, pred);
      carry.resize(results);
      return carry;
    }
    case Primitive::Control::kCond: {
      if (ops.empty()) return all();
      std::vector<Fact> outs(results);
      for (const Jaxpr* branch : e.subs_of("branches"))
        join_all(outs, body(*branch, part(1, ops.size())));
      for (Fact& f : outs) f = guard(f, ops[0]);
      return outs;
    }
    case Primitive::Control::kNone:
      break;
  }
  return all();
}

}  // namespace meshrun::interp
