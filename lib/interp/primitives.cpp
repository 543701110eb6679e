// The registry: every primitive of the sources' tables, looked up by name.
#include "interp/primitives.hpp"

#include <algorithm>
#include <map>

#include "interp/compiled.hpp"
#include "interp/prim_util.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

const std::map<std::string_view, Primitive, std::less<>>& registry() {
  static const auto* table = new std::map<std::string_view, Primitive, std::less<>>(
      make_registry({prim::elementwise_entries(), prim::elementwise_more_entries(),
                     prim::unary_entries(),       prim::shape_entries(),
                     prim::slicing_entries(),     prim::reduction_entries(),
                     prim::dot_entries(),         prim::collective_entries(),
                     prim::placement_entries(),   prim::holder_entries(),
                     prim::cumulative_entries(),  prim::sorting_entries(),
                     prim::window_entries(),      prim::float_math_entries(),
                     prim::bit_entries(),         prim::conv_entries(),
                     prim::indexing_entries(),    prim::linalg_entries(),
                     prim::uint32_entries(),      prim::random_entries()}));
  return *table;
}

}  // namespace

namespace prim {

namespace {

constexpr Primitive holder(const char* param, bool shard_map = false) {
  Primitive p{nullptr, nullptr};
  p.holds_jaxpr = param;
  p.shard_map = shard_map;
  return p;
}

constexpr Primitive control(Primitive::Control kind, const char* param,
                            const char* param2 = nullptr, bool list = false) {
  Primitive p = holder(param);
  p.control = kind;
  p.holds_jaxpr2 = param2;
  p.jaxpr_list = list;
  return p;
}

}  // namespace

// The primitives that hold a jaxpr: the evaluator runs it (jit and pjit as JAX's call, the custom
// derivatives' primal, jax.checkpoint's body, closed_call's and call's; shard_map on the mesh;
// scan, while and cond as loops and branches, ops/control_flow.hpp).
std::span<const Entry> holder_entries() {
  using C = Primitive::Control;
  static const Entry kEntries[] = {
      {"jit", holder("jaxpr")},
      {"pjit", holder("jaxpr")},
      {"custom_jvp_call", holder("call_jaxpr")},
      {"custom_vjp_call", holder("call_jaxpr")},
      {"checkpoint", holder("jaxpr")},
      {"remat2", holder("jaxpr")},
      {"closed_call", holder("call_jaxpr")},
      {"call", holder("call_jaxpr")},
      {"core_call", holder("call_jaxpr")},
      {"shard_map", holder("jaxpr", true)},
      {"scan", control(C::kScan, "jaxpr")},
      {"while", control(C::kWhile, "cond_jaxpr", "body_jaxpr")},
      {"cond", control(C::kCond, "branches", nullptr, true)},
  };
  return kEntries;
}

}  // namespace prim

std::map<std::string_view, Primitive, std::less<>> make_registry(
    std::initializer_list<std::span<const PrimitiveEntry>> tables) {
  std::map<std::string_view, Primitive, std::less<>> m;
  for (std::span<const PrimitiveEntry> entries : tables) {
    for (const PrimitiveEntry& e : entries) {
      if (!m.emplace(e.name, e.prim).second) {
        throw InternalError("internal error: primitive " + std::string(e.name) +
                            " is registered twice");
      }
    }
  }
  return m;
}

const Primitive* find_primitive(std::string_view name) {
  ++compile_counters().primitive_lookups;
  const auto& r = registry();
  const auto it = r.find(name);
  return it == r.end() ? nullptr : &it->second;
}

const char* nested_jaxpr_param(const std::string& primitive) {
  const Primitive* p = find_primitive(primitive);
  return p != nullptr ? p->holds_jaxpr : nullptr;
}

bool holds_jaxpr_param(const std::string& primitive, const std::string& key) {
  const Primitive* p = find_primitive(primitive);
  return p != nullptr && ((p->holds_jaxpr != nullptr && key == p->holds_jaxpr) ||
                          (p->holds_jaxpr2 != nullptr && key == p->holds_jaxpr2));
}

bool is_call(const std::string& primitive) {
  const Primitive* p = find_primitive(primitive);
  return p != nullptr && p->holds_jaxpr != nullptr && !p->shard_map &&
         p->control == Primitive::Control::kNone;
}

std::vector<std::string> primitive_names() {
  std::vector<std::string> names;
  for (const auto& [name, prim] : registry()) names.emplace_back(name);
  return names;
}

}  // namespace meshrun::interp
