#include "io/compare.hpp"

#include <cmath>
#include <cstdio>

#include "io/number_format.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

// "w[1][0]" for flat index `i` of `t`.
std::string element_path(const std::string& name, const Tensor& t, std::size_t i) {
  return name + index_suffix(t.shape, i);
}

void compare_tensor(const std::string& name, const Tensor& got, const Tensor& expected, double atol,
                    double rtol, std::vector<Mismatch>& out) {
  if (got.shape != expected.shape) {
    out.push_back({name, NAN, NAN, 0,
                   "shape " + shape_str(got.shape) + ", expected " + shape_str(expected.shape)});
    return;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto g = static_cast<double>(got.data[i]);
    const auto e = static_cast<double>(expected.data[i]);
    const double allowed = atol + rtol * std::fabs(e);
    // Written so that a NaN on either side fails the test.
    if (!(std::fabs(g - e) <= allowed))
      out.push_back({element_path(name, got, i), g, e, allowed, ""});
  }
}

}  // namespace

std::vector<Mismatch> compare_outputs(const ProgramDef& program, const std::vector<Tensor>& got,
                                      const std::vector<Tensor>& expected, double atol,
                                      double rtol) {
  MESHRUN_CHECK(got.size() == program.outputs.size() && expected.size() == got.size(),
                "one tensor per declared output");
  std::vector<Mismatch> out;
  for (std::size_t k = 0; k < got.size(); ++k) {
    compare_tensor(program.outputs[k].name, got[k], expected[k], atol, rtol, out);
  }
  return out;
}

std::string find_non_finite(const ProgramDef& program, const std::vector<Tensor>& outputs) {
  MESHRUN_CHECK(outputs.size() == program.outputs.size(), "one tensor per declared output");
  std::string first;
  std::size_t bad = 0, total = 0;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    total += t.size();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (std::isfinite(t.data[i])) continue;
      if (bad++ == 0) {
        first = "output " + element_path(program.outputs[k].name, t, i) + " is " +
                format_number(t.data[i], NumberFormat{});
      }
    }
  }
  if (bad == 0) return "";
  return first + " (" + std::to_string(bad) + " of " + std::to_string(total) +
         (bad == 1 ? " element is" : " elements are") + " not finite)";
}

std::string bless_refusal(const ProgramDef& program, const std::vector<Tensor>& outputs,
                          const StructuralVerdict& structure) {
  if (!structure.ok()) return "structure: " + structure.failures.front();
  return find_non_finite(program, outputs);
}

std::string describe(const Mismatch& m) {
  if (!m.shape_note.empty()) return m.path + ": " + m.shape_note;
  const NumberFormat exact{.precision = 6, .exact = true};
  char allowed[32];
  std::snprintf(allowed, sizeof allowed, "%.3g", m.allowed);
  return m.path + ": got " + format_number(static_cast<float>(m.got), exact) + ", expected " +
         format_number(static_cast<float>(m.expected), exact) + ", allowed " + allowed;
}

}  // namespace meshrun
