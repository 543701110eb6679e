#include "trace/structure.hpp"

#include <algorithm>
#include <utility>

#include "collectives/communicator.hpp"

namespace meshrun {

namespace {

// Every record of `name` (a program of several shard_maps may take x in more than one).
std::vector<const ArrayRecord*> all_of(const std::vector<ArrayRecord>& list,
                                       const std::string& name) {
  std::vector<const ArrayRecord*> out;
  for (const ArrayRecord& a : list)
    if (a.name == name) out.push_back(&a);
  return out;
}

const ArrayRecord* find(const std::vector<ArrayRecord>& list, const std::string& name) {
  auto it =
      std::find_if(list.begin(), list.end(), [&](const ArrayRecord& a) { return a.name == name; });
  return it == list.end() ? nullptr : &*it;
}

// The block each device must hold when `global` is split along `dim` over `axis` of the mesh
// ("": over all its devices) -- from the rule, never from the spec the program declared.
Shape split_shape(Shape global, int dim, const std::string& axis, const Trace& t) {
  const int pos = mesh_axis_position(t.mesh, axis);
  const int n = axis.empty() || pos < 0 ? t.devices : t.mesh[static_cast<std::size_t>(pos)].second;
  auto& len = global.at(static_cast<std::size_t>(dim));
  len /= static_cast<std::size_t>(n);
  return global;
}

std::optional<std::string> check_blocks(const ArrayRecord* a, const std::string& name, int dim,
                                        const std::string& axis, const Trace& t) {
  if (!a) return name + " was not recorded";
  if (dim >= static_cast<int>(a->global.size()))
    return name + " has no dimension " + std::to_string(dim);
  const Shape want = split_shape(a->global, dim, axis, t);
  for (int d = 0; d < t.devices; ++d) {
    const Shape& got = a->blocks.at(static_cast<std::size_t>(d));
    if (got != want) {
      return "device " + std::to_string(d) + " held " + shape_str(got) +
             (got == a->global ? " (the full " + name + ")" : "") + ", expected " + shape_str(want);
    }
  }
  return std::nullopt;
}

bool is_reduction(const CollectiveRecord& c) { return c.op == "psum" || c.op == "pmean"; }

// Whether a collective over `label` ("data", "(data,model)") reduces over `axis`.
bool over_axis(const std::string& label, const std::string& axis) {
  if (label == axis) return true;
  if (label.size() < 2 || label.front() != '(') return false;
  const std::string inner = "," + label.substr(1, label.size() - 2) + ",";
  return inner.find("," + axis + ",") != std::string::npos;
}

// Elements device d reduced over `axis` alone, or (`tuples`) over any tuple of axes holding it:
// a pmean over ('data', 'model') reduces across the devices of 'data' too.
std::size_t reduced_elements(const Trace& t, int d, const std::string& axis, bool tuples) {
  std::size_t reduced = 0;
  for (const CollectiveRecord& c : t.collectives.at(static_cast<std::size_t>(d)))
    if (c.moves && is_reduction(c) && (tuples ? over_axis(c.axis, axis) : c.axis == axis))
      reduced += shape_size(c.in_shape);
  return reduced;
}

std::string dims_text(const std::string& name, int dim, const std::string& axis) {
  return name + " split along dimension " + std::to_string(dim) +
         (axis.empty() ? "" : " over '" + axis + "'");
}

}  // namespace

// Every record of `name` and whether each is split as asked. A record of a partial shard_map not
// manual over `axis` is not judged: its body sees that axis whole (w1 handed P() to a body manual
// over 'data' only), and the shard_map nested in it that splits the array over `axis` runs on
// each device inside that body, where the rules by values judge what the device holds. Such
// records alone: nothing the trace can say.
std::optional<std::string> blocks_of_records(const std::vector<ArrayRecord>& list,
                                             const std::string& name, int dim,
                                             const std::string& axis, const Trace& t) {
  const std::vector<const ArrayRecord*> records = all_of(list, name);
  for (const ArrayRecord* a : records) {
    const auto& m = a->manual_axes;
    if (!axis.empty() && !m.empty() && std::find(m.begin(), m.end(), axis) == m.end()) continue;
    if (auto why = check_blocks(a, name, dim, axis, t)) return why;
  }
  if (records.empty()) return check_blocks(nullptr, name, dim, axis, t);  // not recorded
  return std::nullopt;
}

StructuralRule input_split(const std::string& input, int dim, const std::string& axis) {
  return {"every device received only its block of " + dims_text(input, dim, axis) +
              ", never the full " + input,
          [input, dim, axis](const Trace& t) -> std::optional<std::string> {
            return blocks_of_records(t.inputs, input, dim, axis, t);
          }};
}

StructuralRule output_split(const std::string& output, int dim, const std::string& axis) {
  return {output + " left split: each device returned only its block (" +
              dims_text(output, dim, axis) + ")",
          [output, dim, axis](const Trace& t) -> std::optional<std::string> {
            return blocks_of_records(t.outputs, output, dim, axis, t);
          }};
}

// The devices over the axes of the mesh a record's shard_map is not manual over (1 when it is
// manual over every axis): a partial shard_map's block is whole over those, each device's share
// of it theirs to split -- the shard_map nested in it does, one block a device.
std::size_t automatic_devices(const ArrayRecord& a, const Trace& t) {
  std::size_t n = 1;
  if (a.manual_axes.empty()) return n;
  for (const auto& [axis, size] : t.mesh)
    if (std::find(a.manual_axes.begin(), a.manual_axes.end(), axis) == a.manual_axes.end())
      n *= static_cast<std::size_t>(size);
  return n;
}

ElementCount output_blocks(std::vector<std::string> arrays) {
  return [arrays = std::move(arrays)](const Trace& t, int d) {
    std::size_t n = 0;
    for (const auto& name : arrays)
      if (const ArrayRecord* a = find(t.outputs, name)) {
        const std::size_t share = automatic_devices(*a, t);
        n += (shape_size(a->blocks.at(static_cast<std::size_t>(d))) + share - 1) / share;
      }
    return n;
  };
}

namespace {
// reduced_over and reduced_exactly_over: device d's elements over `axis` against `need`.
StructuralRule reduction_rule(const std::string& axis, std::vector<std::string> outputs,
                              const std::string& what, ElementCount need, bool exact) {
  std::string description =
      exact ? "every device reduced (psum/pmean) exactly " + what + " over '" + axis +
                  "', and nothing else over it"
            : "every device reduced (psum/pmean) " + what + " over '" + axis + "'";
  return {std::move(description),
          [axis, outputs = std::move(outputs), what, need = std::move(need),
           exact](const Trace& t) -> std::optional<std::string> {
            for (const auto& o : outputs)
              if (!find(t.outputs, o)) return o + " was not recorded";
            for (int d = 0; d < t.devices; ++d) {
              const std::size_t reduced = reduced_elements(t, d, axis, !exact), want = need(t, d);
              if (exact ? reduced != want : reduced < want) {
                return "device " + std::to_string(d) + " reduced " + std::to_string(reduced) +
                       " elements over '" + axis + "', " + (reduced < want ? "fewer" : "more") +
                       " than the " + std::to_string(want) + " of " + what;
              }
            }
            return std::nullopt;
          }};
}
}  // namespace

StructuralRule reduced_over(const std::string& axis, std::vector<std::string> outputs) {
  std::string names;
  for (const auto& o : outputs) names += (names.empty() ? "" : ", ") + o;
  ElementCount need = output_blocks(outputs);
  return reduction_rule(axis, std::move(outputs), names, std::move(need), false);
}

StructuralRule combined_over(const std::string& axis, std::vector<std::string> outputs) {
  std::string names;
  for (const auto& o : outputs) names += (names.empty() ? "" : ", ") + o;
  ElementCount need = output_blocks(outputs);
  return {"every device combined " + (names.empty() ? std::string("values") : names) + " across '" +
              axis +
              "' (by any collective over it: psum, pmean, a scatter and "
              "gather, a ring of ppermutes)",
          [axis, names, need = std::move(need)](const Trace& t) -> std::optional<std::string> {
            const int pos = mesh_axis_position(t.mesh, axis);
            if (pos >= 0 && t.mesh[static_cast<std::size_t>(pos)].second <= 1) return std::nullopt;
            for (int d = 0; d < t.devices; ++d) {
              std::size_t sent = 0;
              for (const CollectiveRecord& c : t.collectives.at(static_cast<std::size_t>(d)))
                if (c.moves && over_axis(c.axis, axis)) sent += shape_size(c.in_shape);
              const std::size_t want = std::max<std::size_t>(need(t, d), 1);
              if (sent < want) {
                return "device " + std::to_string(d) + " passed " + std::to_string(sent) +
                       " elements to collectives over '" + axis + "', fewer than the " +
                       std::to_string(want) + (names.empty() ? "" : " of " + names);
              }
            }
            return std::nullopt;
          }};
}

StructuralRule reduced_exactly_over(const std::string& axis, const std::string& what,
                                    ElementCount need) {
  return reduction_rule(axis, {}, what, std::move(need), true);
}

StructuralRule only_reductions_over(std::vector<std::string> axes, const std::string& why) {
  std::string names;
  for (const auto& a : axes) names += (names.empty() ? "'" : " or '") + a + "'";
  return {why + ": every collective was a psum or pmean over " + names + " alone",
          [axes = std::move(axes)](const Trace& t) -> std::optional<std::string> {
            for (int d = 0; d < t.devices; ++d) {
              for (const CollectiveRecord& c : t.collectives.at(static_cast<std::size_t>(d))) {
                if (is_reduction(c) && std::find(axes.begin(), axes.end(), c.axis) != axes.end())
                  continue;
                return "device " + std::to_string(d) + " called " + collective_label(c.op, c.seq) +
                       " over '" + c.axis + "'";
              }
            }
            return std::nullopt;
          }};
}

StructuralRule output_replicated(const std::string& output) {
  return {output + " replicated: every device returned the whole " + output + ", the same on each",
          [output](const Trace& t) -> std::optional<std::string> {
            const ArrayRecord* a = find(t.outputs, output);
            if (!a) return output + " was not recorded";
            for (int d = 0; d < t.devices; ++d) {
              const Shape& got = a->blocks.at(static_cast<std::size_t>(d));
              if (got != a->global) {
                return "device " + std::to_string(d) + " returned " + shape_str(got) +
                       ", a block of the " + shape_str(a->global) + " " + output;
              }
            }
            if (!a->replicas_differ.empty()) {
              return a->replicas_differ + " of " + output +
                     " (check_vma=False let it leave the shard_map; the result is device 0's)";
            }
            return std::nullopt;
          }};
}

StructuralRule replicas_agree() {
  return {
      "replicas agree: every value a shard_map returns as replicated is the same on every "
      "device holding a copy",
      [](const Trace& t) -> std::optional<std::string> {
        if (t.replicas_differ.empty()) return std::nullopt;
        return t.replicas_differ +
               " (check_vma=False let it leave the shard_map; JAX returns device 0's copy, "
               "the others are lost)";
      }};
}

StructuralVerdict check_structure(const std::vector<StructuralRule>& rules, const Trace& trace,
                                  const std::vector<TensorRef>& inputs,
                                  const std::vector<Tensor>& outputs) {
  Trace graded = trace;
  graded.profile = nullptr;
  graded.input_values = &inputs;
  graded.output_values = &outputs;
  return check_structure(rules, graded);
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
