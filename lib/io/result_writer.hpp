// The result dict a program prints: compact JSON, keys in ProgramDef::outputs order, rank-1 and
// rank-2 outputs as nested lists, a scalar as a number:
//   {"w":[[1.11]],"b":[0.2],"loss":121.0}
#pragma once

#include <string>
#include <vector>

#include "io/number_format.hpp"
#include "programs/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

// One line, no trailing newline (its capacity has room for one, appended without a copy).
std::string write_result(const ProgramDef& program, const std::vector<Tensor>& outputs,
                         const NumberFormat& format);

// One tensor as JSON (a number, [..] or [[..],..]) -- also used to show expected values.
std::string tensor_json(const Tensor& t, const NumberFormat& format);

}  // namespace meshrun
