#include "grade/same_function.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
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
// own, "my block came back"; no case and no random draw has two equal blocks), and row 1 of every
// drawn input of rank 2 or more a copy of row 0 (sneaky13: a batch "deduplicated", a row equal to
// an earlier one of the device's block masked out) and its column 0 one number.
constexpr float kCopies = -1.0f;
// Then (an exercise's `columns`: inputs whose columns, along the last dimension, the outputs'
// columns scale with -- w in matmul-2d, x in the ring, w2 and b2 in tp-mlp) numbers of the cases'
// size, and the program once more with every other column of those inputs times 2^-40: each
// output column must be its first run's times the same, within 2e-5 of that column's largest
// (sneaky13: elements under 10^-5 of the output's largest "cleaned up" to zero -- within
// kTolerance of the largest, but no column scales). Powers of two scale floats exactly: a right
// program, whatever order it sums in, gives the same bits.
constexpr float kColumns = -2.0f;
// Then (before kColumns) whole numbers of 2^27 to 2^29 in magnitude -- the draw's numbers times
// 2^28, each a whole number there (sneaky14: a block of whole numbers multiplied or summed as
// int32, which wraps past 2^31 -- exact on the cases' small integers, never taken on a fractional
// draw; a program that fails there where the reference runs fails the rule).
constexpr float kIntegers = -3.0f;
// Then (before kIntegers) numbers of the cases' size, every one positive and a bfloat16 (8
// significant bits), and numbers of the cases' size, 5 in 8 of them zero and every device's block
// along each axis of every split input a copy of the first's (sneaky15: a bf16 path taken on
// bf16-exact inputs, every hidden unit active taken as a linear layer, blocks all equal taken as
// reduced already, blocks more than half zero sent as zero -- no other draw makes these).
constexpr float kPositiveBf16 = -4.0f;
constexpr float kEqualSparse = -5.0f;
// The kept inputs (lr) on every draw: the case's times this (and the draw's magnitude). Every
// case's lr has one significant digit; 1.171875 (75/64, exact in float32) makes it seven
// (sneaky14: lr rounded to 3 significant digits is the case's lr on every case).
constexpr float kKeptFactor = 1.171875f;
constexpr int kColumnShift = -40;
// Then (an exercise's `apart`: an input whose slice 0 along its rows or columns the outputs'
// other slices do not depend on -- x's rows and out's in matmul-2d, tp-mlp and the ring; y's
// columns and w's and b's in dp-step, w2's and b2's in mlp-train) numbers of the cases' size, and
// the program once more with that slice times 2^20: every other slice of the outputs marked must
// be its first run's, within 2e-5 of that slice's largest (sneaky15: values rounded to a grid of
// their column's or array's largest, block floating point -- an outlier row takes the precision of
// the rest; no other draw mixes magnitudes within a column). A right program computes those
// slices from the same numbers in the same order: the same bits.
constexpr float kApart = -6.0f;
constexpr int kApartShift = 20;
// Then, for a program holding lax.platform_dependent, numbers of the cases' size with each other
// platform's branch taken (sneaky14: a psum or ring on CPU, n times the device's own block
// elsewhere -- a program right where meshrun runs it only): kPlatform - k takes kOtherPlatforms[k].
constexpr float kPlatform = -10.0f;
constexpr const char* kOtherPlatforms[] = {"cuda", "rocm", "tpu"};
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

