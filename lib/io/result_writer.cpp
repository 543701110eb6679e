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
    append_number(out, values[i], format);
  }
  out += ']';
}

void append_tensor(std::string& out, const Tensor& t, const NumberFormat& format) {
  MESHRUN_CHECK(t.rank() <= 2 && t.size() == shape_size(t.shape), "malformed output tensor");
  if (t.rank() == 0) {
    MESHRUN_CHECK(std::isfinite(t.data.at(0)), "a non-finite result is refused before it is written");
    append_number(out, t.data[0], format);
    return;
  }
  if (t.rank() == 1) {
    append_row(out, t.data.data(), t.size(), format);
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < t.rows(); ++i) {
    if (i > 0) out += ',';
    append_row(out, t.data.data() + i * t.cols(), t.cols(), format);
  }
  out += ']';
}

}  // namespace

std::string tensor_json(const Tensor& t, const NumberFormat& format) {
  std::string out;
  append_tensor(out, t, format);
  return out;
}

std::string write_result(const ProgramDef& program, const std::vector<Tensor>& outputs,
                         const NumberFormat& format) {
  MESHRUN_CHECK(outputs.size() == program.outputs.size(), "one tensor per declared output");
  std::size_t elements = 0;
  for (const Tensor& t : outputs) elements += t.size();
  std::string out = "{";
  out.reserve(elements * 12 + 64);  // "-0.123456," is 10; one growth at most for longer forms
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const ArgDef& arg = program.outputs[i];
    MESHRUN_CHECK(outputs[i].rank() == arg.dims.size(), "output " + arg.name + " has the wrong rank");
    if (i > 0) out += ',';
    out += nlohmann::json(arg.name).dump() + ":";
    append_tensor(out, outputs[i], format);
  }
  out += '}';
  return out;  // moved, not copied: a result can be many megabytes
}

}  // namespace meshrun
