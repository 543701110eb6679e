// Exercise files (exercise.hpp): read with the care of a program file.
#include "grade/exercise.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <chrono>
#include <cstdint>
#include <map>

#include "interp/program.hpp"
#include "interp/program_json.hpp"
#include "interp/reader_fields.hpp"
#include "grade/rule_kinds.hpp"
#include "grade/rules.hpp"
#include "io/json_text.hpp"
#include "programs/program.hpp"
#include "shard/mesh_shape.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;
using R = FieldReader;

constexpr const char* kTopKeys[] = {"format",    "version", "name", "summary",
                                    "inputs",    "outputs", "mesh", "meshes",
                                    "reference", "cases",   "rules"};
constexpr const char* kArgKeys[] = {"name", "dtype", "shape", "spec", "positive"};

void only_keys(const json& obj, const std::string& at, const std::vector<std::string>& keys) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
      throw InputError(at.empty() ? key : at + "." + key,
                       "unknown field (this one takes " + known + ")");
    }
  }
}

MeshShape mesh_of(const json& j, const std::string& at) {
  MeshShape mesh;
  const json& axes = R::array(j, at);
  if (axes.empty()) throw InputError(at, "must name at least one axis");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::string ai = at + "[" + std::to_string(i) + "]";
    const json& pair = R::array(axes[i], ai);
    if (pair.size() != 2) throw InputError(ai, "must be [axis name, size]");
    const std::string name = R::label(pair[0], ai + "[0]");
    for (const auto& [other, n] : mesh)
      if (other == name) throw InputError(ai + "[0]", "axis \"" + name + "\" named twice");
    mesh.emplace_back(name, static_cast<int>(R::integer(pair[1], ai + "[1]", 1, 1024)));
  }
  return mesh;
}

bool has_axis(const MeshShape& mesh, const std::string& axis) {
  return std::any_of(mesh.begin(), mesh.end(), [&](const auto& a) { return a.first == axis; });
}

// An input or an output: ArgDef (name, dims, spec) and its dtype.
ArgDef arg_of(const json& j, const std::string& at, const MeshShape& mesh, DType* dtype) {
  if (!j.is_object()) throw InputError(at, std::string("must be an object, not ") + R::kind(j));
  only_keys(j, at, {std::begin(kArgKeys), std::end(kArgKeys)});
  ArgDef a;
  a.name = R::name(R::member(j, at, "name"), at + ".name");
  *dtype = R::dtype(R::member(j, at, "dtype"), at + ".dtype");
  const json& shape = R::array(R::member(j, at, "shape"), at + ".shape");
  if (shape.size() > kMaxRank) throw InputError(at + ".shape", "more than 8 dimensions");
  for (std::size_t d = 0; d < shape.size(); ++d)
    a.dims.push_back(R::label(shape[d], at + ".shape[" + std::to_string(d) + "]"));
  const json& spec = R::array(R::member(j, at, "spec"), at + ".spec");
  if (spec.size() > shape.size())
    throw InputError(at + ".spec", "has more entries than the shape has dimensions");
  std::vector<std::vector<std::string>> dims;
  for (std::size_t d = 0; d < spec.size(); ++d) {
    const std::string sd = at + ".spec[" + std::to_string(d) + "]";
    dims.emplace_back();
    if (spec[d].is_null()) continue;
    const std::string axis = R::label(spec[d], sd);
    if (!has_axis(mesh, axis)) throw InputError(sd, "axis \"" + axis + "\" is not an axis of mesh");
    dims.back().push_back(axis);
  }
  a.spec = PartitionSpec(std::move(dims));
  return a;
}