// The first output element of `scaled` (the program's run with every other column of the
// `columns` inputs times 2^kColumnShift) that is not `first` (its run on the same numbers
// unscaled) times the same, within kTolerance of its column's largest there; outputs whose last
// dimension is not the inputs' are not judged.
std::optional<std::string> columns_unscaled(const LoadedProgram& lp,
                                            const std::vector<bool>& column_outputs,
                                            const std::vector<Tensor>& first,
                                            const std::vector<Tensor>& scaled, std::size_t cols) {
  if (!all_finite(first)) return std::nullopt;
  for (std::size_t o = 0; o < lp.def.outputs.size() && o < first.size() && o < scaled.size(); ++o) {
    if (o >= column_outputs.size() || !column_outputs[o]) continue;
    const Tensor& a = first[o];
    const Tensor& b = scaled[o];
    if (a.shape != b.shape || a.shape.empty() || static_cast<std::size_t>(a.shape.back()) != cols)
      continue;
    std::vector<float> largest(cols, 0.0f);
    for (std::size_t e = 0; e < a.data.size(); ++e)
      largest[e % cols] = std::max(largest[e % cols], std::fabs(a.data[e]));
    for (std::size_t e = 0; e < a.data.size(); ++e) {
      const int shift = e % cols % 2 == 1 ? kColumnShift : 0;
      const float want = std::ldexp(a.data[e], shift);
      const float tol = std::max(std::ldexp(kTolerance * largest[e % cols], shift), FLT_MIN);
      if (std::fabs(b.data[e] - want) <= tol) continue;
      return element_at(lp.def.outputs[o].name, a.shape, e) + " is " + number(b.data[e]) +
             " where 2^" + std::to_string(shift) +
             " times its value on the same numbers unscaled is " + number(want) +
             ": the output's columns do not scale with the inputs'";
    }
  }
  return std::nullopt;
}

// The elements of a tensor of `shape` outside slice 0 along its first (`columns` false) or last
// dimension: whether element e is in slice 0.
bool in_slice0(const Shape& shape, std::size_t e, bool columns) {
  if (shape.empty()) return true;
  if (columns) return e % static_cast<std::size_t>(shape.back()) == 0;
  const std::size_t row = shape_size(shape) / static_cast<std::size_t>(shape[0]);
  return e < row;
}

// The first element of an `apart` output outside its slice 0 (`apart_run`: the program's run with
// the apart input's slice 0 times 2^kApartShift) that is not its value on the same numbers
// unmoved (`first`), within kTolerance of its slice's largest there.
std::optional<std::string> apart_moved(const LoadedProgram& lp, const Apart& apart,
                                       const std::vector<Tensor>& first,
                                       const std::vector<Tensor>& apart_run) {
  if (!all_finite(first) || !all_finite(apart_run)) return std::nullopt;
  for (std::size_t o = 0; o < lp.def.outputs.size() && o < first.size() && o < apart_run.size();
       ++o) {
    if (o >= apart.outputs.size() || !apart.outputs[o]) continue;
    const Tensor& a = first[o];
    const Tensor& b = apart_run[o];
    if (a.shape != b.shape || a.shape.empty()) continue;
    const std::size_t n = apart.columns ? static_cast<std::size_t>(a.shape.back())
                                        : static_cast<std::size_t>(a.shape[0]);
    const std::size_t row = a.data.size() / std::max<std::size_t>(n, 1);
    const auto slice = [&](std::size_t e) { return apart.columns ? e % n : e / row; };
    std::vector<float> largest(n, 0.0f);
    for (std::size_t e = 0; e < a.data.size(); ++e)
      largest[slice(e)] = std::max(largest[slice(e)], std::fabs(a.data[e]));
    for (std::size_t e = 0; e < a.data.size(); ++e) {
      if (in_slice0(a.shape, e, apart.columns)) continue;
      const float tol = std::max(kTolerance * largest[slice(e)], FLT_MIN);
      if (std::fabs(b.data[e] - a.data[e]) <= tol) continue;
      const std::string what = apart.columns ? "column" : "row";
      return element_at(lp.def.outputs[o].name, a.shape, e) + " is " + number(b.data[e]) +
             " where the program computes " + number(a.data[e]) +
             " on the same numbers unmoved: the " + what + "s of " + lp.def.outputs[o].name +
             " other than " + what + " 0 do not depend on " + what + " 0 of " +
             lp.def.inputs[apart.input].name;
    }
  }
  return std::nullopt;
}

