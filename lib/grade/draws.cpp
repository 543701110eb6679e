#include "grade/draws.hpp"

#include <bit>
#include <string>

#include "shard/mesh_shape.hpp"

namespace meshrun::interp {

namespace {

constexpr std::size_t kMostPinned = std::size_t{1} << 24;  // numbers a device records

// A value a decision is made of: of a bool or integer dtype, or a float rounded to a whole.
bool discrete(const Eqn& eqn, const Value& v) {
  if (dtype_info(v.dtype).kind != DKind::kFloat) return true;
  const std::string& p = eqn.primitive;
  return p == "floor" || p == "ceil" || p == "round" || p == "sign";
}

// Passes every value on to `inner`, and pins as `follow` says (recording into `record`). Each
// device touches only its own entries of the vectors, from its own thread.
class Following final : public ValueObserver {
 public:
  Following(ValueObserver* inner, const RunPath* follow, RunPath* record, std::size_t slots)
      : inner_(inner), follow_(follow), record_(record), next_(slots, 0), kept_(slots, 0) {
    if (record_ != nullptr) record_->values.assign(slots, {});
  }
  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (inner_ != nullptr) inner_->seen(device, jx, eqn, k, v);
  }
  void pin(int device, const Eqn& eqn, std::vector<Value>& outs) override {
    const auto slot = static_cast<std::size_t>(device + 1);
    if (slot >= next_.size()) return;
    for (Value& v : outs) {
      if (!discrete(eqn, v)) continue;
      if (record_ != nullptr && kept_[slot] + v.t.size() <= kMostPinned) {
        kept_[slot] += v.t.size();
        record_->values[slot].push_back(v);
      }
      if (follow_ == nullptr || slot >= follow_->values.size()) continue;
      const auto& mine = follow_->values[slot];
      if (next_[slot] >= mine.size()) continue;
      const Value& was = mine[next_[slot]++];
      if (was.dtype == v.dtype && was.t.shape == v.t.shape) v = was;
    }
  }

 private:
  ValueObserver* inner_;
  const RunPath* follow_;
  RunPath* record_;
  std::vector<std::size_t> next_, kept_;
};

}  // namespace

std::uint64_t RunPath::digest_of() const {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const auto& device : values) {
    h = (h ^ device.size()) * 0x100000001B3ull;
    for (const Value& v : device)
      for (const float f : v.t.data) h = (h ^ std::bit_cast<std::uint32_t>(f)) * 0x100000001B3ull;
  }
  return h;
}

std::vector<Tensor> run_following(const LoadedProgram& lp, const MeshShape& mesh,
                                  const std::vector<TensorRef>& inputs, ValueObserver* observer,
                                  const RunPath* follow, RunPath* record) {
  std::size_t devices = 1;
  for (const auto& [axis, n] : mesh) devices *= static_cast<std::size_t>(n);
  Following f(observer, follow, record, devices + 1);
  std::vector<Tensor> out = run_observed(lp, mesh, inputs, f);
  if (record != nullptr) {
    record->digest = record->digest_of();
    record->sealed = true;
  }
  return out;
}

RunPath CaseMemo::path(const std::string& key, const std::function<void(RunPath&)>& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = paths_.find(key);
  if (it != paths_.end()) return it->second;
  RunPath p;
  record(p);  // throws as the run does: nothing kept
  return paths_.emplace(key, std::move(p)).first->second;
}

bool CaseMemo::decides(const std::string& key, const std::function<bool()>& compute) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = decides_.find(key);
  if (it != decides_.end()) return it->second;
  const bool d = compute();
  decides_.emplace(key, d);
  return d;
}

float redrawn(float old, std::mt19937_64& rng) {
  for (;;) {
    const std::uint32_t sign = (rng() & 1u) ? 0x80000000u : 0u;
    const std::uint32_t exponent = (rng() & 1u) ? 126u : 127u;
    const std::uint32_t bits =
        sign | (exponent << 23) | (static_cast<std::uint32_t>(rng()) & 0x7FFFFFu);
    if (bits != std::bit_cast<std::uint32_t>(old)) return std::bit_cast<float>(bits);
  }
}

}  // namespace meshrun::interp
