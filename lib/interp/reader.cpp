// The program file's reader: JSON in, a checked ProgramFile out (reader.hpp).
#include "interp/reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "interp/primitives.hpp"
#include "interp/rules.hpp"
#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxNameChars = 128;  // of an input's or output's name

// Whether `key` of `primitive`'s params holds a nested jaxpr.
bool holds_jaxpr(const std::string& primitive, const std::string& key) {
  const char* param = nested_jaxpr_param(primitive);
  return param != nullptr && key == param;
}

const char* kind(const json& j) {
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

// Where the parser is (the path of the value being read, "exports[0].jaxpr") and the keys of
// every open object so far, to find a key given twice.
class KeyTracker {
 public:
  void see(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open_.push_back({event == json::parse_event_t::object_start, {}, {}, 0});
        break;
      case json::parse_event_t::key: {
        Level& top = open_.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second) {
          std::string what = "duplicate key \"";
          what += excerpt(top.key);
          what += '"';
          throw InputError(path(open_.size() - 1), what);
        }
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open_.pop_back();
        [[fallthrough]];
      case json::parse_event_t::value:
        if (!open_.empty() && !open_.back().object) ++open_.back().index;
        break;
    }
  }

 private:
  struct Level {
    bool object;
    std::set<std::string> keys;
    std::string key;    // object: the latest key
    std::size_t index;  // array: the element being read
  };
  // The path of the object open at `level`.
  std::string path(std::size_t level) const {
    std::string p;
    for (std::size_t i = 0; i < level; ++i) {
      if (open_[i].object) {
        p += (p.empty() ? "" : ".") + excerpt(open_[i].key);
      } else {
        p += "[" + std::to_string(open_[i].index) + "]";
      }
    }
    return p;
  }
  std::vector<Level> open_;
};

