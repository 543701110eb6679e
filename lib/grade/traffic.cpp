#include "grade/traffic.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <unordered_set>

#include "grade/draws.hpp"
#include "interp/primitives.hpp"
#include "shard/mesh_shape.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

// A collective that moves numbers between devices: one over axes of more than one device.
bool moves(const Eqn& eqn, const MeshShape& mesh) {
  static const std::set<std::string> kCollectives = {
      "psum",       "psum_invariant",       "pmean",          "pmax",         "pmin",
      "all_gather", "all_gather_invariant", "reduce_scatter", "psum_scatter", "ppermute",
      "all_to_all"};
  if (kCollectives.count(eqn.primitive) == 0) return false;
  std::int64_t n = 1;
  try {
    for (const std::string& axis : param_axes(eqn, "axes")) {
      const int pos = mesh_axis_position(mesh, axis);
      if (pos >= 0) n *= mesh[static_cast<std::size_t>(pos)].second;
    }
  } catch (const std::exception&) {
    return true;
  }
  return n > 1;
}

// Every value of every device, in the device's order: recorded on the base run; on each later
// run, which of its numbers changed. A run that takes another path is compared up to where it
// parts (`until`: the values from there on are not judged, in any run).
class Sites final : public ValueObserver {
 public:
  struct Site {
    const Jaxpr* jx = nullptr;
    const Eqn* eqn = nullptr;
    std::size_t k = 0;
    bool received = false;  // a collective's result that moved, or a shard_map's operand
    std::vector<float> base;
    std::vector<std::uint8_t> own;      // handed in: a number the device had computed before
    std::vector<std::uint8_t> changed;  // this run
  };
  struct Slot {
    std::vector<Site> sites;
    std::unordered_set<std::uint32_t> handed;    // the numbers of its shard_map operands
    std::unordered_set<std::uint32_t> computed;  // the numbers of the values it computed
    std::size_t next = 0;
    std::size_t until = SIZE_MAX;
    std::size_t numbers = 0;
  };

  Sites(int devices, const MeshShape& mesh, const std::set<const Jaxpr*>& bodies, std::size_t cap)
      : slots_(static_cast<std::size_t>(devices)), mesh_(mesh), bodies_(bodies), cap_(cap) {}

  void start(bool base) {
    base_ = base;
    for (Slot& s : slots_) {
      s.next = 0;
      for (Site& site : s.sites) std::fill(site.changed.begin(), site.changed.end(), 0);
    }
  }
  bool too_many() const {
    return std::any_of(slots_.begin(), slots_.end(),
                       [&](const Slot& s) { return s.numbers > cap_ / slots_.size(); });
  }

  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (device < 0 || static_cast<std::size_t>(device) >= slots_.size()) return;
    Slot& s = slots_[static_cast<std::size_t>(device)];
    const std::vector<float>& d = v.t.data;
    if (base_) {
      const bool handed = eqn == nullptr && bodies_.count(&jx) != 0;
      if (handed)
        for (const float f : d) s.handed.insert(std::bit_cast<std::uint32_t>(f));
      s.numbers += d.size();
      if (s.numbers > cap_ / slots_.size()) return;  // judged as too many
      std::vector<std::uint8_t> own;
      if (handed) {  // a later shard_map handed back what the device computed in an earlier one
        own.resize(d.size());
        for (std::size_t j = 0; j < d.size(); ++j)
          own[j] = s.computed.count(std::bit_cast<std::uint32_t>(d[j])) != 0;
      } else if (eqn != nullptr) {
        for (const float f : d) s.computed.insert(std::bit_cast<std::uint32_t>(f));
      }
      s.sites.push_back({&jx, eqn, k, handed || (eqn != nullptr && moves(*eqn, mesh_)), d,
                         std::move(own), std::vector<std::uint8_t>(d.size(), 0)});
      return;
    }
    const std::size_t i = s.next++;
    if (i >= s.until || i >= s.sites.size()) return;
    Site& site = s.sites[i];
    if (site.jx != &jx || site.eqn != eqn || site.k != k || site.base.size() != d.size()) {
      s.until = i;
      return;
    }
    for (std::size_t j = 0; j < d.size(); ++j)
      site.changed[j] =
          std::bit_cast<std::uint32_t>(site.base[j]) != std::bit_cast<std::uint32_t>(d[j]);
  }
  // After a run: one that ended before the base run's last value took another path there.
  void finish() {
    if (base_) return;
    for (Slot& s : slots_)
      if (s.next < s.sites.size()) s.until = std::min(s.until, s.next);
  }

  std::vector<Slot>& slots() { return slots_; }

 private:
  std::vector<Slot> slots_;
  const MeshShape& mesh_;
  const std::set<const Jaxpr*>& bodies_;
  std::size_t cap_;
  bool base_ = true;
};

// The base run, and per device which graded elements it was handed (by their bits: the draw's
// are distinct): [device][graded input][element].
struct Based {
  std::vector<std::vector<std::vector<bool>>> has;
};

