// The program file's reader: JSON in, a checked ProgramFile out (reader.hpp).
#include "interp/reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <set>
#include <unordered_map>

#include "interp/primitives.hpp"
#include "interp/program_json.hpp"
#include "interp/reader_checks.hpp"
#include "interp/reader_fields.hpp"
#include "interp/rounded_int32.hpp"
#include "io/json_text.hpp"
#include "shard/mesh_shape.hpp"
#include "support/printable.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

// Whether `key` of `primitive`'s params holds a nested jaxpr (or a list of them).
bool holds_jaxpr(const std::string& primitive, const std::string& key) {
  return holds_jaxpr_param(primitive, key);
}

// A param's key and every string in its value free of control bytes: params are shown in
// traces and messages (axis names, a jit's name), and an ESC there would reach the terminal.
void printable_only(const std::string& key, const nlohmann::json& value, const std::string& at) {
  const auto check = [&](const std::string& s) {
    if (holds_control(s)) {
      throw InputError(at + "." + escape_controls(excerpt(key)),
                       "\"" + escape_controls(excerpt(s)) + "\" holds a control byte");
    }
  };
  check(key);
  std::vector<const nlohmann::json*> todo{&value};
  while (!todo.empty()) {
    const nlohmann::json* v = todo.back();
    todo.pop_back();
    if (v->is_string()) {
      check(v->get_ref<const std::string&>());
    } else if (v->is_object()) {
      for (const auto& [k, sub] : v->items()) {
        check(k);
        todo.push_back(&sub);
      }
    } else if (v->is_array()) {
      for (const auto& sub : *v) todo.push_back(&sub);
    }
  }
}

class Reader : public FieldReader {
 public:
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
        if (optional(a, "lit") != nullptr) {
          throw InputError(aat, "holds both var and lit: an atom is a variable or a literal");
        }
        const std::int64_t id = integer(*v, aat + ".var", 0, INT32_MAX);
        const auto it = index.find(id);
        if (it == index.end()) {
          throw InputError(aat, "variable " + std::to_string(id) + " is used before it is defined");
        }
        r.var = it->second;
        return r;
      }
      r.dtype = dtype(member(a, aat, "dtype"), aat + ".dtype");
      const json& lit = member(a, aat, "lit");
      // Issue #49: an int32 literal of 2^25 or more, held rounded (interp/rounded_int32.hpp)
      r.literal =
          r.dtype == DType::kI32 && lit.is_number() && rounded_int32_literal(lit.get<double>())
              ? lit.get<double>()
              : number(lit, r.dtype, aat + ".lit");
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
      // The document is read_program_file's own: each equation's JSON is taken (its params
      // moved, not copied) and freed once read, so the document and what is read from it are
      // never both whole in memory.
      json& ej = const_cast<json&>(eqns[e]);
      Eqn q;
      q.primitive = string(member(ej, eat, "primitive"), eat + ".primitive");
      q.where = eat;
      if (const json* src = optional(ej, "source"); src && src->is_string()) {
        // Display only (messages, traces): escaped, so no byte of it reaches a terminal raw.
        q.source = escape_controls(excerpt(src->get<std::string>()));
      }
      if (const json* params = optional(ej, "params")) {
        if (!params->is_object()) {
          throw InputError(eat + ".params", std::string("must be an object, not ") + kind(*params));
        }
        // Key by key: a copy of the whole params would copy the nested jaxprs (and their
        // constants) once per level of nesting, 64 levels of a 1 GiB file.
        q.params = json::object();
        for (auto& [key, value] : const_cast<json&>(*params).items()) {
          if (!holds_jaxpr(q.primitive, key)) {
            printable_only(key, value, eat + ".params");
            q.params[key] = std::move(value);
            continue;
          }
          if (const Primitive* holder = find_primitive(q.primitive); holder->jaxpr_list) {
            // cond's branches: a list of jaxprs, each a nested jaxpr of the same key.
            const json& list = array(value, eat + ".params." + key);
            if (list.empty()) throw InputError(eat + ".params." + key, "must hold a jaxpr");
            for (std::size_t b = 0; b < list.size(); ++b) {
              const std::string bkey = key + "[" + std::to_string(b) + "]";
              q.subs.emplace_back(key,
                                  jaxpr(list[b], nested_where(eat, bkey, depth + 1), depth + 1));
            }
          } else {
            q.subs.emplace_back(key, jaxpr(value, nested_where(eat, key, depth + 1), depth + 1));
          }
          q.params[key] = nullptr;
        }
      } else {
        q.params = json::object();
      }
      if (q.primitive == "shard_map" && q.params.contains("mesh")) {
        (void)mesh(q.params["mesh"], eat + ".params.mesh");
      }
      const Primitive* prim = find_primitive(q.primitive);
      if (prim == nullptr) {
        throw InputError(eat, "unknown primitive " + excerpt(q.primitive) +
                                  (q.source.empty() ? "" : " at " + q.source));
      }
      for (const char* key : {prim->holds_jaxpr, prim->holds_jaxpr2})
        if (key != nullptr && q.sub(key) == nullptr)
          throw InputError(eat + ".params", std::string("missing ") + key);
      const json& in = array(member(ej, eat, "in"), eat + ".in");
      for (std::size_t i = 0; i < in.size(); ++i) {
        q.in.push_back(atom(in[i], eat + ".in[" + std::to_string(i) + "]"));
      }
      const json& outs = array(member(ej, eat, "out"), eat + ".out");
      for (std::size_t i = 0; i < outs.size(); ++i) {
        q.out.push_back(define(outs[i], eat + ".out[" + std::to_string(i) + "]"));
      }
      jx.eqns.push_back(std::move(q));
      ej = json();
    }
    const json& outvars = array(member(j, at, "outvars"), at + ".outvars");
    for (std::size_t i = 0; i < outvars.size(); ++i) {
      jx.outvars.push_back(atom(outvars[i], at + ".outvars[" + std::to_string(i) + "]"));
    }
    mark_last_uses(jx);
    mark_narrow_uses(jx);
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
      const json& d = data[i];
      // Issue #49: an int32 of 2^25 or more, held rounded (interp/rounded_int32.hpp)
      const double v =
          c.dtype == DType::kI32 && d.is_number() && rounded_int32_literal(d.get<double>())
              ? d.get<double>()
              : number(d, c.dtype, at + ".data[" + std::to_string(i) + "]");
      // uint32: the value's bits in the slot (ir.hpp's DType::kU32)
      c.data.push_back(c.dtype == DType::kU32 ? u32_to_slot(static_cast<std::uint32_t>(v))
                                              : static_cast<float>(v));
    }
    return c;
  }

  ArgInfo arg(const json& j, const std::string& at, bool with_type) {
    ArgInfo a;
    a.name = name(member(j, at, "name"), at + ".name");
    if (!with_type) return a;
    a.dtype = dtype(member(j, at, "dtype"), at + ".dtype");
    if (a.dtype == DType::kU32) {
      throw InputError(at + ".dtype",
                       "uint32: meshrun takes uint32 inside a program only "
                       "(pass it as int32 or float32 and convert it there)");
    }
    const json& shape = array(member(j, at, "shape"), at + ".shape");
    if (shape.size() > 8) throw InputError(at + ".shape", "more than 8 dimensions");
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const std::string dat = at + ".shape[" + std::to_string(i) + "]";
      if (shape[i].is_string()) {
        a.shape.push_back(string(shape[i], dat));
        std::string dim;
        std::int64_t factor = 0;
        if (!DimExpr::parse(a.shape.back(), dat).solvable(&dim, &factor) || factor != 1) {
          throw InputError(dat, "must be a dimension's name or a number, not the expression \"" +
                                    escape_controls(excerpt(a.shape.back())) + "\"");
        }
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

  // An export's mesh or a shard_map's: [[axis name, size], ...], each size read whole and in
  // 1..1024 before it becomes an int (2^32 + 8 is not 8).
  static MeshShape mesh(const json& j, const std::string& at) {
    const json& list = array(j, at);
    MeshShape m;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string mat = at + "[" + std::to_string(i) + "]";
      if (!list[i].is_array() || list[i].size() != 2) {
        throw InputError(mat, "must be [axis name, size]");
      }
      m.emplace_back(label(list[i][0], mat + "[0]"),
                     static_cast<int>(integer(list[i][1], mat + "[1]", 1, 1024)));
    }
    check_mesh(at, m);
    return m;
  }

  Export export_of(const json& j, const std::string& at) {
    Export x;
    x.where = at;
    // A program of no shard_map (a plain jax.jit) is exported with no mesh: it runs on one
    // device, the mesh Mesh('device': 1) (kNoMeshAxis).
    const json& m = member(j, at, "mesh");
    x.mesh = m.is_array() && m.empty() ? MeshShape{{kNoMeshAxis, 1}} : mesh(m, at + ".mesh");
    if (const json* dims = optional(j, "dims")) {
      for (std::size_t i = 0; i < array(*dims, at + ".dims").size(); ++i) {
        const std::string dat = at + ".dims[" + std::to_string(i) + "]";
        x.dims.push_back(label((*dims)[i], dat));
        if (std::count(x.dims.begin(), x.dims.end(), x.dims.back()) > 1) {
          throw InputError(dat, "names " + escape_controls(excerpt(x.dims.back())) + " twice");
        }
      }
    }
    x.jaxpr = std::move(*jaxpr(member(j, at, "jaxpr"), at + ".jaxpr", 0));
    return x;
  }

 private:
  std::size_t equations_ = 0;
  std::string head_;  // the path of the latest jaxpr 4 deep
};

}  // namespace

