// The typed fields of a program file's JSON (reader_fields.hpp).
#include "interp/reader_fields.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "interp/reader.hpp"
#include "io/json_text.hpp"
#include "support/printable.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

using json = nlohmann::json;

const char* FieldReader::kind(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    default:
      return "a number";
  }
}

const json& FieldReader::member(const json& obj, const std::string& at, const char* key) {
  if (!obj.is_object()) throw InputError(at, std::string("must be an object, not ") + kind(obj));
  const auto it = obj.find(key);
  if (it == obj.end()) throw InputError(at, std::string("missing key \"") + key + "\"");
  return *it;
}
const json* FieldReader::optional(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
const json& FieldReader::array(const json& j, const std::string& at) {
  if (!j.is_array()) throw InputError(at, std::string("must be an array, not ") + kind(j));
  return j;
}
std::string FieldReader::string(const json& j, const std::string& at) {
  if (!j.is_string()) throw InputError(at, std::string("must be a string, not ") + kind(j));
  const std::string s = j.get<std::string>();
  if (s.empty()) throw InputError(at, "must not be empty");
  return s;
}
std::string FieldReader::label(const json& j, const std::string& at) {
  const std::string s = string(j, at);
  if (s.size() > kMaxNameChars) {
    throw InputError(at, "\"" + escape_controls(excerpt(s)) + "\" is longer than " +
                             std::to_string(kMaxNameChars) + " bytes");
  }
  if (holds_control(s)) {
    throw InputError(at, "\"" + escape_controls(s) + "\" holds a control byte");
  }
  return s;
}

// A name becomes a file name (--save-npy DIR/NAME.npy), a JSON key and part of messages and
// traces: "../x" or "a/b" would write outside DIR, a control byte would forge a line.
std::string FieldReader::name(const json& j, const std::string& at) {
  const std::string s = string(j, at);
  const bool ok =
      s.size() <= kMaxNameChars &&
      std::all_of(s.begin(), s.end(),
                  [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
                  }) &&
      !std::isdigit(static_cast<unsigned char>(s[0])) && s[0] != '-';
  if (!ok) {
    std::string what = "\"";
    what += excerpt(s);
    what += "\" is not a name (letters, digits, _ and -, not starting with a digit or -, at most ";
    what += std::to_string(kMaxNameChars) + " characters)";
    throw InputError(at, what);
  }
  return s;
}
std::int64_t FieldReader::integer(const json& j, const std::string& at, std::int64_t lo,
                                  std::int64_t hi) {
  if (!j.is_number_integer())
    throw InputError(
        at, std::string("must be an integer, not ") + (j.is_number() ? "a fraction" : kind(j)));
  const std::int64_t v = j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(hi)
                             ? hi + 1
                             : j.get<std::int64_t>();
  if (v < lo || v > hi) {
    throw InputError(at, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return v;
}
DType FieldReader::dtype(const json& j, const std::string& at) {
  const std::string name = string(j, at);
  DType t;
  if (!parse_dtype(name, &t)) {
    throw InputError(at,
                     "dtype " + excerpt(name) +
                         " is not supported (f32, i32, bool, bf16, f16, i8, u8, i16, u16, u32)");
  }
  return t;
}
DimExpr FieldReader::dim(const json& j, const std::string& at) {
  if (j.is_string()) return DimExpr::parse(j.get<std::string>(), at);
  return DimExpr(integer(j, at, 0, std::int64_t{1} << 40));
}
Type FieldReader::type(const json& j, const std::string& at) {
  Type t;
  t.dtype = dtype(member(j, at, "dtype"), at + ".dtype");
  const json& shape = array(member(j, at, "shape"), at + ".shape");
  if (shape.size() > 8) throw InputError(at + ".shape", "more than 8 dimensions");
  double elements = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    t.shape.push_back(dim(shape[i], at + ".shape[" + std::to_string(i) + "]"));
    if (t.shape.back().is_constant()) elements *= double(t.shape.back().constant());
  }
  if (elements > double(kMaxElements)) {
    throw InputError(at + ".shape", number_text(elements) + " elements: more than 2^31");
  }
  return t;
}
double FieldReader::number(const json& j, DType t, const std::string& at) {
  double v;
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "inf") {
      v = std::numeric_limits<double>::infinity();
    } else if (s == "-inf") {
      v = -std::numeric_limits<double>::infinity();
    } else if (s == "nan") {
      v = std::numeric_limits<double>::quiet_NaN();
    } else {
      throw InputError(at, "must be a number, \"inf\", \"-inf\" or \"nan\", not " + excerpt(s));
    }
    if (dtype_info(t).kind != DKind::kFloat)
      throw InputError(at, "a non-finite value of an integer dtype");
    return v;
  }
  if (j.is_boolean()) {
    if (t != DType::kBool) throw InputError(at, "a boolean for a non-bool value");
    return j.get<bool>() ? 1 : 0;
  }
  if (!j.is_number()) throw InputError(at, std::string("must be a number, not ") + kind(j));
  v = j.get<double>();
  if (t == DType::kF32) {
    if (std::fabs(v) > double(std::numeric_limits<float>::max()) && std::isfinite(v)) {
      throw InputError(at, number_text(v) + " is beyond float32's range");
    }
  } else if (is_narrow(t)) {
    if (!holds_value(t, v)) {
      throw InputError(at, number_text(v) + " is not a value of " + dtype_info(t).word);
    }
  } else if (v != std::floor(v) || std::fabs(v) > double(1 << 24) ||
             (t == DType::kBool && v != 0 && v != 1)) {
    throw InputError(at, number_text(v) + " is not a " + dtype_name(t) +
                             (t == DType::kBool ? "" : " meshrun holds exactly (|v| <= 2^24)"));
  }
  return v;
}

}  // namespace meshrun::interp