constexpr std::size_t kCap = std::size_t{1} << 24;  // numbers kept over the run, all devices

int device_count(const MeshShape& mesh) {
  int devices = 1;
  for (const auto& [axis, n] : mesh) devices *= n;
  return devices;
}

bool run_on(const LoadedProgram& lp, const MeshShape& mesh, const std::vector<Tensor>& in,
            Sites& sites, const RunPath* follow) {
  try {
    run_following(lp, mesh, refs(in), &sites, follow);
    sites.finish();
    return true;
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception&) {
    return false;  // refused on these values: not judged
  }
}

std::optional<Based> base_run(const LoadedProgram& lp, const MeshShape& mesh,
                              const std::vector<Tensor>& base,
                              const std::vector<TrafficInput>& graded, Sites& sites,
                              const RunPath* follow) {
  sites.start(true);
  if (!run_on(lp, mesh, base, sites, follow) || sites.too_many()) return std::nullopt;
  Based b;
  for (Sites::Slot& s : sites.slots()) {
    std::vector<std::vector<bool>> h;
    for (const TrafficInput& g : graded) {
      std::vector<bool> of(g.size, false);
      for (std::size_t e = 0; e < g.size && g.def_input < base.size(); ++e)
        of[e] = s.handed.count(std::bit_cast<std::uint32_t>(base[g.def_input].data[e])) != 0;
      h.push_back(std::move(of));
    }
    b.has.push_back(std::move(h));
  }
  return b;
}

}  // namespace

std::optional<Traffic> received_from_others(const LoadedProgram& lp, const MeshShape& mesh,
                                            const std::vector<Tensor>& base,
                                            const std::vector<TrafficInput>& graded,
                                            const std::set<const Jaxpr*>& bodies,
                                            const RunPath* follow) {
  Sites sites(device_count(mesh), mesh, bodies, kCap);
  const std::optional<Based> based = base_run(lp, mesh, base, graded, sites, follow);
  if (!based) return std::nullopt;
  const auto& has = based->has;
  const std::size_t d = has.size();
  Traffic t;
  t.received.assign(d, 0);
  t.foreign.assign(d, 0);
  t.block.assign(d, 0);
  t.jx.assign(d, nullptr);
  t.eqn.assign(d, nullptr);
  t.k.assign(d, 0);
  std::mt19937_64 rng(0xC2B2AE3D27D4EB4Full);
  for (std::size_t dev = 0; dev < d; ++dev) {
    std::vector<Tensor> redraw = base;
    for (std::size_t g = 0; g < graded.size(); ++g) {
      if (graded[g].def_input >= base.size()) continue;
      std::vector<float>& data = redraw[graded[g].def_input].data;
      for (std::size_t e = 0; e < graded[g].size; ++e) {
        if (has[dev][g][e]) continue;
        ++t.foreign[dev];
        data[e] = redrawn(data[e], rng);
      }
    }
    for (std::size_t other = 0; other < d; ++other) {
      if (other == dev) continue;
      std::size_t only = 0;  // elements `other` was handed and `dev` was not
      for (std::size_t g = 0; g < graded.size(); ++g)
        for (std::size_t e = 0; e < graded[g].size; ++e)
          only += has[other][g][e] && !has[dev][g][e];
      if (only > 0 && (t.block[dev] == 0 || only < t.block[dev])) t.block[dev] = only;
    }
    if (t.foreign[dev] == 0) continue;
    sites.start(false);
    if (!run_on(lp, mesh, redraw, sites, follow)) return std::nullopt;
    // Distinct numbers (by their bits on the base run): a sum received again, all_gathered
    // after a reduce_scatter, says nothing new.
    const Sites::Slot& s = sites.slots()[dev];
    std::unordered_set<std::uint32_t> got;
    for (std::size_t i = 0; i < s.sites.size() && i < s.until; ++i) {
      const Sites::Site& site = s.sites[i];
      if (!site.received) continue;
      for (std::size_t j = 0; j < site.changed.size(); ++j) {
        if (!site.changed[j] || (!site.own.empty() && site.own[j])) continue;
        got.insert(std::bit_cast<std::uint32_t>(site.base[j]));
        if (t.jx[dev] == nullptr) {
          t.jx[dev] = site.jx;
          t.eqn[dev] = site.eqn;
          t.k[dev] = site.k;
        }
      }
    }
    t.received[dev] = got.size();
  }
  return t;
}

