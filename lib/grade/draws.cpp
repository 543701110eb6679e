#include "grade/draws.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "shard/mesh_shape.hpp"

namespace meshrun::interp {

namespace {

constexpr std::size_t kMostPinned = std::size_t{1} << 24;  // numbers a device records

// A value a decision is made of: of a bool or integer dtype, or a float rounded to a whole; not
// an int32 held as its bits (a float's, from bitcast_convert_type: int32_bits.hpp), which follows
// the inputs as the float does.
bool discrete(const Eqn& eqn, const Value& v) {
  if (v.bits32 || eqn.primitive == "bitcast_convert_type") return false;
  if (dtype_info(v.dtype).kind != DKind::kFloat) return true;
  const std::string& p = eqn.primitive;
  return p == "floor" || p == "ceil" || p == "round" || p == "sign";
}

// Passes every value on to `inner`, and pins as `follow` says (recording into `record`). Each
// device touches only its own entries of the vectors, from its own thread.
class Following final : public ValueObserver {
 public:
  Following(ValueObserver* inner, const RunPath* follow, RunPath* record, std::size_t slots,
            bool every_branch)
      : inner_(inner),
        follow_(follow),
        record_(record),
        next_(slots, 0),
        kept_(slots, 0),
        every_branch_(every_branch) {
    if (record_ != nullptr) record_->values.assign(slots, {});
  }
  bool every_branch() const override { return every_branch_; }
  void seen(int device, const Jaxpr& jx, const Eqn* eqn, std::size_t k, const Value& v) override {
    if (inner_ != nullptr) inner_->seen(device, jx, eqn, k, v);
  }
  void pin(int device, const Eqn& eqn, std::vector<Value>& outs) override {
    pin_following(device, eqn, outs);
    if (inner_ != nullptr) inner_->pin(device, eqn, outs);  // after: it sees the case's decisions
  }

 private:
  void pin_following(int device, const Eqn& eqn, std::vector<Value>& outs) {
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

  ValueObserver* inner_;
  const RunPath* follow_;
  RunPath* record_;
  std::vector<std::size_t> next_, kept_;
  bool every_branch_;
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
                                  const RunPath* follow, RunPath* record, Trace* trace,
                                  bool every_branch) {
  std::size_t devices = 1;
  for (const auto& [axis, n] : mesh) devices *= static_cast<std::size_t>(n);
  Following f(observer, follow, record, devices + 1, every_branch);
  std::vector<Tensor> out = run_observed(lp, mesh, inputs, f, trace);
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

std::string case_key(const MeshShape& mesh, const std::vector<TensorRef>& inputs,
                     const std::function<bool(std::size_t)>& drawn, const RunPath* path) {
  std::string key = mesh_str(mesh);
  if (path != nullptr) key += '/' + std::to_string(path->hash());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorRef& in = inputs[i];
    key += '|';
    for (const std::int64_t d : in.shape) key += std::to_string(d) + ',';
    if (!drawn(i)) key.append(reinterpret_cast<const char*>(in.data), in.size() * sizeof(float));
  }
  return key;
}

std::vector<std::size_t> block_elements(const Shape& shape, const PartitionSpec& spec,
                                        const MeshShape& mesh, const std::string& axis, int index) {
  const auto size_of = [&](const std::string& a) -> std::int64_t {
    for (const auto& [name, n] : mesh)
      if (name == a) return n;
    return 1;
  };
  const auto& dims = spec.dims();
  // The dimension split over `axis`, how many blocks it has, and the stride of the axis among
  // them.
  for (std::size_t dim = 0; dim < dims.size() && dim < shape.size(); ++dim) {
    const auto at = std::find(dims[dim].begin(), dims[dim].end(), axis);
    if (at == dims[dim].end()) continue;
    std::int64_t blocks = 1, stride = 1;
    for (const std::string& a : dims[dim]) blocks *= size_of(a);
    for (auto after = at + 1; after != dims[dim].end(); ++after) stride *= size_of(*after);
    const auto extent = static_cast<std::int64_t>(shape[dim]);
    if (extent <= 0 || extent % blocks != 0) return {};
    const std::int64_t per_block = extent / blocks, n = size_of(axis);
    std::int64_t inner = 1;  // elements per step of `dim`
    for (std::size_t d = dim + 1; d < shape.size(); ++d)
      inner *= static_cast<std::int64_t>(shape[d]);
    std::int64_t total = inner * extent;
    for (std::size_t d = 0; d < dim; ++d) total *= static_cast<std::int64_t>(shape[d]);
    std::vector<std::size_t> chosen;
    for (std::int64_t e = 0; e < total; ++e)
      if ((e / inner % extent / per_block / stride) % n == index)
        chosen.push_back(static_cast<std::size_t>(e));
    return chosen;
  }
  return {};
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
