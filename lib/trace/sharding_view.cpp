// --show-sharding: boxes like jax.debug.visualize_array_sharding. A row split stacks the devices'
// boxes vertically, a column split puts them side by side, a replicated array is one box.
#include <sstream>

#include "trace/trace.hpp"

namespace meshrun {

namespace {

std::string repeat(const std::string& s, std::size_t n) {
  std::string r;
  for (std::size_t i = 0; i < n; ++i) r += s;
  return r;
}

std::string pad(const std::string& s, std::size_t width) {
  const std::size_t left = (width - s.size()) / 2;
  return std::string(left, ' ') + s + std::string(width - s.size() - left, ' ');
}

std::string all_devices(int n) {
  std::string s = "dev ";
  for (int d = 0; d < n; ++d) s += (d ? "," : "") + std::to_string(d);
  return s;
}

void draw(std::ostringstream& out, const ArrayRecord& a, const std::string& axis, int n) {
  out << a.name << ": " << shape_str(a.global) << " " << a.spec.str() << "\n";
  const int dim = a.spec.split_dim(axis);
  if (dim < 0) {
    const std::string label = all_devices(n);
    const std::size_t w = label.size() + 4;
    out << "┌" << repeat("─", w) << "┐\n│" << pad(label, w) << "│\n└" << repeat("─", w) << "┘\n";
    return;
  }
  const auto part = a.global.at(static_cast<std::size_t>(dim)) / static_cast<std::size_t>(n);
  auto range = [&](int d) {
    return "[" + std::to_string(part * static_cast<std::size_t>(d)) + ":" +
           std::to_string(part * static_cast<std::size_t>(d + 1)) + ")";
  };
  if (dim == 0 && a.global.size() == 2) {  // rows of a matrix: one box per device, stacked
    const std::size_t w = 12;
    out << "┌" << repeat("─", w) << "┐\n";
    for (int d = 0; d < n; ++d) {
      out << "│" << pad("dev " + std::to_string(d), w) << "│ rows " << range(d) << "\n";
      out << (d + 1 < n ? "├" : "└") << repeat("─", w) << (d + 1 < n ? "┤\n" : "┘\n");
    }
    return;
  }
  // columns of a matrix, or entries of a vector: boxes side by side, the range under each
  std::size_t w = 7;
  for (int d = 0; d < n; ++d) w = std::max(w, range(d).size() + 2);
  std::string top = "┌", mid = "│", bottom = "└", under = " ";
  for (int d = 0; d < n; ++d) {
    top += repeat("─", w) + (d + 1 < n ? "┬" : "┐");
    mid += pad("dev " + std::to_string(d), w) + "│";
    bottom += repeat("─", w) + (d + 1 < n ? "┴" : "┘");
    under += pad(range(d), w) + " ";
  }
  while (!under.empty() && under.back() == ' ') under.pop_back();
  out << top << "\n" << mid << "\n" << bottom << "\n" << under << (dim == 1 ? "  columns\n" : "\n");
}

}  // namespace

std::string format_sharding(const Trace& t) {
  std::ostringstream out;
  out << "sharding of " << t.program << " on Mesh('" << t.axis << "': " << t.devices << ")\n";
  out << "inputs:\n";
  for (const ArrayRecord& a : t.inputs) draw(out, a, t.axis, t.devices);
  out << "outputs:\n";
  for (const ArrayRecord& a : t.outputs) draw(out, a, t.axis, t.devices);
  return out.str();
}

}  // namespace meshrun
