#include <algorithm>
#include <utility>
#include <vector>
#include <sstream>

#include "trace/trace.hpp"

namespace meshrun {

namespace {

// The mesh axes `spec` names, in mesh order: what a block varies over.
std::vector<std::string> varying_axes(const PartitionSpec& spec, const MeshShape& mesh) {
  std::vector<std::string> axes;
  for (const auto& [axis, size] : mesh)
    if (spec.split_dim(axis) >= 0) axes.push_back(axis);
  return axes;
}

// "{V:data}", "{V:(data,model)}" as JAX types a block that differs from device to device.
std::string varying_str(const std::vector<std::string>& axes) {
  if (axes.empty()) return "";
  if (axes.size() == 1) return "{V:" + axes[0] + "}";
  std::string s = "{V:(";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + axes[i];
  return s + ")}";
}

// "rows [2:4)" / "columns [2:4)" / "entries [2:4)" (and "rows [0:2), columns [4:8)" for a block
// split both ways) for device d's block; "dimension 1 [2:4)" for an array of rank 3 or more.
std::string block_range(const ArrayRecord& a, const Trace& t, int device) {
  std::string s;
  for (std::size_t dim = 0; dim < a.global.size(); ++dim) {
    if (dim >= a.spec.dims().size() || a.spec.dims()[dim].empty()) continue;
    const std::size_t len = a.blocks.at(static_cast<std::size_t>(device)).at(dim);
    const std::size_t lo = len * static_cast<std::size_t>(shard_index(a.spec, dim, t.mesh, device));
    const std::string what = a.global.size() > 2    ? "dimension " + std::to_string(dim)
                             : a.global.size() == 1 ? "entries"
                             : dim == 0             ? "rows"
                                                    : "columns";
    s += (s.empty() ? "" : ", ") + what + " [" + std::to_string(lo) + ":" +
         std::to_string(lo + len) + ")";
  }
  return s;
}

void arrays(std::ostringstream& out, const char* title, const std::vector<ArrayRecord>& list,
            const Trace& t) {
  out << title << ":\n";
  for (const ArrayRecord& a : list) {
    out << "  " << a.name << ": " << shape_str(a.global) << " " << a.spec.str() << "\n";
    const std::vector<std::string> varying = varying_axes(a.spec, t.mesh);
    const bool same = std::all_of(a.blocks.begin(), a.blocks.end(),
                                  [&](const Shape& s) { return s == a.global; });
    if (same && varying.empty()) {  // replicated: one line for all devices
      out << (t.devices == 1 ? "    device 0: "
                             : "    devices 0-" + std::to_string(t.devices - 1) + ": ")
          << shape_str(a.global) << "  whole array\n";
      continue;
    }
    for (int d = 0; d < t.devices; ++d) {
      out << "    device " << d << ": " << shape_str(a.blocks.at(static_cast<std::size_t>(d)))
          << varying_str(varying) << "  " << block_range(a, t, d) << "\n";
    }
  }
}

// A collective's axes: "'model'" or "('data', 'model')" as jaxpr prints axis_name; the group
// label is "model" or "(data,model)".
std::string axis_name(const std::string& label) {
  if (label.empty() || label[0] != '(') return "'" + label + "'";
  std::string s = "('";
  for (char ch : label.substr(1, label.size() - 2))
    s += ch == ',' ? std::string("', '") : std::string(1, ch);
  return s + "')";
}

// One collective as the trace shows it, without its sequence number.
std::string line(const CollectiveRecord& c) {
  return c.op + "[axis_name=" + axis_name(c.axis) + "] " + shape_str(c.in_shape) + "{V:" + c.axis +
         "} -> " + shape_str(c.out_shape) + (c.out_varying ? "{V:" + c.axis + "}" : "") + "  " +
         std::to_string(c.bytes()) + " bytes";
}

bool same_call(const CollectiveRecord& a, const CollectiveRecord& b) {
  return a.op == b.op && a.axis == b.axis && a.in_shape == b.in_shape &&
         a.out_shape == b.out_shape && a.out_varying == b.out_varying;
}

// The shortest run of collectives from `k` (at most kMaxPeriod of them) that the following ones
// repeat at least kMinRepeats times in all, covering kMinFolded collectives or more: {period,
// repeats}, or {0, 0}. A loop of collectives (scan, fori_loop, while) is shown so, its body once.
std::pair<std::size_t, std::size_t> repetition(const std::vector<CollectiveRecord>& list,
                                               std::size_t k) {
  constexpr std::size_t kMaxPeriod = 16, kMinRepeats = 4, kMinFolded = 16;
  for (std::size_t p = 1; p <= kMaxPeriod && k + p * kMinRepeats <= list.size(); ++p) {
    std::size_t j = k + p;
    while (j < list.size() && same_call(list[j], list[k + (j - k) % p])) ++j;
    const std::size_t repeats = (j - k) / p;
    if (repeats >= kMinRepeats && repeats * p >= kMinFolded) return {p, repeats};
  }
  return {0, 0};
}

}  // namespace

std::string format_trace(const Trace& t) {
  std::ostringstream out;
  out << "trace of " << t.program << "\n";
  out << "mesh: " << mesh_str(t.mesh) << "\n";
  arrays(out, "inputs", t.inputs, t);
  out << "collectives:\n";
  for (int d = 0; d < t.devices; ++d) {
    // A run that failed before it started has recorded no collectives at all.
    static const std::vector<CollectiveRecord> kNone;
    const auto i = static_cast<std::size_t>(d);
    const auto& list = i < t.collectives.size() ? t.collectives[i] : kNone;
    if (list.empty()) out << "  device " << d << ": none\n";
    for (std::size_t k = 0; k < list.size();) {
      // A loop's collectives: the same few, iteration after iteration, shown once with the
      // count (kMinRepeats iterations or more, kMinFolded collectives or more).
      const auto [period, repeats] = repetition(list, k);
      if (period > 0) {
        const std::size_t n = period * repeats;
        out << "  device " << d << ": #" << list[k].seq << "-#" << list[k + n - 1].seq << ", "
            << repeats << " times " << (period == 1 ? "this collective" : "these collectives")
            << " (a loop):\n";
        for (std::size_t j = 0; j < period; ++j) out << "    " << line(list[k + j]) << "\n";
        k += n;
        continue;
      }
      out << "  device " << d << ": #" << list[k].seq << " " << line(list[k]) << "\n";
      ++k;
    }
  }
  arrays(out, "outputs", t.outputs, t);
  return out.str();
}

}  // namespace meshrun
