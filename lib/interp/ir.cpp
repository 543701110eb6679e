#include "interp/ir.hpp"

namespace meshrun::interp {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kI32:
      return "i32";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

bool parse_dtype(const std::string& name, DType* out) {
  for (DType t : {DType::kF32, DType::kI32, DType::kBool}) {
    if (name == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

std::string type_str(const ValueType& t) {
  std::string s = dtype_name(t.dtype);
  s += '[';
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(t.shape[i]);
  }
  return s + ']';
}

void mark_last_uses(Jaxpr& jx) {
  std::vector<int> last(jx.types.size(), -1);
  for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
    jx.eqns[e].last_use.clear();
    for (const Atom& a : jx.eqns[e].in) {
      if (!a.is_literal()) last[static_cast<std::size_t>(a.var)] = static_cast<int>(e);
    }
  }
  for (const Atom& a : jx.outvars) {
    if (!a.is_literal()) last[static_cast<std::size_t>(a.var)] = -1;
  }
  for (std::size_t v = 0; v < last.size(); ++v) {
    if (last[v] >= 0) jx.eqns[static_cast<std::size_t>(last[v])].last_use.push_back(int(v));
  }
}

const Jaxpr* Eqn::sub(const std::string& name) const {
  for (const auto& [key, jaxpr] : subs)
    if (key == name) return jaxpr.get();
  return nullptr;
}

std::vector<const Jaxpr*> Eqn::subs_of(const std::string& name) const {
  std::vector<const Jaxpr*> out;
  for (const auto& [key, jaxpr] : subs)
    if (key == name) out.push_back(jaxpr.get());
  return out;
}

std::string Eqn::place() const {
  std::string s = where + " (" + primitive;
  if (!source.empty()) s += " at " + source;
  return s + ")";
}

}  // namespace meshrun::interp
