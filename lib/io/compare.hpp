// Grading a result against a case's `expected`, numpy.allclose's rule element by element:
// ok iff |got - expected| <= atol + rtol * |expected| (the float32 values compared as doubles).
// A NaN never passes.
#pragma once

#include <string>
#include <vector>

#include "programs/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

struct Mismatch {
  std::string path;  // "w[1][0]", "b[2]", "loss"; for a shape difference the output name
  double got = 0;
  double expected = 0;
  double allowed = 0;      // atol + rtol * |expected|
  std::string shape_note;  // non-empty for a shape difference: "shape f32[2,1], expected f32[1,1]"
};

// Every element that differs, in output order then row-major order.
std::vector<Mismatch> compare_outputs(const ProgramDef& program, const std::vector<Tensor>& got,
                                      const std::vector<Tensor>& expected, double atol,
                                      double rtol);

// "output w[0][0] is +inf (3 of 4 elements are not finite)" for the first NaN or infinity of the
// outputs, in output then row-major order; "" when every element is finite.
std::string find_non_finite(const ProgramDef& program, const std::vector<Tensor>& outputs);

// Why `meshrun check --update` must not bless `outputs` as a case's `expected`: "structure: <the
// first broken rule>" when the run broke a structural rule (a wrong program can compute the right
// numbers), else find_non_finite's line; "" when they may be blessed.
std::string bless_refusal(const ProgramDef& program, const std::vector<Tensor>& outputs,
                          const StructuralVerdict& structure);

// One line: "w[1][0]: got 1.2345, expected 1.2346, allowed 1e-05" (numbers as exact float32).
std::string describe(const Mismatch& m);

}  // namespace meshrun
