// Control flow: scan, while, cond (control_flow.hpp).
#include "interp/ops/control_flow.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "interp/compiled.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp {
namespace {

using prim::fail;

// "1 carry", "2 carries", "3 branches": a count and its noun.
std::string count_str(std::int64_t n, const std::string& what) {
  if (n == 1) return "1 " + what;
  if (what.ends_with("ch")) return std::to_string(n) + " " + what + "es";
  if (what.ends_with("ry"))
    return std::to_string(n) + " " + what.substr(0, what.size() - 1) + "ies";
  return std::to_string(n) + " " + what + "s";
}

std::int64_t non_negative(const Eqn& eqn, const char* key) {
  const std::int64_t v = param_int(eqn, key);
  if (v < 0) fail(std::string("param '") + key + "' must be >= 0, got " + std::to_string(v));
  return v;
}

std::vector<ValueType> slice(std::span<const ValueType> v, std::size_t from, std::size_t to) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from),
          v.begin() + static_cast<std::ptrdiff_t>(to)};
}

// The operands' split: consts, then carries, then the rest; PrimitiveError when they do not add
// up.
void check_counts(const Eqn& eqn, std::size_t n, std::int64_t a, std::int64_t b, const char* an,
                  const char* bn) {
  if (static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b) > n) {
    fail(eqn.primitive + ": " + an + " (" + std::to_string(a) + ") and " + bn + " (" +
         std::to_string(b) + ") exceed its " + count_str(static_cast<std::int64_t>(n), "operand"));
  }
}

std::vector<ValueType> scan_infer(const ControlPlan& p, const Eqn& eqn,
                                  std::span<const ValueType> ops, const BodyChecker& body) {
  check_counts(eqn, ops.size(), p.num_consts, p.num_carry, "num_consts", "num_carry");
  const auto nc = static_cast<std::size_t>(p.num_consts);
  const auto nk = static_cast<std::size_t>(p.num_carry);
  std::vector<ValueType> in(ops.begin(), ops.end());
  for (std::size_t j = nc + nk; j < ops.size(); ++j) {
    if (ops[j].shape.empty() || static_cast<std::int64_t>(ops[j].shape[0]) != p.length) {
      fail("scan: xs operand " + std::to_string(j) + " is " + type_str(ops[j]) +
           ", not an array of length " + std::to_string(p.length) + " along its first axis");
    }
    in[j].shape.erase(in[j].shape.begin());
  }
  const std::vector<ValueType> outs =
      body(*p.bodies.at(0), in, static_cast<std::uint64_t>(p.length));
  if (outs.size() < nk) {
    fail("scan: its body returns " + count_str(static_cast<std::int64_t>(outs.size()), "value") +
         ", fewer than its " + count_str(p.num_carry, "carry"));
  }
  std::vector<ValueType> result;
  for (std::size_t k = 0; k < nk; ++k) {
    if (!(outs[k] == ops[nc + k])) {
      fail("scan: carry " + std::to_string(k) + " enters as " + type_str(ops[nc + k]) +
           " but its body returns " + type_str(outs[k]));
    }
    result.push_back(outs[k]);
  }
  for (std::size_t k = nk; k < outs.size(); ++k) {
    Shape s = outs[k].shape;
    s.insert(s.begin(), static_cast<std::size_t>(p.length));
    result.push_back(prim::make_type(outs[k].dtype, std::move(s)));
  }
  return result;
}

std::vector<ValueType> while_infer(const ControlPlan& p, const Eqn& eqn,
                                   std::span<const ValueType> ops, const BodyChecker& body) {
  check_counts(eqn, ops.size(), p.cond_nconsts, p.body_nconsts, "cond_nconsts", "body_nconsts");
  const auto cn = static_cast<std::size_t>(p.cond_nconsts);
  const auto bn = static_cast<std::size_t>(p.body_nconsts);
  const std::vector<ValueType> carries = slice(ops, cn + bn, ops.size());
  std::vector<ValueType> cin = slice(ops, 0, cn);
  cin.insert(cin.end(), carries.begin(), carries.end());
  const std::vector<ValueType> pred = body(*p.bodies.at(0), cin, 1);
  if (pred.size() != 1 || !(pred[0] == ValueType{DType::kBool, {}})) {
    std::string got;
    for (const ValueType& t : pred) got += (got.empty() ? "" : ", ") + type_str(t);
    fail("while: its cond_jaxpr must return one bool[], returns (" + got + ")");
  }
  std::vector<ValueType> bin = slice(ops, cn, cn + bn);
  bin.insert(bin.end(), carries.begin(), carries.end());
  const std::vector<ValueType> outs = body(*p.bodies.at(1), bin, 1);
  if (outs.size() != carries.size()) {
    fail("while: its body_jaxpr returns " +
         count_str(static_cast<std::int64_t>(outs.size()), "value") + " for " +
         count_str(static_cast<std::int64_t>(carries.size()), "carry"));
  }
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!(outs[k] == carries[k])) {
      fail("while: carry " + std::to_string(k) + " enters as " + type_str(carries[k]) +
           " but its body returns " + type_str(outs[k]));
    }
  }
  return outs;
}

