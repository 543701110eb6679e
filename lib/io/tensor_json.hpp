// Summarised JSON arrays (json_summary.hpp) -> float32 tensors, and symbolic shapes (ProgramDef
// dims like {"N", "D"}) bound to sizes. Errors are InputError naming the field ("input.x") or the
// element ("input.x[2][1]").
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "io/json_summary.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

// `value` as a float32 tensor of rank dims.size() (at most kMaxRank): a number (rank 0), [..]
// (1), [[..], ..] (2), and so on.
// Numbers convert like JAX: JSON -> double -> float32 rounded to nearest; integers and exponent
// notation are numbers like any other. Rejects other types, wrong rank or nesting, ragged rows,
// empty dimensions and values beyond float32's range.
// The data is moved out of `value`.
Tensor tensor_from_json(JsonSummary& value, const std::vector<std::string>& dims,
                        const std::string& field);

// The checks an inline array's shape gets, for an array of `shape` from elsewhere (a .npy file):
// its rank is dims.size() and no dimension is empty; same messages.
void check_shape(const Shape& shape, const std::vector<std::string>& dims,
                 const std::string& field);

// Binds symbolic dimension names to sizes across fields: the first field using a name binds it,
// a later one with another size is rejected naming both ("input.y: has 7 rows (N) but input.x
// has 8").
class DimBinder {
 public:
  void bind(const std::string& field, const std::vector<std::string>& dims, const Shape& shape);

 private:
  struct Bound {
    std::size_t size;
    std::string field;
    std::size_t rank;
    std::size_t dim;
  };
  std::map<std::string, Bound> bound_;
};

}  // namespace meshrun
