// What a shard_map body holds of each input (held.hpp).
#include "grade/held.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>

#include "grade/depends.hpp"
#include "grade/draws.hpp"
#include "grade/traffic.hpp"
#include "interp/eval.hpp"
#include "interp/ops/control_flow.hpp"
#include "interp/program.hpp"
#include "shard/mesh_shape.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using Mask = std::uint64_t;  // bit i: the program's input i

std::string declared(const Type& t) {
  std::string dims;
  for (const DimExpr& d : t.shape) dims += (dims.empty() ? "" : ",") + d.str();
  return std::string(dtype_name(t.dtype)) + "[" + dims + "]";
}

int input_index(const ProgramFile& file, const std::string& name) {
  for (std::size_t i = 0; i < file.inputs.size(); ++i)
    if (file.inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

// What a value of a shard_map body holds: which program inputs it depends on at all (`depends`),
// and of each input, how many of its elements at most it holds as values (a broadcast or a copy
// holds no more than its operand, an elementwise operation what each of its operands holds -- so
// `w1 + 0 * x[0, 0]` still holds w1 --, a gather over n devices n times more, a concatenation the
// sum).
struct Held {
  Mask depends = 0;
  std::map<int, std::int64_t> elements;  // input -> elements held
  // Outside the shard_maps: input -> how many of its elements (held by the operands, or combined
  // into them before) elementwise arithmetic there has combined into this value -- blocks a
  // shard_map returned, added up outside by slices and adds, are a sum done on one device.
  std::map<int, std::int64_t> combined;

  std::int64_t of(int input) const {
    const auto it = elements.find(input);
    return it == elements.end() ? 0 : it->second;
  }
  bool operator==(const Held&) const = default;
};

// What either of two values may hold (a loop's carry over its iterations, a cond's branches).
Held either(const Held& a, const Held& b) {
  Held r = a;
  r.depends |= b.depends;
  for (const auto& [input, n] : b.elements) r.elements[input] = std::max(r.of(input), n);
  for (const auto& [input, n] : b.combined) r.combined[input] = std::max(r.combined[input], n);
  return r;
}

// A value a while's predicate or a cond's index decides depends on it too (but holds none of it).
Held guarded(Held h, const Held& by) {
  h.depends |= by.depends;
  return h;
}

// The most a value may hold of what it holds anything of: every count at its largest (capped to
// the value's size where it is stored) -- a loop's carry whose counts still grow after
// control_facts' rounds.
Held widened(Held h) {
  for (auto& [input, n] : h.elements) n = INT64_MAX;
  return h;
}

// What a carry holds after `times` more iterations that each add what the last one added (from
// `before` to `after`): a scan's accumulator beyond the rounds control_facts walks.
Held extended(const Held& before, const Held& after, std::uint64_t times) {
  Held r = after;
  for (auto& [input, n] : r.elements) {
    const std::int64_t step = n - before.of(input);
    std::int64_t grow = 0, sum = 0;
    if (step <= 0) continue;
    n = __builtin_mul_overflow(
            step, static_cast<std::int64_t>(std::min<std::uint64_t>(times, INT64_MAX)), &grow) ||
                __builtin_add_overflow(n, grow, &sum)
            ? INT64_MAX
            : sum;
  }
  return r;
}

bool is_control(const Eqn& e) {
  const Primitive* p = find_primitive(e.primitive);
  return p != nullptr && p->control != Primitive::Control::kNone;
}

// A scan's stacked results (its ys, after the carries) hold what one iteration's y holds in each
// of its `length` rows: a stack is a concatenation (a scan graded as its unrolled twin).
void stack_ys(const Eqn& e, std::vector<Held>& outs) {
  if (e.primitive != "scan") return;
  ControlPlan p;
  p.kind = Primitive::Control::kScan;
  read_control_params(e, p);
  if (!p.param_error.empty()) return;
  for (std::size_t k = static_cast<std::size_t>(p.num_carry); k < outs.size(); ++k) {
    for (auto& [input, n] : outs[k].elements) {
      std::int64_t r = 0;
      n = __builtin_mul_overflow(n, p.length, &r) ? INT64_MAX : r;
    }
  }
}

using Outs = std::vector<Held>;  // what each result of a jaxpr holds

// What each of `jx`'s results holds, given what each of its values holds.
Outs results(const Jaxpr& jx, const std::vector<Held>& h) {
  Outs outs;
  for (const Atom& a : jx.outvars) outs.push_back(a.is_literal() ? Held{} : h[a.var]);
  return outs;
}

Held of_input(int i, std::int64_t elements) {
  Held h;
  h.depends = Mask{1} << i;
  h.elements[i] = elements;
  return h;
}

// What the results of `e` hold, from its operands'.
Held combine(const Eqn& e, const std::vector<Held>& h, const MeshShape& mesh) {
  Held out;
  std::vector<const Held*> ops;
  for (const Atom& a : e.in) {
    if (a.is_literal()) continue;
    ops.push_back(&h[a.var]);
    out.depends |= h[a.var].depends;
  }
  // A product or a reduction (computes, depends.hpp) computes new values: it holds none of its
  // operands' elements -- except a product with an operand that depends on no input (iota,
  // axis_index, literals: a one-hot or permutation matrix), which may move its other operand's
  // elements as a gather does.
  if (computes(e.primitive)) {
    const bool moves = e.primitive == "dot_general" && ops.size() == 2 &&
                       (ops[0]->depends == 0) != (ops[1]->depends == 0);
    if (moves) out.elements = (ops[0]->depends != 0 ? ops[0] : ops[1])->elements;
    return out;
  }
  for (const Held* op : ops)
    for (const auto& [input, n] : op->elements) out.elements[input] += n;
  // A gather over n devices holds n blocks; so may a psum (of blocks padded with zeros).
  // (pmax and pmin of blocks padded with their identity too. psum_scatter is left out: a
  // scattered sum's block counted n times wrongly fails right reduce-scatter + all-gather
  // programs -- which elements a value holds, not how many, is issue #47's.)
  static const char* const kCombining[] = {"all_gather", "all_gather_invariant",
                                           "psum",       "psum_invariant",
                                           "pmean",      "psum2",
                                           "all_to_all", "pmax",
                                           "pmin"};
  if (!out.elements.empty() && std::find(std::begin(kCombining), std::end(kCombining),
                                         e.primitive) != std::end(kCombining)) {
    std::int64_t n = 1;
    const auto it = e.params.find("axes");
    if (it != e.params.end() && it->is_array()) {
      for (const auto& a : *it) {
        const int pos = a.is_string() ? mesh_axis_position(mesh, a.get<std::string>()) : -1;
        if (pos >= 0) n *= mesh[static_cast<std::size_t>(pos)].second;
      }
    }
    for (auto& [input, count] : out.elements) count *= n;
  }
  return out;
}

// No more elements than the value has.
void cap(Held& h, std::int64_t size) {
  for (auto& [input, n] : h.elements) n = std::min(n, size);
}

// Visits every value of a body (its operands as received, each equation's results) with what it
// holds; `size` evaluates a type's element count under the run's binding. Returns what each of
// the body's results holds.
Outs held_values(const Jaxpr& jx, std::vector<Held> in, const MeshShape& mesh,
                 const std::function<std::int64_t(const Type&)>& size,
                 const std::function<void(const Type&, const Held&, const Eqn&)>& visit,
                 const Eqn& caller, int depth) {
  std::vector<Held> h(jx.types.size());
  for (std::size_t i = 0; i < jx.invars.size() && i < in.size(); ++i) {
    h[jx.invars[i]] = in[i];
    cap(h[jx.invars[i]], size(jx.types[jx.invars[i]]));  // a scan's x: one slice of xs
    visit(jx.types[jx.invars[i]], h[jx.invars[i]], caller);
  }
  for (const Eqn& e : jx.eqns) {
    if (is_control(e) && depth < 64) {
      std::vector<Held> ops;
      for (const Atom& a : e.in) ops.push_back(a.is_literal() ? Held{} : h[a.var]);
      const auto body = [&](const Jaxpr& sub, const std::vector<Held>& sub_in) {
        return held_values(sub, sub_in, mesh, size, visit, e, depth + 1);
      };
      Outs outs =
          control_facts<Held>(e, ops, e.out.size(), body, either, guarded, widened, extended);
      stack_ys(e, outs);
      for (std::size_t k = 0; k < e.out.size(); ++k) {
        Held r = outs[k];
        cap(r, size(jx.types[e.out[k]]));
        h[e.out[k]] = r;
        visit(jx.types[e.out[k]], r, e);
      }
      continue;
    }
    if (const Jaxpr* sub = e.sub("jaxpr") ? e.sub("jaxpr") : e.sub("call_jaxpr");
        sub != nullptr && depth < 64) {
      // A jit, checkpoint or call inside the body: its results are what its own body made of
      // its operands (an all_gather inside it counts), not the sum of its operands.
      std::vector<Held> ops;
      for (const Atom& a : e.in) ops.push_back(a.is_literal() ? Held{} : h[a.var]);
      const Outs outs = held_values(*sub, ops, mesh, size, visit, e, depth + 1);
      for (std::size_t k = 0; k < e.out.size() && k < outs.size(); ++k) {
        Held r = outs[k];
        cap(r, size(jx.types[e.out[k]]));
        h[e.out[k]] = r;
        visit(jx.types[e.out[k]], r, e);
      }
      continue;
    }
    const Held out = combine(e, h, mesh);
    for (int v : e.out) {
      Held r = out;
      cap(r, size(jx.types[v]));
      h[v] = r;
      visit(jx.types[v], r, e);
    }
  }
  return results(jx, h);
}

// How many devices' blocks a shard_map's result `k` concatenates: the product of the sizes of
// the axes its out_spec names (1 for a replicated result).
std::int64_t out_split(const Eqn& e, std::size_t k, const MeshShape& mesh) {
  std::int64_t n = 1;
  const auto specs = e.params.find("out_specs");
  if (specs == e.params.end() || !specs->is_array() || k >= specs->size()) return n;
  const auto axis = [&](const nlohmann::json& a) {
    const int pos = a.is_string() ? mesh_axis_position(mesh, a.get<std::string>()) : -1;
    if (pos >= 0) n *= mesh[static_cast<std::size_t>(pos)].second;
  };
  if (!(*specs)[k].is_array()) return n;
  for (const auto& entry : (*specs)[k]) {
    if (entry.is_array()) {
      for (const auto& a : entry) axis(a);
    } else {
      axis(entry);
    }
  }
  return n;
}

// ---- "Holds", by values (issue #47) ----
//
// The program runs twice more with each graded input's elements replaced by distinct random
// float32 values (fixed seeds: the verdict is the same on every run); a value computed on a device
// holds element e of an input when one of its numbers has e's mantissa (its 23 fraction bits) --
// e itself, -e, or e times any power of two. Each drawn mantissa has a nonzero low byte, so no
// small integer, iota or one-hot entry (whose mantissas end in zeros) is taken for one.
// A value holds a whole input when it holds every one of its elements, at both draws.

constexpr std::uint64_t kFirstDraw = 0x9E3779B97F4A7C15ull;
// The magnitude of the draws of the last pass of no_full_in_body's holds (a power of two: the
// fraction bits that name an element stay): thresholds on the inputs' size up to about 10^6.
constexpr int kLargeShift = 20;

struct GradedInput {
  int file_input = -1;        // in the program file
  std::size_t def_input = 0;  // in the run's inputs
  std::size_t size = 0, offset = 0;
};

struct Drawn {
  std::vector<Tensor> inputs;
  std::unordered_map<std::uint32_t, std::uint32_t> element;  // mantissa -> offset + element
  // Per graded input, how many of its elements `element` knows: a value holding that many
  // holds it all (every element of a draw; of the case's own values, those it can tell apart).
  std::vector<std::size_t> need;
  bool scaled = true;  // scaled copies are searched (a draw's values, not a case's)
  // Per graded input: its whole array is searched for as it is, bit for bit, in every value (a
  // case's, whose elements repeat: 0.2 in w1, b1 and w2 names none of them, but a value that is
  // w1 gathered is w1's array). Only an input of 4 distinct numbers or more (a case's zero w is
  // any zero value).
  std::vector<bool> copy_searched;
  // The bits of a number that name an element: a draw's fraction bits (so e, -e and e times a
  // power of two are e), a case's magnitude (0.2 and 0.8 share their fraction bits).
  std::uint32_t key_bits = 0x7FFFFFu;
};

// The run's inputs with the graded ones' elements replaced by distinct random values (a mantissa
// each, recorded), and the other float32 inputs (`others`) by random values too, recorded as
// nothing: a case's zero weights would otherwise make a gradient an exact copy of y (-2 * y when
// w and b are 0), and a right ring of gradients would seem to pass y round.
// `shift`: the graded elements times 2^shift (their fraction bits, which name them, the same).
Drawn draw(const std::vector<TensorRef>& run_inputs, const std::vector<GradedInput>& graded,
           const std::vector<bool>& others, std::uint64_t seed, int shift = 0) {
  Drawn d;
  for (const TensorRef& t : run_inputs)
    d.inputs.emplace_back(t.shape, std::vector<float>(t.data, t.data + t.size()));
  std::mt19937_64 rng(seed);
  for (const GradedInput& g : graded) d.need.push_back(g.size);
  for (const GradedInput& g : graded) {
    std::vector<float>& data = d.inputs[g.def_input].data;
    for (std::size_t e = 0; e < g.size; ++e) {
      std::uint32_t m = 0;
      do {
        m = static_cast<std::uint32_t>(rng()) & 0x7FFFFFu;
      } while ((m & 0xFFu) == 0 || d.element.count(m) != 0);
      d.element.emplace(m, static_cast<std::uint32_t>(g.offset + e));
      const std::uint32_t sign = (rng() & 1u) ? 0x80000000u : 0u;
      const std::uint32_t exponent =
          ((rng() & 1u) ? 126u : 127u) + static_cast<std::uint32_t>(shift);  // [0.5, 2) 2^shift
      data[e] = std::bit_cast<float>(sign | (exponent << 23) | m);
    }
  }
  for (std::size_t i = 0; i < others.size() && i < d.inputs.size(); ++i) {
    if (!others[i]) continue;
    for (float& f : d.inputs[i].data) {
      const std::uint32_t sign = (rng() & 1u) ? 0x80000000u : 0u;
      const std::uint32_t exponent = (rng() & 1u) ? 126u : 127u;
      std::uint32_t m = 0;
      do {  // never a graded element's fraction bits (a replicated input would "hold" it)
        m = static_cast<std::uint32_t>(rng()) & 0x7FFFFFu;
      } while (d.element.count(m) != 0);
      f = std::bit_cast<float>(sign | (exponent << 23) | m);
    }
  }
  return d;
}

// The case's own values, for the run the numbers were checked on: a program that behaves
// otherwise on random values (it tests whether its inputs look like a case's decimals, or are a
// case it knows) shows here what it does. An element is told apart by its magnitude when no
// other element of the float32 inputs has it and its fraction bits are not a round number's (the
// low 8 bits zero: 0.5, 3, 1.25); an input with fewer than 4 such elements, or under half of its
// own, is not checked on them (need beyond reach).
Drawn case_values(const std::vector<TensorRef>& run_inputs, const std::vector<GradedInput>& graded,
                  const std::vector<bool>& others) {
  Drawn d;
  d.scaled = false;
  d.key_bits = 0x7FFFFFFFu;
  for (const TensorRef& t : run_inputs)
    d.inputs.emplace_back(t.shape, std::vector<float>(t.data, t.data + t.size()));
  std::unordered_map<std::uint32_t, std::size_t> count;
  const auto mantissa = [&](const GradedInput& g, std::size_t e) {
    return std::bit_cast<std::uint32_t>(d.inputs[g.def_input].data[e]) & 0x7FFFFFFFu;
  };
  for (const GradedInput& g : graded)
    for (std::size_t e = 0; e < g.size; ++e) ++count[mantissa(g, e)];
  // A magnitude the other float32 inputs have too names no element (w1's 0.8 is not y's).
  for (std::size_t i = 0; i < others.size() && i < d.inputs.size(); ++i) {
    if (!others[i]) continue;
    for (const float f : d.inputs[i].data) ++count[std::bit_cast<std::uint32_t>(f) & 0x7FFFFFFFu];
  }
  for (const GradedInput& g : graded) {
    std::size_t known = 0;
    for (std::size_t e = 0; e < g.size; ++e) {
      const std::uint32_t m = mantissa(g, e);
      if ((m & 0xFFu) == 0 || count[m] != 1) continue;
      d.element.emplace(m, static_cast<std::uint32_t>(g.offset + e));
      ++known;
    }
    d.need.push_back(known >= 4 && 2 * known >= g.size ? known : SIZE_MAX);
    std::set<std::uint32_t> distinct;
    for (std::size_t e = 0; e < g.size && distinct.size() < 4; ++e)
      distinct.insert(std::bit_cast<std::uint32_t>(d.inputs[g.def_input].data[e]));
    d.copy_searched.push_back(distinct.size() >= 4);
  }
  return d;
}

// A value that holds a whole graded input: where it was computed, on which device.
struct Whole {
  const Jaxpr* jx = nullptr;
  const Eqn* eqn = nullptr;  // null: jx's operand k as received
  std::size_t k = 0;
  std::uint64_t occurrence = 0;  // the how-manieth result of (eqn, k) on the device (loops)
  std::size_t graded = 0;
  std::uint64_t seq = 0;  // the device's how-manieth value
  // 1: one value holds it all; more: that many values alive at once hold it together (at_once).
  std::size_t pieces = 1;
  // Over the run (HoldScope::kRun): no set of values alive together held it all, but the
  // device's values did over the whole run (`pieces` of them); the value that completed it is
  // where, and two draws agree on the device and the input, not on which value was the last.
  bool over_run = false;
  // Elements from outside the device's blocks (HoldScope::kRun): the device held `pieces` elements
  // of the input it was never handed (the first held where this says), at both draws.
  bool foreign = false;
  // Outside every shard_map (device -1): `eqn` is a product or a reduction one of whose operands
  // holds all of the input -- the computation done whole, on one device.
  bool outside = false;
  // The device computed other values (places, shapes) on the case's numbers than on the first
  // draw's: a cond or loop on the values, so what it does on the case is not what was seen.
  bool path = false;
  // The program runs on the case's numbers but refuses random ones in their place (this error):
  // what it holds cannot be checked by values, and a right program computes on any values.
  std::string refused;
  // Where it refused them: "" random values of the case's shapes; else these words ("random values
  // 2^20 times the cases' size", "the case's values in a branch it does not take").
  std::string refused_on;
  auto key() const {
    return over_run || foreign ? std::make_tuple(static_cast<const Jaxpr*>(nullptr),
                                                 static_cast<const Eqn*>(nullptr), std::size_t{0},
                                                 std::uint64_t{0}, graded)
                               : std::make_tuple(jx, eqn, k, occurrence, graded);
  }
};

// The jaxprs a device runs where `axis` is automatic: the bodies of the partial shard_maps not
// manual over it (JAX's axis_names= without it) and what they call, down to a shard_map nested in
// them that is manual over it. Such a body holds the axis's arrays whole, the compiler's to split:
// its values are judged as the code outside every shard_map's (a product there on all of w1 is
// the work of every device done on one, and w1 as the body receives it is no device's block).
// `entered`: the bodies of the shard_maps nested in those that are manual over it, whose operands
// as received are a device's own blocks of the axis's arrays (as a top-level body's are).
std::set<const Jaxpr*> automatic_over(const CompiledExport& ce, const std::string& axis,
                                      std::set<const Jaxpr*>* entered = nullptr) {
  std::set<const Jaxpr*> out;
  if (axis.empty()) return out;
  const auto manual = [&](const CompiledShardMap& sm) {
    return sm.manual_axes.empty() ||
           std::find(sm.manual_axes.begin(), sm.manual_axes.end(), axis) != sm.manual_axes.end();
  };
  const std::function<void(const CompiledJaxpr&)> walk = [&](const CompiledJaxpr& cj) {
    if (!out.insert(cj.run).second) return;
    for (const Step& s : cj.steps)
      if (s.kind == Step::Kind::kShardMap && s.shard_map != nullptr &&
          s.shard_map->body != nullptr) {
        if (!manual(*s.shard_map))
          walk(*s.shard_map->body);
        else if (entered != nullptr)
          entered->insert(s.shard_map->body->run);
      }
    for (const auto& sub : cj.subs) walk(*sub);
  };
  for (const auto& sm : ce.shard_maps)
    if (sm->body != nullptr && !manual(*sm)) walk(*sm->body);
  return out;
}

// A device's path: a hash of the places and sizes of its values, in the order it computed them.
std::uint64_t path_step(std::uint64_t path, const Jaxpr& jx, const Eqn* eqn, std::size_t k,
                        const Value& v) {
  return (path ^
          std::hash<const void*>{}(eqn != nullptr ? static_cast<const void*>(eqn)
                                                  : static_cast<const void*>(&jx)) ^
          (k << 48) ^ (static_cast<std::uint64_t>(v.t.size()) << 20)) *
         0x100000001B3ull;
}

class HoldsObserver final : public ValueObserver {
 public:
  // `bodies`: the shard_map bodies, whose operands as received are a device's own blocks.
  // `automatic`: the jaxprs a device runs where the rule's axis is automatic (automatic_over):
  // their values are judged as the code outside every shard_map's.
  HoldsObserver(const Drawn& d, const std::vector<GradedInput>& graded, int devices,
                HoldScope scope, std::set<const Jaxpr*> bodies,
                const std::set<const Jaxpr*>* automatic = nullptr)
      : bodies_(std::move(bodies)),
        automatic_(automatic),
        d_(d),
        graded_(graded),
        devices_(static_cast<std::size_t>(devices)),
        at_once_(scope != HoldScope::kValue),
        over_run_(scope == HoldScope::kRun) {
    std::size_t total = 0;
    min_size_ = SIZE_MAX;
    for (const GradedInput& g : graded) {
      total += g.size;
      min_size_ = std::min(min_size_, g.size);
    }
    for (PerDevice& p : devices_) {
      p.stamp.assign(total, 0);
      if (over_run_) {
        p.ever.assign(total, false);
        p.own.assign(total, false);
        p.first_site.assign(total, 0);
        p.first_at.assign(total, 0);
        p.first_size.assign(total, 0);
        p.ever_covered.assign(graded.size(), 0);
        p.ever_values.assign(graded.size(), 0);
      }
    }
  }

  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (device == -1) return outside_seen(jx, eqn, k, v);
    if (device < 0 || static_cast<std::size_t>(device) >= devices_.size()) return;
    if (automatic_ != nullptr && automatic_->count(&jx) != 0) {
      // Every device runs it, at once: one at a time here.
      const std::lock_guard<std::mutex> one(outside_mu_);
      automatic_seen(jx, eqn, k, v);
      return outside_seen(jx, eqn, k, v);
    }
    PerDevice& p = devices_[static_cast<std::size_t>(device)];
    ++p.seq;
    p.path = path_step(p.path, jx, eqn, k, v);
    const std::uint64_t occurrence =
        p.occurrences[{eqn != nullptr ? static_cast<const void*>(eqn) : &jx, k}]++;
    if (!at_once_ && v.t.size() < min_size_) return;
    std::vector<std::uint32_t> mine;  // the elements it holds (for at_once)
    std::vector<std::uint32_t> at;    // where in the value each of `mine` is
    const std::vector<std::size_t> held = match(v, p.stamp, ++p.serial, &mine, &at);
    std::vector<float> magnitudes;  // sorted, for scaled_copy, made once a value
    std::vector<bool> whole(graded_.size(), false);
    for (std::size_t g = 0; g < graded_.size(); ++g) {
      if (graded_[g].size <= 1) continue;
      if (held[g] != d_.need[g] && !scaled_copy(v, graded_[g], magnitudes) && !whole_copy(v, g))
        continue;
      whole[g] = true;
      p.wholes.push_back({&jx, eqn, k, occurrence, g, p.seq});
      for (std::size_t e = 0; e < graded_[g].size; ++e)
        if (held[g] != d_.need[g])
          mine.push_back(static_cast<std::uint32_t>(graded_[g].offset + e));
    }
    if (over_run_) {
      if (eqn == nullptr && bodies_.count(&jx) != 0)
        for (const std::uint32_t e : mine) p.own[e] = true;
      run_union(p, jx, eqn, k, mine, at, whole, occurrence, v.t.data.size());
    }
    if (at_once_) live(p, jx, eqn, k, std::move(mine), whole, occurrence);
  }

  // Over the run: every element any value of the device ever held. A device that received all
  // of w1 a row at a time, or every block of x round a ring, computed with all of it -- the
  // work of every device, done on one -- though no two of those values were alive together.
  void run_union(auto& p, const Jaxpr& jx, const Eqn* eqn, std::size_t k,
                 const std::vector<std::uint32_t>& mine, const std::vector<std::uint32_t>& at,
                 const std::vector<bool>& whole, std::uint64_t occurrence, std::size_t size) {
    std::vector<bool> adds(graded_.size(), false);
    for (std::size_t j = 0; j < mine.size(); ++j) {
      const std::uint32_t e = mine[j];
      if (p.ever[e]) continue;
      p.ever[e] = true;
      if (p.sites.empty() || p.sites.back().seq != p.seq)
        p.sites.push_back({&jx, eqn, k, occurrence, 0, p.seq});
      p.first_site[e] = static_cast<std::uint32_t>(p.sites.size());
      p.first_at[e] = j < at.size() ? at[j] : UINT32_MAX;  // (a scaled copy: no one place)
      p.first_size[e] = size;
      const std::size_t g = graded_of(e);
      ++p.ever_covered[g];
      adds[g] = true;
    }
    for (std::size_t g = 0; g < graded_.size(); ++g) {
      if (!adds[g]) continue;
      ++p.ever_values[g];
      if (whole[g] || graded_[g].size <= 1 || p.ever_covered[g] != d_.need[g]) continue;
      Whole w{&jx, eqn, k, occurrence, g, p.seq};
      w.pieces = p.ever_values[g];
      w.over_run = true;
      p.wholes.push_back(w);
    }
  }

  // at_once: the values of one activation of `jx` on the device while they live (from their
  // equation to their last use, an output to the activation's end), and which elements of the
  // graded inputs they hold together. Two halves of w1 gathered apart and both alive hold all of
  // w1; a ring that passes each block on and adds it as it passes never holds all of x at once.
  struct Live {
    std::unordered_map<int, std::vector<std::uint32_t>> held;  // var -> its elements
    std::vector<std::uint32_t> count;                          // element -> live values
    std::vector<std::size_t> covered;                          // graded -> elements held
    std::vector<std::size_t> values;                           // graded -> live values holding some
    std::vector<bool> read;  // var -> some equation or the outvars read it (made once a jaxpr)
  };
  void live(auto& p, const Jaxpr& jx, const Eqn* eqn, std::size_t k,
            std::vector<std::uint32_t> mine, const std::vector<bool>& whole,
            std::uint64_t occurrence) {
    std::ptrdiff_t index = -1;  // the equation's, -1 for an operand as received
    if (eqn != nullptr) {
      index = eqn - jx.eqns.data();
      if (index < 0 || index >= static_cast<std::ptrdiff_t>(jx.eqns.size()))
        return;  // a product the evaluator split from its FMA: seen on its own above
    }
    Live& l = p.live[&jx];
    const bool fresh = (eqn == nullptr && k == 0) || (index == 0 && k == 0 && jx.invars.empty());
    if (l.count.empty()) {  // the jaxpr's first activation on the device
      l.count.assign(p.stamp.size(), 0);
      l.covered.assign(graded_.size(), 0);
      l.values.assign(graded_.size(), 0);
      l.read.assign(jx.types.size(), false);
      for (const Eqn& q : jx.eqns)
        for (const Atom& a : q.in)
          if (!a.is_literal()) l.read[static_cast<std::size_t>(a.var)] = true;
      for (const Atom& a : jx.outvars)
        if (!a.is_literal()) l.read[static_cast<std::size_t>(a.var)] = true;
    }
    const auto add = [&](int var, std::vector<std::uint32_t> elements) {
      if (elements.empty() || l.held.count(var) != 0) return;
      std::vector<bool> touches(graded_.size(), false);
      for (const std::uint32_t e : elements) {
        if (l.count[e]++ == 0) ++l.covered[graded_of(e)];
        touches[graded_of(e)] = true;
      }
      for (std::size_t g = 0; g < graded_.size(); ++g) l.values[g] += touches[g];
      l.held.emplace(var, std::move(elements));
    };
    const auto drop = [&](int var) {
      const auto it = l.held.find(var);
      if (it == l.held.end()) return;
      std::vector<bool> touches(graded_.size(), false);
      for (const std::uint32_t e : it->second) {
        if (--l.count[e] == 0) --l.covered[graded_of(e)];
        touches[graded_of(e)] = true;
      }
      for (std::size_t g = 0; g < graded_.size(); ++g) l.values[g] -= touches[g];
      l.held.erase(it);
    };
    if (fresh) {  // a new activation (a loop's next iteration): the last one's values are gone,
      // dropped one by one -- what they held, not the whole count table, so an iteration costs
      // what it holds
      std::vector<int> vars;
      for (const auto& [v, elements] : l.held) vars.push_back(v);
      for (const int v : vars) drop(v);
    }
    const int var = eqn == nullptr ? jx.invars[k] : eqn->out[k];
    add(var, std::move(mine));
    for (std::size_t g = 0; g < graded_.size(); ++g) {
      if (graded_[g].size > 1 && !whole[g] && l.values[g] > 1 && l.covered[g] == d_.need[g]) {
        Whole w{&jx, eqn, k, occurrence, g, p.seq};
        w.pieces = l.values[g];
        p.wholes.push_back(w);
      }
    }
    if (eqn != nullptr && k + 1 == eqn->out.size()) {
      for (const int v : eqn->last_use) drop(v);
      // An output no equation reads and the jaxpr does not return dies at once (a variable is
      // defined once: read anywhere is read after its equation).
      for (const int out : eqn->out) {
        if (!l.read[static_cast<std::size_t>(out)]) drop(out);
      }
    }
  }

  struct PerDevice {
    std::vector<std::uint32_t> stamp;
    std::uint32_t serial = 0;
    std::uint64_t seq = 0;
    std::uint64_t path = 0;  // a hash of the places and sizes of its values, in order
    std::map<std::pair<const void*, std::size_t>, std::uint64_t> occurrences;
    std::vector<Whole> wholes;
    std::map<const Jaxpr*, Live> live;
    std::vector<bool> ever;                 // over_run: element -> some value held it
    std::vector<bool> own;                  // element -> a shard_map handed it to the device
    std::vector<std::uint32_t> first_site;  // element -> 1 + its first holder in `sites`
    std::vector<std::uint32_t> first_at;    // element -> its place in that value
    std::vector<std::size_t> first_size;    // element -> that value's numbers
    std::vector<Whole> sites;
    std::vector<std::size_t> ever_covered;  // graded -> elements ever held
    std::vector<std::size_t> ever_values;   // graded -> values that added some
  };
  const std::vector<PerDevice>& devices() const { return devices_; }

  // Outside every shard_map (the equations around them, jits included): which values hold all of
  // a graded input (by values, as a body's), and the products and reductions that take one as
  // an operand. A shard_map that hands back its blocks laundered (`(eye * (1 + 0 * x[0, 0])) @
  // x`, a max over an axis of length 1) and the whole step computed outside on them is the work
  // of every device done on one, whatever the count model says of a product.
  void outside_seen(const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) {
    if (out_stamp_.empty()) out_stamp_.assign(devices_.empty() ? 0 : devices_[0].stamp.size(), 0);
    const std::vector<std::size_t> held = match(v, out_stamp_, ++out_serial_, nullptr, nullptr);
    std::vector<bool> whole(graded_.size(), false);
    bool any = false;
    for (std::size_t g = 0; g < graded_.size(); ++g) {
      whole[g] = graded_[g].size > 1 && held[g] == d_.need[g];
      any = any || whole[g];
    }
    const int var = eqn == nullptr ? jx.invars[k] : eqn->out[k];
    if (any) out_whole_[{&jx, var}] = whole;
    if (eqn == nullptr || k != 0 || !computes(eqn->primitive)) return;
    for (const Atom& a : eqn->in) {
      if (a.is_literal()) continue;
      const auto it = out_whole_.find({&jx, a.var});
      if (it == out_whole_.end()) continue;
      for (std::size_t g = 0; g < graded_.size(); ++g) {
        if (!it->second[g]) continue;
        Whole w{&jx, eqn, 0, 0, g, 0};
        w.outside = true;
        if (std::none_of(outside_.begin(), outside_.end(),
                         [&](const Whole& o) { return o.key() == w.key(); }))
          outside_.push_back(w);
      }
    }
  }
  // In a body automatic over the rule's axis (automatic_over): the graded elements each value
  // holds, and those the products and reductions there take in, over the run and every device.
  // Products on all of w between them -- x @ w a quarter of its columns at a time, each slice
  // holding a quarter (sneaky16) -- are the work of every device done by the compiler, as one
  // product on all of w is.
  void automatic_seen(const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) {
    if (auto_stamp_.empty()) {
      auto_stamp_.assign(devices_.empty() ? 0 : devices_[0].stamp.size(), 0);
      auto_taken_.assign(auto_stamp_.size(), false);
      auto_count_.assign(graded_.size(), 0);
      auto_first_.assign(graded_.size(), {nullptr, nullptr});
    }
    std::vector<std::uint32_t> mine;
    (void)match(v, auto_stamp_, ++auto_serial_, &mine, nullptr);
    const int var = eqn == nullptr ? jx.invars[k] : eqn->out[k];
    if (!mine.empty()) auto_elements_[{&jx, var}] = std::move(mine);
    if (eqn == nullptr || k != 0 || !computes(eqn->primitive)) return;
    for (const Atom& a : eqn->in) {
      if (a.is_literal()) continue;
      const auto it = auto_elements_.find({&jx, a.var});
      if (it == auto_elements_.end()) continue;
      for (const std::uint32_t e : it->second) {
        const std::size_t g = graded_of(e);
        auto& first = auto_first_[g];
        if (first.second == nullptr || eqn->where < first.second->where) first = {&jx, eqn};
        if (!auto_taken_[e]) {
          auto_taken_[e] = true;
          ++auto_count_[g];
        }
      }
    }
  }

  // In the order of the file's equations (devices running an automatic body add them in any
  // order); last, per graded input that the products of automatic bodies took all of between
  // them, the first such product.
  std::vector<Whole> outside() const {
    std::vector<Whole> o = outside_;
    for (std::size_t g = 0; g < auto_count_.size(); ++g) {
      if (graded_[g].size <= 1 || auto_count_[g] < d_.need[g] || auto_first_[g].second == nullptr)
        continue;
      Whole w{auto_first_[g].first, auto_first_[g].second, 0, 0, g, 0};
      w.outside = true;
      w.pieces = 2;  // (taken by several products between them)
      if (std::none_of(o.begin(), o.end(), [&](const Whole& x) { return x.key() == w.key(); }))
        o.push_back(w);
    }
    std::sort(o.begin(), o.end(), [](const Whole& a, const Whole& b) {
      return std::tie(a.eqn->where, a.graded) < std::tie(b.eqn->where, b.graded);
    });
    return o;
  }

  // An element device `dev` held and was never handed, and where it first held it: the value
  // (its equation, output, occurrence) and the place in it. Two draws must agree on all of it --
  // a number that matches an element by chance (one in 2^23 per element) does so at another
  // place at the other draw.
  struct ForeignAt {
    std::uint32_t element = 0;
    const Jaxpr* jx = nullptr;
    const Eqn* eqn = nullptr;
    std::size_t k = 0;
    std::uint64_t occurrence = 0;
    std::uint32_t at = 0;
    std::size_t size = 0;  // the value's numbers
    bool same_value(const ForeignAt& o) const {
      return element == o.element && jx == o.jx && eqn == o.eqn && k == o.k &&
             occurrence == o.occurrence;
    }
    bool same(const ForeignAt& o) const { return same_value(o) && at == o.at && at != UINT32_MAX; }
  };
  // Per graded input, in element order (over_run).
  std::vector<std::vector<ForeignAt>> foreign(std::size_t dev) const {
    std::vector<std::vector<ForeignAt>> out(graded_.size());
    if (!over_run_) return out;
    const PerDevice& p = devices_[dev];
    for (std::size_t g = 0; g < graded_.size(); ++g) {
      for (std::size_t e = graded_[g].offset; e < graded_[g].offset + graded_[g].size; ++e) {
        if (!p.ever[e] || p.own[e]) continue;
        const Whole& s = p.sites[p.first_site[e] - 1];
        out[g].push_back({static_cast<std::uint32_t>(e), s.jx, s.eqn, s.k, s.occurrence,
                          p.first_at[e], p.first_size[e]});
      }
    }
    return out;
  }

 private:
  // The graded input element e (an offset over all of them) belongs to.
  std::size_t graded_of(std::uint32_t e) const {
    std::size_t g = 0;
    while (g + 1 < graded_.size() && e >= graded_[g + 1].offset) ++g;
    return g;
  }

  // The elements of the graded inputs `v` holds, each once (`stamp` marks them with `serial`):
  // how many of each input, and, when asked, which and where in `v`.
  std::vector<std::size_t> match(const Value& v, std::vector<std::uint32_t>& stamp,
                                 std::uint32_t serial, std::vector<std::uint32_t>* elements,
                                 std::vector<std::uint32_t>* places) const {
    std::vector<std::size_t> held(graded_.size(), 0);
    for (std::size_t i = 0; i < v.t.data.size(); ++i) {
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(v.t.data[i]);
      if ((bits & 0x7FFFFFFFu) == 0) continue;
      const auto it = d_.element.find(bits & d_.key_bits);
      if (it == d_.element.end() || stamp[it->second] == serial) continue;
      stamp[it->second] = serial;
      ++held[graded_of(it->second)];
      if (elements != nullptr) elements->push_back(it->second);
      if (places != nullptr) places->push_back(static_cast<std::uint32_t>(i));
    }
    return held;
  }

  // The value's numbers hold input g's whole array, bit for bit, in its order (Drawn's
  // copy_searched).
  bool whole_copy(const Value& v, std::size_t g) const {
    if (g >= d_.copy_searched.size() || !d_.copy_searched[g]) return false;
    const std::vector<float>& in = d_.inputs[graded_[g].def_input].data;
    if (v.t.data.size() < in.size()) return false;
    const auto same = [](float a, float b) {
      return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
    };
    return std::search(v.t.data.begin(), v.t.data.end(), in.begin(), in.end(), same) !=
           v.t.data.end();
  }

  // A value holds all of input g as a scaled copy: one factor c such that every element's
  // magnitude times c is one of the value's numbers within 2^-16 of itself (`w1 * 3`, a one-hot
  // of 3s, `exp(log(w1))` a few ulps off). The candidates for c are the value's numbers over the
  // first element's; most fail at the second element. Values over 64 times the input's size are
  // not tried, nor inputs of under 4 elements (chance would match them among many numbers).
  bool scaled_copy(const Value& v, const GradedInput& g, std::vector<float>& magnitudes) const {
    constexpr double kTol = 1.0 / 65536;
    if (!d_.scaled || g.size < 4 || v.t.size() < g.size || v.t.size() > 64 * g.size) return false;
    if (magnitudes.empty()) {
      for (const float f : v.t.data) {
        const float a = std::fabs(f);
        if (a > 0 && std::isfinite(a)) magnitudes.push_back(a);
      }
      std::sort(magnitudes.begin(), magnitudes.end());
      magnitudes.erase(std::unique(magnitudes.begin(), magnitudes.end()), magnitudes.end());
    }
    const float* e = d_.inputs[g.def_input].data.data();
    const auto found = [&](double target) {
      const auto it = std::lower_bound(magnitudes.begin(), magnitudes.end(),
                                       static_cast<float>(target * (1 - kTol)));
      return it != magnitudes.end() && *it <= target * (1 + kTol);
    };
    const double e0 = std::fabs(static_cast<double>(e[0]));
    for (const float candidate : magnitudes) {
      const double c = candidate / e0;
      std::size_t j = 1;
      while (j < g.size && found(c * std::fabs(static_cast<double>(e[j])))) ++j;
      if (j == g.size) return true;
    }
    return false;
  }

  std::set<const Jaxpr*> bodies_;
  const std::set<const Jaxpr*>* automatic_ = nullptr;
  std::mutex outside_mu_;
  std::vector<std::uint32_t> out_stamp_;
  std::uint32_t out_serial_ = 0;
  std::map<std::pair<const Jaxpr*, int>, std::vector<bool>> out_whole_;
  std::vector<Whole> outside_;
  // automatic_seen's
  std::vector<std::uint32_t> auto_stamp_;
  std::uint32_t auto_serial_ = 0;
  std::map<std::pair<const Jaxpr*, int>, std::vector<std::uint32_t>> auto_elements_;
  std::vector<bool> auto_taken_;
  std::vector<std::size_t> auto_count_;
  std::vector<std::pair<const Jaxpr*, const Eqn*>> auto_first_;
  const Drawn& d_;
  const std::vector<GradedInput>& graded_;
  std::vector<PerDevice> devices_;
  std::size_t min_size_ = 0;
  bool at_once_ = false;
  bool over_run_ = false;
};

// The run's binding (its shapes on the file's exports); nullopt when the run could not bind.
std::optional<Binding> bind_run(const LoadedProgram& lp, const Trace& t) {
  std::vector<Shape> shapes;
  for (std::size_t i : lp.def_input) shapes.push_back(t.input_values->at(i).shape);
  try {
    return bind(lp.file, t.mesh, shapes, {});
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// What a check by values on the first draw is keyed by: the mesh, the inputs' shapes and the
// values of those not drawn (the cases of an exercise share the draws' runs).
std::string draw_key(const Trace& t, const std::vector<GradedInput>& graded,
                     const std::vector<bool>& others, const RunPath* path) {
  return case_key(
      t.mesh, *t.input_values,
      [&](std::size_t i) {
        return (i < others.size() && others[i]) ||
               std::any_of(graded.begin(), graded.end(),
                           [&](const GradedInput& g) { return g.def_input == i; });
      },
      path);
}

// The second draw of every check by values that draws twice.
constexpr std::uint64_t kSecondDraw = 0xD1B54A32D192ED03ull;

// What a check by values works on, in the export `b` bound: the graded inputs (the float32 ones
// among `names`, with their names), the shard_map bodies, and the other float32 inputs, drawn at
// random too (not graded).
struct ByValues {
  std::vector<GradedInput> graded;
  std::vector<std::string> names;  // graded's
  std::size_t total = 0;           // their elements
  std::set<const Jaxpr*> bodies;
  std::vector<bool> others;
  RunPath path;  // the case's decisions (draws.hpp)
  // The first draw's own decisions are not the case's: the checks that run twice (no device
  // holds a full input) run again taking the case's.
  bool decides = false;
};
ByValues by_values_of(const LoadedProgram& lp, const Binding& b, const Trace& t,
                      const std::vector<std::string>& names, CaseMemo* memo) {
  ByValues v;
  const auto f32 = [&](std::size_t i) {
    return b.exp->jaxpr.types[b.exp->jaxpr.invars[i]].dtype == DType::kF32;
  };
  for (const std::string& name : names) {
    const int i = input_index(lp.file, name);
    if (i < 0 || static_cast<std::size_t>(i) >= lp.def_input.size()) continue;
    const std::size_t def = lp.def_input[static_cast<std::size_t>(i)];
    if (!f32(static_cast<std::size_t>(i)) || def >= t.input_values->size()) continue;
    v.graded.push_back({i, def, t.input_values->at(def).size(), v.total});
    v.names.push_back(name);
    v.total += v.graded.back().size;
  }
  for (const auto& sm : lp.compiled.of(b.exp).shard_maps)
    if (sm->body != nullptr) v.bodies.insert(sm->body->run);
  v.others.assign(t.input_values->size(), false);
  for (std::size_t i = 0; i < lp.def_input.size() && i < b.exp->jaxpr.invars.size(); ++i)
    if (f32(i) && lp.def_input[i] < v.others.size()) v.others[lp.def_input[i]] = true;
  for (const GradedInput& g : v.graded) v.others[g.def_input] = false;
  if (!v.graded.empty() && v.total < (std::size_t{1} << 21)) {
    try {
      const auto record_case = [&](RunPath& p) {
        run_following(lp, t.mesh, *t.input_values, nullptr, nullptr, &p);
      };
      const auto first_draw_decides = [&] {
        RunPath own;
        run_following(lp, t.mesh,
                      refs(draw(*t.input_values, v.graded, v.others, kFirstDraw).inputs), nullptr,
                      nullptr, &own);
        return own.hash() != v.path.hash();
      };
      if (memo == nullptr) {
        record_case(v.path);
        v.decides = first_draw_decides();
      } else {
        // Keyed by the case (every input's values, none drawn), then by which inputs are drawn.
        const std::string key = draw_key(t, {}, {}, nullptr);
        v.path = memo->path(key, record_case);
        std::string drawn = key + '#';
        for (const GradedInput& g : v.graded) drawn += std::to_string(g.def_input) + ',';
        drawn += '#';
        for (const bool o : v.others) drawn += o ? '1' : '0';
        v.decides = memo->decides(drawn, first_draw_decides);
      }
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception&) {
      v.decides = false;  // refused on the case, or on the draw: the runs take their own
    }
  }
  return v;
}

// The hash of each device's values at some places (device, place, operand, occurrence), for
// telling a value that follows the inputs from one that does not: an iota 1..8 is x on a case
// whose x is 1..8, and computes the same when x moves.
class ValuesAt final : public ValueObserver {
 public:
  using Key = std::tuple<int, const void*, std::size_t, std::uint64_t>;
  ValuesAt(std::set<Key> wanted, int devices)
      : wanted_(std::move(wanted)), per_(static_cast<std::size_t>(devices)) {}
  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (device < 0 || static_cast<std::size_t>(device) >= per_.size()) return;
    PerDevice& p = per_[static_cast<std::size_t>(device)];
    const void* at = eqn != nullptr ? static_cast<const void*>(eqn) : &jx;
    const std::uint64_t occurrence = p.occurrences[{at, k}]++;
    const Key key{device, at, k, occurrence};
    if (wanted_.count(key) == 0) return;
    std::uint64_t h = 0xCBF29CE484222325ull;
    for (const float f : v.t.data) h = (h ^ std::bit_cast<std::uint32_t>(f)) * 0x100000001B3ull;
    p.hash[key] = h;
  }
  std::optional<std::uint64_t> hash(const Key& key) const {
    const auto& h = per_[static_cast<std::size_t>(std::get<0>(key))].hash;
    const auto it = h.find(key);
    if (it == h.end()) return std::nullopt;
    return it->second;
  }

 private:
  struct PerDevice {
    std::map<std::pair<const void*, std::size_t>, std::uint64_t> occurrences;
    std::map<Key, std::uint64_t> hash;
  };
  std::set<Key> wanted_;
  std::vector<PerDevice> per_;
};

// Of the values the case's own run found holding a whole input, those that follow the inputs:
// the program runs on the case again, and on the case with every graded element e moved to
// 1.5 e + 0.25 (far enough that a rounding of it moves too); a value computed the same at the same
// place both times depends on no graded input (a table, an iota) and holds none of them, whatever
// its numbers.
void keep_following(const LoadedProgram& lp, const MeshShape& mesh,
                    const std::vector<TensorRef>& run_inputs,
                    const std::vector<GradedInput>& graded, const RunPath* path,
                    std::vector<std::vector<Whole>>& on_case) {
  std::set<ValuesAt::Key> wanted;
  for (std::size_t dev = 0; dev < on_case.size(); ++dev)
    for (const Whole& w : on_case[dev])
      wanted.insert({static_cast<int>(dev),
                     w.eqn != nullptr ? static_cast<const void*>(w.eqn) : w.jx, w.k, w.occurrence});
  if (wanted.empty()) return;
  const int devices = static_cast<int>(on_case.size());
  std::vector<Tensor> moved;
  for (const TensorRef& t : run_inputs)
    moved.emplace_back(t.shape, std::vector<float>(t.data, t.data + t.size()));
  for (const GradedInput& g : graded)
    for (float& f : moved[g.def_input].data) f = f * 1.5f + 0.25f;
  ValuesAt same(wanted, devices), other(wanted, devices);
  try {
    run_following(lp, mesh, run_inputs, &same, path);
    run_following(lp, mesh, refs(moved), &other, path);
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception&) {
    return;  // judged as found
  }
  for (auto& ws : on_case)
    std::erase_if(ws, [&](const Whole& w) {
      const std::size_t dev = static_cast<std::size_t>(&ws - on_case.data());
      const ValuesAt::Key key{static_cast<int>(dev),
                              w.eqn != nullptr ? static_cast<const void*>(w.eqn) : w.jx, w.k,
                              w.occurrence};
      const auto a = same.hash(key), b = other.hash(key);
      return a && b && *a == *b;
    });
}

// The values that hold a whole graded input at both draws, per device (in the order the device
// computed them); nullopt when the program could not run on the drawn values.
// `shift` (with `path` null): the draws' graded elements times 2^shift, the program taking its own
// decisions there -- what it does when its inputs are large (a gather behind a 0/1 factor or an
// extra loop trip switched on by magnitudes the cases stay under: sneaky14); the case's own
// values are not run again, and a device's other path there is not a finding; a run that fails
// there is refused (fail closed).
std::optional<std::vector<std::vector<Whole>>> wholes_by_values(
    const LoadedProgram& lp, const MeshShape& mesh, const std::vector<TensorRef>& run_inputs,
    const std::vector<GradedInput>& graded, const std::vector<bool>& others, HoldScope scope,
    const std::set<const Jaxpr*>& bodies, const RunPath* path, int shift,
    const std::set<const Jaxpr*>& automatic) {
  int devices = 1;
  for (const auto& [axis, n] : mesh) devices *= n;
  std::vector<std::vector<Whole>> confirmed(static_cast<std::size_t>(devices));
  std::set<std::tuple<int, const Jaxpr*, const Eqn*, std::size_t, std::uint64_t, std::size_t>>
      first;
  // [device][graded]: the foreign elements of the first draw (sorted).
  std::vector<std::vector<std::vector<HoldsObserver::ForeignAt>>> foreign_first;
  std::vector<Whole> outside_first;
  // The case's own values (one run, nothing to confirm: a value must hold every element told
  // apart), values alive at once at most -- over the run a right ring of gradients may pass a
  // case's copies of y round (w and b zero make the gradient -2 * y). Run first: a program
  // that fails on random values is still seen on its own.
  std::vector<std::vector<Whole>> on_case(static_cast<std::size_t>(devices));
  std::vector<std::uint64_t> case_path(static_cast<std::size_t>(devices), 0);
  const auto refused_as = [devices](std::string on, std::string why) {
    Whole w;
    w.refused_on = std::move(on);
    w.refused = std::move(why);
    std::vector<std::vector<Whole>> refused(static_cast<std::size_t>(devices));
    if (devices > 0) refused[0].push_back(w);
    return refused;
  };
  if (shift == 0) {  // (the large pass: the case's own were the first pass's)
    const Drawn c = case_values(run_inputs, graded, others);
    HoldsObserver obs(c, graded, devices, std::min(scope, HoldScope::kAlive), bodies, &automatic);
    try {
      run_following(lp, mesh, run_inputs, &obs, path);
      for (int dev = 0; dev < devices; ++dev) {
        on_case[static_cast<std::size_t>(dev)] =
            obs.devices()[static_cast<std::size_t>(dev)].wholes;
        case_path[static_cast<std::size_t>(dev)] =
            obs.devices()[static_cast<std::size_t>(dev)].path;
      }
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception& e) {
      // The case ran (it is being graded); what fails here is a branch or loop body it does not
      // take, run on its values (every branch is judged): fail closed (a branch made to fail
      // there would otherwise hide what every branch holds).
      if (path == nullptr)
        return refused_as("the case's own values in a branch or loop body the case does not take",
                          e.what());
    }
    keep_following(lp, mesh, run_inputs, graded, path, on_case);
  }
  const bool seen_on_case =
      std::any_of(on_case.begin(), on_case.end(), [](const auto& w) { return !w.empty(); });
  const bool ran_on_case =
      std::any_of(case_path.begin(), case_path.end(), [](std::uint64_t p) { return p != 0; });

  for (const std::uint64_t seed : {kFirstDraw, kSecondDraw}) {
    const Drawn d = draw(run_inputs, graded, others, seed, shift);
    HoldsObserver obs(d, graded, devices, scope, bodies, &automatic);
    try {
      run_following(lp, mesh, refs(d.inputs), &obs, path);
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception& e) {
      // At 2^20 times the cases' size: fail closed too (a program that errs where it would
      // gather would otherwise hide the gather); a right program computes on any values.
      if (shift != 0) return refused_as("random values 2^20 times the cases' size", e.what());
      if (seen_on_case) return on_case;
      if (!ran_on_case || devices == 0) return std::nullopt;
      // It ran on the case and fails here: fail closed (a program that tests whether its inputs
      // look like a case and errs on anything else would otherwise pass unchecked).
      Whole w;
      w.refused = e.what();
      std::vector<std::vector<Whole>> refused(static_cast<std::size_t>(devices));
      refused[0].push_back(w);
      return refused;
    }
    if (seed == kFirstDraw) {
      outside_first = obs.outside();
      for (int dev = 0; dev < devices && shift == 0; ++dev) {
        const auto& p = obs.devices()[static_cast<std::size_t>(dev)];
        if (case_path[static_cast<std::size_t>(dev)] != 0 &&
            case_path[static_cast<std::size_t>(dev)] != p.path) {
          Whole w;
          w.path = true;
          confirmed[static_cast<std::size_t>(dev)].push_back(w);
        }
      }
    } else {
      for (const Whole& w : obs.outside())
        if (std::any_of(outside_first.begin(), outside_first.end(),
                        [&](const Whole& o) { return o.key() == w.key(); }) &&
            devices > 0)
          confirmed[0].push_back(w);  // (outside: kept with device 0's, marked)
    }
    for (int dev = 0; dev < devices; ++dev) {
      for (const Whole& w : obs.devices()[static_cast<std::size_t>(dev)].wholes) {
        const auto key = std::tuple_cat(std::make_tuple(dev), w.key());
        if (seed == kFirstDraw) {
          first.insert(key);
        } else if (first.count(key) != 0) {
          confirmed[static_cast<std::size_t>(dev)].push_back(w);
        }
      }
      // Elements from outside its blocks, held at both draws: where the first was held.
      const auto per = static_cast<std::size_t>(dev);
      const auto foreign = obs.foreign(per);
      if (seed == kFirstDraw) {
        foreign_first.push_back(foreign);
        continue;
      }
      for (std::size_t g = 0; g < graded.size(); ++g) {
        const auto& p = obs.devices()[per];
        std::size_t both = 0;
        std::uint32_t earliest = UINT32_MAX;  // the first of them the device held, in `sites`
        // Elements first held in the same value at both draws but at another place (a block
        // written at an offset computed from the values): counted when there are so many of
        // them in one value that chance cannot explain it -- at least 4, and 16 times the
        // matches chance gives (each number has some element's fraction bits about once in
        // 2^23 / N, so N (size / 2^23)^2 elements of a value match at both draws by chance).
        std::map<std::tuple<const Jaxpr*, const Eqn*, std::size_t, std::uint64_t>,
                 std::vector<std::uint32_t>>
            moved;
        auto a = foreign_first[per][g].begin();
        for (const auto& f : foreign[g]) {
          while (a != foreign_first[per][g].end() && a->element < f.element) ++a;
          if (a == foreign_first[per][g].end() || !a->same_value(f)) continue;
          if (!a->same(f)) {
            moved[{f.jx, f.eqn, f.k, f.occurrence}].push_back(f.element);
            continue;
          }
          ++both;
          earliest = std::min(earliest, p.first_site[f.element]);
        }
        for (const auto& [site, elements] : moved) {
          double chance = 0;
          for (const auto& f : foreign[g])
            if (std::make_tuple(f.jx, f.eqn, f.k, f.occurrence) == site) {
              const double r = static_cast<double>(f.size) / 8388608.0;
              chance = static_cast<double>(graded[g].size) * r * r;
              break;
            }
          if (elements.size() < 4 || static_cast<double>(elements.size()) < 16 * chance) continue;
          for (const std::uint32_t e : elements) {
            ++both;
            earliest = std::min(earliest, p.first_site[e]);
          }
        }
        if (both == 0) continue;
        Whole w = p.sites[earliest - 1];
        w.graded = g;
        w.pieces = both;
        w.foreign = true;
        confirmed[per].push_back(w);
      }
    }
  }
  for (std::size_t dev = 0; dev < on_case.size(); ++dev)
    confirmed[dev].insert(confirmed[dev].end(), on_case[dev].begin(), on_case[dev].end());
  return confirmed;
}

// A spec without its trailing Nones (P('ring') and P('ring', None) split alike).
std::vector<std::vector<std::string>> trimmed(const PartitionSpec& s) {
  std::vector<std::vector<std::string>> d = s.dims();
  while (!d.empty() && d.back().empty()) d.pop_back();
  return d;
}

// The operands of a shard_map that are an earlier shard_map's result (in the same jaxpr, on the
// same mesh) handed on with the spec it was returned with: each device keeps the block it
// returned, nothing moves -- a ring's state carried from one shard_map to the next. What the
// device holds there its earlier body computed, and the rules judged that body; they are not
// "handed" it.
void kept_operands(const Jaxpr& jx, std::set<std::pair<const Eqn*, std::size_t>>& kept,
                   int depth = 0) {
  struct Made {
    const Eqn* eqn;
    PartitionSpec spec;
  };
  std::map<int, Made> made;  // var: the shard_map result it is
  for (const Eqn& e : jx.eqns) {
    if (e.primitive == "shard_map") {
      std::vector<PartitionSpec> in_specs, out_specs;
      try {
        in_specs = shard_map_specs(e, "in_specs");
        out_specs = shard_map_specs(e, "out_specs");
      } catch (const PrimitiveError&) {
      }
      for (std::size_t k = 0; k < e.in.size() && k < in_specs.size(); ++k) {
        if (e.in[k].is_literal()) continue;
        const auto it = made.find(e.in[k].var);
        if (it != made.end() && trimmed(it->second.spec) == trimmed(in_specs[k]) &&
            it->second.eqn->params.value("mesh", nlohmann::json()) ==
                e.params.value("mesh", nlohmann::json()))
          kept.insert({&e, k});
      }
      for (std::size_t j = 0; j < e.out.size() && j < out_specs.size(); ++j)
        made[e.out[j]] = {&e, out_specs[j]};
    }
    if (depth < 64)
      for (const auto& [key, sub] : e.subs) kept_operands(*sub, kept, depth + 1);
  }
}

}  // namespace

// The numbers a device's shard_map operands hold as received, as elements of the graded inputs
// (a draw's values: fraction bits name an element).
// `derived`: the operands (body, invar) derived from the inputs, whose every nonzero number must
// be one of their elements exactly (a re-layout, not mixtures of them: `strange` counts the
// others, per device).
// `kept`: the operands (body, invar) a device already held (kept_operands), not looked at.
class HandedObserver final : public ValueObserver {
 public:
  HandedObserver(const Drawn& d, std::size_t elements, int devices, std::set<const Jaxpr*> bodies,
                 std::set<std::pair<const Jaxpr*, std::size_t>> derived,
                 std::set<std::pair<const Jaxpr*, std::size_t>> kept)
      : d_(d),
        bodies_(std::move(bodies)),
        derived_(std::move(derived)),
        kept_(std::move(kept)),
        handed_(static_cast<std::size_t>(devices), std::vector<bool>(elements, false)),
        strange_(static_cast<std::size_t>(devices), 0) {}
  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (device < 0 || static_cast<std::size_t>(device) >= handed_.size() || eqn != nullptr ||
        bodies_.count(&jx) == 0 || kept_.count({&jx, k}) != 0)
      return;
    const bool derived = derived_.count({&jx, k}) != 0;
    for (const float f : v.t.data) {
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
      if ((bits & 0x7FFFFFFFu) == 0) continue;
      const auto it = d_.element.find(bits & d_.key_bits);
      if (it != d_.element.end()) {
        handed_[static_cast<std::size_t>(device)][it->second] = true;
      } else if (derived) {
        ++strange_[static_cast<std::size_t>(device)];
      }
    }
  }
  const std::vector<std::vector<bool>>& handed() const { return handed_; }
  const std::vector<std::size_t>& strange() const { return strange_; }

 private:
  const Drawn& d_;
  std::set<const Jaxpr*> bodies_;
  std::set<std::pair<const Jaxpr*, std::size_t>> derived_;
  std::set<std::pair<const Jaxpr*, std::size_t>> kept_;
  std::vector<std::vector<bool>> handed_;
  std::vector<std::size_t> strange_;
};