std::vector<ValueType> cond_infer(const ControlPlan& p, const Eqn&, std::span<const ValueType> ops,
                                  const BodyChecker& body) {
  if (ops.empty()) fail("cond: takes an index operand, given none");
  if (!ops[0].shape.empty() || ops[0].dtype == DType::kF32) {
    fail("cond: its index must be an int32 or bool scalar, got " + type_str(ops[0]));
  }
  const std::vector<ValueType> args = slice(ops, 1, ops.size());
  std::vector<ValueType> first;
  for (std::size_t b = 0; b < p.bodies.size(); ++b) {
    std::vector<ValueType> outs = body(*p.bodies[b], args, 1);
    if (b == 0) {
      first = std::move(outs);
    } else if (outs != first) {
      fail("cond: branch " + std::to_string(b) + " returns other types than branch 0");
    }
  }
  return first;
}

// Value copies of in[from, to).
std::vector<Value> copies(const std::vector<Value>& in, std::size_t from, std::size_t to) {
  return {in.begin() + static_cast<std::ptrdiff_t>(from),
          in.begin() + static_cast<std::ptrdiff_t>(to)};
}

Shape declared_shape(const Jaxpr& jx, const Atom& a, const PrimContext& ctx) {
  Shape s;
  if (a.is_literal()) return s;
  for (const DimExpr& d : jx.types[static_cast<std::size_t>(a.var)].shape)
    s.push_back(static_cast<std::size_t>(d.eval(*ctx.dims, jx.where)));
  return s;
}

std::vector<Value> scan_eval(const ControlPlan& p, std::vector<Value> in, const PrimContext& ctx,
                             const BodyRunner& run) {
  const auto nc = static_cast<std::size_t>(p.num_consts);
  const auto nk = static_cast<std::size_t>(p.num_carry);
  const auto length = static_cast<std::size_t>(p.length);
  const CompiledJaxpr& body = *p.bodies.at(0);
  const Jaxpr& bj = *body.jaxpr;
  std::vector<Value> carry;
  for (std::size_t k = nc; k < nc + nk; ++k) carry.push_back(std::move(in[k]));
  // ys, allocated once their block's shape is known: from the first iteration, or the declared
  // type when there is none.
  const std::size_t ny = bj.outvars.size() - nk;
  std::vector<Value> ys(ny);
  for (std::size_t j = 0; j < ny; ++j) {
    const Atom& a = bj.outvars[nk + j];
    Shape s = declared_shape(bj, a, ctx);
    s.insert(s.begin(), length);
    ys[j] = Value(dtype_of(bj, a), Tensor(std::move(s)));
  }
  for (std::size_t it = 0; it < length; ++it) {
    const std::size_t i = p.reverse ? length - 1 - it : it;
    std::vector<Value> args = copies(in, 0, nc);
    for (Value& c : carry) args.push_back(std::move(c));
    for (std::size_t j = nc + nk; j < in.size(); ++j) {
      const Tensor& xs = in[j].t;
      Shape s(xs.shape.begin() + 1, xs.shape.end());
      const std::size_t n = shape_size(s);
      Tensor x(std::move(s));
      std::copy_n(xs.data.begin() + static_cast<std::ptrdiff_t>(i * n), n, x.data.begin());
      args.emplace_back(in[j].dtype, std::move(x));
    }
    std::vector<Value> outs = run(body, std::move(args));
    carry.clear();
    for (std::size_t k = 0; k < nk; ++k) carry.push_back(std::move(outs[k]));
    for (std::size_t j = 0; j < ny; ++j) {
      const Tensor& y = outs[nk + j].t;
      std::copy(y.data.begin(), y.data.end(),
                ys[j].t.data.begin() + static_cast<std::ptrdiff_t>(i * y.data.size()));
    }
  }
  std::vector<Value> result = std::move(carry);
  for (Value& y : ys) result.push_back(std::move(y));
  return result;
}