class Reader {
 public:
  const json& member(const json& obj, const std::string& at, const char* key) {
    if (!obj.is_object()) throw InputError(at, std::string("must be an object, not ") + kind(obj));
    const auto it = obj.find(key);
    if (it == obj.end()) throw InputError(at, std::string("missing key \"") + key + "\"");
    return *it;
  }
  const json* optional(const json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  const json& array(const json& j, const std::string& at) {
    if (!j.is_array()) throw InputError(at, std::string("must be an array, not ") + kind(j));
    return j;
  }
  std::string string(const json& j, const std::string& at) {
    if (!j.is_string()) throw InputError(at, std::string("must be a string, not ") + kind(j));
    const std::string s = j.get<std::string>();
    if (s.empty()) throw InputError(at, "must not be empty");
    return s;
  }
  // A name becomes a file name (--save-npy DIR/NAME.npy), a JSON key and part of messages and
  // traces: "../x" or "a/b" would write outside DIR, a control byte would forge a line.
  std::string name(const json& j, const std::string& at) {
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
      what +=
          "\" is not a name (letters, digits, _ and -, not starting with a digit or -, at most ";
      what += std::to_string(kMaxNameChars) + " characters)";
      throw InputError(at, what);
    }
    return s;
  }
  std::int64_t integer(const json& j, const std::string& at, std::int64_t lo, std::int64_t hi) {
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
  DType dtype(const json& j, const std::string& at) {
    const std::string name = string(j, at);
    DType t;
    if (!parse_dtype(name, &t)) {
      throw InputError(at, "dtype " + excerpt(name) + " is not supported (f32, i32, bool)");
    }
    return t;
  }
  DimExpr dim(const json& j, const std::string& at) {
    if (j.is_string()) return DimExpr::parse(j.get<std::string>(), at);
    return DimExpr(integer(j, at, 0, std::int64_t{1} << 40));
  }
  Type type(const json& j, const std::string& at) {
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
  double number(const json& j, DType t, const std::string& at) {
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
      if (t != DType::kF32) throw InputError(at, "a non-finite value of an integer dtype");
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
    } else if (v != std::floor(v) || std::fabs(v) > double(1 << 24) ||
               (t == DType::kBool && v != 0 && v != 1)) {
      throw InputError(at, number_text(v) + " is not a " + dtype_name(t) +
                               (t == DType::kBool ? "" : " meshrun holds exactly (|v| <= 2^24)"));
    }
    return v;
  }

  // Where a nested jaxpr is: the whole path up to 4 deep, then the first 4 levels, the depth
  // and the last step (a message never holds 64 levels of ".params.jaxpr.eqns[0]").
  std::string nested_where(const std::string& eqn_at, const std::string& key, int depth) {
    if (depth <= 4) {
      std::string at = eqn_at + ".params." + key;
      if (depth == 4) head_ = at;
      return at;
    }
    const std::size_t last = eqn_at.rfind(".eqns[");
    return head_ + "...(" + std::to_string(depth) + " jaxprs deep)" + eqn_at.substr(last) +
           ".params." + key;
  }

  // One jaxpr; `depth` counts the jaxprs it is nested in.
  std::shared_ptr<Jaxpr> jaxpr(const json& j, const std::string& at, int depth) {
    if (depth > kMaxJaxprDepth) {
      throw InputError(at, "jaxprs nested deeper than " + std::to_string(kMaxJaxprDepth));
    }
    auto out = std::make_shared<Jaxpr>();
    Jaxpr& jx = *out;
    jx.where = at;
    std::unordered_map<std::int64_t, int> index;  // the file's id -> the variable's index
    const auto define = [&](const json& var, const std::string& vat) {
      const std::int64_t id = integer(member(var, vat, "id"), vat + ".id", 0, INT32_MAX);
      if (!index.emplace(id, static_cast<int>(jx.types.size())).second) {
        throw InputError(vat + ".id", "variable " + std::to_string(id) + " is defined twice");
      }
      jx.types.push_back(type(member(var, vat, "type"), vat + ".type"));
      return static_cast<int>(jx.types.size()) - 1;
    };
    const auto atom = [&](const json& a, const std::string& aat) {
      Atom r;
      if (!a.is_object()) throw InputError(aat, std::string("must be an object, not ") + kind(a));
      if (const json* v = optional(a, "var")) {
        const std::int64_t id = integer(*v, aat + ".var", 0, INT32_MAX);
        const auto it = index.find(id);
        if (it == index.end()) {
          throw InputError(aat, "variable " + std::to_string(id) + " is used before it is defined");
        }
        r.var = it->second;
        return r;
      }
      r.dtype = dtype(member(a, aat, "dtype"), aat + ".dtype");
      r.literal = number(member(a, aat, "lit"), r.dtype, aat + ".lit");
      return r;
    };

    const json& invars = array(member(j, at, "invars"), at + ".invars");
    for (std::size_t i = 0; i < invars.size(); ++i) {
      jx.invars.push_back(define(invars[i], at + ".invars[" + std::to_string(i) + "]"));
    }
    const json* constvars = optional(j, "constvars");
    const json* consts = optional(j, "consts");
    const std::size_t nconst = constvars ? array(*constvars, at + ".constvars").size() : 0;
    if ((consts ? array(*consts, at + ".consts").size() : 0) != nconst) {
      throw InputError(at + ".consts",
                       "must hold one value per constvar (" + std::to_string(nconst) + ")");
    }
    for (std::size_t i = 0; i < nconst; ++i) {
      const std::string vat = at + ".constvars[" + std::to_string(i) + "]";
      const int v = define((*constvars)[i], vat);
      jx.constvars.push_back(v);
      jx.consts.push_back(
          constant((*consts)[i], jx.types[v], at + ".consts[" + std::to_string(i) + "]"));
    }
    const json& eqns = array(member(j, at, "eqns"), at + ".eqns");
    for (std::size_t e = 0; e < eqns.size(); ++e) {
      const std::string eat = at + ".eqns[" + std::to_string(e) + "]";
      if (++equations_ > kMaxEquations) {
        throw InputError(eat, "more than " + std::to_string(kMaxEquations) + " equations");
      }
      const json& ej = eqns[e];
      Eqn q;
      q.primitive = string(member(ej, eat, "primitive"), eat + ".primitive");
      q.where = eat;
      if (const json* src = optional(ej, "source"); src && src->is_string()) {
        q.source = excerpt(src->get<std::string>());
      }
      if (const json* params = optional(ej, "params")) {
        if (!params->is_object()) {
          throw InputError(eat + ".params", std::string("must be an object, not ") + kind(*params));
        }
        // Key by key: a copy of the whole params would copy the nested jaxprs (and their
        // constants) once per level of nesting, 64 levels of a 1 GiB file.
        q.params = json::object();
        for (const auto& [key, value] : params->items()) {
          if (!holds_jaxpr(q.primitive, key)) {
            q.params[key] = value;
            continue;
          }
          q.subs.emplace_back(key, jaxpr(value, nested_where(eat, key, depth + 1), depth + 1));
          q.params[key] = nullptr;
        }
      } else {
        q.params = json::object();
      }
      if (const char* key = nested_jaxpr_param(q.primitive)) {
        if (q.sub(key) == nullptr) throw InputError(eat + ".params", std::string("missing ") + key);
      } else if (find_primitive(q.primitive) == nullptr) {
        throw InputError(eat, "unknown primitive " + excerpt(q.primitive) +
                                  (q.source.empty() ? "" : " at " + q.source));
      }
      const json& in = array(member(ej, eat, "in"), eat + ".in");
      for (std::size_t i = 0; i < in.size(); ++i) {
        q.in.push_back(atom(in[i], eat + ".in[" + std::to_string(i) + "]"));
      }
      const json& outs = array(member(ej, eat, "out"), eat + ".out");
      for (std::size_t i = 0; i < outs.size(); ++i) {
        q.out.push_back(define(outs[i], eat + ".out[" + std::to_string(i) + "]"));
      }
      jx.eqns.push_back(std::move(q));
    }
    const json& outvars = array(member(j, at, "outvars"), at + ".outvars");
    for (std::size_t i = 0; i < outvars.size(); ++i) {
      jx.outvars.push_back(atom(outvars[i], at + ".outvars[" + std::to_string(i) + "]"));
    }
    mark_last_uses(jx);
    return out;
  }

  Const constant(const json& j, const Type& type, const std::string& at) {
    Const c;
    c.dtype = dtype(member(j, at, "dtype"), at + ".dtype");
    if (c.dtype != type.dtype) throw InputError(at + ".dtype", "differs from its constvar's");
    const json& shape = array(member(j, at, "shape"), at + ".shape");
    std::uint64_t elements = 1;
    for (std::size_t i = 0; i < shape.size() && i < 9; ++i) {
      const auto d = integer(shape[i], at + ".shape[" + std::to_string(i) + "]", 0, kMaxElements);
      c.shape.push_back(static_cast<std::size_t>(d));
      elements *= static_cast<std::uint64_t>(d);
      if (elements > kMaxElements) throw InputError(at + ".shape", "more than 2^31 elements");
    }
    if (shape.size() != type.shape.size()) {
      throw InputError(at + ".shape", "differs from its constvar's rank");
    }
    for (std::size_t i = 0; i < c.shape.size(); ++i) {
      if (!type.shape[i].is_constant() || std::uint64_t(type.shape[i].constant()) != c.shape[i]) {
        throw InputError(at + ".shape", "differs from its constvar's type");
      }
    }
    const json& data = array(member(j, at, "data"), at + ".data");
    if (data.size() != elements) {
      throw InputError(at + ".data", "holds " + std::to_string(data.size()) +
                                         " values, its shape " + std::to_string(elements));
    }
    c.data.reserve(elements);
    for (std::size_t i = 0; i < data.size(); ++i) {
      c.data.push_back(
          static_cast<float>(number(data[i], c.dtype, at + ".data[" + std::to_string(i) + "]")));
    }
    return c;
  }

  // Each equation learns which variables it uses for the last time in its jaxpr (not the
  // outvars, which live to the end).
  static void mark_last_uses(Jaxpr& jx) {
    std::vector<int> last(jx.types.size(), -1);
    for (std::size_t e = 0; e < jx.eqns.size(); ++e) {
      for (const Atom& a : jx.eqns[e].in) {
        if (!a.is_literal()) last[static_cast<std::size_t>(a.var)] = static_cast<int>(e);
      }
    }
    for (const Atom& a : jx.outvars) {
      if (!a.is_literal()) last[static_cast<std::size_t>(a.var)] = -1;
    }
    for (std::size_t v = 0; v < last.size(); ++v) {
      if (last[v] >= 0) jx.eqns[static_cast<std::size_t>(last[v])].last_use.push_back(int(v));
    }
  }

  ArgInfo arg(const json& j, const std::string& at, bool with_type) {
    ArgInfo a;
    a.name = name(member(j, at, "name"), at + ".name");
    if (!with_type) return a;
    a.dtype = dtype(member(j, at, "dtype"), at + ".dtype");
    const json& shape = array(member(j, at, "shape"), at + ".shape");
    if (shape.size() > 8) throw InputError(at + ".shape", "more than 8 dimensions");
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const std::string dat = at + ".shape[" + std::to_string(i) + "]";
      if (shape[i].is_string()) {
        a.shape.push_back(string(shape[i], dat));
        DimExpr::parse(a.shape.back(), dat);  // well-formed
      } else {
        a.shape.push_back(std::to_string(integer(shape[i], dat, 0, kMaxElements)));
      }
    }
    return a;
  }

