// Dimension expressions: a program file's symbolic sizes ("M", "8*M", "floordiv(N, 8)"), parsed
// once when the file is read and evaluated once the case's input shapes have bound the names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace meshrun::interp {

// Names bound to sizes (the export's `dims`, from the case's inputs).
using DimBindings = std::map<std::string, std::int64_t, std::less<>>;

class DimExpr {
 public:
  DimExpr() = default;  // the constant 0
  explicit DimExpr(std::int64_t constant);
  // Parses JAX's syntax: integers, names, + - *, unary -, parentheses, floordiv(a, b),
  // mod(a, b), max(a, b), min(a, b). Throws InputError(field, ...) on anything else, on more
  // than 256 characters or nesting deeper than 64.
  static DimExpr parse(const std::string& text, const std::string& field);

  bool is_constant() const { return node_ == nullptr; }
  std::int64_t constant() const { return constant_; }
  // `name` when the expression is that name alone, `c*name` / `name*c` (c > 0): sets name and
  // factor and returns true (what binding solves); false otherwise.
  bool solvable(std::string* name, std::int64_t* factor) const;
  // Every name it uses.
  void names(std::vector<std::string>& out) const;
  // The value under `dims`; throws InputError(field, ...) for an unbound name, a division by 0
  // or a result outside [0, 2^40].
  std::int64_t eval(const DimBindings& dims, const std::string& field) const;
  // The same for a position rather than a size (pad's negative widths, "- D"): a result in
  // [-2^40, 2^40].
  std::int64_t eval_signed(const DimBindings& dims, const std::string& field) const;
  // As written (constants as numbers).
  std::string str() const;

  struct Node;
  // The expression's tree (null for a constant), and an expression of one: for dims.cpp.
  const Node* node() const { return node_.get(); }
  static DimExpr from_node(std::shared_ptr<const Node> node);

 private:
  std::int64_t constant_ = 0;
  std::shared_ptr<const Node> node_;  // null: a constant
};

}  // namespace meshrun::interp