std::vector<Value> while_eval(const ControlPlan& p, std::vector<Value> in, const PrimContext& ctx,
                              const BodyRunner& run) {
  const auto cn = static_cast<std::size_t>(p.cond_nconsts);
  const auto bn = static_cast<std::size_t>(p.body_nconsts);
  std::vector<Value> carry;
  for (std::size_t k = cn + bn; k < in.size(); ++k) carry.push_back(std::move(in[k]));
  for (std::uint64_t iterations = 0;; ++iterations) {
    std::vector<Value> cargs = copies(in, 0, cn);
    cargs.insert(cargs.end(), carry.begin(), carry.end());
    const std::vector<Value> pred = run(*p.bodies.at(0), std::move(cargs));
    if (pred.at(0).t.data.at(0) == 0.0f) {
      // A loop the case does not enter: grading's holds runs (ValueObserver::every_branch) still
      // run its body once on the carry and drop what it computes, as they run a cond's every
      // branch.
      if (iterations == 0 && ctx.observer != nullptr && ctx.observer->every_branch()) {
        std::vector<Value> bargs = copies(in, cn, cn + bn);
        bargs.insert(bargs.end(), carry.begin(), carry.end());
        (void)run(*p.bodies.at(1), std::move(bargs));
      }
      break;
    }
    if (iterations >= ctx.max_while_iterations) {
      fail("while: still running after " + std::to_string(ctx.max_while_iterations) +
           " iterations, the most a while loop may take (--max-while-iterations N raises it)");
    }
    std::vector<Value> bargs = copies(in, cn, cn + bn);
    for (Value& c : carry) bargs.push_back(std::move(c));
    carry = run(*p.bodies.at(1), std::move(bargs));
  }
  return carry;
}

// Grading's holds runs (ValueObserver::every_branch) run every branch, in index order on every
// device, and keep the taken one's results: what a branch the case does not take computes on the
// case's values is judged too (a program that gathers a weight only when its values are large,
// docs/grading.md). The runs that record the decisions others follow (grade/draws.hpp) run so
// too, so that they line up.
std::vector<Value> cond_eval(const ControlPlan& p, std::vector<Value> in, const PrimContext& ctx,
                             const BodyRunner& run) {
  const float v = in.at(0).t.data.at(0);
  const auto n = static_cast<std::int64_t>(p.bodies.size());
  const auto index = static_cast<std::int64_t>(v);
  if (index < 0 || index >= n) {
    fail("cond: index " + std::to_string(index) + " is outside its " + count_str(n, "branch") +
         " (lax.switch clamps its index; a cond's must be in range)");
  }
  std::vector<Value> args;
  for (std::size_t k = 1; k < in.size(); ++k) args.push_back(std::move(in[k]));
  if (ctx.observer == nullptr || !ctx.observer->every_branch())
    return run(*p.bodies[static_cast<std::size_t>(index)], std::move(args));
  std::vector<Value> taken;
  for (std::int64_t b = 0; b < n; ++b) {
    std::vector<Value> outs = run(*p.bodies[static_cast<std::size_t>(b)],
                                  b == n - 1 ? std::move(args) : copies(args, 0, args.size()));
    if (b == index) taken = std::move(outs);
  }
  return taken;
}

}  // namespace

void read_control_params(const Eqn& eqn, ControlPlan& plan) {
  try {
    switch (plan.kind) {
      case Primitive::Control::kScan:
        plan.length = non_negative(eqn, "length");
        plan.reverse = param_bool(eqn, "reverse", false);
        plan.num_consts = non_negative(eqn, "num_consts");
        plan.num_carry = non_negative(eqn, "num_carry");
        break;
      case Primitive::Control::kWhile:
        plan.cond_nconsts = non_negative(eqn, "cond_nconsts");
        plan.body_nconsts = non_negative(eqn, "body_nconsts");
        break;
      case Primitive::Control::kCond:
      case Primitive::Control::kNone:
        break;
    }
  } catch (const PrimitiveError& e) {
    plan.param_error = e.what();
  }
}

std::vector<ValueType> control_infer(const ControlPlan& plan, const Eqn& eqn,
                                     std::span<const ValueType> ops, const BodyChecker& body) {
  if (!plan.param_error.empty()) fail(plan.param_error);
  switch (plan.kind) {
    case Primitive::Control::kScan:
      return scan_infer(plan, eqn, ops, body);
    case Primitive::Control::kWhile:
      return while_infer(plan, eqn, ops, body);
    case Primitive::Control::kCond:
      return cond_infer(plan, eqn, ops, body);
    case Primitive::Control::kNone:
      break;
  }
  fail(eqn.primitive + ": not a control-flow primitive");
}

std::vector<Value> control_eval(const ControlPlan& plan, const Eqn& eqn, std::vector<Value> in,
                                const PrimContext& ctx, const BodyRunner& run) {
  switch (plan.kind) {
    case Primitive::Control::kScan:
      return scan_eval(plan, std::move(in), ctx, run);
    case Primitive::Control::kWhile:
      return while_eval(plan, std::move(in), ctx, run);
    case Primitive::Control::kCond:
      return cond_eval(plan, std::move(in), ctx, run);
    case Primitive::Control::kNone:
      break;
  }
  fail(eqn.primitive + ": not a control-flow primitive");
}

}  // namespace meshrun::interp
