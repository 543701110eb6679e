#include "grade/depends.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "grade/draws.hpp"
#include "interp/primitives.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

// The numbers of every value of the run, per device (slot 0: outside every shard_map), in the
// order the device computed them: the base run's, then, per redrawn run, which of them changed
// (bit `run` of the number's mask). A run that takes another path than the base (a loop's trip
// count, a cond's branch that depends on the values) is compared up to the first value that
// differs in place or shape: the numbers after it are not judged (`until`).
class Recorder final : public ValueObserver {
 public:
  struct Site {
    const Jaxpr* jx = nullptr;
    const Eqn* eqn = nullptr;
    std::size_t k = 0;
    std::size_t size = 0;  // its numbers; a value of equal numbers keeps one (`base`)
  };
  struct Slot {
    std::vector<Site> sites;
    std::vector<std::vector<float>> base;
    std::vector<std::vector<std::uint32_t>> mask;
    std::size_t numbers = 0;
    std::size_t next = 0;          // this run's next value
    std::size_t until = SIZE_MAX;  // values from here on took another path in some run
    bool too_many = false;
  };

  Recorder(int devices, std::size_t cap)
      : slots_(static_cast<std::size_t>(devices) + 1), cap_(cap / (slots_.size())) {}

  // Run `run` (0..31) of the redrawn ones next; -1: the base run, recorded.
  void start(int run) {
    run_ = run;
    for (Slot& s : slots_) {
      s.next = 0;
      if (run_ >= 0 && s.mask.size() != s.base.size()) {
        s.mask.resize(s.base.size());
        for (std::size_t i = 0; i < s.base.size(); ++i) s.mask[i].assign(s.base[i].size(), 0);
      }
    }
  }
  void clear_masks() {
    for (Slot& s : slots_)
      for (auto& m : s.mask) std::fill(m.begin(), m.end(), 0u);
  }

  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    const auto index = static_cast<std::size_t>(device + 1);
    if (device < -1 || index >= slots_.size()) return;
    Slot& s = slots_[index];
    const std::vector<float>& d = v.t.data;
    const auto equal = [&] {
      return std::all_of(d.begin(), d.end(), [&](float f) {
        return std::bit_cast<std::uint32_t>(f) == std::bit_cast<std::uint32_t>(d.front());
      });
    };
    if (run_ < 0) {
      const bool constant = d.size() > 1 && equal();
      s.numbers += constant ? 1 : d.size();
      if (s.too_many) return;  // the values past the cap are not judged (nor recorded)
      if (s.numbers > cap_) {
        s.too_many = true;
        return;
      }
      s.sites.push_back({&jx, eqn, k, d.size()});
      s.base.push_back(constant ? std::vector<float>{d.front()} : d);
      return;
    }
    const std::size_t i = s.next++;
    if (i >= s.until || i >= s.sites.size()) return;
    if (s.sites[i].jx != &jx || s.sites[i].eqn != eqn || s.sites[i].k != k ||
        s.sites[i].size != d.size()) {
      s.until = i;  // another path from here
      return;
    }
    const std::uint32_t bit = 1u << run_;
    const std::vector<float>& b = s.base[i];
    std::vector<std::uint32_t>& m = s.mask[i];
    if (b.size() != d.size()) {  // a value of equal numbers: one number, changed or not
      if (d.empty() || !equal() ||
          std::bit_cast<std::uint32_t>(b[0]) != std::bit_cast<std::uint32_t>(d.front()))
        m[0] |= bit;
      return;
    }
    for (std::size_t j = 0; j < b.size(); ++j)
      if (std::bit_cast<std::uint32_t>(b[j]) != std::bit_cast<std::uint32_t>(d[j])) m[j] |= bit;
  }

  // After a redrawn run: a run that ended before the base run's last recorded value (a loop of
  // fewer trips) took another path from there.
  void finish() {
    for (Slot& s : slots_)
      if (s.next < s.sites.size()) s.until = std::min(s.until, s.next);
  }

  std::vector<Slot>& slots() { return slots_; }
  std::size_t cap() const { return cap_; }

 private:
  std::vector<Slot> slots_;
  std::size_t cap_;
  int run_ = -1;
};

// A constant-weight code for `n` elements: distinct `length`-bit words of `weight` ones, drawn
// at random from a space at least `sparse` times larger than n (16: L = 12 for 32 elements, 21
// for 65536, 27 for 2^20), so a number that depends on several
// elements and changed in a subset of their runs rarely spells a codeword, and two independent
// codes agree on it by chance about once in n times that.
struct Code {
  int length = 0, weight = 0;
  std::vector<std::uint32_t> word;                         // element -> its runs
  std::unordered_map<std::uint32_t, std::uint32_t> named;  // word -> element
};