  std::vector<ArgInfo> args(const json& root, const char* key, bool with_type) {
    const json& list = array(member(root, "", key), key);
    std::vector<ArgInfo> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
      out.push_back(arg(list[i], at, with_type));
      if (!seen.insert(out.back().name).second) {
        throw InputError(at + ".name", "duplicate name " + excerpt(out.back().name));
      }
    }
    return out;
  }

  Export export_of(const json& j, const std::string& at) {
    Export x;
    x.where = at;
    const json& mesh = array(member(j, at, "mesh"), at + ".mesh");
    for (std::size_t i = 0; i < mesh.size(); ++i) {
      const std::string mat = at + ".mesh[" + std::to_string(i) + "]";
      if (!mesh[i].is_array() || mesh[i].size() != 2) {
        throw InputError(mat, "must be [axis name, size]");
      }
      x.mesh.emplace_back(string(mesh[i][0], mat + "[0]"),
                          static_cast<int>(integer(mesh[i][1], mat + "[1]", 1, 1024)));
    }
    check_mesh(at + ".mesh", x.mesh);
    if (const json* dims = optional(j, "dims")) {
      for (std::size_t i = 0; i < array(*dims, at + ".dims").size(); ++i) {
        x.dims.push_back(string((*dims)[i], at + ".dims[" + std::to_string(i) + "]"));
      }
    }
    x.jaxpr = std::move(*jaxpr(member(j, at, "jaxpr"), at + ".jaxpr", 0));
    return x;
  }

 private:
  std::size_t equations_ = 0;
  std::string head_;  // the path of the latest jaxpr 4 deep
};

