#include "io/tensor_json.hpp"

#include <cmath>

#include "support/errors.hpp"

namespace meshrun {
namespace {

// "input.x[2][1]" for the indices `at`.
std::string index_path(const std::string& field, const std::vector<std::size_t>& at) {
  std::string s = field;
  for (const std::size_t i : at) s += "[" + std::to_string(i) + "]";
  return s;
}

// "(N, D)" -- the symbolic shape, so a rank error says what was meant.
std::string dims_str(const std::vector<std::string>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + ")";
}

std::string rank_str(std::size_t rank) {
  return rank == 0 ? "a number" : "a " + std::to_string(rank) + "-D array";
}

[[noreturn]] void throw_rank(const std::string& field, const std::vector<std::string>& dims,
                             const std::string& got) {
  throw InputError(field,
                   "must be " + rank_str(dims.size()) + " " + dims_str(dims) + ", got " + got);
}

[[noreturn]] void throw_overflow(const std::string& path, double value) {
  throw InputError(path, number_text(value) + " overflows float32");
}

float to_float32(const JsonSummary& value, const std::string& path) {
  if (value.kind != JsonKind::number) {
    throw InputError(path, "must be a number, got " + kind_name(value.kind));
  }
  // JAX converts a Python float (a double) to float32 rounding to nearest; so do we.
  const auto f = static_cast<float>(value.number);
  if (std::isinf(f)) throw_overflow(path, value.number);
  return f;
}

[[noreturn]] void throw_empty(const std::string& field, const std::vector<std::string>& dims,
                              std::size_t dim) {
  throw InputError(field, "has 0 " + dim_word(dims.size(), dim, 0) + " (" + dims[dim] +
                              "); dimensions must be at least 1");
}

void check_rank(const JsonSummary& value, const std::vector<std::string>& dims,
                const std::string& field) {
  if (value.kind != JsonKind::array) {
    throw_rank(field, dims, kind_name(value.kind));
  }
  if (value.shape.at(0) == 0) throw_empty(field, dims, 0);
  if (value.leading_rank != dims.size()) {
    throw_rank(field, dims, rank_str(value.leading_rank));
  }
}

// The first thing in document order that keeps the array (of rank `rank`, its shape `shape` as
// its first elements give it) from being a tensor.
[[noreturn]] void throw_flaw(const ArrayFlaw& flaw, const std::string& field, std::size_t rank,
                             const Shape& shape) {
  const std::string path = index_path(field, flaw.at);
  const std::size_t depth = flaw.at.size();  // the dimension an array there would span
  switch (flaw.what) {
    case ArrayFlaw::not_a_number:
      throw InputError(path, "must be a number, got " + kind_name(flaw.kind));
    case ArrayFlaw::overflow:
      throw_overflow(path, flaw.value);
    case ArrayFlaw::not_a_row:
      throw InputError(path, (rank - depth == 1 ? std::string("must be an array (a row)")
                                                : "must be " + rank_str(rank - depth)) +
                                 ", got " + kind_name(flaw.kind));
    case ArrayFlaw::ragged:
      throw InputError(path, "has " + std::to_string(flaw.length) + " " +
                                 dim_word(rank, depth, flaw.length) + " but " +
                                 index_path(field, std::vector<std::size_t>(depth, 0)) + " has " +
                                 std::to_string(shape.at(depth)));
  }
  MESHRUN_CHECK(false, "every flaw is reported");
}

}  // namespace

Tensor tensor_from_json(JsonSummary& value, const std::vector<std::string>& dims,
                        const std::string& field) {
  MESHRUN_CHECK(dims.size() <= kMaxRank, "inputs have at most kMaxRank dimensions");
  if (dims.empty()) return Tensor::scalar(to_float32(value, field));
  check_rank(value, dims, field);
  MESHRUN_CHECK(value.shape.size() == dims.size(), "an array's shape has its leading rank");
  for (std::size_t d = 1; d < dims.size(); ++d)
    if (value.shape[d] == 0) throw_empty(field, dims, d);
  if (value.flaw) throw_flaw(*value.flaw, field, dims.size(), value.shape);
  Shape shape = value.shape;
  MESHRUN_CHECK(value.data.size() == shape_size(shape), "a flawless array holds all its numbers");
  return Tensor(std::move(shape), std::move(value.data));
}

void check_shape(const Shape& shape, const std::vector<std::string>& dims,
                 const std::string& field) {
  // In the order an inline array is checked: an empty first dimension, the rank, the others.
  if (!shape.empty() && !dims.empty() && shape[0] == 0) throw_empty(field, dims, 0);
  if (shape.size() != dims.size()) {
    throw_rank(field, dims, rank_str(shape.size()));
  }
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) throw_empty(field, dims, d);
  }
}

void DimBinder::bind(const std::string& field, const std::vector<std::string>& dims,
                     const Shape& shape) {
  MESHRUN_CHECK(dims.size() == shape.size(), "shape rank differs from its symbolic dims");
  const std::size_t rank = shape.size();
  for (std::size_t d = 0; d < rank; ++d) {
    const auto [it, fresh] = bound_.try_emplace(dims[d], Bound{shape[d], field, rank, d});
    const Bound& first = it->second;
    if (fresh || first.size == shape[d]) continue;
    const std::string word = dim_word(rank, d, shape[d]);
    const std::string first_word = dim_word(first.rank, first.dim, first.size);
    // "but input.x has 8" when both count the same thing, "... has 2 columns" otherwise.
    const std::string plain_word = dim_word(rank, d, 2);
    const std::string first_plain = dim_word(first.rank, first.dim, 2);
    throw InputError(field, "has " + std::to_string(shape[d]) + " " + word + " (" + dims[d] +
                                ") but " + first.field + " has " + std::to_string(first.size) +
                                (plain_word == first_plain ? "" : " " + first_word));
  }
}

}  // namespace meshrun