double choose(int n, int k) {
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

Code make_code(std::size_t n, int sparse, std::mt19937_64& rng) {
  Code c;
  c.length = 4;
  while (choose(c.length, c.length / 2) < sparse * static_cast<double>(n)) ++c.length;
  c.weight = c.length / 2;
  std::vector<int> positions(static_cast<std::size_t>(c.length));
  c.word.reserve(n);
  while (c.word.size() < n) {
    for (int i = 0; i < c.length; ++i) positions[static_cast<std::size_t>(i)] = i;
    std::uint32_t w = 0;
    for (int i = 0; i < c.weight; ++i) {  // a partial Fisher-Yates shuffle: weight positions
      std::uniform_int_distribution<int> pick(i, c.length - 1);
      std::swap(positions[static_cast<std::size_t>(i)],
                positions[static_cast<std::size_t>(pick(rng))]);
      w |= 1u << positions[static_cast<std::size_t>(i)];
    }
    if (c.named.emplace(w, static_cast<std::uint32_t>(c.word.size())).second) c.word.push_back(w);
  }
  return c;
}

}  // namespace

bool computes(const std::string& primitive) {
  static const std::set<std::string> kComputing = {
      "dot_general", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
      "reduce_or", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
      "conv_general_dilated",
      // linear algebra and the other products and
      // reductions: a product v W is a triangular
      // solve of [[I, 0], [-W, I]] as well
      "triangular_solve", "cholesky", "lu", "custom_linear_solve", "ragged_dot_general",
      "reduce_window_sum", "reduce_window_max", "reduce_window_min", "select_and_scatter_add",
      "select_and_gather_add", "cumlogsumexp", "reduce_xor",
      // a scatter that combines what lands on one index sums as reduce_sum does (segment_sum,
      // x.at[i].add): sneaky9's sums outside every shard_map
      "scatter-add", "scatter-mul", "scatter-min", "scatter-max", "scatter-apply"};
  return kComputing.count(primitive) != 0;
}

