#include <algorithm>
#include <sstream>

#include "trace/trace.hpp"

namespace meshrun {

namespace {

// "f32[2,2]{V:data}" for a block that differs from device to device, as JAX types them.
std::string block_type(const ArrayRecord& a, const std::string& axis, int device) {
  std::string s = shape_str(a.blocks.at(static_cast<std::size_t>(device)));
  return a.spec.split_dim(axis) >= 0 ? s + "{V:" + axis + "}" : s;
}

// "rows [2:4)" / "columns [2:4)" / "all" for device d's block.
std::string block_range(const ArrayRecord& a, const std::string& axis, int device) {
  const int dim = a.spec.split_dim(axis);
  if (dim < 0) return "whole array";
  const std::size_t len = a.blocks.at(static_cast<std::size_t>(device)).at(static_cast<std::size_t>(dim));
  const std::size_t lo = len * static_cast<std::size_t>(device);
  const char* what = a.global.size() == 1 ? "entries" : dim == 0 ? "rows" : "columns";
  return std::string(what) + " [" + std::to_string(lo) + ":" +
         std::to_string(lo + len) + ")";
}

void arrays(std::ostringstream& out, const char* title, const std::vector<ArrayRecord>& list,
            const Trace& t) {
  out << title << ":\n";
  for (const ArrayRecord& a : list) {
    out << "  " << a.name << ": " << shape_str(a.global) << " " << a.spec.str() << "\n";
    const bool same = std::all_of(a.blocks.begin(), a.blocks.end(), [&](const Shape& s) { return s == a.global; });
    if (same && a.spec.split_dim(t.axis) < 0) {  // replicated: one line for all devices
      out << (t.devices == 1 ? "    device 0: " : "    devices 0-" + std::to_string(t.devices - 1) + ": ")
          << shape_str(a.global) << "  whole array\n";
      continue;
    }
    for (int d = 0; d < t.devices; ++d) {
      out << "    device " << d << ": " << block_type(a, t.axis, d) << "  "
          << block_range(a, t.axis, d) << "\n";
    }
  }
}

}  // namespace

std::string format_trace(const Trace& t) {
  std::ostringstream out;
  out << "trace of " << t.program << "\n";
  out << "mesh: Mesh('" << t.axis << "': " << t.devices << ")\n";
  arrays(out, "inputs", t.inputs, t);
  out << "collectives:\n";
  for (int d = 0; d < t.devices; ++d) {
    // A run that failed before it started has recorded no collectives at all.
    static const std::vector<CollectiveRecord> kNone;
    const auto i = static_cast<std::size_t>(d);
    const auto& list = i < t.collectives.size() ? t.collectives[i] : kNone;
    if (list.empty()) out << "  device " << d << ": none\n";
    for (const CollectiveRecord& c : list) {
      out << "  device " << d << ": #" << c.seq << " " << c.op << "[axis_name='" << c.axis << "'] "
          << shape_str(c.in_shape) << "{V:" << c.axis << "} -> " << shape_str(c.out_shape)
          << (c.out_varying ? "{V:" + c.axis + "}" : "") << "  " << c.bytes() << " bytes\n";
    }
  }
  arrays(out, "outputs", t.outputs, t);
  return out.str();
}

}  // namespace meshrun
