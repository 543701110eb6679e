#include "grade/outside_work.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <unordered_set>
#include <utility>

#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

constexpr std::size_t kMostNumbers = std::size_t{1} << 22;  // numbers kept outside, per run
constexpr int kMostRuns = 32;                               // blocks: the bits of a mask
constexpr std::size_t kMostNamed = 8;  // combining equations moved one at a time, to name one

// One redrawn run: the block of every split input that device `index` along `axis` is handed;
// or (axis "") one half of a split input along a dimension no axis splits (`half`: "x's first
// half along dimension 1"): a device's block is whole along it, and the products and sums over
// it (a contraction) are the device's work too.
struct BlockRun {
  std::string axis;
  int index = 0;
  std::vector<std::pair<std::size_t, std::vector<std::size_t>>> elements;  // (input, elements)
  std::string half;  // "x along dimension 1" (index 0: its first half, 1: its second)
};

// The runs of `inputs` (drawn: `drawn`) on `mesh`, per axis of more than one device and index
// along it: the elements of that index's block (block_elements, draws.hpp).
std::vector<BlockRun> block_runs(const MeshShape& mesh, const std::vector<TensorRef>& inputs,
                                 const std::vector<PartitionSpec>& specs,
                                 const std::vector<std::string>& names,
                                 const std::vector<bool>& drawn) {
  std::vector<BlockRun> runs;
  for (const auto& [axis, n] : mesh) {
    if (n <= 1) continue;
    for (int index = 0; index < n; ++index) {
      BlockRun run{axis, index, {}, {}};
      for (std::size_t i = 0; i < inputs.size() && i < specs.size(); ++i) {
        if (i >= drawn.size() || !drawn[i]) continue;
        std::vector<std::size_t> chosen =
            block_elements(inputs[i].shape, specs[i], mesh, axis, index);
        if (!chosen.empty()) run.elements.emplace_back(i, std::move(chosen));
      }
      if (!run.elements.empty()) runs.push_back(std::move(run));
    }
  }
  // The halves of a split input along each dimension no axis of more than one device splits.
  for (std::size_t i = 0; i < inputs.size() && i < specs.size() && i < names.size(); ++i) {
    if (i >= drawn.size() || !drawn[i]) continue;
    const Shape& shape = inputs[i].shape;
    const auto& dims = specs[i].dims();
    const auto split = [&](std::size_t d) {
      if (d >= dims.size()) return false;
      return std::any_of(dims[d].begin(), dims[d].end(), [&](const std::string& a) {
        return std::any_of(mesh.begin(), mesh.end(),
                           [&](const auto& m) { return m.first == a && m.second > 1; });
      });
    };
    bool any = false;
    for (std::size_t d = 0; d < shape.size(); ++d) any = any || split(d);
    if (!any) continue;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (split(d) || shape[d] < 2) continue;
      std::int64_t inner = 1;
      for (std::size_t e = d + 1; e < shape.size(); ++e) inner *= shape[e];
      if (inner <= 0) continue;
      const auto extent = static_cast<std::int64_t>(shape[d]);
      for (int h = 0; h < 2; ++h) {
        std::vector<std::size_t> chosen;
        for (std::size_t e = 0; e < inputs[i].size(); ++e) {
          const std::int64_t coord = (static_cast<std::int64_t>(e) / inner) % extent;
          if ((coord < extent / 2 ? 0 : 1) == h) chosen.push_back(e);
        }
        BlockRun run{"", h, {}, names[i] + " along dimension " + std::to_string(d)};
        run.elements.emplace_back(i, std::move(chosen));
        runs.push_back(std::move(run));
      }
    }
  }
  return runs;
}

// The numbers of every value computed outside the shard_maps (device -1), in order: the base
// run's, then per block run which of them changed (bit `run` of a number's mask), with each
// equation's operands (the values it read, by their place in the record). A run that takes
// another path than the base is compared up to where it departs. The equations to move, when
// set, have their results moved (does an output follow from them?).
class Outside final : public ValueObserver {
 public:
  struct Site {
    const Jaxpr* jx = nullptr;
    const Eqn* eqn = nullptr;
    std::size_t k = 0;
    std::vector<std::int64_t>
        operands;  // per operand: its site; -1 literal or constant; -2 unknown
    std::vector<float> base;
    std::vector<std::uint32_t> mask;
  };

