// The typed fields of a program file's JSON: each read checks the kind and the range of what the
// file holds before it is narrowed or kept, and throws InputError(at, ...) naming the field
// ("exports[0].mesh[0][1]: must be between 1 and 1024"). The reader (reader.cpp) is made of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "interp/ir.hpp"

namespace meshrun::interp {

inline constexpr std::size_t kMaxNameChars = 128;  // of an input's or output's name

class FieldReader {
 public:
  using json = nlohmann::json;

  // "an object", "a number", ... for "must be an array, not a number".
  static const char* kind(const json& j);
  // obj[key], refusing a missing key or an `obj` that is not an object.
  static const json& member(const json& obj, const std::string& at, const char* key);
  static const json* optional(const json& obj, const char* key);
  static const json& array(const json& j, const std::string& at);
  // A non-empty string.
  static std::string string(const json& j, const std::string& at);
  // A string shown in messages, traces and reports (an axis name, the program's name): besides
  // non-empty, no control byte (an ESC would reach the terminal) and at most kMaxNameChars.
  static std::string label(const json& j, const std::string& at);
  // A name (an input's or output's): letters, digits, _ and -, as a file name may hold it.
  static std::string name(const json& j, const std::string& at);
  // An integer in [lo, hi]: a fraction, a number beyond int64 either way, or one outside the
  // range is refused before it is narrowed.
  static std::int64_t integer(const json& j, const std::string& at, std::int64_t lo,
                              std::int64_t hi);
  static DType dtype(const json& j, const std::string& at);
  static DimExpr dim(const json& j, const std::string& at);
  static Type type(const json& j, const std::string& at);
  // A value of dtype `t` (a literal, a constant's element).
  static double number(const json& j, DType t, const std::string& at);
};

}  // namespace meshrun::interp