std::optional<ApartFinding> blocks_apart_in_one_value(const LoadedProgram& lp,
                                                      const MeshShape& mesh,
                                                      const std::vector<Tensor>& base,
                                                      const std::vector<TrafficInput>& graded,
                                                      const std::set<const Jaxpr*>& bodies,
                                                      const RunPath* follow) {
  Sites sites(device_count(mesh), mesh, bodies, kCap);
  const std::optional<Based> based = base_run(lp, mesh, base, graded, sites, follow);
  if (!based) return std::nullopt;
  const auto& has = based->has;
  // The blocks: the devices' handed sets, which must not overlap (a split over one axis).
  std::map<std::vector<bool>, std::size_t> index;
  std::vector<std::vector<bool>> blocks;
  std::vector<std::size_t> of(has.size());
  for (std::size_t dev = 0; dev < has.size(); ++dev) {
    std::vector<bool> flat;
    for (const auto& h : has[dev]) flat.insert(flat.end(), h.begin(), h.end());
    const auto [it, fresh] = index.emplace(flat, blocks.size());
    if (fresh) blocks.push_back(flat);
    of[dev] = it->second;
  }
  if (blocks.size() < 2 || blocks.size() > 32) return std::nullopt;
  std::vector<std::size_t> size(blocks.size(), 0);
  for (std::size_t e = 0; e < blocks[0].size(); ++e) {
    std::size_t holders = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b)
      if (blocks[b][e]) {
        ++holders;
        ++size[b];
      }
    if (holders > 1) return std::nullopt;
  }
  if (std::find(size.begin(), size.end(), std::size_t{0}) != size.end()) return std::nullopt;
  // Per block, a run with its elements redrawn: each number's mask of the blocks it follows.
  std::vector<std::vector<std::vector<std::uint32_t>>> mask(has.size());
  for (std::size_t dev = 0; dev < has.size(); ++dev)
    for (const Sites::Site& site : sites.slots()[dev].sites)
      mask[dev].emplace_back(site.base.size(), 0u);
  std::mt19937_64 rng(0x94D049BB133111EBull);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    std::vector<Tensor> redraw = base;
    std::size_t flat = 0;
    for (const TrafficInput& g : graded)
      for (std::size_t e = 0; e < g.size; ++e, ++flat)
        if (blocks[b][flat] && g.def_input < redraw.size())
          redraw[g.def_input].data[e] = redrawn(redraw[g.def_input].data[e], rng);
    sites.start(false);
    if (!run_on(lp, mesh, redraw, sites, follow)) return std::nullopt;
    for (std::size_t dev = 0; dev < has.size(); ++dev) {
      const Sites::Slot& s = sites.slots()[dev];
      for (std::size_t i = 0; i < s.sites.size() && i < s.until; ++i)
        for (std::size_t j = 0; j < s.sites[i].changed.size(); ++j)
          if (s.sites[i].changed[j]) mask[dev][i][j] |= 1u << b;
    }
  }
  std::optional<ApartFinding> found;
  std::size_t alike = 0;
  for (std::size_t dev = 0; dev < has.size(); ++dev) {
    const Sites::Slot& s = sites.slots()[dev];
    const std::uint32_t own = 1u << of[dev];
    for (std::size_t i = 0; i < s.sites.size() && i < s.until; ++i) {
      std::vector<std::size_t> alone(blocks.size(), 0);
      for (const std::uint32_t m : mask[dev][i]) {
        const std::uint32_t others = m & ~own;
        if (others != 0 && std::has_single_bit(others))
          ++alone[static_cast<std::size_t>(std::countr_zero(others))];
      }
      bool all = true;
      for (std::size_t b = 0; b < blocks.size() && all; ++b)
        all = b == of[dev] || alone[b] >= size[b];
      if (!all) continue;
      if (!found) {
        found = ApartFinding{static_cast<int>(dev), blocks.size(), s.sites[i].jx,
                             s.sites[i].eqn,        s.sites[i].k,  false};
        alike = 1;
      } else if (found->jx == s.sites[i].jx && found->eqn == s.sites[i].eqn &&
                 found->k == s.sites[i].k) {
        ++alike;
      }
      break;
    }
  }
  if (found) found->every_device = alike == has.size();
  return found;
}

namespace {
class Counter final : public ValueObserver {
 public:
  explicit Counter(int devices) : n_(static_cast<std::size_t>(devices), 0) {}
  void seen(int device, const Jaxpr&, const Eqn*, std::size_t, const Value& v) override {
    if (device < 0 || static_cast<std::size_t>(device) >= n_.size()) return;
    const std::vector<float>& d = v.t.data;
    const bool constant =
        d.size() > 1 && std::all_of(d.begin(), d.end(), [&](float f) {
          return std::bit_cast<std::uint32_t>(f) == std::bit_cast<std::uint32_t>(d.front());
        });
    n_[static_cast<std::size_t>(device)] += constant ? 1 : d.size();
  }
  std::vector<std::size_t> n_;
};
}  // namespace

std::optional<std::vector<std::size_t>> numbers_per_device(const LoadedProgram& lp,
                                                           const MeshShape& mesh,
                                                           const std::vector<Tensor>& inputs) {
  Counter c(device_count(mesh));
  try {
    run_observed(lp, mesh, refs(inputs), c);
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return c.n_;
}

}  // namespace meshrun::interp