  static constexpr int kUnrecorded = -2;  // a run with an equation's results moved

  // Run `run` (0..31) of the block runs next; -1: the base run, recorded.
  void start(int run) {
    run_ = run;
    next_ = 0;
    moved_ = false;
  }
  void finish() {
    if (next_ < sites_.size()) until_ = std::min(until_, next_);
  }
  void move(std::set<const Eqn*> eqns) { move_ = std::move(eqns); }
  bool moved() const { return moved_; }

  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (device != -1 || run_ == kUnrecorded) return;
    const std::vector<float>& d = v.t.data;
    if (run_ < 0) {
      if (full_ || numbers_ + d.size() > kMostNumbers) {
        full_ = true;  // the values after this are not judged
        return;
      }
      numbers_ += d.size();
      Site s{&jx, eqn, k, {}, d, std::vector<std::uint32_t>(d.size(), 0)};
      if (eqn != nullptr)
        for (const Atom& a : eqn->in) {
          if (a.is_literal() ||
              std::find(jx.constvars.begin(), jx.constvars.end(), a.var) != jx.constvars.end()) {
            s.operands.push_back(-1);
            continue;
          }
          const auto at = last_.find({&jx, a.var});
          s.operands.push_back(at == last_.end() ? -2 : static_cast<std::int64_t>(at->second));
        }
      const int var = eqn != nullptr ? eqn->out[k] : jx.invars[k];
      last_[{&jx, var}] = sites_.size();
      sites_.push_back(std::move(s));
      return;
    }
    const std::size_t i = next_++;
    if (i >= until_ || i >= sites_.size()) return;
    Site& s = sites_[i];
    if (s.jx != &jx || s.eqn != eqn || s.k != k || s.base.size() != d.size()) {
      until_ = i;
      return;
    }
    const std::uint32_t bit = 1u << run_;
    for (std::size_t j = 0; j < d.size(); ++j)
      if (std::bit_cast<std::uint32_t>(d[j]) != std::bit_cast<std::uint32_t>(s.base[j]))
        s.mask[j] |= bit;
  }

  void pin(int device, const Eqn& eqn, std::vector<Value>& outs) override {
    if (device != -1 || move_.count(&eqn) == 0) return;
    moved_ = true;
    for (Value& v : outs)
      if (dtype_info(v.dtype).kind == DKind::kFloat)
        for (float& f : v.t.data) f = f * 1.0625f + 0.5f;
  }

  const std::vector<Site>& sites() const { return sites_; }
  std::size_t until() const { return std::min(until_, sites_.size()); }

 private:
  std::vector<Site> sites_;
  std::map<std::pair<const Jaxpr*, int>, std::size_t> last_;  // a variable's latest value
  std::size_t numbers_ = 0, next_ = 0, until_ = SIZE_MAX;
  bool full_ = false, moved_ = false;
  int run_ = -1;
  std::set<const Eqn*> move_;
};

// "the blocks of 'data' devices 0, 1, 2 and 3; both halves of x along dimension 1": the runs of
// `mask`.
std::string blocks_of(std::uint32_t mask, const std::vector<BlockRun>& runs) {
  std::vector<std::string> parts;
  std::string axis;
  std::vector<int> indices;
  const auto flush = [&] {
    if (indices.empty()) return;
    std::string p = "the blocks of '" + axis + "' device" + (indices.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < indices.size(); ++i)
      p += (i == 0 ? "" : i + 1 == indices.size() ? " and " : ", ") + std::to_string(indices[i]);
    parts.push_back(p);
    indices.clear();
  };
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if ((mask & (1u << r)) == 0) continue;
    if (runs[r].axis.empty()) {
      flush();
      const bool both = runs[r].index == 0 && r + 1 < runs.size() && (mask & (2u << r)) != 0;
      parts.push_back(std::string(both                 ? "both halves"
                                  : runs[r].index == 0 ? "the first half"
                                                       : "the second half") +
                      " of " + runs[r].half);
      if (both) ++r;
      continue;
    }
    if (runs[r].axis != axis) flush();
    axis = runs[r].axis;
    indices.push_back(runs[r].index);
  }
  flush();
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? "" : "; ") + parts[i];
  return s;
}