// "line 2, column 5 (byte 12)" of the 1-based offset `byte` in `text`.
std::string position(const std::string& text, std::size_t byte) {
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  std::size_t line = 1, start = 0;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(end - start + 1) +
         " (byte " + std::to_string(byte) + ")";
}

// The file's JSON. It is read whole (within `max_bytes`, through JsonSource's bounds: a FIFO
// must start within `open_wait`), its nesting counted in one pass before the parser sees it, and
// parsed from memory: nlohmann's contiguous input is several times faster than a byte iterator
// (mlp-train's 178 KB file: 7 ms of a run, measured 2026-12-01).
json parse_bounded(const std::string& path, std::uint64_t max_bytes,
                   std::chrono::milliseconds open_wait) {
  JsonSource source(path, max_bytes, open_wait);
  std::string text;
  for (std::string_view w; !(w = source.window(std::size_t{1} << 16)).empty();) {
    text.append(w);
    source.skip(w.size());
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError("", "the file is empty");
  }
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    throw InputError("", "invalid JSON at " + position(text, nul + 1) + ": unexpected NUL byte");
  }
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxProgramJsonDepth) {
        throw InputError("",
                         "nesting deeper than " + std::to_string(kMaxProgramJsonDepth) + " levels");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    // It refuses a key given twice in one object, as the case reader does: nlohmann would keep
    // the last value silently ("version": 1, "version": 2 reads as 2).
    KeyTracker keys;
    return json::parse(text, [&keys](int, json::parse_event_t event, json& parsed) {
      keys.see(event, parsed);
      return true;
    });
  } catch (const json::parse_error& e) {
    throw InputError(
        "", "invalid JSON at " + position(text, e.byte) + ": " + parse_error_reason(e.what()));
  } catch (const json::exception& e) {
    // A number beyond double's range ("1e400") is nlohmann's out_of_range, not a parse error.
    std::string what = e.what();
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
    throw InputError("", "invalid JSON: " + excerpt(what));
  }
}

}  // namespace

