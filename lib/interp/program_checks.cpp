// What a program file's inputs and outputs must be for meshrun to run it (program_impl.hpp):
// ranks at load, sizes and values per case.
#include <cmath>
#include <string>
#include <vector>

#include "interp/program_impl.hpp"
#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp::detail {

// A case holds arrays of at most kMaxRank (8) dimensions (docs/cases.md), as many as the reader
// allows any shape of the file ("more than 8 dimensions"): an input of higher rank is the file's
// to refuse, before a case reader would meet it.
void check_input_ranks(const ProgramFile& file_) {
  for (std::size_t i = 0; i < file_.inputs.size(); ++i) {
    const std::size_t r = file_.inputs[i].shape.size();
    if (r > kMaxRank) {
      throw InputError(file_.path, "inputs[" + std::to_string(i) + "].shape: input " +
                                       file_.inputs[i].name + " has rank " + std::to_string(r) +
                                       ": more than 8 dimensions");
    }
  }
}

// Results are written of at most kMaxRank dimensions (the case format's), and every export gives
// each output the same rank (the def has one): else the writer's invariants broke, exit 4.
void check_output_ranks(const ProgramFile& file_) {
  const auto rank = [](const Jaxpr& jx, std::size_t j) { return rank_of(jx, jx.outvars[j]); };
  for (std::size_t e = 0; e < file_.exports.size(); ++e) {
    const Jaxpr& jx = file_.exports[e].jaxpr;
    for (std::size_t j = 0; j < jx.outvars.size(); ++j) {
      const std::string at = file_.exports[e].where + ".jaxpr.outvars[" + std::to_string(j) + "]";
      const std::size_t r = rank(jx, j);
      if (r > kMaxRank) {
        throw InputError(file_.path, at + ": output " + file_.outputs[j].name + " has rank " +
                                         std::to_string(r) + ": more than 8 dimensions");
      }
      if (e > 0 && r != rank(file_.exports.front().jaxpr, j)) {
        throw InputError(file_.path, at + ": output " + file_.outputs[j].name + " has rank " +
                                         std::to_string(r) + ", in exports[0] rank " +
                                         std::to_string(rank(file_.exports.front().jaxpr, j)));
      }
    }
  }
}

// A result with no elements is refused, as an input with none is (JSON's [] has no shape).
void check_output_sizes(const ProgramFile& file, const Binding& b) {
  const Jaxpr& jx = b.exp->jaxpr;
  for (std::size_t j = 0; j < jx.outvars.size(); ++j) {
    const Atom& a = jx.outvars[j];
    if (a.is_literal()) continue;
    const std::string at = b.exp->where + ".jaxpr.outvars[" + std::to_string(j) + "]";
    std::string dims;
    bool empty = false;
    for (const DimExpr& d : jx.types[a.var].shape) {
      const std::int64_t n = d.eval(b.dims, at);
      if (!dims.empty()) dims += ',';
      dims += std::to_string(n);
      empty = empty || n == 0;
    }
    if (empty) {
      std::string what = "output " + file.outputs[j].name + " is ";
      what += dtype_name(jx.types[a.var].dtype);
      what += "[" + dims;
      what += "]: a result needs at least one element";
      throw InputError(at, what);
    }
  }
}

void check_input_values(const LoadedProgram& lp, const std::vector<TensorRef>& inputs) {
  for (std::size_t i = 0; i < lp.file.inputs.size(); ++i) {
    const ArgInfo& in = lp.file.inputs[i];
    if (in.dtype == DType::kF32) continue;
    const TensorRef& t = inputs.at(lp.def_input[i]);
    for (std::size_t k = 0; k < t.size(); ++k) {
      const float v = t.data[k];
      const bool ok = holds_value(in.dtype, v);
      if (ok) continue;
      std::string at = "input." + in.name;
      std::size_t rest = k;
      std::vector<std::size_t> index(t.rank());
      for (std::size_t d = t.rank(); d-- > 0;) {
        index[d] = rest % t.shape[d];
        rest /= t.shape[d];
      }
      for (std::size_t d : index) {
        at += '[';
        at += std::to_string(d);
        at += ']';
      }
      throw InputError(at, number_text(v) + " is not " +
                               (in.dtype == DType::kBool ? std::string("a bool (0 or 1)")
                                : in.dtype == DType::kI32
                                    ? std::string("an i32 meshrun holds exactly (|v| <= 2^24)")
                                    : std::string("a value of ") + dtype_info(in.dtype).word) +
                               ": the program's input " + in.name + " is " + dtype_name(in.dtype));
    }
  }
}

}  // namespace meshrun::interp::detail
