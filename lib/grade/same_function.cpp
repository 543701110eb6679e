#include "grade/same_function.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>

#include "grade/draws.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

// "out[3, 1]": element `flat` of an array of shape `shape`.
std::string element_at(const std::string& name, const Shape& shape, std::size_t flat) {
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t a = shape.size(); a-- > 0;) {
    const auto n = static_cast<std::size_t>(shape[a]);
    if (n == 0) break;
    index[a] = flat % n;
    flat /= n;
  }
  std::string s = name;
  if (!index.empty()) {
    s += '[';
    for (std::size_t a = 0; a < index.size(); ++a)
      s += (a == 0 ? "" : ", ") + std::to_string(index[a]);
    s += ']';
  }
  return s;
}

std::string number(float f) {
  std::ostringstream o;
  o.precision(6);
  o << f;
  return o.str();
}

}  // namespace

StructuralRule same_function(const LoadedProgram& lp, std::vector<bool> keep,
                             ReferenceFile reference) {
  return {
      "on random numbers in place of the case's (same shapes), every output is the exercise's "
      "reference's",
      [&lp, keep, reference](const Trace& t) -> std::optional<std::string> {
        if (t.input_values == nullptr || !reference) return std::nullopt;
        const LoadedProgram* ref = reference();
        if (ref == nullptr) return std::nullopt;
        // The draw: the case's inputs, the float32 ones (not kept) at random.
        std::vector<Tensor> drawn;
        std::string which;
        std::mt19937_64 rng(0x2545F4914F6CDD1Dull);
        for (std::size_t i = 0; i < t.input_values->size(); ++i) {
          const TensorRef& in = t.input_values->at(i);
          drawn.emplace_back(in.shape, std::vector<float>(in.data, in.data + in.size()));
          const auto* ex = dynamic_cast<const Graded*>(lp.exercise.get());
          const bool f32 =
              ex != nullptr && i < ex->input_dtypes.size() && ex->input_dtypes[i] == DType::kF32;
          if (!f32 || (i < keep.size() && keep[i])) continue;
          for (float& f : drawn.back().data) f = redrawn(f, rng);
          if (i < lp.def.inputs.size())
            which += (which.empty() ? "" : ", ") + lp.def.inputs[i].name;
        }
        if (which.empty()) return std::nullopt;
        std::vector<Tensor> mine, theirs;
        try {
          mine = run_following(lp, t.mesh, refs(drawn), nullptr, nullptr);
          theirs = run_following(*ref, t.mesh, refs(drawn), nullptr, nullptr);
        } catch (const InternalError&) {
          throw;
        } catch (const std::exception&) {
          return std::nullopt;
        }
        for (std::size_t o = 0; o < lp.def.outputs.size() && o < mine.size(); ++o) {
          const std::string& name = lp.def.outputs[o].name;
          std::size_t r = 0;
          while (r < ref->def.outputs.size() && ref->def.outputs[r].name != name) ++r;
          if (r >= theirs.size() || theirs[r].shape != mine[o].shape) continue;
          const std::vector<float>& a = mine[o].data;
          const std::vector<float>& b = theirs[r].data;
          float largest = 0;
          for (const float f : b) largest = std::max(largest, std::fabs(f));
          const float tol = 1e-3f * (1.0f + largest);
          for (std::size_t e = 0; e < a.size() && e < b.size(); ++e) {
            if (std::fabs(a[e] - b[e]) <= tol || (std::isnan(a[e]) && std::isnan(b[e]))) continue;
            return "on random numbers in place of the case's " + which + " (the same shapes), " +
                   element_at(name, mine[o].shape, e) + " is " + number(a[e]) +
                   " where the exercise's reference computes " + number(b[e]) +
                   ": the program computes the exercise's numbers on its cases only";
          }
        }
        return std::nullopt;
      }};
}

}  // namespace meshrun::interp
