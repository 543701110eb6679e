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
                     prim::unary_entries(), prim::shape_entries(), prim::slicing_entries(),
                     prim::reduction_entries(), prim::dot_entries(), prim::collective_entries()}));
  return *table;
}

}  // namespace

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

std::vector<std::string> primitive_names() {
  std::vector<std::string> names;
  for (const auto& [name, prim] : registry()) names.emplace_back(name);
  return names;
}

}  // namespace meshrun::interp