// A rule: a known kind, each field it takes of its type, naming the exercise's own inputs,
// outputs and axes, no field it does not take.
void check_rule(const json& r, const std::string& at, const Exercise& ex) {
  if (!r.is_object()) throw InputError(at, std::string("must be an object, not ") + R::kind(r));
  const std::string kind = R::label(R::member(r, at, "rule"), at + ".rule");
  const RuleKind* k = rule_kinds().find(kind);
  if (k == nullptr) {
    throw InputError(at + ".rule", "unknown rule kind \"" + kind + "\"" +
                                       " (known: " + rule_kinds().names() + ")");
  }
  std::vector<std::string> keys = {"rule", "says"};
  for (const RuleField& f : k->fields) keys.push_back(f.name);
  only_keys(r, at, keys);
  if (const json* says = R::optional(r, "says")) R::label(*says, at + ".says");
  const auto in_of = [&](const std::vector<ArgDef>& args, const json& j, const std::string& fa,
                         const char* what) {
    const std::string n = R::label(j, fa);
    if (std::none_of(args.begin(), args.end(), [&](const ArgDef& a) { return a.name == n; }))
      throw InputError(fa, "\"" + n + "\" is not an " + what + " of " + ex.name);
  };
  for (const RuleField& f : k->fields) {
    const std::string fa = at + "." + f.name;
    const json* v = R::optional(r, f.name.c_str());
    if (v == nullptr) {
      if (f.required) throw InputError(fa, "missing (rule " + kind + " needs it)");
      continue;
    }
    switch (f.type) {
      case FieldType::kInput:
        in_of(ex.def.inputs, *v, fa, "input");
        break;
      case FieldType::kOutput:
        in_of(ex.def.outputs, *v, fa, "output");
        break;
      case FieldType::kInputs:
      case FieldType::kOutputs:
      case FieldType::kTexts:
      case FieldType::kCollectives: {
        const json& list = R::array(*v, fa);
        if (list.empty() && f.type != FieldType::kOutputs)
          throw InputError(fa, "must name at least one");
        for (std::size_t i = 0; i < list.size(); ++i) {
          const std::string ai = fa + "[" + std::to_string(i) + "]";
          if (f.type == FieldType::kInputs) in_of(ex.def.inputs, list[i], ai, "input");
          if (f.type == FieldType::kOutputs) in_of(ex.def.outputs, list[i], ai, "output");
          if (f.type == FieldType::kTexts) R::label(list[i], ai);
          if (f.type == FieldType::kCollectives) {
            const std::string op = R::label(list[i], ai);
            const std::vector<std::string>& known = collective_names();
            if (std::find(known.begin(), known.end(), op) == known.end()) {
              std::string names;
              for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
              throw InputError(ai, "unknown collective \"" + op + "\" (known: " + names + ")");
            }
          }
        }
        break;
      }
      case FieldType::kAxis: {
        const std::string axis = R::label(*v, fa);
        if (!has_axis(ex.def.mesh, axis))
          throw InputError(fa, "axis \"" + axis + "\" is not an axis of mesh");
        break;
      }
      case FieldType::kDim:
        R::integer(*v, fa, 0, 7);
        break;
      case FieldType::kText:
        R::label(*v, fa);
        break;
      case FieldType::kAlong: {
        const std::string along = R::label(*v, fa);
        if (along != "rows" && along != "columns")
          throw InputError(fa, "must be \"rows\" or \"columns\", not \"" + along + "\"");
        break;
      }
      case FieldType::kFlag:
        if (!v->is_boolean())
          throw InputError(fa, std::string("must be true or false, not ") + R::kind(*v));
        break;
      case FieldType::kSpec: {
        const json& list = R::array(*v, fa);
        if (list.empty() || list.size() > 2) throw InputError(fa, "must have 1 or 2 entries");
        for (std::size_t i = 0; i < list.size(); ++i) {
          const std::string ai = fa + "[" + std::to_string(i) + "]";
          if (list[i].is_null()) continue;
          const std::string axis = R::label(list[i], ai);
          if (!has_axis(ex.def.mesh, axis))
            throw InputError(ai, "axis \"" + axis + "\" is not an axis of mesh");
        }
        break;
      }
      case FieldType::kThrough:
        if (!v->is_object())
          throw InputError(fa, std::string("must be an object, not ") + R::kind(*v));
        only_keys(*v, fa, {"target", "loss"});
        in_of(ex.def.inputs, R::member(*v, fa, "target"), fa + ".target", "input");
        in_of(ex.def.outputs, R::member(*v, fa, "loss"), fa + ".loss", "output");
        break;
    }
  }
}

// check_values: each input marked "positive" holds a finite number > 0.
std::function<void(const std::vector<TensorRef>&)> positive_check(std::vector<std::size_t> which,
                                                                  std::vector<std::string> names) {
  if (which.empty()) return {};
  return [which, names](const std::vector<TensorRef>& in) {
    for (std::size_t k = 0; k < which.size(); ++k) {
      const TensorRef& t = in.at(which[k]);
      MESHRUN_CHECK(t.data != nullptr || t.size() == 0, "input." + names[k] + ": no data");
      for (std::size_t e = 0; e < t.size(); ++e) {
        if (!std::isfinite(t.data[e]) || !(t.data[e] > 0.0f))
          throw InputError("input." + names[k], "must be a finite number > 0");
      }
    }
  };
}

// The shipped exercises, parsed once from the embedded files: a file that does not parse is a
// build defect, caught by exercise_test (every embedded file parses).
const std::vector<std::shared_ptr<const Exercise>>& shipped() {
  static const std::vector<std::shared_ptr<const Exercise>> all = [] {
    std::vector<std::shared_ptr<const Exercise>> out;
    for (const EmbeddedFile& f : embedded_exercise_files()) {
      std::string folder = f.path;
      folder = folder.substr(0, folder.rfind('/'));
      out.push_back(parse_exercise(f.text, f.path, folder));
    }
    return out;
  }();
  return all;
}

}  // namespace

