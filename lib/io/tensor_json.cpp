#include "io/tensor_json.hpp"

#include <cmath>
#include <cstdio>

#include "support/errors.hpp"

namespace meshrun {
namespace {

std::string index_path(const std::string& field, std::size_t i) {
  return field + "[" + std::to_string(i) + "]";
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

// Arrays along the first-element chain: [[1,2],[3]] -> 2, 5 -> 0. Iterative: depth is bounded by
// the parser, but a loop costs nothing.
std::size_t leading_rank(const nlohmann::json& value) {
  std::size_t rank = 0;
  for (const nlohmann::json* v = &value; v->is_array(); v = &v->front()) {
    ++rank;
    if (v->empty()) break;
  }
  return rank;
}

float to_float32(const nlohmann::json& value, const std::string& path) {
  if (!value.is_number()) {
    throw InputError(path, "must be a number, got " + json_kind(value));
  }
  const double d = value.get<double>();
  // JAX converts a Python float (a double) to float32 rounding to nearest; so do we.
  const auto f = static_cast<float>(d);
  if (std::isinf(f)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", d);
    throw InputError(path, std::string(text) + " overflows float32");
  }
  return f;
}

[[noreturn]] void throw_empty(const std::string& field, const std::vector<std::string>& dims,
                              std::size_t dim) {
  throw InputError(field, "has 0 " + dim_word(dims.size(), dim, 0) + " (" + dims[dim] +
                              "); dimensions must be at least 1");
}

void check_rank(const nlohmann::json& value, const std::vector<std::string>& dims,
                const std::string& field) {
  if (dims.empty()) {
    if (!value.is_number()) throw InputError(field, "must be a number, got " + json_kind(value));
    return;
  }
  if (!value.is_array()) {
    const std::string got = value.is_number() ? "a number" : json_kind(value);
    throw InputError(field, "must be " + rank_str(dims.size()) + " " + dims_str(dims) +
                                ", got " + got);
  }
  if (value.empty()) throw_empty(field, dims, 0);
  const std::size_t got = leading_rank(value);
  if (got != dims.size()) {
    throw InputError(field, "must be " + rank_str(dims.size()) + " " + dims_str(dims) +
                                ", got " + rank_str(got));
  }
}

Tensor vector_from_json(const nlohmann::json& value, const std::string& field) {
  std::vector<float> data;
  data.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    data.push_back(to_float32(value[i], index_path(field, i)));
  }
  Shape shape{data.size()};  // before the move: argument evaluation order is unspecified
  return Tensor(std::move(shape), std::move(data));
}

Tensor matrix_from_json(const nlohmann::json& value, const std::vector<std::string>& dims,
                        const std::string& field) {
  const std::size_t rows = value.size();
  const std::size_t cols = value.front().size();
  if (cols == 0) throw_empty(field, dims, 1);
  std::vector<float> data;
  data.reserve(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    const nlohmann::json& row = value[i];
    const std::string row_path = index_path(field, i);
    if (!row.is_array()) {
      throw InputError(row_path, "must be an array (a row), got " + json_kind(row));
    }
    if (row.size() != cols) {
      throw InputError(row_path, "has " + std::to_string(row.size()) + " " +
                                     dim_word(2, 1, row.size()) + " but " +
                                     index_path(field, 0) + " has " + std::to_string(cols));
    }
    for (std::size_t j = 0; j < cols; ++j) {
      data.push_back(to_float32(row[j], index_path(row_path, j)));
    }
  }
  return Tensor({rows, cols}, std::move(data));
}

}  // namespace

std::string json_kind(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    default: return "a number";
  }
}

Tensor tensor_from_json(const nlohmann::json& value, const std::vector<std::string>& dims,
                        const std::string& field) {
  MESHRUN_CHECK(dims.size() <= 2, "tensors have rank 0..2");
  check_rank(value, dims, field);
  if (dims.empty()) return Tensor::scalar(to_float32(value, field));
  if (dims.size() == 1) return vector_from_json(value, field);
  return matrix_from_json(value, dims, field);
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
