// The result dict a program prints: compact JSON, keys in ProgramDef::outputs order, outputs of
// rank 1 or more as nested lists (a matrix a list of rows), a scalar as a number:
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

// One tensor as JSON (a number, [..], [[..],..], ...) -- also used to show expected values.
std::string tensor_json(const Tensor& t, const NumberFormat& format);

}  // namespace meshrun
