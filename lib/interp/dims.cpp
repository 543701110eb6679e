// DimExpr: a recursive-descent parser for JAX's dimension expressions and their evaluation.
// Constant subexpressions are folded while parsing, so "2*3" is the constant 6 and is_constant().
#include "interp/dims.hpp"

#include <cctype>
#include <limits>
#include <utility>

#include "support/errors.hpp"

namespace meshrun::interp {

namespace {

constexpr std::size_t kMaxChars = 256;
constexpr int kMaxDepth = 64;
constexpr std::int64_t kMaxValue = std::int64_t{1} << 40;

}  // namespace

struct DimExpr::Node {
  enum Kind { kName, kAdd, kSub, kMul, kNeg, kFloorDiv, kMod, kMax, kMin };
  Kind kind = kName;
  std::string name;  // kName
  DimExpr a, b;      // operands (kNeg: a only)
};

namespace {

using Node = DimExpr::Node;

// Python's floor division and modulo (the sign of the divisor), as JAX's floordiv and mod.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }

// a op b, or false on overflow or a division by zero.
bool apply(Node::Kind kind, std::int64_t a, std::int64_t b, std::int64_t* out) {
  switch (kind) {
    case Node::kAdd:
      return !__builtin_add_overflow(a, b, out);
    case Node::kSub:
      return !__builtin_sub_overflow(a, b, out);
    case Node::kMul:
      return !__builtin_mul_overflow(a, b, out);
    case Node::kNeg:
      return !__builtin_sub_overflow(std::int64_t{0}, a, out);
    case Node::kFloorDiv:
      if (b == 0 || (a == std::numeric_limits<std::int64_t>::min() && b == -1)) return false;
      *out = floor_div(a, b);
      return true;
    case Node::kMod:
      if (b == 0 || (a == std::numeric_limits<std::int64_t>::min() && b == -1)) return false;
      *out = floor_mod(a, b);
      return true;
    case Node::kMax:
      *out = a > b ? a : b;
      return true;
    case Node::kMin:
      *out = a < b ? a : b;
      return true;
    case Node::kName:
      break;
  }
  return false;
}

const char* fn_name(Node::Kind k) {
  switch (k) {
    case Node::kFloorDiv:
      return "floordiv";
    case Node::kMod:
      return "mod";
    case Node::kMax:
      return "max";
    case Node::kMin:
      return "min";
    default:
      return "";
  }
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& field) : s_(text), field_(field) {}

  DimExpr parse() {
    skip();
    if (pos_ == s_.size()) fail("empty dimension expression");
    DimExpr e = expr(0);
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(field_, what + " in dimension expression '" + s_ + "'");
  }
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) {
      if (pos_ >= s_.size()) fail(std::string("expected '") + c + "' at the end");
      fail(std::string("expected '") + c + "', got '" + s_[pos_] + "'");
    }
  }
  void deeper(int depth) const {
    if (depth > kMaxDepth) fail("nesting deeper than 64");
  }

  DimExpr expr(int depth) {
    deeper(depth);
    DimExpr e = term(depth + 1);
    for (;;) {
      if (eat('+')) {
        e = make(Node::kAdd, std::move(e), term(depth + 1));
      } else if (eat('-')) {
        e = make(Node::kSub, std::move(e), term(depth + 1));
      } else {
        return e;
      }
    }
  }
  DimExpr term(int depth) {
    deeper(depth);
    DimExpr e = unary(depth + 1);
    while (eat('*')) e = make(Node::kMul, std::move(e), unary(depth + 1));
    return e;
  }
  DimExpr unary(int depth) {
    deeper(depth);
    if (eat('-')) return make(Node::kNeg, unary(depth + 1), DimExpr());
    return primary(depth + 1);
  }
  DimExpr primary(int depth) {
    deeper(depth);
    skip();
    if (pos_ >= s_.size()) fail("unexpected end");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      DimExpr e = expr(depth + 1);
      expect(')');
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        v = v * 10 + (s_[pos_++] - '0');
        if (v > kMaxValue) fail("integer beyond 2^40");
      }
      return DimExpr(v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
      std::string name = s_.substr(start, pos_ - start);
      skip();
      if (pos_ < s_.size() && s_[pos_] == '(') {
        Node::Kind kind;
        if (name == "floordiv") {
          kind = Node::kFloorDiv;
        } else if (name == "mod") {
          kind = Node::kMod;
        } else if (name == "max") {
          kind = Node::kMax;
        } else if (name == "min") {
          kind = Node::kMin;
        } else {
          fail("unknown function '" + name + "'");
        }
        ++pos_;
        DimExpr a = expr(depth + 1);
        expect(',');
        DimExpr b = expr(depth + 1);
        expect(')');
        return make(kind, std::move(a), std::move(b));
      }
      auto n = std::make_shared<Node>();
      n->kind = Node::kName;
      n->name = std::move(name);
      return DimExpr::from_node(std::move(n));
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  // Folds constants where that neither overflows nor divides by zero (eval reports those).
  static DimExpr make(Node::Kind kind, DimExpr a, DimExpr b) {
    std::int64_t v = 0;
    if (a.is_constant() && b.is_constant() && apply(kind, a.constant(), b.constant(), &v))
      return DimExpr(v);
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->a = std::move(a);
    n->b = std::move(b);
    return DimExpr::from_node(std::move(n));
  }

  const std::string& s_;
  const std::string& field_;
  std::size_t pos_ = 0;
};

