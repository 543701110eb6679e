#include "io/case_reader.hpp"

#include <algorithm>
#include <array>

#include "io/json_text.hpp"
#include "io/tensor_json.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

using nlohmann::json;

constexpr std::array<const char*, 6> kCaseKeys = {"problem", "name", "description", "input",
                                                  "expected", "mesh"};

bool is_case_key(const std::string& key) {
  return std::find(kCaseKeys.begin(), kCaseKeys.end(), key) != kCaseKeys.end();
}

// A document is a case when it uses any case key; otherwise it is a bare input object. (No
// program input is named like a case key, so the two cannot be confused.)
bool is_case(const json& doc) {
  return std::any_of(doc.items().begin(), doc.items().end(),
                     [](const auto& item) { return is_case_key(item.key()); });
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string names_of(const std::vector<ArgDef>& args) {
  std::string s;
  for (const ArgDef& a : args) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

std::string program_names() {
  std::string s;
  for (const ProgramDef* p : all_programs()) s += (s.empty() ? "" : ", ") + p->name;
  return s;
}

// `object` (at `field`) must have exactly the keys of `args`. Unknown keys are reported first:
// a misspelt key is more telling than the missing one it stands for.
void check_keys(const json& object, const std::vector<ArgDef>& args, const std::string& field) {
  if (!object.is_object()) throw InputError(field, "must be an object, got " + json_kind(object));
  for (const auto& item : object.items()) {
    const bool known = std::any_of(args.begin(), args.end(),
                                   [&](const ArgDef& a) { return a.name == item.key(); });
    if (!known) {
      throw InputError(field, "unknown key " + quoted(item.key()) + " (expected " +
                                  names_of(args) + ")");
    }
  }
  for (const ArgDef& a : args) {
    if (!object.contains(a.name)) throw InputError(field, "missing key " + quoted(a.name));
  }
}

std::string string_field(const json& doc, const std::string& key, bool required) {
  if (!doc.contains(key)) {
    if (required) throw InputError("", "missing key " + quoted(key));
    return "";
  }
  const json& v = doc.at(key);
  if (!v.is_string()) throw InputError(key, "must be a string, got " + json_kind(v));
  return v.get<std::string>();
}

void check_case_keys(const json& doc) {
  for (const auto& item : doc.items()) {
    if (!is_case_key(item.key())) {
      throw InputError("", "unknown key " + quoted(item.key()) +
                               " (expected problem, name, description, input, expected, mesh)");
    }
  }
}

// The program the case is for: `asked` if given (and the case must agree), else its "problem".
const ProgramDef* resolve_program(const std::string& problem, const ProgramDef* asked) {
  if (asked != nullptr) {
    if (!problem.empty() && problem != asked->name) {
      throw InputError("problem", "the case is for " + quoted(problem) + ", not " +
                                      quoted(asked->name));
    }
    return asked;
  }
  const ProgramDef* found = find_program(problem);
  if (found == nullptr) {
    throw InputError("problem", "no program named " + quoted(problem) + " (known: " +
                                    program_names() + ")");
  }
  return found;
}

// Converts each of `args` from `object` (keys already checked), binding their symbolic dims.
std::vector<Tensor> read_tensors(const json& object, const std::vector<ArgDef>& args,
                                 const std::string& prefix, DimBinder& binder) {
  std::vector<Tensor> tensors;
  tensors.reserve(args.size());
  for (const ArgDef& a : args) {
    const std::string field = prefix + "." + a.name;
    Tensor t = tensor_from_json(object.at(a.name), a.dims, field);
    binder.bind(field, a.dims, t.shape);
    tensors.push_back(std::move(t));
  }
  return tensors;
}

// The "mesh" key: {"data": 2, "model": 4}, axes ordered as the program's default mesh orders
// them (a JSON object has no order), unknown ones after by name.
MeshShape read_mesh(const json& v, const ProgramDef& program) {
  if (!v.is_object()) throw InputError("mesh", "must be an object, got " + json_kind(v));
  const MeshShape order = program.mesh;
  MeshShape mesh;
  for (const auto& item : v.items()) {
    const json& size = item.value();
    if (!size.is_number_integer() || size.get<long long>() < 1 || size.get<long long>() > 1024) {
      throw InputError("mesh." + item.key(), "must be an integer from 1 to 1024");
    }
    mesh.emplace_back(item.key(), size.get<int>());
  }
  auto rank = [&](const std::string& axis) {
    const int p = mesh_axis_position(order, axis);
    return p < 0 ? static_cast<int>(order.size()) : p;
  };
  std::stable_sort(mesh.begin(), mesh.end(),
                   [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  check_mesh("mesh", mesh);
  return mesh;
}

void read_document(const json& doc, const ProgramDef* asked, int devices, const MeshShape& flag_mesh,
                   Case& c) {
  if (!doc.is_object()) {
    throw InputError("", "the top level must be a JSON object, got " + json_kind(doc));
  }
  const bool full_case = is_case(doc);
  if (full_case) {
    check_case_keys(doc);
    c.problem = string_field(doc, "problem", true);
    c.name = string_field(doc, "name", true);
    c.description = string_field(doc, "description", false);
    if (!doc.contains("input")) throw InputError("", "missing key \"input\"");
  } else if (asked == nullptr) {
    throw InputError("", "missing key \"problem\"");
  }
  const ProgramDef& program = *resolve_program(c.problem, asked);
  c.problem = program.name;
  if (full_case && doc.contains("mesh")) c.mesh = read_mesh(doc.at("mesh"), program);
  const MeshShape mesh = run_mesh(program, flag_mesh, c.mesh, devices);

  const json& input = full_case ? doc.at("input") : doc;
  check_keys(input, program.inputs, "input");
  DimBinder binder;
  c.inputs = read_tensors(input, program.inputs, "input", binder);
  for (std::size_t i = 0; i < program.inputs.size(); ++i) {
    const ArgDef& a = program.inputs[i];
    check_spec_axes("input." + a.name, a.spec, mesh);
    check_divisible("input." + a.name, c.inputs[i].shape, a.spec, mesh);
  }
  if (program.check_values) program.check_values(c.inputs);

  if (full_case && doc.contains("expected")) {
    const json& expected = doc.at("expected");
    check_keys(expected, program.outputs, "expected");
    c.expected = read_tensors(expected, program.outputs, "expected", binder);
  }
}

}  // namespace

Case read_case(const std::string& path, const ProgramDef* program, int devices,
               const MeshShape& mesh) {
  MESHRUN_CHECK(devices >= 0, "the device count is validated by the caller");
  Case c;
  c.file = display_name(path);
  try {
    const json doc = parse_json_text(read_text(path));
    read_document(doc, program, devices, mesh, c);
  } catch (const InputError& e) {
    // Every message starts with the file; the inner code only knows fields.
    throw InputError(c.file, e.what());
  }
  return c;
}

}  // namespace meshrun
