// The registry: every primitive of the sources' tables, looked up by name.
#include "interp/primitives.hpp"

#include <algorithm>
#include <map>

#include "interp/prim_util.hpp"

namespace meshrun::interp {

namespace {

const std::map<std::string_view, Primitive, std::less<>>& registry() {
  static const auto* table = [] {
    auto* m = new std::map<std::string_view, Primitive, std::less<>>();
    for (auto entries :
         {prim::elementwise_entries(), prim::elementwise_more_entries(), prim::unary_entries(),
          prim::shape_entries(), prim::slicing_entries(), prim::reduction_entries(),
          prim::dot_entries(), prim::collective_entries()}) {
      for (const prim::Entry& e : entries) m->emplace(e.name, e.prim);
    }
    return m;
  }();
  return *table;
}

}  // namespace

const Primitive* find_primitive(std::string_view name) {
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
