#include "trace/structure.hpp"

#include <algorithm>

namespace meshrun {

namespace {

const ArrayRecord* find(const std::vector<ArrayRecord>& list, const std::string& name) {
  auto it = std::find_if(list.begin(), list.end(), [&](const ArrayRecord& a) { return a.name == name; });
  return it == list.end() ? nullptr : &*it;
}

// The block each of n devices must hold when `global` is split n ways along `dim`.
Shape split_shape(Shape global, int dim, int n) {
  auto& len = global.at(static_cast<std::size_t>(dim));
  len /= static_cast<std::size_t>(n);
  return global;
}

std::optional<std::string> check_blocks(const ArrayRecord* a, const std::string& name, int dim,
                                        const Trace& t) {
  if (!a) return name + " was not recorded";
  if (dim >= static_cast<int>(a->global.size())) return name + " has no dimension " + std::to_string(dim);
  const Shape want = split_shape(a->global, dim, t.devices);
  for (int d = 0; d < t.devices; ++d) {
    const Shape& got = a->blocks.at(static_cast<std::size_t>(d));
    if (got != want) {
      return "device " + std::to_string(d) + " held " + shape_str(got) + (got == a->global ? " (the full " + name + ")" : "") +
             ", expected " + shape_str(want);
    }
  }
  return std::nullopt;
}

std::string dims_text(const std::string& name, int dim) {
  return name + " split along dimension " + std::to_string(dim);
}

}  // namespace

StructuralRule input_split(const std::string& input, int dim) {
  return {"every device received only its block of " + dims_text(input, dim) + ", never the full " + input,
          [input, dim](const Trace& t) { return check_blocks(find(t.inputs, input), input, dim, t); }};
}

StructuralRule output_split(const std::string& output, int dim) {
  return {output + " left split: each device returned only its block (" + dims_text(output, dim) + ")",
          [output, dim](const Trace& t) { return check_blocks(find(t.outputs, output), output, dim, t); }};
}

StructuralRule reduced_over(const std::string& axis, std::vector<std::string> outputs) {
  std::string names;
  for (const auto& o : outputs) names += (names.empty() ? "" : ", ") + o;
  return {"every device reduced (psum/pmean) " + names + " over '" + axis + "'",
          [axis, outputs, names](const Trace& t) -> std::optional<std::string> {
            std::size_t need = 0;
            for (const auto& o : outputs) {
              const ArrayRecord* a = find(t.outputs, o);
              if (!a) return o + " was not recorded";
              need += shape_size(a->global);
            }
            for (int d = 0; d < t.devices; ++d) {
              std::size_t reduced = 0;
              for (const CollectiveRecord& c : t.collectives.at(static_cast<std::size_t>(d)))
                if ((c.op == "psum" || c.op == "pmean") && c.axis == axis) reduced += shape_size(c.in_shape);
              if (reduced < need) {
                return "device " + std::to_string(d) + " reduced " + std::to_string(reduced) +
                       " elements over '" + axis + "', fewer than the " + std::to_string(need) + " of " + names;
              }
            }
            return std::nullopt;
          }};
}

StructuralVerdict check_structure(const std::vector<StructuralRule>& rules, const Trace& trace) {
  StructuralVerdict v;
  for (const StructuralRule& r : rules) {
    if (auto why = r.check(trace)) {
      v.failures.push_back(r.description + ": " + *why);
    } else {
      v.passed.push_back(r.description);
    }
  }
  return v;
}

}  // namespace meshrun