ProgramFile read_program_file(const std::string& path, std::uint64_t max_bytes,
                              std::chrono::milliseconds open_wait) {
  ProgramFile p;
  p.path = display_name(path);
  try {
    json root = read_program_json(path, max_bytes, open_wait);  // freed as it is read
    // Released first if memory runs out below: the document's destructor allocates while it
    // frees (nlohmann's), and must not end the process in std::terminate.
    const std::unique_ptr<char[]> reserve(new char[std::size_t{16} << 20]);  // untouched: no RSS
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
    p.name = r.label(r.member(root, "", "name"), "name");
    if (const json* ex = r.optional(root, "exercise")) {
      p.exercise = r.label(*ex, "exercise");  // load_program finds it (exercise.hpp)
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
      check_dims_named(p.exports.back(), at);
      check_inputs_agree(p.inputs, jx, at + ".jaxpr");
      // uint32 lives inside a program only: a case file's numbers are read as float32, which
      // holds neither a uint32 beyond 2^24 nor its bits (issue #49, docs/program-format.md).
      for (std::size_t k = 0; k < jx.outvars.size(); ++k) {
        if (dtype_of(jx, jx.outvars[k]) == DType::kU32) {
          throw InputError(at + ".jaxpr.outvars[" + std::to_string(k) + "]",
                           "output " + p.outputs[k].name +
                               " is uint32: meshrun takes uint32 inside a program only "
                               "(convert it to int32 or float32)");
        }
      }
    }
  } catch (const InputError& e) {
    throw InputError(p.path, e.what());
  } catch (const std::bad_alloc&) {
    throw InputError(p.path, "out of memory");
  }
  return p;
}

}  // namespace meshrun::interp
