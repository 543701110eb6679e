// The rules checked on values, by running the program again (semantic_rules.hpp).
#include "grade/semantic_rules.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/number_format.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

int index_of(const std::vector<ArgDef>& args, const std::string& name) {
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].name == name) return static_cast<int>(i);
  return -1;
}

// A count as an integer ("8"), anything else as meshrun prints a float32 to 4 places.
std::string num(double v) {
  const double r = std::round(v);
  if (std::fabs(v - r) < 1e-6 * std::max(1.0, std::fabs(r)) && std::fabs(r) < 1e15)
    return std::to_string(static_cast<long long>(r));
  return format_number(static_cast<float>(v), {4, false});
}

std::vector<Tensor> copies(const std::vector<TensorRef>& in) {
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (const TensorRef& t : in)
    out.emplace_back(t.shape, std::vector<float>(t.data, t.data + t.size()));
  return out;
}

// The program run once more on `inputs`, on a fresh mesh of the run's shape (no --inject).
std::vector<Tensor> run_again(const ProgramDef& program, const Trace& t,
                              const std::vector<Tensor>& inputs) {
  Mesh mesh(t.mesh);
  return shard_map(mesh, program, inputs);
}

// A power of two >= v (and >= 1): adding it moves no value by a rounding of its own.
double power_of_two_above(double v) {
  double d = 1;
  while (d < v && d < 1e30) d *= 2;
  return d;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.data) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

// What added_once names: the input b (b2), the output o (out), and for an output checked through
// a loss, the target moved with it (y) and the loss.
struct Once {
  std::string b, o, target, loss;
};

