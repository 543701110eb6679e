#include "grade/same_function.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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

// The draws' magnitudes: numbers of the cases' size, then far larger and far smaller ones (a
// program right only where its inputs are small -- a clip, a saturating step, a branch on a bound
// the cases stay under -- computes something else there). Powers of two: the draws scale exactly.
constexpr float kScales[] = {1.0f, 256.0f, 1.0f / 256};
// Then numbers of the cases' size with zeros where a program may take them for padding or for
// nothing to send: the blocks of the second and the last device along each axis of every split
// input (a ring's relay on the path to device 0, whose replica JAX returns), and the
// first row (index 0 along the first dimension) of every drawn input of rank 2 or more (sneaky11:
// all-zero rows of x masked out as padding, a device whose block is zero relaying zeros; no case
// and no random draw has such a row or block).
constexpr float kZeros = 0.0f;
// Then numbers of the cases' size with the last device's block along each axis of every split
// input a copy of the first device's (sneaky12: a ring that skips an arriving block equal to its
// own, "my block came back"; no case and no random draw has two equal blocks).
constexpr float kCopies = -1.0f;
// How far an output may be from the reference's: the cases' own tolerance, twice (a sum in
// another order moves float32 outputs by far less; inputs rounded to 4 significant digits, which
// the cases' short decimals survive, by far more: sneaky10).
constexpr float kTolerance = 2e-5f;

// What the rule found for a mesh, shapes and kept inputs (a program's cases share the draws).
struct SameCache {
  std::mutex mutex;
  std::map<std::string, std::optional<std::string>> found;
};

bool all_finite(const std::vector<Tensor>& outs) {
  for (const Tensor& t : outs)
    for (const float f : t.data)
      if (!std::isfinite(f)) return false;
  return true;
}

// The first output element of `mine` that is not the reference's `theirs` on a draw of `scale`,
// as "out[3, 1] is 2.5 where the exercise's reference computes 3"; nullopt when every element is,
// or when the reference's outputs are not all finite (numbers too large for the exercise's
// function in float32: that draw judges nothing).
std::optional<std::string> differs(const LoadedProgram& lp, const LoadedProgram& ref,
                                   const std::vector<Tensor>& mine,
                                   const std::vector<Tensor>& theirs, float scale) {
  if (!all_finite(theirs)) return std::nullopt;
  for (std::size_t o = 0; o < lp.def.outputs.size() && o < mine.size(); ++o) {
    const std::string& name = lp.def.outputs[o].name;
    std::size_t r = 0;
    while (r < ref.def.outputs.size() && ref.def.outputs[r].name != name) ++r;
    if (r >= theirs.size() || theirs[r].shape != mine[o].shape) continue;
    const std::vector<float>& a = mine[o].data;
    const std::vector<float>& b = theirs[r].data;
    float largest = 0;
    for (const float f : b) largest = std::max(largest, std::fabs(f));
    // Relative to the output's magnitude; at the cases' own, to 1 + it, as before the scaled
    // draws (an output near zero there is compared at kTolerance).
    const float tol =
        scale == 1.0f ? kTolerance * (1.0f + largest) : std::max(kTolerance * largest, FLT_MIN);
    for (std::size_t e = 0; e < a.size() && e < b.size(); ++e) {
      if (std::fabs(a[e] - b[e]) <= tol) continue;
      return element_at(name, mine[o].shape, e) + " is " + number(a[e]) +
             " where the exercise's reference computes " + number(b[e]);
    }
  }
  return std::nullopt;
}

}  // namespace