std::shared_ptr<Exercise> exercise_from_json(const json& root) {
  auto ex = std::make_shared<Exercise>();
  ex->rules_for = exercise_rules;  // the interpreter builds a graded program's rules so
  if (!root.is_object()) throw InputError("", "an exercise file must be a JSON object");
  only_keys(root, "", {std::begin(kTopKeys), std::end(kTopKeys)});
  const json& format = R::member(root, "", "format");
  if (!format.is_string() || format.get<std::string>() != "meshrun-exercise")
    throw InputError("format", "must be \"meshrun-exercise\" (is this an exercise file?)");
  const json& version = R::member(root, "", "version");
  if (!version.is_number_integer() || version.get<std::int64_t>() != 1)
    throw InputError("version", "unknown format version " + excerpt(version.dump()) +
                                    " (this meshrun reads version 1)");
  ex->name = R::name(R::member(root, "", "name"), "name");
  ProgramDef& def = ex->def;
  def.name = ex->name;
  def.summary = R::string(R::member(root, "", "summary"), "summary");
  def.mesh = mesh_of(R::member(root, "", "mesh"), "mesh");
  def.axis = def.mesh.size() == 1 ? def.mesh.front().first : "";
  // The meshes a submission is exported for: each with the default mesh's axes (the rules name
  // them), none twice, the default among them (a run on it needs its export).
  const json& meshes = R::array(R::member(root, "", "meshes"), "meshes");
  const auto axes = [](const MeshShape& m) {
    std::vector<std::string> names;
    for (const auto& [axis, size] : m) names.push_back(axis);
    return names;
  };
  for (std::size_t i = 0; i < meshes.size(); ++i) {
    const std::string at = "meshes[" + std::to_string(i) + "]";
    MeshShape m = mesh_of(meshes[i], at);
    if (axes(m) != axes(def.mesh))
      throw InputError(at, mesh_str(m) + " has other axes than mesh, " + mesh_str(def.mesh));
    if (std::find(ex->meshes.begin(), ex->meshes.end(), m) != ex->meshes.end())
      throw InputError(at, mesh_str(m) + " is given twice");
    ex->meshes.push_back(std::move(m));
  }
  if (std::find(ex->meshes.begin(), ex->meshes.end(), def.mesh) == ex->meshes.end())
    throw InputError("meshes", "does not hold mesh, " + mesh_str(def.mesh) +
                                   " (the default mesh needs an export too)");
  std::vector<std::size_t> positive;
  std::vector<std::string> positive_names;
  for (const char* key : {"inputs", "outputs"}) {
    const bool inputs = std::string(key) == "inputs";
    const json& list = R::array(R::member(root, "", key), key);
    if (list.empty()) throw InputError(key, "must hold at least one");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
      DType t;
      ArgDef a = arg_of(list[i], at, def.mesh, &t);
      auto& args = inputs ? def.inputs : def.outputs;
      if (std::any_of(args.begin(), args.end(), [&](const ArgDef& o) { return o.name == a.name; }))
        throw InputError(at + ".name", "\"" + a.name + "\" named twice");
      if (const json* p = R::optional(list[i], "positive")) {
        if (!p->is_boolean() || !inputs)
          throw InputError(at + ".positive", "an input's flag: true or false");
        if (p->get<bool>()) {
          positive.push_back(args.size());
          positive_names.push_back(a.name);
        }
      }
      args.push_back(std::move(a));
      (inputs ? ex->input_dtypes : ex->output_dtypes).push_back(t);
    }
  }
  ex->positive.assign(def.inputs.size(), false);
  for (const std::size_t i : positive) ex->positive[i] = true;
  def.check_values = positive_check(positive, positive_names);
  ex->reference = R::string(R::member(root, "", "reference"), "reference");
  ex->cases = R::string(R::member(root, "", "cases"), "cases");
  const json& rules = R::array(R::member(root, "", "rules"), "rules");
  for (std::size_t i = 0; i < rules.size(); ++i) {
    check_rule(rules[i], "rules[" + std::to_string(i) + "]", *ex);
    ex->rules.push_back(rules[i]);
  }
  return ex;
}

std::shared_ptr<const Exercise> parse_exercise(const std::string& text, const std::string& source,
                                               const std::string& folder) {
  try {
    std::shared_ptr<Exercise> ex = exercise_from_json(parse_program_json(text));
    ex->source = source;
    ex->folder = folder;
    return ex;
  } catch (const InputError& e) {
    throw InputError(source, e.what());
  } catch (const json::exception& e) {
    throw InputError(source, e.what());
  }
}

std::shared_ptr<const Exercise> find_exercise(const std::string& name) {
  for (const auto& ex : shipped())
    if (ex->name == name) return ex;
  return nullptr;
}

bool known_exercise(const std::string& name) { return find_exercise(name) != nullptr; }

std::string exercise_names() {
  std::string s;
  for (const auto& ex : shipped()) s += (s.empty() ? "" : ", ") + ex->name;
  return s;
}

}  // namespace meshrun::interp
