#include "grade/draws.hpp"

#include <bit>

#include "shard/mesh_shape.hpp"

namespace meshrun::interp {

namespace {

// Passes every value on to `inner`, and steers as `follow` says (recording into `record`). Each
// device touches only its own entries of the vectors, from its own thread.
class Following final : public ValueObserver {
 public:
  Following(ValueObserver* inner, const RunPath* follow, RunPath* record, std::size_t slots)
      : inner_(inner), follow_(follow), record_(record), next_(slots, 0) {
    if (record_ != nullptr) record_->choices.assign(slots, {});
  }
  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (inner_ != nullptr) inner_->seen(device, jx, eqn, k, v);
  }
  std::int64_t steer(int device, const Eqn& eqn, std::int64_t computed) override {
    (void)eqn;
    const auto slot = static_cast<std::size_t>(device + 1);
    if (slot >= next_.size()) return computed;
    if (record_ != nullptr) record_->choices[slot].push_back(computed);
    if (follow_ == nullptr || slot >= follow_->choices.size()) return computed;
    const auto& mine = follow_->choices[slot];
    return next_[slot] < mine.size() ? mine[next_[slot]++] : computed;
  }

 private:
  ValueObserver* inner_;
  const RunPath* follow_;
  RunPath* record_;
  std::vector<std::size_t> next_;
};

}  // namespace

bool RunPath::empty() const {
  for (const auto& c : choices)
    if (!c.empty()) return false;
  return true;
}

void run_following(const LoadedProgram& lp, const MeshShape& mesh,
                   const std::vector<TensorRef>& inputs, ValueObserver* observer,
                   const RunPath* follow, RunPath* record) {
  std::size_t devices = 1;
  for (const auto& [axis, n] : mesh) devices *= static_cast<std::size_t>(n);
  Following f(observer, follow, record, devices + 1);
  run_observed(lp, mesh, inputs, f);
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