StructuralRule same_function(const LoadedProgram& lp, std::vector<bool> keep,
                             ReferenceFile reference, std::vector<PartitionSpec> specs) {
  // The inputs drawn: the float32 ones the exercise declares, but those kept.
  // The kept float32 ones (lr) keep the case's value at the cases' magnitude and are scaled with
  // the other draws (lr 256 times larger: a step size clamped at 1 is not the exercise's).
  std::vector<bool> drawn_input, scaled_input;
  if (const auto* ex = dynamic_cast<const Graded*>(lp.exercise.get()); ex != nullptr)
    for (std::size_t i = 0; i < ex->input_dtypes.size(); ++i) {
      const bool kept = i < keep.size() && keep[i];
      drawn_input.push_back(ex->input_dtypes[i] == DType::kF32 && !kept);
      scaled_input.push_back(ex->input_dtypes[i] == DType::kF32 && kept);
    }
  return {
      "on random numbers in place of the case's (same shapes), every output is the exercise's "
      "reference's",
      [&lp, drawn_input, scaled_input, reference, specs,
       cache = std::make_shared<SameCache>()](const Trace& t) -> std::optional<std::string> {
        if (t.input_values == nullptr || !reference) return std::nullopt;
        const LoadedProgram* ref = reference();
        if (ref == nullptr) return std::nullopt;
        const auto drawn = [&](std::size_t i) { return i < drawn_input.size() && drawn_input[i]; };
        const auto scaled = [&](std::size_t i) {
          return i < scaled_input.size() && scaled_input[i];
        };
        // The key: the mesh, every input's shape and the values of those not drawn.
        std::string key;
        for (const auto& [axis, n] : t.mesh) key += axis + '=' + std::to_string(n) + ',';
        std::string which, kept;
        for (std::size_t i = 0; i < t.input_values->size(); ++i) {
          const TensorRef& in = t.input_values->at(i);
          key += '|';
          for (const std::int64_t d : in.shape) key += std::to_string(d) + ',';
          if (!drawn(i))
            key.append(reinterpret_cast<const char*>(in.data), in.size() * sizeof(float));
          else if (i < lp.def.inputs.size())
            which += (which.empty() ? "" : ", ") + lp.def.inputs[i].name;
          if (scaled(i) && i < lp.def.inputs.size())
            kept += (kept.empty() ? "" : ", ") + lp.def.inputs[i].name;
        }
        if (which.empty()) return std::nullopt;
        std::lock_guard<std::mutex> lock(cache->mutex);
        if (const auto it = cache->found.find(key); it != cache->found.end()) return it->second;
        std::optional<std::string> why;
        std::mt19937_64 rng(0x2545F4914F6CDD1Dull);
        for (const float draw : {kScales[0], kScales[1], kScales[2], kZeros, kCopies}) {
          const float scale = draw == kZeros || draw == kCopies ? 1.0f : draw;
          std::vector<Tensor> inputs;
          for (std::size_t i = 0; i < t.input_values->size(); ++i) {
            const TensorRef& in = t.input_values->at(i);
            inputs.emplace_back(in.shape, std::vector<float>(in.data, in.data + in.size()));
            if (drawn(i))
              for (float& f : inputs.back().data) f = scale * redrawn(f, rng);
            else if (scaled(i))
              for (float& f : inputs.back().data) f *= scale;
            if (draw == kCopies && drawn(i) && i < specs.size()) {
              std::vector<float>& data = inputs.back().data;
              for (const auto& [axis, n] : t.mesh) {
                if (n < 2) continue;
                const std::vector<std::size_t> from =
                    block_elements(in.shape, specs[i], t.mesh, axis, 0);
                const std::vector<std::size_t> to =
                    block_elements(in.shape, specs[i], t.mesh, axis, n - 1);
                if (from.size() == to.size())
                  for (std::size_t k = 0; k < to.size(); ++k) data[to[k]] = data[from[k]];
              }
            }
            if (draw != kZeros || !drawn(i)) continue;
            std::vector<float>& data = inputs.back().data;
            if (i < specs.size())
              for (const auto& [axis, n] : t.mesh)
                for (const int index : {1, n - 1})
                  if (n > 1)
                    for (const std::size_t e :
                         block_elements(in.shape, specs[i], t.mesh, axis, index))
                      data[e] = 0.0f;
            if (in.shape.size() >= 2 && in.shape[0] > 0)
              std::fill(data.begin(),
                        data.begin() + static_cast<std::ptrdiff_t>(data.size() / in.shape[0]),
                        0.0f);
          }
          std::vector<Tensor> mine, theirs;
          Trace copies;  // the program's run, for its copies of replicated values
          try {
            mine = run_following(lp, t.mesh, refs(inputs), nullptr, nullptr, nullptr, &copies);
            theirs = run_following(*ref, t.mesh, refs(inputs), nullptr, nullptr);
          } catch (const InternalError&) {
            throw;
          } catch (const std::exception&) {
            continue;  // the checks by values fail closed on a program that fails on draws
          }
          std::optional<std::string> d = differs(lp, *ref, mine, theirs, scale);
          // JAX returns device 0's copy of a replicated value whose copies it does not check
          // (check_vma=False): copies that part on a draw (a clip, a saturation or a branch on
          // the other devices only, at magnitudes the cases stay under: sneaky13) are a program
          // whose later steps, from every device's copy, are not the exercise's.
          if (!d && copies.replica_gap > kTolerance && all_finite(theirs))
            d = "the devices' copies of a value returned replicated differ: " +
                copies.replica_gap_at + " (apart by " + number(copies.replica_gap) +
                " of its largest magnitude)";
          if (d) {
            why = "on random numbers in place of the case's " + which + " (the same shapes" +
                  (draw == kZeros
                       ? ", the second and last devices' blocks and the first row of each zero"
                   : draw == kCopies
                       ? ", the last device's block along each axis a copy of the first's"
                   : scale == 1.0f
                       ? std::string()
                       : ", magnitudes about " + number(scale) +
                             (kept.empty() ? std::string()
                                           : ", the case's " + kept + " times " + number(scale))) +
                  "), " + *d + ": the program computes the exercise's numbers on its cases only";
            break;
          }
        }
        cache->found.emplace(key, why);
        return why;
      }};
}

}  // namespace meshrun::interp