// Evaluation without the range check of the result (intermediate values may be negative).
std::int64_t eval_raw(const DimExpr& e, const Node* n, const DimBindings& dims,
                      const std::string& field, const std::string& whole) {
  if (n == nullptr) return e.constant();
  if (n->kind == Node::kName) {
    const auto it = dims.find(n->name);
    if (it == dims.end()) {
      throw InputError(field, "dimension variable " + n->name + " is not bound in '" + whole + "'");
    }
    return it->second;
  }
  const std::int64_t a = eval_raw(n->a, n->a.node(), dims, field, whole);
  const std::int64_t b =
      n->kind == Node::kNeg ? 0 : eval_raw(n->b, n->b.node(), dims, field, whole);
  std::int64_t v = 0;
  if (!apply(n->kind, a, b, &v)) {
    if ((n->kind == Node::kFloorDiv || n->kind == Node::kMod) && b == 0)
      throw InputError(field, "division by zero in dimension expression '" + whole + "'");
    throw InputError(field, "overflow in dimension expression '" + whole + "'");
  }
  return v;
}

void str_into(const DimExpr& e, std::string& out, int parent_prec);

// Precedence: 1 for + -, 2 for *, 3 for unary -, 4 for atoms and calls.
int prec(const Node* n) {
  if (n == nullptr) return 4;
  switch (n->kind) {
    case Node::kAdd:
    case Node::kSub:
      return 1;
    case Node::kMul:
      return 2;
    case Node::kNeg:
      return 3;
    default:
      return 4;
  }
}

void str_into(const DimExpr& e, std::string& out, int parent_prec) {
  const Node* n = e.node();
  const bool paren = prec(n) < parent_prec || (n == nullptr && e.constant() < 0 && parent_prec > 1);
  if (paren) out += '(';
  if (n == nullptr) {
    out += std::to_string(e.constant());
  } else {
    switch (n->kind) {
      case Node::kName:
        out += n->name;
        break;
      case Node::kAdd:
      case Node::kSub:
        str_into(n->a, out, 1);
        out += n->kind == Node::kAdd ? " + " : " - ";
        str_into(n->b, out, 2);  // a - (b + c) keeps its parentheses
        break;
      case Node::kMul:
        str_into(n->a, out, 2);
        out += '*';
        str_into(n->b, out, 3);
        break;
      case Node::kNeg:
        out += '-';
        str_into(n->a, out, 3);
        break;
      default:
        out += fn_name(n->kind);
        out += '(';
        str_into(n->a, out, 0);
        out += ", ";
        str_into(n->b, out, 0);
        out += ')';
        break;
    }
  }
  if (paren) out += ')';
}

}  // namespace

DimExpr::DimExpr(std::int64_t constant) : constant_(constant) {}

DimExpr DimExpr::from_node(std::shared_ptr<const Node> node) {
  DimExpr e;
  e.node_ = std::move(node);
  return e;
}

DimExpr DimExpr::parse(const std::string& text, const std::string& field) {
  if (text.size() > kMaxChars) {
    throw InputError(field, "dimension expression longer than 256 characters");
  }
  return Parser(text, field).parse();
}

bool DimExpr::solvable(std::string* name, std::int64_t* factor) const {
  const Node* n = node_.get();
  if (n == nullptr) return false;
  if (n->kind == Node::kName) {
    *name = n->name;
    *factor = 1;
    return true;
  }
  if (n->kind != Node::kMul) return false;
  const DimExpr* c = &n->a;
  const DimExpr* v = &n->b;
  if (!c->is_constant()) std::swap(c, v);
  if (!c->is_constant() || c->constant() <= 0 || v->node() == nullptr ||
      v->node()->kind != Node::kName)
    return false;
  *name = v->node()->name;
  *factor = c->constant();
  return true;
}

void DimExpr::names(std::vector<std::string>& out) const {
  const Node* n = node_.get();
  if (n == nullptr) return;
  if (n->kind == Node::kName) {
    for (const std::string& s : out)
      if (s == n->name) return;
    out.push_back(n->name);
    return;
  }
  n->a.names(out);
  n->b.names(out);
}

std::int64_t DimExpr::eval(const DimBindings& dims, const std::string& field) const {
  const std::int64_t v = eval_raw(*this, node_.get(), dims, field, str());
  if (v < 0 || v > kMaxValue) {
    throw InputError(field, "dimension expression '" + str() + "' evaluates to " +
                                std::to_string(v) + ", outside [0, 2^40]");
  }
  return v;
}

std::int64_t DimExpr::eval_signed(const DimBindings& dims, const std::string& field) const {
  const std::int64_t v = eval_raw(*this, node_.get(), dims, field, str());
  if (v < -kMaxValue || v > kMaxValue) {
    throw InputError(field, "dimension expression '" + str() + "' evaluates to " +
                                std::to_string(v) + ", outside [-2^40, 2^40]");
  }
  return v;
}

std::string DimExpr::str() const {
  std::string out;
  str_into(*this, out, 0);
  return out;
}

}  // namespace meshrun::interp