// The platforms of kOtherPlatforms whose branch of some lax.platform_dependent in `file` is not
// CPU's (JAX lowers it there: a branch of its own or a default), as indices into kOtherPlatforms.
std::vector<std::size_t> other_platforms(const ProgramFile& file) {
  std::vector<std::size_t> out;
  const std::function<bool(const Jaxpr&, std::string_view, int)> differs_on =
      [&](const Jaxpr& jx, std::string_view platform, int depth) {
        for (const Eqn& e : jx.eqns) {
          if (e.primitive == "platform_index") {
            try {
              const auto cpu = platform_branch(e, "cpu");
              const auto other = platform_branch(e, platform);
              if (cpu && other && *cpu != *other) return true;
            } catch (const PrimitiveError&) {
            }
          }
          if (depth < 64)
            for (const auto& [key, sub] : e.subs)
              if (differs_on(*sub, platform, depth + 1)) return true;
        }
        return false;
      };
  for (std::size_t k = 0; k < std::size(kOtherPlatforms); ++k)
    for (const Export& exp : file.exports)
      if (differs_on(exp.jaxpr, kOtherPlatforms[k], 0)) {
        out.push_back(k);
        break;
      }
  return out;
}

// The first device's block of an input of `shape` split by `spec`, along each axis of `mesh`,
// copied into the last device's (`last_only`) or into every other device's.
void copy_first_block(std::vector<float>& data, const Shape& shape, const PartitionSpec& spec,
                      const MeshShape& mesh, bool last_only) {
  for (const auto& [axis, n] : mesh) {
    const std::vector<std::size_t> from = block_elements(shape, spec, mesh, axis, 0);
    for (int index = last_only ? n - 1 : 1; index < n && index > 0; ++index) {
      const std::vector<std::size_t> to = block_elements(shape, spec, mesh, axis, index);
      if (from.size() == to.size())
        for (std::size_t k = 0; k < to.size(); ++k) data[to[k]] = data[from[k]];
    }
  }
}

// Takes `platform`'s branch of every lax.platform_dependent (its platform_index's result).
class PlatformPin final : public ValueObserver {
 public:
  explicit PlatformPin(std::string_view platform) : platform_(platform) {}
  void seen(int, const Jaxpr&, const Eqn*, std::size_t, const Value&) override {}
  void pin(int, const Eqn& eqn, std::vector<Value>& outs) override {
    if (eqn.primitive != "platform_index" || outs.empty() || outs[0].t.data.empty()) return;
    try {
      if (const auto branch = platform_branch(eqn, platform_))
        outs[0].t.data[0] = static_cast<float>(*branch);
    } catch (const PrimitiveError&) {
    }
  }

 private:
  std::string_view platform_;
};

}  // namespace