// The first equation outside the shard_maps (in the order they ran) whose results combine blocks
// none of its operands had combined, from `from` on: its site, and one such number's mask.
std::optional<std::pair<std::size_t, std::uint32_t>> combining(const Outside& rec,
                                                               std::size_t from) {
  const auto& sites = rec.sites();
  std::map<std::size_t, std::vector<std::uint32_t>> distinct;  // site -> its numbers' masks
  const auto masks_of = [&](std::size_t i) -> const std::vector<std::uint32_t>& {
    auto it = distinct.find(i);
    if (it != distinct.end()) return it->second;
    std::unordered_set<std::uint32_t> set(sites[i].mask.begin(), sites[i].mask.end());
    return distinct.emplace(i, std::vector<std::uint32_t>(set.begin(), set.end())).first->second;
  };
  for (std::size_t i = from; i < rec.until(); ++i) {
    const Outside::Site& s = sites[i];
    // Primitives alone: a call, a loop or a shard_map is judged by what runs in it.
    if (s.eqn == nullptr || !s.eqn->subs.empty() || s.eqn->primitive == "shard_map") continue;
    if (std::any_of(s.operands.begin(), s.operands.end(), [](std::int64_t o) { return o == -2; }))
      continue;  // an operand not seen (absorbed into this equation): not judged
    std::vector<std::uint32_t> theirs;
    for (const std::int64_t o : s.operands)
      if (o >= 0) {
        const auto& m = masks_of(static_cast<std::size_t>(o));
        theirs.insert(theirs.end(), m.begin(), m.end());
      }
    std::unordered_set<std::uint32_t> judged;  // (the first number of each mask, in order)
    for (const std::uint32_t m : s.mask) {
      if (m == 0 || std::popcount(m) < 2 || !judged.insert(m).second) continue;
      const bool had =
          std::any_of(theirs.begin(), theirs.end(), [&](std::uint32_t o) { return (m & ~o) == 0; });
      if (!had) return std::make_pair(i, m);
    }
  }
  return std::nullopt;
}

struct OutsideCache {
  std::mutex mutex;
  std::map<std::string, std::optional<std::string>> found;
};

}  // namespace