// out(b2 + d) - out(b2) is d, element by element; else how many times b2 is counted.
std::optional<std::string> out_moves_with_b2(const Once& w, const ProgramDef& p, const Trace& t) {
  const int b2 = index_of(p.inputs, w.b), out = index_of(p.outputs, w.o);
  if (b2 < 0 || out < 0) return "the program has no input " + w.b + " or no output " + w.o;
  std::vector<Tensor> in = copies(*t.input_values);
  const Tensor& out0 = t.output_values->at(static_cast<std::size_t>(out));
  const double d = power_of_two_above(std::max(max_abs(in[b2]), max_abs(out0)));
  for (float& v : in[b2].data) v = static_cast<float>(v + d);
  const Tensor out1 = run_again(p, t, in).at(static_cast<std::size_t>(out));
  double lo = 1e300, hi = -1e300;
  for (std::size_t i = 0; i < out0.size(); ++i) {
    const double k = (static_cast<double>(out1.data[i]) - out0.data[i]) / d;
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  // The change is d up to the roundings of values of d's size (and of out's).
  if (out0.size() == 0 || (lo > 1 - 1e-4 && hi < 1 + 1e-4)) return std::nullopt;
  const std::string moved = "moving " + w.b + " by " + num(d) + " moves " + w.o + " by ";
  // Not linear in b2 -- moving it by -d moves out otherwise than by d, mirrored: a nonlinearity
  // (a relu) applied after b2 is added, so after the sum. That is the mistake, which the numbers
  // show too; b2 counted some number of times is a consequence (issue #47: the first reason named
  // is the mistake).
  {
    std::vector<Tensor> down = copies(*t.input_values);
    for (float& v : down[b2].data) v = static_cast<float>(v - d);
    const Tensor out2 = run_again(p, t, down).at(static_cast<std::size_t>(out));
    for (std::size_t i = 0; i < out0.size() && i < out2.size(); ++i) {
      const double up = (static_cast<double>(out1.data[i]) - out0.data[i]) / d;
      const double dn = (static_cast<double>(out0.data[i]) - out2.data[i]) / d;
      if (std::isfinite(up) && std::isfinite(dn) && std::fabs(up - dn) > 1e-3) {
        return "moving " + w.b + " by " + num(d) + " moves " + w.o + "'s element " +
               std::to_string(i) + " by " + num(up * d) + ", and by -" + num(d) + " by " +
               num(-dn * d) + ": " + w.o + " is not linear in " + w.b +
               " -- a nonlinearity (a relu) is applied after " + w.b + " is added, after the sum";
      }
    }
  }
  if (hi - lo < 1e-3 * std::max(1.0, std::fabs(hi))) {
    const double k = (lo + hi) / 2;
    if (std::fabs(k) < 1e-3) return moved + "0: " + w.o + " does not hold " + w.b;
    const double r = std::round(k);
    return moved + num(k * d) + ": " + w.b + " is counted " + num(k) + " times in " + w.o +
           (std::fabs(k - r) < 1e-3 && r > 1 ? " (added on " + num(r) + " devices before a sum)"
                                             : "");
  }
  return moved + "between " + num(lo * d) + " and " + num(hi * d) +
         " from element to element: " + w.o + " is not " + w.b + " plus what does not depend on " +
         w.b;
}

// Through a loss (mlp-train): out - y is the same when b2 and y both move by d, so the loss is,
// when out holds b2 once. d is large beside the loss: a b2 counted k != 1 times moves out - y by
// (k-1) d and the loss by at least about (k-1)^2 d^2 / 2.
std::optional<std::string> loss_keeps_with_b2_and_y(const Once& w, const ProgramDef& p,
                                                    const Trace& t) {
  const int b2 = index_of(p.inputs, w.b), y = index_of(p.inputs, w.target);
  const int loss = index_of(p.outputs, w.loss);
  if (b2 < 0 || y < 0 || loss < 0)
    return "the program has no input " + w.b + " or " + w.target + ", or no output " + w.loss;
  std::vector<Tensor> in = copies(*t.input_values);
  const double l0 = t.output_values->at(static_cast<std::size_t>(loss)).data.at(0);
  const double d = power_of_two_above(8 * std::sqrt(std::fabs(l0)) + 1);
  for (float& v : in[b2].data) v = static_cast<float>(v + d);
  for (float& v : in[y].data) v = static_cast<float>(v + d);
  const double l1 = run_again(p, t, in).at(static_cast<std::size_t>(loss)).data.at(0);
  if (std::fabs(l1 - l0) <= 1e-4 * (d * d + std::fabs(l0))) return std::nullopt;
  return "moving " + w.b + " and " + w.target + " together by " + num(d) + " moves the " + w.loss +
         " from " + num(l0) + " to " + num(l1) + ": " + w.o + " - " + w.target + " changed, so " +
         w.o + " does not hold " + w.b + " exactly once";
}

// The update reads the input lr: run again with lr doubled (exact in float32), param_in -
// param_out must double, element by element -- a number baked in (0.1 + 0 * lr, which data flow
// counts as reading lr) keeps it. `u` is the update the run made, `tol` its tolerance.
std::optional<std::string> update_scales_with_lr(const ProgramDef& p, const Trace& t,
                                                 const std::vector<std::string>& params,
                                                 const std::vector<double>& u,
                                                 const std::vector<double>& tol,
                                                 const std::vector<std::string>& at) {
  const int lr = index_of(p.inputs, "lr");
  if (lr < 0) return std::nullopt;  // "lr is traced" names it
  std::vector<Tensor> in = copies(*t.input_values);
  for (float& v : in[lr].data) v *= 2;
  const std::vector<Tensor> out = run_again(p, t, in);
  std::size_t k = 0;
  for (const auto& name : params) {
    const int i = index_of(p.inputs, name), o = index_of(p.outputs, name);
    const TensorRef& x = t.input_values->at(static_cast<std::size_t>(i));
    const Tensor& got = out.at(static_cast<std::size_t>(o));
    for (std::size_t e = 0; e < x.size() && k < u.size(); ++e, ++k) {
      const double u2 = static_cast<double>(x.data[e]) - got.data[e];
      if (!std::isfinite(u2) || std::fabs(u2 - 2 * u[k]) <= 2 * tol[k]) continue;
      return "with lr doubled, " + at[k] + " moved by " + num(-u2) +
             " where twice lr moves it by " + num(-2 * u[k]) +
             ": the update does not scale with the input lr (a number baked in)";
    }
  }
  return std::nullopt;
}

template <typename F>
StructuralRule value_rule(std::string description, const ProgramDef& program, F check) {
  return {std::move(description), [&program, check](const Trace& t) -> std::optional<std::string> {
            if (t.input_values == nullptr || t.output_values == nullptr) return std::nullopt;
            try {
              return check(program, t);
            } catch (const InternalError&) {
              // meshrun's bug (exit 4), never the graded program's failure.
              throw;
            } catch (const std::exception& e) {
              return std::string("could not run the program again on changed inputs: ") + e.what();
            }
          }};
}

}  // namespace