StructuralRule same_function(const LoadedProgram& lp, std::vector<bool> keep,
                             ReferenceFile reference, std::vector<PartitionSpec> specs,
                             std::vector<bool> columns, std::vector<bool> column_outputs,
                             Apart apart) {
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
      [&lp, drawn_input, scaled_input, reference, specs, columns, column_outputs, apart,
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
        std::string column_names;
        for (std::size_t i = 0; i < columns.size() && i < lp.def.inputs.size(); ++i)
          if (columns[i])
            column_names += (column_names.empty() ? "" : " and ") + lp.def.inputs[i].name;
        std::lock_guard<std::mutex> lock(cache->mutex);
        if (const auto it = cache->found.find(key); it != cache->found.end()) return it->second;
        std::optional<std::string> why;
        std::mt19937_64 rng(0x2545F4914F6CDD1Dull);
        // The inputs whose columns the outputs' scale with (the last dimension: their count).
        std::size_t cols = 0;
        for (std::size_t i = 0; i < t.input_values->size() && i < columns.size(); ++i)
          if (columns[i] && !t.input_values->at(i).shape.empty())
            cols = static_cast<std::size_t>(t.input_values->at(i).shape.back());
        std::vector<float> draws = {kScales[0],    kScales[1],   kScales[2], kZeros,   kCopies,
                                    kPositiveBf16, kEqualSparse, kIntegers,  kColumns, kApart};
        // The apart input's slices (its rows or columns): fewer than 2, nothing to judge.
        std::size_t apart_slices = 0;
        if (apart.input < t.input_values->size() &&
            !t.input_values->at(apart.input).shape.empty()) {
          const Shape& shape = t.input_values->at(apart.input).shape;
          apart_slices = static_cast<std::size_t>(apart.columns ? shape.back() : shape[0]);
        }
        for (const std::size_t k : other_platforms(lp.file))
          draws.push_back(kPlatform - static_cast<float>(k));
        bool ran_at_cases_size = false;  // the first draw ran (a failure there judges nothing)
        for (const float draw : draws) {
          if (draw == kColumns && cols < 2) continue;
          if (draw == kApart && apart_slices < 2) continue;
          const char* platform = draw <= kPlatform
                                     ? kOtherPlatforms[static_cast<std::size_t>(kPlatform - draw)]
                                     : nullptr;
          const float scale = draw == kIntegers                                   ? 0x1p28f
                              : draw < 0 || draw == kZeros || platform != nullptr ? 1.0f
                                                                                  : draw;
          std::vector<Tensor> inputs;
          for (std::size_t i = 0; i < t.input_values->size(); ++i) {
            const TensorRef& in = t.input_values->at(i);
            inputs.emplace_back(in.shape, std::vector<float>(in.data, in.data + in.size()));
            if (drawn(i) && draw == kIntegers) {  // every float32 of 2^28 or more is whole
              for (float& f : inputs.back().data)
                f = std::ldexp(std::fabs(redrawn(f, rng)), 28) * (rng() % 2 == 0 ? 1.0f : -1.0f);
            } else if (drawn(i)) {
              for (float& f : inputs.back().data) f = scale * redrawn(f, rng);
            } else if (scaled(i)) {
              const float by = (draw == kIntegers ? 1.0f : scale) * kKeptFactor;
              for (float& f : inputs.back().data) f *= by;
            }
            if (draw == kPositiveBf16 && drawn(i)) {
              for (float& f : inputs.back().data) {  // |f| to bfloat16, to nearest even
                std::uint32_t u = std::bit_cast<std::uint32_t>(std::fabs(f));
                u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
                f = std::bit_cast<float>(u);
              }
            }
            if (draw == kEqualSparse && drawn(i)) {
              std::vector<float>& data = inputs.back().data;
              for (float& f : data)
                if (rng() % 8 < 5) f = 0.0f;
              if (i < specs.size()) copy_first_block(data, in.shape, specs[i], t.mesh, false);
            }
            if (draw == kCopies && drawn(i) && in.shape.size() >= 2 && in.shape[0] >= 2) {
              // Row 1 a copy of row 0 (in the first device's block where it holds both).
              std::vector<float>& data = inputs.back().data;
              const std::size_t row = data.size() / static_cast<std::size_t>(in.shape[0]);
              std::copy_n(data.begin(), row, data.begin() + static_cast<std::ptrdiff_t>(row));
              // Column 0 one number (a feature constant over the batch: sneaky14 froze its
              // weight).
              for (std::size_t e = row; e < data.size(); e += row) data[e] = data[0];
            }
            if (draw == kCopies && drawn(i) && i < specs.size())
              copy_first_block(inputs.back().data, in.shape, specs[i], t.mesh, true);
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
          std::vector<Tensor> mine, theirs, rescaled;
          Trace copies;  // the program's run, for its copies of replicated values
          bool mine_ran = false;
          try {
            if (platform != nullptr) {
              PlatformPin pin(platform);
              mine = run_observed(lp, t.mesh, refs(inputs), pin, &copies);
            } else {
              mine = run_following(lp, t.mesh, refs(inputs), nullptr, nullptr, nullptr, &copies,
                                   false);
            }
            mine_ran = true;
            theirs = run_following(*ref, t.mesh, refs(inputs), nullptr, nullptr, nullptr, nullptr,
                                   false);
            if (draw == kColumns) {
              for (std::size_t i = 0; i < inputs.size() && i < columns.size(); ++i) {
                if (!columns[i] || inputs[i].shape.empty() ||
                    static_cast<std::size_t>(inputs[i].shape.back()) != cols)
                  continue;
                for (std::size_t e = 0; e < inputs[i].data.size(); ++e)
                  if (e % cols % 2 == 1)
                    inputs[i].data[e] = std::ldexp(inputs[i].data[e], kColumnShift);
              }
              rescaled = run_following(lp, t.mesh, refs(inputs), nullptr, nullptr, nullptr, nullptr,
                                       false);
            }
            if (draw == kApart) {
              Tensor& in = inputs[apart.input];
              for (std::size_t e = 0; e < in.data.size(); ++e)
                if (in_slice0(in.shape, e, apart.columns))
                  in.data[e] = std::ldexp(in.data[e], kApartShift);
              rescaled = run_following(lp, t.mesh, refs(inputs), nullptr, nullptr, nullptr, nullptr,
                                       false);
            }
          } catch (const InternalError&) {
            throw;
          } catch (const std::exception& e) {
            // A program that fails on whole numbers where the reference runs computes something
            // else there: int32 arithmetic past 2^24, which meshrun refuses, is the int32 a
            // float32 program has no need of (a "fast path" that wraps past 2^31). On the other
            // draws a failing run judges nothing (the checks by values fail closed on it).
            if (draw == kIntegers && !mine_ran && ran_at_cases_size) {
              bool reference_runs = false;
              try {
                reference_runs = all_finite(run_following(*ref, t.mesh, refs(inputs), nullptr,
                                                          nullptr, nullptr, nullptr, false));
              } catch (const InternalError&) {
                throw;
              } catch (const std::exception&) {
              }
              if (reference_runs) {
                why = "on whole numbers of 2^27 to 2^29 in magnitude in place of the case's " +
                      which + " (the same shapes), the program fails where the exercise's " +
                      "reference runs: " + std::string(e.what()).substr(0, 400);
                break;
              }
            }
            continue;
          }
          if (draw == kScales[0]) ran_at_cases_size = true;
          std::optional<std::string> d = differs(lp, *ref, mine, theirs, scale);
          if (!d && draw == kColumns)
            d = columns_unscaled(lp, column_outputs, mine, rescaled, cols);
          if (!d && draw == kApart) d = apart_moved(lp, apart, mine, rescaled);
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
                       ? ", the last device's block along each axis a copy of the first's, "
                         "row 1 a copy of row 0 and column 0 one number"
                   : draw == kColumns
                       ? ", then every other column of " + column_names + " times 2^-40"
                   : draw == kApart ? std::string(", then ") + (apart.columns ? "column" : "row") +
                                          " 0 of " + lp.def.inputs[apart.input].name + " times 2^20"
                   : draw == kPositiveBf16 ? ", every number positive and a bfloat16"
                   : draw == kEqualSparse
                       ? ", 5 in 8 numbers zero and every device's block along each axis a copy "
                         "of the first's"
                   : draw == kIntegers   ? ", whole numbers of 2^27 to 2^29 in magnitude"
                   : platform != nullptr ? ", every lax.platform_dependent taking its '" +
                                               std::string(platform) + "' branch"
                   : scale == 1.0f ? std::string()
                                   : ", magnitudes about " + number(scale)) +
                  (kept.empty() ? std::string()
                                : ", the case's " + kept + " times " +
                                      number((draw == kIntegers ? 1.0f : scale) * kKeptFactor)) +
                  "), " + *d + ": the program computes the exercise's numbers on its cases only";
            break;
          }
        }
        cache->found.emplace(key, why);
        return why;
      }};
}

}  // namespace meshrun::interp