StructuralRule not_combined_outside(const LoadedProgram& lp, std::vector<PartitionSpec> specs,
                                    std::vector<bool> keep, std::vector<std::string> outputs,
                                    std::shared_ptr<CaseMemo> memo) {
  std::vector<bool> drawn_input;
  if (const auto* ex = dynamic_cast<const Graded*>(lp.exercise.get()); ex != nullptr)
    for (std::size_t i = 0; i < ex->input_dtypes.size(); ++i)
      drawn_input.push_back(ex->input_dtypes[i] == DType::kF32 && !(i < keep.size() && keep[i]));
  std::string named;
  for (std::size_t i = 0; i < outputs.size(); ++i)
    named += (i == 0 ? "" : i + 1 == outputs.size() ? " and " : ", ") + outputs[i];
  return {
      "the code outside the shard_maps does none of the combining of the devices' blocks that " +
          named + (outputs.size() == 1 ? " follows" : " follow") + " from (by values)",
      [&lp, specs, drawn_input, outputs, named, memo,
       cache = std::make_shared<OutsideCache>()](const Trace& t) -> std::optional<std::string> {
        if (t.input_values == nullptr) return std::nullopt;
        const std::vector<TensorRef>& inputs = *t.input_values;
        const auto drawn = [&](std::size_t i) { return i < drawn_input.size() && drawn_input[i]; };
        std::vector<std::string> names;
        for (const ArgDef& in : lp.def.inputs) names.push_back(in.name);
        const std::vector<BlockRun> runs = block_runs(t.mesh, inputs, specs, names, drawn_input);
        const bool blocks = std::any_of(runs.begin(), runs.end(),
                                        [](const BlockRun& r) { return !r.axis.empty(); });
        if (!blocks || runs.size() > static_cast<std::size_t>(kMostRuns)) return std::nullopt;
        try {
          // The case's decisions, which every run takes (draws.hpp).
          const auto record_case = [&](RunPath& p) {
            run_following(lp, t.mesh, inputs, nullptr, nullptr, &p);
          };
          const std::string case_only = case_key(
              t.mesh, inputs, [](std::size_t) { return false; }, nullptr);
          RunPath own;
          if (memo == nullptr) record_case(own);
          const RunPath path = memo != nullptr ? memo->path(case_only, record_case) : own;
          const std::string key = case_key(t.mesh, inputs, drawn, &path);
          std::lock_guard<std::mutex> lock(cache->mutex);
          if (const auto it = cache->found.find(key); it != cache->found.end()) return it->second;

          std::mt19937_64 rng(0x94D049BB133111EBull);
          std::vector<Tensor> base;
          for (std::size_t i = 0; i < inputs.size(); ++i) {
            base.emplace_back(
                inputs[i].shape,
                std::vector<float>(inputs[i].data, inputs[i].data + inputs[i].size()));
            if (drawn(i))
              for (float& f : base.back().data) f = redrawn(f, rng);
          }
          Outside rec;
          rec.start(-1);
          const std::vector<Tensor> outs = run_following(lp, t.mesh, refs(base), &rec, &path);
          for (std::size_t r = 0; r < runs.size(); ++r) {
            std::vector<Tensor> redraw = base;
            for (const auto& [input, elements] : runs[r].elements)
              for (const std::size_t e : elements)
                redraw[input].data[e] = redrawn(redraw[input].data[e], rng);
            rec.start(static_cast<int>(r));
            run_following(lp, t.mesh, refs(redraw), &rec, &path);
            rec.finish();
          }
          // The combining equations, in order; then one run with all of their results moved: no
          // named output changes, none of them is the exercise's (a loss averaged outside). Else,
          // one at a time in order, the first a named output follows from (the first of them if
          // none does alone: several combine into the output together).
          std::vector<std::pair<std::size_t, std::uint32_t>> found;
          std::set<const Eqn*> seen_eqns;
          for (std::size_t from = 0;;) {
            const auto f = combining(rec, from);
            if (!f) break;
            from = f->first + 1;
            if (seen_eqns.insert(rec.sites()[f->first].eqn).second) found.push_back(*f);
          }
          // The named outputs that change when `eqns`' results are moved ("" none, or the move
          // could not be made: not judged).
          const auto follows_from = [&](const std::set<const Eqn*>& eqns) -> std::string {
            rec.move(eqns);
            rec.start(Outside::kUnrecorded);
            std::vector<Tensor> moved;
            try {
              moved = run_following(lp, t.mesh, refs(base), &rec, &path);
            } catch (const InternalError&) {
              throw;
            } catch (const std::exception&) {
              rec.move({});
              return "";
            }
            rec.move({});
            if (!rec.moved()) return "";  // (an equation the evaluator fused: not moved)
            std::string follows;
            for (std::size_t o = 0; o < lp.def.outputs.size() && o < outs.size(); ++o) {
              if (std::find(outputs.begin(), outputs.end(), lp.def.outputs[o].name) ==
                  outputs.end())
                continue;
              const bool changed = o >= moved.size() ||
                                   moved[o].data.size() != outs[o].data.size() ||
                                   !std::equal(outs[o].data.begin(), outs[o].data.end(),
                                               moved[o].data.begin(), [](float a, float b) {
                                                 return std::bit_cast<std::uint32_t>(a) ==
                                                        std::bit_cast<std::uint32_t>(b);
                                               });
              if (changed) follows += (follows.empty() ? "" : ", ") + lp.def.outputs[o].name;
            }
            return follows;
          };
          std::optional<std::string> why;
          if (!found.empty() && !follows_from(seen_eqns).empty()) {
            std::string follows;
            std::size_t which = 0;
            for (std::size_t k = 0; k < found.size() && k < kMostNamed && follows.empty(); ++k) {
              follows = follows_from({rec.sites()[found[k].first].eqn});
              which = k;
            }
            if (follows.empty()) {
              which = 0;
              follows = "the outputs named";
            }
            const Outside::Site& s = rec.sites()[found[which].first];
            why = s.eqn->primitive + " outside every shard_map (" + s.eqn->place() + ") combines " +
                  blocks_of(found[which].second, runs) +
                  " -- none of its operands had combined them -- and " + follows +
                  (follows.find(',') == std::string::npos && follows != "the outputs named"
                       ? " follows"
                       : " follow") +
                  " from it: the exercise's combining done on one device, not by the mesh";
          }
          cache->found.emplace(key, why);
          return why;
        } catch (const InternalError&) {
          throw;
        } catch (const std::exception&) {
          return std::nullopt;  // refused on the case or the draws: the other rules judge it
        }
      }};
}

}  // namespace meshrun::interp
