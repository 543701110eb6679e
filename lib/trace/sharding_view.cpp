// --show-sharding: boxes like jax.debug.visualize_array_sharding. The array is cut into a grid:
// rows of boxes for the blocks along its first dimension (a matrix's rows), columns of boxes
// along its last (a matrix's columns, a vector's entries); each box names the devices that hold
// that block ("dev 0,4" when the block is replicated over an axis the spec does not name), with
// the row ranges to the right and the column ranges underneath. A replicated array is one box.
// An array of rank 3 or more is drawn as the grid of the dimensions its spec splits (grid_of).
#include <algorithm>
#include <optional>
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

// Which dimensions the boxes are cut along. A matrix: rows of boxes along dimension 0, columns
// along 1; a vector: columns along its entries. An array of rank 3 or more (which
// visualize_array_sharding does not draw): columns along the last dimension its spec splits, rows
// along the others it splits (row-major over them), each range named by its dimension.
struct Grid {
  std::vector<std::size_t> row_dims;
  std::optional<std::size_t> col_dim;
  bool named = false;  // rank >= 3: "dimension 1 [0:2)"
};

Grid grid_of(const ArrayRecord& a, const Trace& t) {
  const std::size_t rank = a.global.size();
  Grid g;
  if (rank <= 2) {
    if (rank == 2) g.row_dims.push_back(0);
    if (rank >= 1) g.col_dim = rank - 1;
    return g;
  }
  g.named = true;
  for (std::size_t d = 0; d < rank; ++d)
    if (shard_count(a.spec, d, t.mesh) > 1) g.row_dims.push_back(d);
  if (!g.row_dims.empty()) {
    g.col_dim = g.row_dims.back();
    g.row_dims.pop_back();
  }
  return g;
}

void draw(std::ostringstream& out, const ArrayRecord& a, const Trace& t) {
  out << a.name << ": " << shape_str(a.global) << " " << a.spec.str() << "\n";
  const Grid g = grid_of(a, t);
  int rows = 1;
  for (const std::size_t d : g.row_dims) rows *= shard_count(a.spec, d, t.mesh);
  const int cols = g.col_dim ? shard_count(a.spec, *g.col_dim, t.mesh) : 1;
  std::vector<std::string> label(static_cast<std::size_t>(rows * cols), "dev ");
  // Row-major, multiplied in size_t.
  auto cell_of = [cols](int r, int c) {
    return static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) +
           static_cast<std::size_t>(c);
  };
  std::vector<bool> first(label.size(), true);
  for (int d = 0; d < t.devices; ++d) {
    int r = 0;
    for (const std::size_t dim : g.row_dims)
      r = r * shard_count(a.spec, dim, t.mesh) + shard_index(a.spec, dim, t.mesh, d);
    const int c = g.col_dim ? shard_index(a.spec, *g.col_dim, t.mesh, d) : 0;
    const std::size_t cell = cell_of(r, c);
    if (!first[cell]) label[cell] += ',';
    label[cell] += std::to_string(d);
    first[cell] = false;
  }
  // " rows [0:4)", or " dimension 0 [0:4), dimension 1 [2:4)": row r's ranges, to its right.
  auto row_text = [&](int r) {
    if (!g.named) return " rows " + range(a.global[0], rows, r);
    std::string s;
    for (std::size_t k = g.row_dims.size(); k-- > 0;) {
      const std::size_t dim = g.row_dims[k];
      const int count = shard_count(a.spec, dim, t.mesh);
      s = (k > 0 ? ", dimension " : " dimension ") + std::to_string(dim) + " " +
          range(a.global[dim], count, r % count) + s;
      r /= count;
    }
    return s;
  };
  std::size_t longest = 0;
  for (const auto& l : label) longest = std::max(longest, l.size());
  std::vector<std::string> under;
  for (int c = 0; cols > 1 && c < cols; ++c) under.push_back(range(a.global[*g.col_dim], cols, c));
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
    out << (rows > 1 ? row_text(r) : "") << "\n";
    out << (r + 1 < rows ? line("├", "┼", "┤") : line("└", "┴", "┘"));
  }
  if (cols > 1) {
    std::string text = " ";
    for (const auto& u : under) text += pad(u, w) + " ";
    while (!text.empty() && text.back() == ' ') text.pop_back();
    const std::string what = g.named                ? "  dimension " + std::to_string(*g.col_dim)
                             : a.global.size() == 2 ? "  columns"
                                                    : "";
    out << text << what << "\n";
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