ProgramFile read_program_file(const std::string& path, std::uint64_t max_bytes,
                              std::chrono::milliseconds open_wait) {
  ProgramFile p;
  p.path = display_name(path);
  try {
    const json root = parse_bounded(path, max_bytes, open_wait);
    Reader r;
    if (!root.is_object()) throw InputError("", "a program file must be a JSON object");
    const json& format = r.member(root, "", "format");
    if (!format.is_string() || format.get<std::string>() != "meshrun-program") {
      throw InputError("format", "must be \"meshrun-program\" (is this a program file?)");
    }
    const json& version = r.member(root, "", "version");
    if (!version.is_number_integer() || version.get<std::int64_t>() != 1) {
      throw InputError("version", "unknown format version " + excerpt(version.dump()) +
                                      " (this meshrun reads version 1)");
    }
    p.name = r.string(r.member(root, "", "name"), "name");
    if (const json* ex = r.optional(root, "exercise")) {
      p.exercise = r.string(*ex, "exercise");
      if (!known_exercise(p.exercise)) {
        throw InputError("exercise",
                         excerpt(p.exercise) +
                             " is not an exercise meshrun grades (dp-step, tp-mlp, mlp-train)");
      }
    }
    p.inputs = r.args(root, "inputs", true);
    p.outputs = r.args(root, "outputs", false);
    const json& exports = r.array(r.member(root, "", "exports"), "exports");
    if (exports.empty()) throw InputError("exports", "must hold at least one export");
    for (std::size_t i = 0; i < exports.size(); ++i) {
      const std::string at = "exports[" + std::to_string(i) + "]";
      p.exports.push_back(r.export_of(exports[i], at));
      const Jaxpr& jx = p.exports.back().jaxpr;
      if (jx.invars.size() != p.inputs.size()) {
        throw InputError(at + ".jaxpr.invars", "holds " + std::to_string(jx.invars.size()) +
                                                   " inputs, the program " +
                                                   std::to_string(p.inputs.size()));
      }
      if (jx.outvars.size() != p.outputs.size()) {
        throw InputError(at + ".jaxpr.outvars", "holds " + std::to_string(jx.outvars.size()) +
                                                    " outputs, the program " +
                                                    std::to_string(p.outputs.size()));
      }
    }
  } catch (const InputError& e) {
    throw InputError(p.path, e.what());
  }
  return p;
}

}  // namespace meshrun::interp