std::pair<bool, std::optional<std::string>> handed_slices(const LoadedProgram& lp, const Trace& t,
                                                          const std::vector<std::string>& names,
                                                          int dim, const std::string& axis,
                                                          const DerivedOperands& derived_of,
                                                          CaseMemo* memo) {
  const int pos = mesh_axis_position(t.mesh, axis);
  if (t.input_values == nullptr || pos < 0) return {false, std::nullopt};
  const std::int64_t n = t.mesh[static_cast<std::size_t>(pos)].second;
  const std::optional<Binding> bound = bind_run(lp, t);
  if (!bound) return {false, std::nullopt};
  const Binding& b = *bound;
  const ByValues v = by_values_of(lp, b, t, names, memo);
  const std::vector<GradedInput>& graded = v.graded;
  const std::vector<std::string>& graded_names = v.names;
  const std::size_t total = v.total;
  std::size_t named = 0;  // the names that are inputs of the file
  for (const std::string& name : names) {
    const int i = input_index(lp.file, name);
    named += i >= 0 && static_cast<std::size_t>(i) < lp.def_input.size();
  }
  // An input not float32 or of no dimension `dim`: not seen by values, the syntax's verdict stands.
  if (graded.empty() || graded.size() != named || total >= (std::size_t{1} << 21))
    return {false, std::nullopt};
  for (const GradedInput& g : graded)
    if (static_cast<std::size_t>(dim) >= t.input_values->at(g.def_input).shape.size())
      return {false, std::nullopt};
  const std::vector<std::pair<const Eqn*, std::size_t>> derived = derived_of(*b.exp);
  const CompiledExport& ce = lp.compiled.of(b.exp);
  // Handed over `axis`: the bodies split over it (a partial shard_map's body not manual over it
  // holds its arrays whole, and hands a nested one its blocks).
  std::set<const Jaxpr*> bodies = v.bodies;
  for (const Jaxpr* automatic : automatic_over(ce, axis, &bodies)) bodies.erase(automatic);
  std::set<std::pair<const Eqn*, std::size_t>> kept;
  kept_operands(b.exp->jaxpr, kept);
  std::set<std::pair<const Jaxpr*, std::size_t>> derived_in_body, kept_in_body;
  for (const auto* list : {&ce.shard_maps, &ce.nested_shard_maps}) {
    for (const auto& sm : *list) {
      if (sm->body == nullptr) continue;
      for (const auto& [eqn, k] : derived)
        if (eqn == sm->eqn) derived_in_body.insert({sm->body->run, k});
      for (const auto& [eqn, k] : kept)
        if (eqn == sm->eqn) kept_in_body.insert({sm->body->run, k});
    }
  }
  if (derived_in_body.size() != derived.size()) return {false, std::nullopt};  // another export
  int devices = 1;
  for (const auto& [a, size] : t.mesh) devices *= size;
  // At two draws: an element is handed where both find it (a number that matches an element's
  // fraction bits by chance, one in 2^23 per element, does not at the other draw).
  std::vector<std::vector<bool>> handed;
  std::vector<std::size_t> strange;
  for (const std::uint64_t seed : {kFirstDraw, kSecondDraw}) {
    const Drawn d = draw(*t.input_values, graded, v.others, seed);
    HandedObserver obs(d, total, devices, bodies, derived_in_body, kept_in_body);
    try {
      run_following(lp, t.mesh, refs(d.inputs), &obs, &v.path);
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception&) {
      return {false, std::nullopt};
    }
    if (seed == kFirstDraw) {
      handed = obs.handed();
      strange = obs.strange();
      continue;
    }
    for (std::size_t dev = 0; dev < handed.size(); ++dev) {
      strange[dev] = std::min(strange[dev], obs.strange()[dev]);
      for (std::size_t e = 0; e < handed[dev].size(); ++e)
        handed[dev][e] = handed[dev][e] && obs.handed()[dev][e];
    }
  }
  const std::string slices = dim == 0 ? "rows" : "slices along dimension " + std::to_string(dim);
  const std::string slice = dim == 0 ? "row" : "slice";
  for (std::size_t dev = 0; dev < strange.size(); ++dev) {
    if (strange[dev] == 0) continue;
    return {true, "device " + std::to_string(dev) + " is handed " + std::to_string(strange[dev]) +
                      " numbers derived from " + graded_names.front() +
                      " that are none of its elements (by values)"};
  }
  std::size_t stride_axis = 1;  // devices are numbered row-major over the mesh's axes
  for (std::size_t a = static_cast<std::size_t>(pos) + 1; a < t.mesh.size(); ++a)
    stride_axis *= static_cast<std::size_t>(t.mesh[a].second);
  // [graded][device]: the slices the device is handed whole.
  std::vector<std::vector<std::vector<bool>>> rows(graded.size(),
                                                   std::vector<std::vector<bool>>(handed.size()));
  for (std::size_t dev = 0; dev < handed.size(); ++dev) {
    const std::vector<bool>& h = handed[dev];
    for (std::size_t k = 0; k < graded.size(); ++k) {
      const GradedInput& g = graded[k];
      const Shape& shape = t.input_values->at(g.def_input).shape;
      const auto extent = static_cast<std::size_t>(shape[static_cast<std::size_t>(dim)]);
      std::size_t stride = 1;
      for (std::size_t a = static_cast<std::size_t>(dim) + 1; a < shape.size(); ++a)
        stride *= static_cast<std::size_t>(shape[a]);
      if (extent == 0 || g.size == 0) continue;
      std::vector<std::size_t> count(extent, 0);
      for (std::size_t e = 0; e < g.size; ++e)
        if (h[g.offset + e]) ++count[(e / stride) % extent];
      const std::size_t per = g.size / extent;  // elements of one slice
      std::size_t whole = 0;
      for (std::size_t r = 0; r < extent; ++r) {
        if (count[r] == 0) continue;
        if (count[r] != per) {
          return {true, "device " + std::to_string(dev) + " is handed " + std::to_string(count[r]) +
                            " of the " + std::to_string(per) + " elements of " + slice + " " +
                            std::to_string(r) + " of " + graded_names[k] +
                            " (by values, its shard_map operands as received): " + graded_names[k] +
                            " reaches the body split other than by " + slices + " over '" + axis +
                            "'"};
        }
        ++whole;
        rows[k][dev].resize(extent, false);
        rows[k][dev][r] = true;
      }
      const auto share = (extent + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
      if (whole > share) {
        return {true, "device " + std::to_string(dev) + " is handed " + std::to_string(whole) +
                          " " + slices + " of " + graded_names[k] + ", more than its share (" +
                          std::to_string(share) + " of " + std::to_string(extent) + " over '" +
                          axis + "')"};
      }
    }
  }
  // Devices that differ only along `axis` are handed different slices (x split over 'model' is
  // rows, the same rows on every device of a 'data' coordinate).
  for (std::size_t k = 0; k < graded.size(); ++k) {
    for (std::size_t dev = 0; dev < rows[k].size(); ++dev) {
      if ((dev / stride_axis) % static_cast<std::size_t>(n) != 0) continue;
      for (std::int64_t c = 1; c < n; ++c) {
        const std::size_t other = dev + static_cast<std::size_t>(c) * stride_axis;
        if (other >= rows[k].size()) continue;
        const std::vector<bool>& a = rows[k][dev];
        const std::vector<bool>& o = rows[k][other];
        for (std::size_t r = 0; r < a.size() && r < o.size(); ++r) {
          if (!a[r] || !o[r]) continue;
          return {true, "devices " + std::to_string(dev) + " and " + std::to_string(other) +
                            ", which differ only along '" + axis + "', are both handed " + slice +
                            " " + std::to_string(r) + " of " + graded_names[k] +
                            " (by values): it is not split by " + slices + " over '" + axis + "'"};
        }
      }
    }
  }
  return {true, std::nullopt};
}

// No device holds a full `name`: no value of a shard_map body holds as many of `name`'s elements
// as the whole input -- its per-device shapes under the run's binding, whatever collective or
// layout made them. Nothing to check on a mesh whose `axis` has one device (the block is whole).
// A run whose mesh has no `axis` at all (a program of no shard_map, `jit(lambda x, w: x @ w)`,
// runs on Mesh()) computed on the whole arrays on one device: it fails.
// A value's type and where it was computed, or handed in: "f32[8,4], psum at prog.py:12".
std::string value_place(const LoadedProgram& lp, const Binding& b, const Jaxpr* jx, const Eqn* eqn,
                        std::size_t k) {
  const auto at = [](const Eqn& e) { return e.source.empty() ? std::string() : " at " + e.source; };
  const Type& type = eqn != nullptr ? jx->types[eqn->out[k]] : jx->types[jx->invars[k]];
  std::string how;
  if (eqn != nullptr) {
    how = eqn->primitive + at(*eqn);
  } else {
    how = "as it is handed in";
    for (const auto& sm : lp.compiled.of(b.exp).shard_maps)
      if (sm->body != nullptr && sm->body->run == jx)
        how = "as the shard_map hands it in" + at(*sm->eqn);
  }
  return declared(type) + ", " + how;
}

// What the dependence runs found, per mesh and inputs (the rule's cases share them).
struct DependsCache {
  std::mutex mutex;
  std::map<std::string, std::optional<DependsFinding>> found;
  std::map<std::string, std::optional<std::string>> apart;
  std::map<std::string, DependsCap> capped;
};

StructuralRule no_full_in_body(const LoadedProgram& lp, std::vector<std::string> names,
                               const std::string& axis, const std::string& description,
                               HoldScope scope, ReferenceFile reference,
                               std::shared_ptr<CaseMemo> memo) {
  return {
      description,
      [&lp, names, axis, scope, reference, memo,
       cache = std::make_shared<DependsCache>()](const Trace& t) -> std::optional<std::string> {
        const int pos = mesh_axis_position(t.mesh, axis);
        if (t.input_values != nullptr && pos < 0) {
          std::string all;
          for (const std::string& n : names) all += (all.empty() ? "" : " and ") + n;
          return "no shard_map over '" + axis + "' ran (the program's mesh is " + mesh_str(t.mesh) +
                 "): one device computed on all of " + all;
        }
        if (t.input_values == nullptr || pos < 0 ||
            t.mesh[static_cast<std::size_t>(pos)].second <= 1)
          return std::nullopt;
        const std::optional<Binding> bound = bind_run(lp, t);
        if (!bound) return std::nullopt;  // the run bound it: not reached
        const Binding& b = *bound;
        const auto size = [&](const Type& type) {
          std::int64_t n = 1;
          for (const DimExpr& d : type.shape) n *= d.eval(b.dims, "dims");
          return n;
        };
        std::optional<std::string> why;
        // The named input a value holds whole, if any.
        const auto whole_held = [&](const Held& held) -> std::optional<std::string> {
          for (const std::string& name : names) {
            const int i = input_index(lp.file, name);
            if (i < 0 || i >= 63) continue;
            const std::int64_t whole = size(b.exp->jaxpr.types[b.exp->jaxpr.invars[i]]);
            if (whole > 1 && held.of(i) >= whole) return name;
          }
          return std::nullopt;
        };
        const auto whole_type = [&](const std::string& name) {
          return declared(b.exp->jaxpr.types[b.exp->jaxpr.invars[static_cast<std::size_t>(
              input_index(lp.file, name))]]);
        };
        const auto at = [](const Eqn& e) {
          return e.source.empty() ? std::string() : " at " + e.source;
        };
        // A value's type and where it was computed, or handed in.
        const auto place = [&](const Jaxpr* jx, const Eqn* eqn, std::size_t k) {
          return value_place(lp, b, jx, eqn, k);
        };
        // The dependence runs on the first draw, once per mesh and inputs a program is graded
        // on (the cases of an exercise share them: the draws replace the float32 ones).
        const auto key_of = [&](const std::vector<GradedInput>& graded,
                                const std::vector<bool>& others,
                                const RunPath* path) { return draw_key(t, graded, others, path); };
        const auto dependence = [&](const std::vector<GradedInput>& graded,
                                    const std::vector<bool>& others,
                                    const std::set<const Jaxpr*>& bodies, const RunPath* path) {
          const std::string key = key_of(graded, others, path);
          std::lock_guard<std::mutex> lock(cache->mutex);
          const auto it = cache->found.find(key);
          if (it != cache->found.end()) return it->second;
          std::vector<DependsInput> inputs;
          for (const GradedInput& g : graded) inputs.push_back({g.def_input, g.size});
          const Drawn d = draw(*t.input_values, graded, others, kFirstDraw);
          std::vector<bool> redrawable = others;
          for (const GradedInput& g : graded) redrawable[g.def_input] = true;
          DependsCap capped;
          const auto f = held_by_dependence(lp, t.mesh, d.inputs, inputs, redrawable,
                                            scope == HoldScope::kRun, bodies, path, &capped);
          cache->found.emplace(key, f);
          cache->capped.emplace(key, capped);
          return f;
        };
        // A device whose values went past what the dependence runs keep, where the exercise's
        // reference computes far fewer: what it computes after that is not seen, so it fails
        // (2 million numbers of junk first, then a gather, would pass unchecked).
        const auto past_the_cap = [&](const std::vector<GradedInput>& graded,
                                      const std::vector<bool>& others,
                                      const RunPath* path) -> std::optional<std::string> {
          const std::string key = key_of(graded, others, path);
          DependsCap capped;
          {
            std::lock_guard<std::mutex> lock(cache->mutex);
            const auto it = cache->capped.find(key);
            if (it == cache->capped.end()) return std::nullopt;
            capped = it->second;
          }
          if (capped.device < -1) return std::nullopt;
          const LoadedProgram* ref = reference ? reference() : nullptr;
          if (ref == nullptr) return std::nullopt;
          const Drawn d = draw(*t.input_values, graded, others, kFirstDraw);
          const auto counts = numbers_per_device(*ref, t.mesh, d.inputs);
          if (!counts || counts->empty()) return std::nullopt;
          const std::size_t most = *std::max_element(counts->begin(), counts->end());
          if (capped.numbers <= 16 * most) return std::nullopt;
          return (capped.device < 0 ? std::string("the code outside the shard_maps")
                                    : "device " + std::to_string(capped.device)) +
                 " computes " + std::to_string(capped.numbers) +
                 " numbers over the run, more than the checks by values follow (" +
                 std::to_string(capped.kept) +
                 ") and more than 16 times what the exercise's reference program computes on "
                 "these inputs (" +
                 std::to_string(most) + " on its busiest device): what it holds after the first " +
                 std::to_string(capped.kept) + " cannot be checked";
        };
        // One value that holds every other device's block apart, however encoded (traffic.hpp).
        const auto apart =
            [&](const std::vector<GradedInput>& graded, const std::vector<bool>& others,
                const std::set<const Jaxpr*>& bodies, const std::vector<std::string>& graded_names,
                const RunPath* path) -> std::optional<std::string> {
          if (graded.empty()) return std::nullopt;
          const std::string key = key_of(graded, others, path);
          std::lock_guard<std::mutex> lock(cache->mutex);
          const auto it = cache->apart.find(key);
          if (it != cache->apart.end()) return it->second;
          std::vector<TrafficInput> in;
          for (const GradedInput& g : graded) in.push_back({g.def_input, g.size});
          const Drawn d = draw(*t.input_values, graded, others, kFirstDraw);
          std::optional<std::string> why_apart;
          if (const auto f = blocks_apart_in_one_value(lp, t.mesh, d.inputs, in, bodies, path)) {
            std::string all;
            for (const std::string& name : graded_names) all += (all.empty() ? "" : " and ") + name;
            why_apart = (f->every_device ? std::string("every device")
                                         : "device " + std::to_string(f->device)) +
                        " holds all of " + all + " in one value (" + place(f->jx, f->eqn, f->k) +
                        "), each of the other " + std::to_string(f->blocks - 1) +
                        " devices' blocks apart: as many numbers computed from that block alone "
                        "as it has elements (seen by redrawing one device's block at a time), "
                        "however encoded";
          }
          cache->apart.emplace(key, why_apart);
          return why_apart;
        };
        // What each device holds, by values: the inputs' elements a value holds, at two
        // draws of random values. The count model below is only the fallback for a program
        // that cannot run on them (and stays for the work done outside the shard_maps).
        const ByValues setup = by_values_of(lp, b, t, names, memo.get());
        const std::vector<GradedInput>& graded = setup.graded;
        const std::size_t total = setup.total;
        std::set<const Jaxpr*> bodies = setup.bodies;
        const std::vector<bool>& others = setup.others;
        const std::set<const Jaxpr*> automatic =
            automatic_over(lp.compiled.of(b.exp), axis, &bodies);
        bool by_values = false;
        // Two passes (draws.hpp): the runs on drawn numbers taking their own decisions (a
        // value that encodes elements as bits or integers is then seen), then, where those are
        // not the case's, taking the case's (what the program does there).
        // Last, the draws at 2^20 times the cases' size taking their own decisions (a gather
        // switched on by large inputs without a branch: a 0/1 factor, a loop's extra trip).
        std::vector<std::pair<const RunPath*, int>> passes = {{nullptr, 0}};
        if (setup.decides) passes.emplace_back(&setup.path, 0);
        passes.emplace_back(nullptr, kLargeShift);
        for (const auto& [follow, shift] : passes) {
          if (!graded.empty() && total < (std::size_t{1} << 21)) {
            if (const auto wholes = wholes_by_values(lp, t.mesh, *t.input_values, graded, others,
                                                     scope, bodies, follow, shift, automatic)) {
              by_values = true;
              for (const Whole& o : wholes->empty() ? std::vector<Whole>{} : (*wholes)[0]) {
                if (o.refused.empty()) continue;
                std::string all;
                for (const std::string& name : setup.names)
                  all += (all.empty() ? "" : " and ") + name;
                return "the program runs on the case but fails on " +
                       (o.refused_on.empty() ? "random values of the same shapes in place of " + all
                                             : o.refused_on) +
                       " (" + o.refused +
                       "): what its devices hold cannot be checked, and a right program computes "
                       "on any values";
              }
              for (std::size_t d = 0; d < wholes->size(); ++d) {
                // A value or values alive at once, where there are (the more precise place);
                // else the run's union; else elements of another device's block.
                std::vector<Whole> ws;
                for (const Whole& o : (*wholes)[d])
                  if (!o.outside && !o.path) ws.push_back(o);
                if (ws.empty()) continue;
                const auto precise = std::find_if(
                    ws.begin(), ws.end(), [](const Whole& o) { return !o.over_run && !o.foreign; });
                const auto run =
                    std::find_if(ws.begin(), ws.end(), [](const Whole& o) { return o.over_run; });
                const Whole& w = precise != ws.end() ? *precise
                                 : run != ws.end()   ? *run
                                                     : ws.front();
                std::size_t same = 0;
                for (const auto& on : *wholes) {
                  same += std::any_of(on.begin(), on.end(), [&](const Whole& o) {
                    return o.jx == w.jx && o.eqn == w.eqn && o.k == w.k && o.graded == w.graded;
                  });
                }
                const Type& type = w.eqn != nullptr ? w.jx->types[w.eqn->out[w.k]]
                                                    : w.jx->types[w.jx->invars[w.k]];
                const std::string name =
                    lp.file.inputs[static_cast<std::size_t>(graded[w.graded].file_input)].name;
                std::string how;
                if (w.eqn != nullptr) {
                  how = w.eqn->primitive + at(*w.eqn);
                } else {
                  how = "as it is handed in";
                  for (const auto& sm : lp.compiled.of(b.exp).shard_maps)
                    if (sm->body != nullptr && sm->body->run == w.jx)
                      how = "as the shard_map hands it in" + at(*sm->eqn);
                }
                if (shift != 0) how += ", on inputs 2^20 times the cases' size";
                const std::string who = same == wholes->size() ? std::string("every device")
                                                               : "device " + std::to_string(d);
                if (w.foreign) {
                  return who + " holds " + std::to_string(w.pieces) + " element" +
                         (w.pieces == 1 ? "" : "s") + " of " + name + " " + whole_type(name) +
                         " from outside its block (the first in " + declared(type) + ", " + how +
                         "): it computes with another device's share of " + name;
                }
                if (w.over_run) {
                  return who + " receives every element of " + name + " " + whole_type(name) +
                         " over the run, in " + std::to_string(w.pieces) +
                         " values never all alive at once (the last: " + declared(type) + ", " +
                         how + "): it computes with all of " + name + ", not its block";
                }
                if (w.pieces > 1) {
                  return who + " holds all the elements of " + name + " " + whole_type(name) +
                         " in " + std::to_string(w.pieces) +
                         " values alive at once (the last: " + declared(type) + ", " + how + ")";
                }
                return who + " holds " + declared(type) + ", all the elements of " + name + " " +
                       whole_type(name) + " (" + how + ")";
              }
              for (const Whole& o : wholes->empty() ? std::vector<Whole>{} : (*wholes)[0]) {
                if (!o.outside) continue;
                const std::string name =
                    lp.file.inputs[static_cast<std::size_t>(graded[o.graded].file_input)].name;
                return o.eqn->primitive + at(*o.eqn) + " computes on all of " + name + " " +
                       whole_type(name) +
                       (automatic.count(o.jx) == 0
                            ? " outside every shard_map (an operand holds every element of it, "
                              "by values)"
                        : o.pieces > 1
                            ? " in a shard_map body that is not manual over '" + axis +
                                  "', with the other products there (the compiler's to split "
                                  "over it, as outside every shard_map; between them they take "
                                  "every element of it, by values)"
                            : " in a shard_map body that is not manual over '" + axis +
                                  "' (the compiler's to split over it, as outside every "
                                  "shard_map; an operand holds every element of it, by values)") +
                       ": the work of every device, done on one";
              }
              if (shift != 0) continue;  // (the encodings: at the cases' size)
              // No copy of an element anywhere: the elements it holds in other encodings, by
              // dependence (depends.hpp), on the first draw's values.
              if (const auto f = dependence(graded, others, bodies, follow)) {
                const std::string name =
                    lp.file.inputs[static_cast<std::size_t>(graded[f->input].file_input)].name;
                const std::string who =
                    f->every_device ? "every device" : "device " + std::to_string(f->device);
                const std::string enc = " (numbers each computed from one element of " + name +
                                        " alone, which give it back: an encoding of it, seen by "
                                        "redrawing its elements)";
                switch (f->kind) {
                  case DependsFinding::kOutside:
                    return f->eqn->primitive + at(*f->eqn) + " computes on all of " + name + " " +
                           whole_type(name) + " outside every shard_map, held encoded" + enc +
                           ": the work of every device, done on one";
                  case DependsFinding::kWhole:
                    return who + " holds every element of " + name + " " + whole_type(name) +
                           " encoded in one value (" + place(f->jx, f->eqn, f->k) + ")" + enc;
                  case DependsFinding::kOverRun:
                    return who + " holds every element of " + name + " " + whole_type(name) +
                           " encoded over the run, in " + std::to_string(f->values) +
                           " values (the last: " + place(f->jx, f->eqn, f->k) + ")" + enc +
                           ": it computes with all of " + name + ", not its block";
                  case DependsFinding::kForeign:
                    return who + " holds " + std::to_string(f->elements) + " element" +
                           (f->elements == 1 ? "" : "s") + " of " + name + " " + whole_type(name) +
                           " from outside its block, encoded (the first in " +
                           place(f->jx, f->eqn, f->k) + ")" + enc +
                           ": it computes with another device's share of " + name;
                }
              }
              if (scope == HoldScope::kValue)
                if (auto why_apart = apart(graded, others, bodies, setup.names, follow))
                  return why_apart;
              if (auto why_cap = past_the_cap(graded, others, follow)) return why_cap;
              // Last: a device whose path on the case's numbers is not its path on random ones
              // (where no second pass takes the case's decisions).
              for (std::size_t d = 0; d < wholes->size() && !setup.decides; ++d) {
                for (const Whole& o : (*wholes)[d]) {
                  if (!o.path) continue;
                  return "device " + std::to_string(d) +
                         " computes other values on the case's numbers than on random numbers in "
                         "their place (a cond or a loop that depends on the values): what it does "
                         "on the case is not what the values checks saw";
                }
              }
            }
          }
        }
        const auto visit = [&](const Type& type, const Held& held, const Eqn& e) {
          if (why || by_values) return;
          if (const auto name = whole_held(held)) {
            why = "every device holds " + declared(type) + ", all the elements of " + *name + " " +
                  whole_type(*name) + " (" +
                  (e.primitive == "shard_map" ? "as the shard_map hands it in" : e.primitive) +
                  at(e) + ")";
          }
        };
        // The shard_maps, at any depth of the top level, each body on its operands.
        const std::function<Outs(const Jaxpr&, const std::vector<Held>&, int)> top =
            [&](const Jaxpr& jx, const std::vector<Held>& in, int depth) {
              std::vector<Held> h(jx.types.size());
              for (std::size_t k = 0; k < jx.invars.size() && k < in.size(); ++k)
                h[jx.invars[k]] = in[k];
              for (const Eqn& e : jx.eqns) {
                std::vector<Held> ops;
                for (const Atom& a : e.in) ops.push_back(a.is_literal() ? Held{} : h[a.var]);
                if (is_control(e) && depth < 64) {
                  // A loop or branch around the shard_maps: its bodies as a jit's, to
                  // their fixpoint.
                  const auto body = [&](const Jaxpr& sub, const std::vector<Held>& sub_in) {
                    return top(sub, sub_in, depth + 1);
                  };
                  Outs outs = control_facts<Held>(e, ops, e.out.size(), body, either, guarded,
                                                  widened, extended);
                  stack_ys(e, outs);
                  for (std::size_t k = 0; k < e.out.size(); ++k) {
                    h[e.out[k]] = outs[k];
                    cap(h[e.out[k]], size(jx.types[e.out[k]]));
                  }
                  continue;
                }
                const Jaxpr* sub = e.sub("jaxpr") ? e.sub("jaxpr") : e.sub("call_jaxpr");
                if (sub == nullptr || depth >= 64) {
                  // Outside the body: a copy, reshape or slice of an input holds what it did;
                  // a product or a reduction of a whole input there is the computation done
                  // on one device, not split (an MLP on the global w1, a shard_map only for a
                  // psum; the blocks a shard_map returned split, summed outside it).
                  if (computes(e.primitive) || e.primitive == "conv_general_dilated") {
                    const bool product =
                        e.primitive == "dot_general" || e.primitive == "conv_general_dilated";
                    for (const Held& op : ops) {
                      const auto name = whole_held(op);
                      if (name && !why) {
                        why = e.primitive + (product ? " multiplies" : " computes on") +
                              " all of " + *name + " " + whole_type(*name) +
                              " outside the shard_map, on one device, not split (" + e.primitive +
                              at(e) + ")";
                      }
                    }
                  }
                  Held r = combine(e, h, t.mesh);
                  // What it combines: elementwise arithmetic of several operands adds up what
                  // each held or had combined; a copy, slice or layout keeps the most.
                  // Arithmetic of two operands holding the rule's inputs whose sum reaches a
                  // whole input computes on all of it outside the shard_maps (slices and adds,
                  // outer products: the same as a reduction or a product there).
                  static const char* const kMoves[] = {"slice",
                                                       "dynamic_slice",
                                                       "reshape",
                                                       "squeeze",
                                                       "expand_dims",
                                                       "broadcast_in_dim",
                                                       "transpose",
                                                       "convert_element_type",
                                                       "copy",
                                                       "copy_p",
                                                       "concatenate",
                                                       "pad",
                                                       "rev",
                                                       "gather",
                                                       "dynamic_update_slice",
                                                       "select_n",
                                                       "stop_gradient",
                                                       "pvary",
                                                       "pcast",
                                                       "reduce_precision",
                                                       "squeeze"};
                  const bool moves = std::find(std::begin(kMoves), std::end(kMoves), e.primitive) !=
                                     std::end(kMoves);
                  const auto with = [](const Held& op, int input) {
                    const auto c = op.combined.find(input);
                    const std::int64_t n = c == op.combined.end() ? 0 : c->second;
                    std::int64_t sum = 0;
                    return __builtin_add_overflow(op.of(input), n, &sum) ? INT64_MAX : sum;
                  };
                  // Operands holding (or combining) any of the rule's inputs: two of them make
                  // the arithmetic a combination (blocks added, x's column times w's row).
                  int named_operands = 0;
                  for (const Held& op : ops) {
                    bool named = false;
                    for (const std::string& name : names) {
                      const int i = input_index(lp.file, name);
                      named = named || (i >= 0 && with(op, i) > 0);
                    }
                    named_operands += named;
                  }
                  std::set<int> inputs;
                  for (const Held& op : ops) {
                    for (const auto& [input, n] : op.elements) inputs.insert(input);
                    for (const auto& [input, n] : op.combined) inputs.insert(input);
                  }
                  for (const int input : inputs) {
                    std::int64_t most = 0, sum = 0;
                    for (const Held& op : ops) {
                      const std::int64_t n =
                          moves ? std::max<std::int64_t>(0, with(op, input) - op.of(input))
                                : with(op, input);
                      most = std::max(most, n);
                      if (__builtin_add_overflow(sum, n, &sum)) sum = INT64_MAX;
                    }
                    r.combined[input] = moves ? most : sum;
                    if (moves || computes(e.primitive) || named_operands < 2 || why) continue;
                    for (const std::string& name : names) {
                      if (input_index(lp.file, name) != input) continue;
                      const std::int64_t whole = size(
                          b.exp->jaxpr.types[b.exp->jaxpr.invars[static_cast<std::size_t>(input)]]);
                      if (whole > 1 && sum >= whole) {
                        why = e.primitive + " combines all of " + name + " " + whole_type(name) +
                              " outside the shard_map (by elementwise arithmetic), on one device, "
                              "not split (" +
                              e.primitive + at(e) + ")";
                      }
                    }
                  }
                  for (int v : e.out) {
                    h[v] = r;
                    cap(h[v], size(jx.types[v]));
                  }
                  continue;
                }
                std::vector<Held> outs;
                if (e.primitive == "shard_map") {
                  // In the body, an operand holds what its block holds; out of it, a result
                  // what the body returned on every device its out_spec splits it over.
                  for (std::size_t k = 0; k < ops.size() && k < sub->invars.size(); ++k)
                    cap(ops[k], size(sub->types[sub->invars[k]]));
                  outs = held_values(*sub, ops, t.mesh, size, visit, e, depth + 1);
                  for (std::size_t k = 0; k < outs.size(); ++k)
                    for (auto& [input, n] : outs[k].elements) n *= out_split(e, k, t.mesh);
                } else {
                  outs = top(*sub, ops, depth + 1);  // a jit: its results as its body's
                }
                for (std::size_t k = 0; k < e.out.size() && k < outs.size(); ++k) {
                  h[e.out[k]] = outs[k];
                  cap(h[e.out[k]], size(jx.types[e.out[k]]));
                }
              }
              return results(jx, h);
            };
        std::vector<Held> in;
        for (std::size_t i = 0; i < lp.file.inputs.size() && i < 63; ++i) {
          in.push_back(
              of_input(static_cast<int>(i), size(b.exp->jaxpr.types[b.exp->jaxpr.invars[i]])));
        }
        try {
          top(b.exp->jaxpr, in, 0);
        } catch (const InputError&) {
          return std::nullopt;  // a size the binding cannot evaluate: the run refused it
        }
        return why;
      }};
}

// What each device receives that depends on the elements it was not handed, against what the
// exercise's reference program receives on the same draw (traffic.hpp): where a right program
// receives, even n times over (partials all_gathered and added, a stack of them psummed), fewer
// numbers than another device's block (or all the others' elements) holds, a program that
// receives that many can carry them, however mixed.
StructuralRule receives_little(const LoadedProgram& lp, std::vector<std::string> names,
                               const std::string& description, ReferenceFile reference,
                               std::shared_ptr<CaseMemo> memo) {
  struct Cache {
    std::mutex mutex;
    std::map<std::string, std::optional<std::string>> found;
  };
  return {description,
          [&lp, names, reference, memo,
           cache = std::make_shared<Cache>()](const Trace& t) -> std::optional<std::string> {
            if (t.input_values == nullptr) return std::nullopt;
            const LoadedProgram* ref = reference ? reference() : nullptr;
            if (ref == nullptr) return std::nullopt;
            const std::optional<Binding> bound = bind_run(lp, t);
            if (!bound) return std::nullopt;  // the run bound it: not reached
            const ByValues setup = by_values_of(lp, *bound, t, names, memo.get());
            if (setup.graded.empty() || setup.total >= (std::size_t{1} << 21)) return std::nullopt;
            const std::string key = draw_key(t, setup.graded, setup.others, &setup.path);
            std::lock_guard<std::mutex> lock(cache->mutex);
            const auto it = cache->found.find(key);
            if (it != cache->found.end()) return it->second;
            const auto judge = [&]() -> std::optional<std::string> {
              const std::optional<Binding> rb = bind_run(*ref, t);
              if (!rb) return std::nullopt;
              std::set<const Jaxpr*> ref_bodies;
              for (const auto& sm : ref->compiled.of(rb->exp).shard_maps)
                if (sm->body != nullptr) ref_bodies.insert(sm->body->run);
              std::vector<TrafficInput> in;
              for (const GradedInput& g : setup.graded) in.push_back({g.def_input, g.size});
              const Drawn d = draw(*t.input_values, setup.graded, setup.others, kFirstDraw);
              const auto mine =
                  received_from_others(lp, t.mesh, d.inputs, in, setup.bodies, &setup.path);
              if (!mine) return std::nullopt;
              const auto right =
                  received_from_others(*ref, t.mesh, d.inputs, in, ref_bodies, nullptr);
              if (!right) return std::nullopt;
              const std::size_t n = mine->received.size();
              std::size_t flagged = 0, first = n, limit = 0;
              for (std::size_t dev = 0; dev < n && dev < right->received.size(); ++dev) {
                const std::size_t needs = n * right->received[dev];
                std::size_t enough = 0;
                if (mine->block[dev] > 0 && needs < mine->block[dev])
                  enough = mine->block[dev];
                else if (needs < mine->foreign[dev])
                  enough = mine->foreign[dev];
                if (enough == 0 || mine->received[dev] < enough) continue;
                ++flagged;
                if (first == n) {
                  first = dev;
                  limit = enough;
                }
              }
              if (flagged == 0) return std::nullopt;
              std::string all;
              for (const std::string& name : setup.names)
                all += (all.empty() ? "" : " and ") + name;
              const std::string who =
                  flagged == n ? std::string("every device") : "device " + std::to_string(first);
              const std::string where = mine->jx[first] != nullptr
                                            ? " (the first in " +
                                                  value_place(lp, *bound, mine->jx[first],
                                                              mine->eqn[first], mine->k[first]) +
                                                  ")"
                                            : "";
              return who + " receives " + std::to_string(mine->received[first]) +
                     " distinct numbers computed from the elements of " + all +
                     " it was not handed" + where + ", enough to carry " +
                     (limit == mine->block[first] ? "another device's block of them ("
                                                  : "all of them (") +
                     std::to_string(limit) +
                     " elements), however mixed, where the exercise's reference program receives " +
                     std::to_string(right->received[first]) +
                     " (seen by redrawing every element the device was not handed)";
            };
            const auto found = judge();
            cache->found.emplace(key, found);
            return found;
          }};
}

}  // namespace meshrun::interp
