// A case file read with nlohmann's SAX parser into what the case reader needs and no more: the
// members of the objects at the top three levels (the case keys, `input`'s and `expected`'s
// fields, a field's {"npy": PATH}), with every array among them kept as float32 data plus the
// first thing that stops it from being a tensor. No DOM is built, and field paths are built only
// for an error.
//
// Checks made while parsing (they stop it, like a syntax error): nesting deeper than
// kMaxJsonDepth and numbers beyond double's range (named by field: "input.lr: 1e400 overflows
// float32"). Everything else is reported by the case reader afterwards, in its own order, since
// keys may come in any order in the file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "io/json_text.hpp"

namespace meshrun {

enum class JsonKind { null, boolean, number, string, array, object };

// "null", "a boolean", "a number", "a string", "an array", "an object".
std::string kind_name(JsonKind kind);

// The first thing (in document order) that keeps an array from being a tensor of its leading
// rank R (the '[' that open it one right after the other: [[[1]]] has 3): an element that is not
// a number or overflows float32 where a number is due (at depth R - 1), one that is not an array
// where an array is due, or an array of another length than the first one at its depth (the one
// along the first elements: x[0], x[0][0], ...). Within an array, its own length is checked
// before its elements (its flaw reported when it ends); arrays in order.
struct ArrayFlaw {
  enum What { not_a_number, overflow, not_a_row, ragged } what;  // not_a_row: not an array
  std::vector<std::size_t> at;  // the element's (or the ragged array's) indices: {2, 1} is x[2][1]
  JsonKind kind = JsonKind::null;  // not_a_number, not_a_row
  double value = 0;                // overflow
  std::size_t length = 0;          // ragged: the array's length
};

struct JsonSummary {
  std::string key;  // as a member of an object: its key
  JsonKind kind = JsonKind::null;
  double number = 0;  // kind number
  std::string text;   // kind string
  // kind object, at the top three levels: the members in file order.
  std::vector<JsonSummary> members;
  // kind array, below the top level:
  std::size_t leading_rank = 0;  // nested arrays along the first elements: [[1],[2]] -> 2
  // shape[0]: its elements; shape[d]: the length of the first array at depth d (x[0], x[0][0]..),
  // for d < leading_rank.
  std::vector<std::size_t> shape;
  std::vector<float> data;  // the numbers, row-major, as float32 (complete only when !flaw)
  std::optional<ArrayFlaw> flaw;
};

struct DuplicateKey {
  std::string path;  // the object's field: "" (top level), "input", "input.x[0]"
  std::string key;
};

struct JsonDocument {
  JsonSummary root;
  std::optional<DuplicateKey> duplicate;  // the first key given twice in one object
};

// Parses all of `source`. Throws InputError for an empty input, invalid JSON (with its position;
// anything after the value, a NUL byte included), too deep nesting, or a number beyond double's
// range. `is_case_key(key)` tells whether a top-level key makes the document a case (then the
// field of an overflowing number is its path) or not (a bare input: "input." + its path).
// `numbers`: how a tensor's numbers are read -- fast (the handler's own scanner, see
// json_summary.cpp) or by nlohmann's lexer alone; both give the same document and the same errors
// (tests/io_test.cpp compares them), `parser` exists for that comparison.
enum class JsonNumbers { fast, parser };
JsonDocument parse_json_summary(JsonSource& source, bool (*is_case_key)(const std::string& key),
                                JsonNumbers numbers = JsonNumbers::fast);

}  // namespace meshrun
