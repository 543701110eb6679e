// bind (eval.hpp): the export for a run's mesh, its dimension variables bound to the case's shapes.
#include "interp/eval.hpp"

#include <map>
#include <optional>
#include <string>

#include "interp/prim_util.hpp"
#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

// Binds `exp`'s dimension variables to `shapes`; InputError naming the input otherwise.
DimBindings bind_export(const ProgramFile& file, const Export& exp,
                        const std::vector<Shape>& shapes, const std::vector<DType>& dtypes) {
  DimBindings dims;
  std::map<std::string, std::string> bound_by;
  const Jaxpr& jx = exp.jaxpr;
  const auto field = [&](std::size_t i) { return "input." + file.inputs.at(i).name; };
  for (std::size_t i = 0; i < jx.invars.size(); ++i) {
    const Type& t = jx.types[jx.invars[i]];
    if (i < dtypes.size() && dtypes[i] != t.dtype) {
      throw InputError(field(i), std::string("is ") + dtype_name(dtypes[i]) +
                                     ", the program takes " + dtype_name(t.dtype));
    }
    if (t.shape.size() != shapes.at(i).size()) {
      std::string declared;
      for (const DimExpr& d : t.shape) declared += (declared.empty() ? "" : ",") + d.str();
      throw InputError(field(i), "has shape " + prim::dims_str(shapes[i]) + ", the program takes " +
                                     dtype_name(t.dtype) + "[" + declared + "]");
    }
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      std::string name;
      std::int64_t factor = 0;
      if (!t.shape[d].solvable(&name, &factor)) continue;
      const auto size = static_cast<std::int64_t>(shapes[i][d]);
      if (size % factor != 0) {
        throw InputError(field(i), std::to_string(factor) + " does not evenly divide " +
                                       std::to_string(size) + ", the size of its dimension " +
                                       std::to_string(d) + " (" + t.shape[d].str() + ")");
      }
      const auto [it, fresh] = dims.emplace(name, size / factor);
      if (!fresh && it->second != size / factor) {
        throw InputError(field(i), "dimension " + std::to_string(d) + " (" + t.shape[d].str() +
                                       ") makes " + name + " = " + std::to_string(size / factor) +
                                       ", but " + bound_by[name] + " made it " +
                                       std::to_string(it->second));
      }
      bound_by.emplace(name, field(i));
    }
  }
  for (const std::string& name : exp.dims) {
    if (!dims.contains(name)) {
      throw InputError(exp.where + ".dims", "dimension variable " + excerpt(name) +
                                                " cannot be solved from the inputs' shapes");
    }
  }
  for (std::size_t i = 0; i < jx.invars.size(); ++i) {
    const Type& t = jx.types[jx.invars[i]];
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      const std::int64_t want = t.shape[d].eval(dims, field(i));
      if (want != static_cast<std::int64_t>(shapes[i][d])) {
        if (t.shape[d].is_constant()) {  // a fixed size: say the shapes, not "1 = 1"
          std::string declared;
          for (const DimExpr& e : t.shape) declared += (declared.empty() ? "" : ",") + e.str();
          throw InputError(field(i), "has shape " + prim::dims_str(shapes[i]) +
                                         ", the program takes " + dtype_name(t.dtype) + "[" +
                                         declared + "]");
        }
        throw InputError(field(i), "dimension " + std::to_string(d) + " is " +
                                       std::to_string(shapes[i][d]) + ", the program's " +
                                       t.shape[d].str() + " = " + std::to_string(want));
      }
    }
  }
  return dims;
}

}  // namespace

Binding bind(const ProgramFile& file, const MeshShape& mesh, const std::vector<Shape>& shapes,
             const std::vector<DType>& dtypes) {
  std::string exported;
  std::optional<InputError> first;
  std::size_t tried = 0;
  for (const Export& exp : file.exports) {
    exported += (exported.empty() ? "" : ", ") + mesh_str(exp.mesh);
    if (exp.mesh != mesh) continue;
    ++tried;
    try {
      return {&exp, bind_export(file, exp, shapes, dtypes)};
    } catch (const InputError& e) {
      if (!first) first = e;
    }
  }
  // The first export's reason; with several (one per shape signature), that none fits.
  if (first && tried > 1) {
    const std::string what = first->what();
    const std::string reason =
        first->field().empty() ? what : what.substr(first->field().size() + 2);
    throw InputError(first->field(), reason + " (the first of its " + std::to_string(tried) +
                                         " exports for " + mesh_str(mesh) +
                                         "; none takes these shapes)");
  }
  if (first) throw *first;
  throw InputError("mesh", "the program has no export for " + mesh_str(mesh) +
                               " (it was exported for " + excerpt(exported) + ")");
}

}  // namespace meshrun::interp
