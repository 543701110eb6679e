#include "io/result_writer.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "support/errors.hpp"

namespace meshrun {
namespace {

void append_row(std::string& out, const float* values, std::size_t n, const NumberFormat& format) {
  out += '[';
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    MESHRUN_CHECK(std::isfinite(values[i]), "a non-finite result is refused before it is written");
    out += format_number(values[i], format);
  }
  out += ']';
}

}  // namespace

std::string tensor_json(const Tensor& t, const NumberFormat& format) {
  MESHRUN_CHECK(t.rank() <= 2 && t.size() == shape_size(t.shape), "malformed output tensor");
  std::string out;
  if (t.rank() == 0) return format_number(t.data.at(0), format);
  if (t.rank() == 1) {
    append_row(out, t.data.data(), t.size(), format);
    return out;
  }
  out += '[';
  for (std::size_t i = 0; i < t.rows(); ++i) {
    if (i > 0) out += ',';
    append_row(out, t.data.data() + i * t.cols(), t.cols(), format);
  }
  out += ']';
  return out;
}

std::string write_result(const ProgramDef& program, const std::vector<Tensor>& outputs,
                         const NumberFormat& format) {
  MESHRUN_CHECK(outputs.size() == program.outputs.size(), "one tensor per declared output");
  std::string out = "{";
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const ArgDef& arg = program.outputs[i];
    MESHRUN_CHECK(outputs[i].rank() == arg.dims.size(), "output " + arg.name + " has the wrong rank");
    if (i > 0) out += ',';
    out += nlohmann::json(arg.name).dump() + ":" + tensor_json(outputs[i], format);
  }
  return out + "}";
}

}  // namespace meshrun
