#include "grade/every_device.hpp"

#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "grade/draws.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

// Which devices computed a value equal to `want`, within the tolerance. Each device writes its
// own flag from its own thread.
class Holds final : public ValueObserver {
 public:
  Holds(const Tensor& want, int devices) : want_(want), held_(static_cast<std::size_t>(devices)) {}
  void seen(int device, const Jaxpr&, const Eqn*, std::size_t, const Value& v) override {
    if (device < 0 || static_cast<std::size_t>(device) >= held_.size()) return;
    std::atomic<bool>& h = held_[static_cast<std::size_t>(device)];
    if (h.load(std::memory_order_relaxed) || v.t.size() < want_.size()) return;
    if (dtype_info(v.dtype).kind != DKind::kFloat) return;
    const auto close = [&](std::size_t at, std::size_t i) {
      const float w = want_.data[i], g = v.t.data[at + i];
      return std::fabs(g - w) <= 1e-5f * (1.0f + std::fabs(w));
    };
    // The whole output as a run of the value's numbers (a padded buffer sliced outside holds it).
    for (std::size_t at = 0; at + want_.size() <= v.t.size(); ++at) {
      std::size_t i = 0;
      while (i < want_.size() && close(at, i)) ++i;
      if (i == want_.size()) {
        h.store(true, std::memory_order_relaxed);
        return;
      }
    }
  }
  int first_without() const {
    for (std::size_t d = 0; d < held_.size(); ++d)
      if (!held_[d].load(std::memory_order_relaxed)) return static_cast<int>(d);
    return -1;
  }

 private:
  const Tensor& want_;
  std::vector<std::atomic<bool>> held_;
};

}  // namespace

StructuralRule every_device_holds(const LoadedProgram& lp, const std::string& output) {
  return {"every device holds the whole " + output + " (by values)",
          [&lp, output](const Trace& t) -> std::optional<std::string> {
            if (t.input_values == nullptr || t.output_values == nullptr) return std::nullopt;
            std::size_t o = 0;
            while (o < lp.def.outputs.size() && lp.def.outputs[o].name != output) ++o;
            if (o >= lp.def.outputs.size() || o >= t.output_values->size()) return std::nullopt;
            const Tensor& want = t.output_values->at(o);
            int devices = 1;
            for (const auto& [axis, n] : t.mesh) devices *= n;
            if (devices <= 1 || want.size() == 0) return std::nullopt;
            Holds holds(want, devices);
            try {
              run_following(lp, t.mesh, *t.input_values, &holds, nullptr);
            } catch (const InternalError&) {
              throw;
            } catch (const std::exception&) {
              return std::nullopt;  // the other rules judge a program that cannot run again
            }
            const int d = holds.first_without();
            if (d < 0) return std::nullopt;
            return "device " + std::to_string(d) + " never holds the whole " + output +
                   " the program returns: an all-reduce leaves the sum on every device (chunks " +
                   "a reduce-scatter left, stitched together outside, are not that)";
          }};
}

}  // namespace meshrun::interp
