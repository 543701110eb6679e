// The program file against itself (reader_checks.hpp).
#include "interp/reader_checks.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "io/json_text.hpp"
#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun::interp {
namespace {

std::string declared(const Type& t) {
  std::string s = dtype_name(t.dtype) + std::string("[");
  for (std::size_t d = 0; d < t.shape.size(); ++d) s += (d ? "," : "") + t.shape[d].str();
  return s + "]";
}

// The first name a type of `jx` (or of a jaxpr nested in it) uses that `named` lacks, with the
// jaxpr that uses it.
bool unnamed(const Jaxpr& jx, const std::vector<std::string>& named, std::string* name,
             std::string* where, int depth = 0) {
  std::vector<std::string> used;
  for (const Type& t : jx.types) {
    for (const DimExpr& d : t.shape) {
      used.clear();
      d.names(used);
      for (const std::string& n : used) {
        if (std::find(named.begin(), named.end(), n) == named.end()) {
          *name = n;
          *where = jx.where;
          return true;
        }
      }
    }
  }
  if (depth >= 64) return false;
  for (const Eqn& e : jx.eqns)
    for (const auto& [key, sub] : e.subs)
      if (unnamed(*sub, named, name, where, depth + 1)) return true;
  return false;
}

}  // namespace

void check_inputs_agree(const std::vector<ArgInfo>& inputs, const Jaxpr& jx,
                        const std::string& at) {
  std::map<std::string, std::pair<std::string, std::string>> meaning;  // name -> (expr, field)
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ArgInfo& in = inputs[i];
    const Type& t = jx.types[static_cast<std::size_t>(jx.invars[i])];
    const std::string field = "inputs[" + std::to_string(i) + "]";
    const std::string but = ", but " + at + ".invars[" + std::to_string(i) + "] is " + declared(t);
    if (in.dtype != t.dtype) {
      throw InputError(field + ".dtype", std::string(dtype_name(in.dtype)) + but);
    }
    if (in.shape.size() != t.shape.size()) {
      throw InputError(field + ".shape", "rank " + std::to_string(in.shape.size()) + but);
    }
    for (std::size_t d = 0; d < in.shape.size(); ++d) {
      const std::string dat = field + ".shape[" + std::to_string(d) + "]";
      const bool number =
          !in.shape[d].empty() && std::isdigit(static_cast<unsigned char>(in.shape[d][0]));
      if (number && t.shape[d].is_constant() &&
          std::to_string(t.shape[d].constant()) != in.shape[d]) {
        throw InputError(dat, in.shape[d] + but);
      }
      if (number) continue;
      const auto [it, fresh] = meaning.emplace(in.shape[d], std::pair{t.shape[d].str(), dat});
      if (!fresh && it->second.first != t.shape[d].str()) {
        throw InputError(dat, escape_controls(excerpt(in.shape[d])) + " is " + t.shape[d].str() +
                                  " here (" + at + ".invars[" + std::to_string(i) + "] is " +
                                  declared(t) + ") but " + it->second.first + " in " +
                                  it->second.second + ": are two inputs swapped?");
      }
    }
  }
}

void check_dims_named(const Export& x, const std::string& at) {
  std::string name, where;
  if (unnamed(x.jaxpr, x.dims, &name, &where)) {
    throw InputError(at + ".dims", "does not name " + escape_controls(excerpt(name)) + ", which " +
                                       where + " uses in a shape");
  }
}

}  // namespace meshrun::interp
