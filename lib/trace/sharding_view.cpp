// --show-sharding: boxes like jax.debug.visualize_array_sharding. The array is cut into a grid:
// rows of boxes for the blocks along its first dimension (a matrix's rows), columns of boxes
// along its last (a matrix's columns, a vector's entries); each box names the devices that hold
// that block ("dev 0,4" when the block is replicated over an axis the spec does not name), with
// the row ranges to the right and the column ranges underneath. A replicated array is one box.
#include <algorithm>
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

// "[2:4)": block `index` of a dimension of `len` entries cut into `count` blocks.
std::string range(std::size_t len, int count, int index) {
  const std::size_t part = len / static_cast<std::size_t>(count);
  std::string s = "[";  // appended piece by piece: GCC 12's -Wrestrict misfires on "[" + to_string
  s += std::to_string(part * static_cast<std::size_t>(index));
  s += ":";
  s += std::to_string(part * static_cast<std::size_t>(index + 1));
  return s + ")";
}

void draw(std::ostringstream& out, const ArrayRecord& a, const Trace& t) {
  out << a.name << ": " << shape_str(a.global) << " " << a.spec.str() << "\n";
  const std::size_t rank = a.global.size();
  const bool matrix = rank == 2;
  // The grid: rows along dimension 0 of a matrix, columns along the last dimension.
  const int rows = matrix ? shard_count(a.spec, 0, t.mesh) : 1;
  const int cols = rank >= 1 ? shard_count(a.spec, rank - 1, t.mesh) : 1;
  std::vector<std::string> label(static_cast<std::size_t>(rows * cols), "dev ");
  // Row-major, multiplied in size_t.
  auto cell_of = [cols](int r, int c) {
    return static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) +
           static_cast<std::size_t>(c);
  };
  std::vector<bool> first(label.size(), true);
  for (int d = 0; d < t.devices; ++d) {
    const int r = matrix ? shard_index(a.spec, 0, t.mesh, d) : 0;
    const int c = rank >= 1 ? shard_index(a.spec, rank - 1, t.mesh, d) : 0;
    const std::size_t cell = cell_of(r, c);
    if (!first[cell]) label[cell] += ',';
    label[cell] += std::to_string(d);
    first[cell] = false;
  }
  std::size_t longest = 0;
  for (const auto& l : label) longest = std::max(longest, l.size());
  std::vector<std::string> under;
  for (int c = 0; cols > 1 && c < cols; ++c) under.push_back(range(a.global.back(), cols, c));
  std::size_t w = longest + 4;  // one box: its label with room
  if (cols > 1) {
    w = std::max<std::size_t>(7, longest + 2);
    for (const auto& u : under) w = std::max(w, u.size() + 2);
  } else if (rows > 1) {
    w = std::max<std::size_t>(12, longest + 4);
  }
  auto line = [&](const char* left, const char* mid, const char* right) {
    std::string s = left;
    for (int c = 0; c < cols; ++c) s += repeat("─", w) + (c + 1 < cols ? mid : right);
    return s + "\n";
  };
  out << line("┌", "┬", "┐");
  for (int r = 0; r < rows; ++r) {
    out << "│";
    for (int c = 0; c < cols; ++c) out << pad(label[cell_of(r, c)], w) << "│";
    out << (rows > 1 ? " rows " + range(a.global[0], rows, r) : "") << "\n";
    out << (r + 1 < rows ? line("├", "┼", "┤") : line("└", "┴", "┘"));
  }
  if (cols > 1) {
    std::string text = " ";
    for (const auto& u : under) text += pad(u, w) + " ";
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << (matrix ? "  columns\n" : "\n");
  }
}

}  // namespace

std::string format_sharding(const Trace& t) {
  std::ostringstream out;
  out << "sharding of " << t.program << " on " << mesh_str(t.mesh) << "\n";
  out << "inputs:\n";
  for (const ArrayRecord& a : t.inputs) draw(out, a, t);
  out << "outputs:\n";
  for (const ArrayRecord& a : t.outputs) draw(out, a, t);
  return out.str();
}

}  // namespace meshrun