StructuralRule added_once(const ProgramDef& program, const std::string& input,
                          const std::string& output, const std::string& target,
                          const std::string& loss) {
  const Once w{input, output, target, loss};
  const std::string head = input + " is added once: " + output + " is " + input +
                           " plus what does not depend on " + input;
  if (!target.empty()) {
    return value_rule(
        head + " (the " + loss + " stays when " + input + " and " + target + " move together)",
        program,
        [w](const ProgramDef& p, const Trace& t) { return loss_keeps_with_b2_and_y(w, p, t); });
  }
  return value_rule(
      head + " (moving " + input + " by d moves " + output + " by d)", program,
      [w](const ProgramDef& p, const Trace& t) { return out_moves_with_b2(w, p, t); });
}

StructuralRule mean_gradient_update(const ProgramDef& program, Reference reference_of,
                                    std::vector<std::string> params, const std::string& axis) {
  std::string names;
  for (const auto& n : params) names += (names.empty() ? "" : ", ") + n;
  auto check = [reference_of, params, names, axis](const ProgramDef& p,
                                                   const Trace& t) -> std::optional<std::string> {
    const ProgramDef& reference = reference_of();
    const std::vector<Tensor> ref = run_again(reference, t, copies(*t.input_values));
    // u: the program's update, r: the reference's, element by element over every parameter.
    std::vector<double> u, r, tol;
    std::vector<std::string> at;  // each element's name
    for (const auto& name : params) {
      const int i = index_of(p.inputs, name), o = index_of(p.outputs, name);
      const int ro = index_of(reference.outputs, name);
      if (i < 0 || o < 0 || ro < 0) return "the program has no input and output " + name;
      const TensorRef& in = t.input_values->at(static_cast<std::size_t>(i));
      const Tensor& got = t.output_values->at(static_cast<std::size_t>(o));
      const Tensor& want = ref.at(static_cast<std::size_t>(ro));
      if (got.size() != in.size() || want.size() != in.size()) return std::nullopt;  // numbers
      for (std::size_t k = 0; k < in.size(); ++k) {
        u.push_back(static_cast<double>(in.data[k]) - got.data[k]);
        r.push_back(static_cast<double>(in.data[k]) - want.data[k]);
        // The numbers' tolerance on param_out, twice: both outputs round.
        tol.push_back(2e-5 * (1 + std::fabs(static_cast<double>(want.data[k]))));
        at.push_back(name + (in.size() > 1 ? "[" + std::to_string(k) + "]" : ""));
      }
    }
    double ur = 0, rr = 0;
    bool same = true;
    for (std::size_t k = 0; k < u.size(); ++k) {
      same = same && std::fabs(u[k] - r[k]) <= tol[k];
      ur += u[k] * r[k];
      rr += r[k] * r[k];
    }
    if (same && rr != 0) return update_scales_with_lr(p, t, params, u, tol, at);
    if (same || rr == 0) return std::nullopt;
    const double s = ur / rr;
    for (std::size_t k = 0; k < u.size(); ++k) {
      if (std::fabs(u[k] - s * r[k]) <= tol[k] * std::max(1.0, std::fabs(s))) continue;
      // Not a multiple of it: name the first element that moved otherwise.
      for (std::size_t j = 0; j < u.size(); ++j) {
        if (std::fabs(u[j] - r[j]) <= tol[j]) continue;
        return "the update is not lr times the mean gradient over '" + axis + "' (first: " + at[j] +
               " moved by " + num(-u[j]) + ", the mean gradient's step is " + num(-r[j]) + ")";
      }
    }
    const int pos = mesh_axis_position(t.mesh, axis);
    const int n = pos < 0 ? 0 : t.mesh[static_cast<std::size_t>(pos)].second;
    std::string why =
        "the update of " + names + " is " + num(s) + " times lr times the mean gradient";
    if (n > 1 && std::fabs(s - n) < 1e-3 * n) {
      why += ": the sum of the " + std::to_string(n) + " devices' gradients over '" + axis +
             "', not their mean";
    } else if (n > 1 && std::fabs(s * n - 1) < 1e-3) {
      why += ": the mean divided by " + std::to_string(n) + " once more";
    }
    return why;
  };
  return value_rule("the update uses the mean gradient over '" + axis +
                        "', never n times it (param_in - param_out of " + names +
                        " is lr times the mean gradient)",
                    program, check);
}

}  // namespace meshrun::interp