std::optional<DependsFinding> held_by_dependence(const LoadedProgram& lp, const MeshShape& mesh,
                                                 const std::vector<Tensor>& base,
                                                 const std::vector<DependsInput>& inputs,
                                                 const std::vector<bool>& redrawable, bool over_run,
                                                 const std::set<const Jaxpr*>& bodies,
                                                 const RunPath* follow, DependsCap* capped) {
  constexpr std::size_t kCap = std::size_t{1} << 24;  // numbers kept over the run, all devices
  int devices = 1;
  for (const auto& [axis, n] : mesh) devices *= n;
  Recorder rec(devices, kCap);
  const auto run = [&](const std::vector<Tensor>& in) {
    try {
      run_following(lp, mesh, refs(in), &rec, follow);
      return true;
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception&) {
      return false;  // refused on these values: not judged
    }
  };
  rec.start(-1);
  if (!run(base)) return std::nullopt;
  std::vector<Recorder::Slot>& slots = rec.slots();
  if (capped != nullptr) {
    capped->kept = rec.cap();
    for (std::size_t slot = 0; slot < slots.size(); ++slot)
      if (slots[slot].too_many) {
        capped->device = static_cast<int>(slot) - 1;
        capped->numbers = slots[slot].numbers;
        break;
      }
  }

  // What each device was handed: the numbers of its shard_map operands as received (the base
  // run's inputs are distinct random numbers, so the bits name the element).
  std::vector<std::unordered_set<std::uint32_t>> handed(slots.size());
  for (std::size_t slot = 1; slot < slots.size(); ++slot)
    for (std::size_t i = 0; i < slots[slot].sites.size(); ++i)
      if (slots[slot].sites[i].eqn == nullptr && bodies.count(slots[slot].sites[i].jx) != 0)
        for (const float f : slots[slot].base[i])
          handed[slot].insert(std::bit_cast<std::uint32_t>(f));
  // And, after phase 1, the elements a number of its shard_map operands as received is a function
  // of alone: an element handed encoded (x split outside into bf16 hi + f32 lo, each handed with
  // x's own split: sneaky11's right bf16x2 programs) is the device's own too.
  std::vector<std::set<std::pair<std::size_t, std::size_t>>> handed_encoded(slots.size());
  const auto own = [&](std::size_t slot, std::size_t input, std::size_t e) {
    return handed[slot].count(std::bit_cast<std::uint32_t>(base[input].data[e])) != 0 ||
           handed_encoded[slot].count({input, e}) != 0;
  };

  // Phase 1, per graded input: the numbers that change exactly when one of its elements is
  // redrawn, at both codes (the other inputs kept).
  struct Candidate {
    std::uint32_t value, number;
    std::uint32_t input, element;  // index into `inputs`; element
  };
  std::vector<std::vector<Candidate>> candidates(slots.size());
  for (std::size_t g = 0; g < inputs.size(); ++g) {
    const DependsInput& in = inputs[g];
    if (in.size <= 1 || in.size > (std::size_t{1} << 20) || in.def_input >= base.size()) continue;
    std::vector<std::vector<std::vector<std::int32_t>>> decoded(slots.size());
    // The first code is denser (4 times the input's size): it only tells whether any device
    // (or the code outside) has a number that is not a copy and may hold an element it was not
    // handed; a right program has none, and its grading costs these runs alone.
    for (int code_index = 0; code_index < 2; ++code_index) {
      std::mt19937_64 rng(0x5DEECE66Dull * (g + 1) + 0x9E3779B97F4A7C15ull * code_index);
      const Code code = make_code(in.size, code_index == 0 ? 4 : 16, rng);
      rec.clear_masks();
      for (int r = 0; r < code.length; ++r) {
        std::vector<Tensor> redraw = base;
        std::vector<float>& data = redraw[in.def_input].data;
        for (std::size_t e = 0; e < in.size; ++e)
          if (code.word[e] & (1u << r)) data[e] = redrawn(data[e], rng);
        rec.start(r);
        if (!run(redraw)) return std::nullopt;
        rec.finish();
      }
      bool suspect = false;  // (code 0) a number not a copy names an element not handed
      for (std::size_t slot = 0; slot < slots.size(); ++slot) {
        const Recorder::Slot& s = slots[slot];
        auto& dec = decoded[slot];
        if (code_index == 0) dec.resize(s.base.size());
        const std::size_t judged = std::min(s.until, s.mask.size());
        for (std::size_t i = 0; i < judged; ++i) {
          const std::vector<std::uint32_t>& m = s.mask[i];
          if (code_index == 0) dec[i].assign(m.size(), -1);
          for (std::size_t j = 0; j < m.size(); ++j) {
            if (std::popcount(m[j]) != code.weight) continue;
            const auto it = code.named.find(m[j]);
            if (it == code.named.end()) continue;
            const auto e = static_cast<std::int32_t>(it->second);
            if (code_index == 0) {
              dec[i][j] = e;
              suspect = suspect ||
                        (!own(slot, in.def_input, it->second) &&
                         std::bit_cast<std::uint32_t>(s.base[i][j]) !=
                             std::bit_cast<std::uint32_t>(base[in.def_input].data[it->second]));
            } else if (j < dec[i].size() && dec[i][j] == e) {
              candidates[slot].push_back(
                  {static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j),
                   static_cast<std::uint32_t>(g), static_cast<std::uint32_t>(e)});
            }
          }
        }
      }
      if (code_index == 0 && !suspect) break;
    }
  }

  for (std::size_t slot = 1; slot < slots.size(); ++slot)
    for (const Candidate& c : candidates[slot]) {
      const Recorder::Site& site = slots[slot].sites[c.value];
      if (site.eqn == nullptr && bodies.count(site.jx) != 0)
        handed_encoded[slot].insert({inputs[c.input].def_input, c.element});
    }

  // Phase 2, per device that holds another device's element by phase 1 (and outside every
  // shard_map, where nothing was handed): every number of it must change exactly when that
  // element is redrawn among all the elements (of every float32 input) the device was not
  // handed. A partial sum that moves, whose other terms vanished on
  // this case (h zero but for one unit), depends on elements of w1 and x from elsewhere too: it
  // is not that element; `x_other + 1e-3 * w_own` is.
  for (std::size_t slot = 0; slot < slots.size(); ++slot) {
    std::vector<Candidate>& cs = candidates[slot];
    const bool foreign = std::any_of(cs.begin(), cs.end(), [&](const Candidate& c) {
      return !own(slot, inputs[c.input].def_input, c.element);
    });
    if (!foreign) continue;
    std::vector<std::pair<std::size_t, std::size_t>> others;  // (run input, element)
    std::map<std::pair<std::size_t, std::size_t>, std::uint32_t> index;
    for (std::size_t input = 0; input < base.size() && input < redrawable.size(); ++input) {
      if (!redrawable[input]) continue;
      for (std::size_t e = 0; e < base[input].data.size(); ++e) {
        if (own(slot, input, e)) continue;
        index.emplace(std::make_pair(input, e), static_cast<std::uint32_t>(others.size()));
        others.emplace_back(input, e);
      }
    }
    if (others.size() > (std::size_t{1} << 20)) return std::nullopt;  // codes of 31 bits at most
    std::mt19937_64 rng(0xA0761D6478BD642Full + slot);
    const Code code = make_code(others.size(), 16, rng);
    rec.clear_masks();
    for (int r = 0; r < code.length; ++r) {
      std::vector<Tensor> redraw = base;
      for (std::size_t o = 0; o < others.size(); ++o)
        if (code.word[o] & (1u << r)) {
          float& f = redraw[others[o].first].data[others[o].second];
          f = redrawn(f, rng);
        }
      rec.start(r);
      if (!run(redraw)) return std::nullopt;
      rec.finish();
    }
    const Recorder::Slot& s = slots[slot];
    std::erase_if(cs, [&](const Candidate& c) {
      if (c.value >= std::min(s.until, s.mask.size())) return true;
      const std::uint32_t m = s.mask[c.value][c.number];
      const std::size_t input = inputs[c.input].def_input;
      if (own(slot, input, c.element)) return m != 0;
      return m != code.word[index.at({input, c.element})];
    });
  }

  std::optional<DependsFinding> found;
  std::vector<DependsFinding> all;
  const auto better = [&](const DependsFinding& f) {
    all.push_back(f);
    if (!found || f.device < found->device || (f.device == found->device && f.kind < found->kind))
      found = f;
  };
  for (std::size_t slot = 0; slot < slots.size(); ++slot) {
    const Recorder::Slot& s = slots[slot];
    for (std::size_t g = 0; g < inputs.size(); ++g) {
      const std::size_t n = inputs[g].size;
      std::vector<std::int64_t> first(n, -1);            // element -> the first value holding it
      std::vector<std::size_t> holds(s.base.size(), 0);  // value -> elements it holds
      std::vector<std::uint32_t> stamp(n, 0);
      for (const Candidate& c : candidates[slot]) {
        if (c.input != g) continue;
        if (first[c.element] < 0 || c.value < first[c.element]) first[c.element] = c.value;
        if (stamp[c.element] != c.value + 1) {
          stamp[c.element] = c.value + 1;
          ++holds[c.value];
        }
      }
      DependsFinding f;
      f.device = static_cast<int>(slot) - 1;
      f.input = g;
      f.elements = n;
      const auto at = [&](std::size_t i) {
        f.jx = s.sites[i].jx;
        f.eqn = s.sites[i].eqn;
        f.k = s.sites[i].k;
      };
      if (slot == 0) {
        // Outside every shard_map: a product or reduction one of whose operands holds all of it.
        std::set<std::pair<const Jaxpr*, int>> whole;
        for (std::size_t i = 0; i < holds.size(); ++i) {
          const Recorder::Site& site = s.sites[i];
          if (holds[i] == n)
            whole.insert(
                {site.jx, site.eqn != nullptr ? site.eqn->out[site.k] : site.jx->invars[site.k]});
          if (site.eqn == nullptr || site.k != 0 || !computes(site.eqn->primitive)) continue;
          const bool on_whole =
              std::any_of(site.eqn->in.begin(), site.eqn->in.end(), [&](const Atom& a) {
                return !a.is_literal() && whole.count({site.jx, a.var}) != 0;
              });
          if (!on_whole) continue;
          f.kind = DependsFinding::kOutside;
          at(i);
          better(f);
          break;
        }
        continue;
      }
      const auto value = std::find(holds.begin(), holds.end(), n);
      if (value != holds.end()) {
        f.kind = DependsFinding::kWhole;
        at(static_cast<std::size_t>(value - holds.begin()));
        better(f);
        continue;
      }
      if (!over_run) continue;
      std::size_t held = 0, foreign = 0;
      std::int64_t last = -1, first_foreign = -1;
      std::set<std::int64_t> values;
      for (std::size_t e = 0; e < n; ++e) {
        if (first[e] < 0) continue;
        ++held;
        values.insert(first[e]);
        last = std::max(last, first[e]);
        if (own(slot, inputs[g].def_input, e)) continue;
        ++foreign;
        if (first_foreign < 0 || first[e] < first_foreign) first_foreign = first[e];
      }
      if (held == n) {
        f.kind = DependsFinding::kOverRun;
        f.values = values.size();
        at(static_cast<std::size_t>(last));
        better(f);
      } else if (foreign > 0) {
        f.kind = DependsFinding::kForeign;
        f.elements = foreign;
        at(static_cast<std::size_t>(first_foreign));
        better(f);
      }
    }
  }
  if (found && found->device >= 0) {
    std::set<int> alike;  // the devices with the same finding at the same place
    for (const DependsFinding& f : all)
      if (f.device >= 0 && f.kind == found->kind && f.input == found->input && f.jx == found->jx &&
          f.eqn == found->eqn && f.k == found->k)
        alike.insert(f.device);
    found->every_device = static_cast<int>(alike.size()) == devices;
  }
  return found;
}

}  // namespace meshrun::interp
