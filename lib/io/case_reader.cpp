#include "io/case_reader.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>

#include "io/json_summary.hpp"
#include "io/json_text.hpp"
#include "io/npy.hpp"
#include "io/tensor_json.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

using Members = std::vector<JsonSummary>;

constexpr std::array<const char*, 6> kCaseKeys = {"problem", "name",  "description",
                                                  "mesh",    "input", "expected"};

// Mesh axes are at most as many devices as --devices allows.
constexpr int kMaxAxisSize = 1024;

bool is_case_key(const std::string& key) {
  return std::find(kCaseKeys.begin(), kCaseKeys.end(), key) != kCaseKeys.end();
}

// A document is a case when it uses any case key; otherwise it is a bare input object. (No
// program input is named like a case key, so the two cannot be confused.)
bool is_case(const JsonSummary& doc) {
  return std::any_of(doc.members.begin(), doc.members.end(),
                     [](const auto& member) { return is_case_key(member.key); });
}

// The member named `key`, or nullptr (keys are unique: duplicates are rejected first).
JsonSummary* find(Members& members, const std::string& key) {
  for (JsonSummary& member : members) {
    if (member.key == key) return &member;
  }
  return nullptr;
}

// The smallest key of `members` that `known` rejects, or nullptr: unknown keys are reported in
// sorted order (the order the reader has always reported them in, whatever the file's order).
template <class Known>
const std::string* first_unknown(const Members& members, Known known) {
  const std::string* first = nullptr;
  for (const auto& member : members) {
    if (!known(member.key) && (first == nullptr || member.key < *first)) first = &member.key;
  }
  return first;
}

// A name from the input, quoted (and cut short: it may be a megabyte long).
std::string in_quotes(const std::string& s) { return "\"" + excerpt(s) + "\""; }

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
void check_keys(JsonSummary& object, const std::vector<ArgDef>& args, const std::string& field) {
  if (object.kind != JsonKind::object) {
    throw InputError(field, "must be an object, got " + kind_name(object.kind));
  }
  const auto known = [&](const std::string& key) {
    return std::any_of(args.begin(), args.end(), [&](const ArgDef& a) { return a.name == key; });
  };
  if (const std::string* key = first_unknown(object.members, known)) {
    throw InputError(field,
                     "unknown key " + in_quotes(*key) + " (expected " + names_of(args) + ")");
  }
  for (const ArgDef& a : args) {
    if (find(object.members, a.name) == nullptr) {
      throw InputError(field, "missing key " + in_quotes(a.name));
    }
  }
}

std::string string_field(Members& doc, const std::string& key, bool required) {
  const JsonSummary* v = find(doc, key);
  if (v == nullptr) {
    if (required) throw InputError("", "missing key " + in_quotes(key));
    return "";
  }
  if (v->kind != JsonKind::string) {
    throw InputError(key, "must be a string, got " + kind_name(v->kind));
  }
  return v->text;
}

void check_case_keys(const Members& doc) {
  if (const std::string* key = first_unknown(doc, is_case_key)) {
    throw InputError("", "unknown key " + in_quotes(*key) +
                             " (expected problem, name, description, mesh, input, expected)");
  }
}

// The optional "mesh": an object of axis names to sizes. A JSON object has no order (tools that
// rewrite JSON may reorder keys), so the axes are put in the program's default mesh order, others
// after them in file order.
std::vector<std::pair<std::string, int>> read_mesh(Members& doc, const ProgramDef& program) {
  std::vector<std::pair<std::string, int>> mesh;
  JsonSummary* object = find(doc, "mesh");
  if (object == nullptr) return mesh;
  if (object->kind != JsonKind::object) {
    throw InputError("mesh", "must be an object of axis sizes, got " + kind_name(object->kind));
  }
  for (const JsonSummary& size : object->members) {
    const std::string& axis = size.key;
    const bool ok = size.kind == JsonKind::number && size.number >= 1 &&
                    size.number <= kMaxAxisSize && size.number == std::floor(size.number);
    if (!ok) {
      const std::string got =
          size.kind == JsonKind::number ? number_text(size.number) : kind_name(size.kind);
      throw InputError("mesh." + excerpt(axis), "must be an integer from 1 to " +
                                                    std::to_string(kMaxAxisSize) + ", got " + got);
    }
    mesh.emplace_back(axis, static_cast<int>(size.number));
  }
  auto position = [&](const std::string& axis) {
    const int p = mesh_axis_position(program.mesh, axis);
    return p < 0 ? static_cast<int>(program.mesh.size()) : p;
  };
  std::stable_sort(mesh.begin(), mesh.end(), [&](const auto& a, const auto& b) {
    return position(a.first) < position(b.first);
  });
  check_mesh("mesh", mesh);
  return mesh;
}

// The program the case is for: `asked` if given (and the case must agree), else its "problem".
const ProgramDef* resolve_program(const std::string& problem, const ProgramDef* asked) {
  if (asked != nullptr) {
    if (!problem.empty() && problem != asked->name) {
      throw InputError("problem",
                       "the case is for " + in_quotes(problem) + ", not " + in_quotes(asked->name));
    }
    return asked;
  }
  const ProgramDef* found = find_program(problem);
  if (found == nullptr) {
    throw InputError(
        "problem", "no program named " + in_quotes(problem) + " (known: " + program_names() + ")");
  }
  return found;
}

// The .npy file an input array names as {"npy": "PATH"} (PATH relative to the case file's
// directory), or nullopt when `value` is not such an object.
std::optional<std::string> npy_reference(JsonSummary& value, const std::vector<std::string>& dims,
                                         const std::string& field, const std::string& case_path) {
  if (dims.empty() || value.kind != JsonKind::object) return std::nullopt;
  JsonSummary* npy = find(value.members, "npy");
  if (npy == nullptr) return std::nullopt;  // reported as the object it is
  const auto is_npy = [](const std::string& key) { return key == "npy"; };
  if (const std::string* key = first_unknown(value.members, is_npy)) {
    throw InputError(field, "unknown key " + in_quotes(*key) + " (expected npy)");
  }
  if (npy->kind != JsonKind::string) {
    throw InputError(field + ".npy", "must be a string (a .npy file), got " + kind_name(npy->kind));
  }
  const std::filesystem::path file(npy->text);
  if (file.is_absolute() || case_path == "-") return file.string();
  return (std::filesystem::path(case_path).parent_path() / file).string();
}

// Converts each of `args` from `object` (keys already checked), binding their symbolic dims.
// Arrays may come from .npy files when `case_path` is given (input, not expected); then `mapped`
// gets one entry per arg, set for a float32 one left in its mapping (Case::inputs).
std::vector<Tensor> read_tensors(JsonSummary& object, const std::vector<ArgDef>& args,
                                 const std::string& prefix, DimBinder& binder,
                                 const std::string* case_path, std::uint64_t* npy_bytes = nullptr,
                                 std::vector<MappedArray>* mapped = nullptr,
                                 std::vector<NpyFile>* files = nullptr) {
  std::vector<Tensor> tensors;
  tensors.reserve(args.size());
  for (const ArgDef& a : args) {
    const std::string field = prefix + "." + a.name;
    JsonSummary& value = *find(object.members, a.name);
    const std::optional<std::string> npy =
        case_path != nullptr ? npy_reference(value, a.dims, field, *case_path) : std::nullopt;
    NpyInput in;
    if (npy) {
      in = map_npy(*npy, a.dims, field);
      if (files) files->push_back({field, *npy, in.stamp});
    } else {
      in.tensor = tensor_from_json(value, a.dims, field);
    }
    std::error_code size_error;  // the file was just read; a size it will not tell counts 0
    if (npy && npy_bytes) *npy_bytes += std::filesystem::file_size(*npy, size_error) * !size_error;
    binder.bind(field, a.dims, in.tensor.shape);
    tensors.push_back(std::move(in.tensor));
    if (mapped) mapped->push_back(std::move(in.mapped));
  }
  return tensors;
}

void read_document(JsonSummary& doc, const std::string& path, const ProgramDef* asked, int devices,
                   const MeshShape& flag_mesh, Case& c) {
  if (doc.kind != JsonKind::object) {
    throw InputError("", "the top level must be a JSON object, got " + kind_name(doc.kind));
  }
  const bool full_case = is_case(doc);
  if (full_case) {
    check_case_keys(doc.members);
    // A case of a program file given on the command line (`meshrun run PROG.json CASE`, `check
    // --program`) needs no "problem" nor "name": {"input": {...}} is enough.
    const bool named = asked == nullptr || !asked->user_program;
    c.problem = string_field(doc.members, "problem", named);
    c.name = string_field(doc.members, "name", named);
    c.description = string_field(doc.members, "description", false);
    if (find(doc.members, "input") == nullptr) throw InputError("", "missing key \"input\"");
  } else if (asked == nullptr) {
    throw InputError("", "missing key \"problem\"");
  }
  const ProgramDef& program = *resolve_program(c.problem, asked);
  c.problem = program.name;
  if (full_case) c.mesh = read_mesh(doc.members, program);
  const MeshShape mesh = run_mesh(program, flag_mesh, c.mesh, devices);

  JsonSummary& input = full_case ? *find(doc.members, "input") : doc;
  check_keys(input, program.inputs, "input");
  DimBinder binder;
  c.inputs = read_tensors(input, program.inputs, "input", binder, &path, &c.bytes, &c.mapped,
                          &c.npy_files);
  for (std::size_t i = 0; i < program.inputs.size(); ++i) {
    const ArgDef& a = program.inputs[i];
    check_spec_axes("input." + a.name, a.spec, mesh);
    check_divisible("input." + a.name, c.inputs[i].shape, a.spec, mesh);
  }
  if (program.check_values) program.check_values(c.input_refs());

  if (JsonSummary* expected = full_case ? find(doc.members, "expected") : nullptr) {
    check_keys(*expected, program.outputs, "expected");
    c.expected = read_tensors(*expected, program.outputs, "expected", binder, nullptr);
  }
}

}  // namespace

std::vector<TensorRef> Case::input_refs() const {
  std::vector<TensorRef> out = refs(inputs);
  for (std::size_t i = 0; i < out.size() && i < mapped.size(); ++i)
    if (mapped[i].data != nullptr) out[i].data = mapped[i].data;
  return out;
}

Case read_case(const std::string& path, const ProgramDef* program, int devices,
               const MeshShape& mesh, std::uint64_t max_input_bytes,
               std::chrono::milliseconds open_wait) {
  MESHRUN_CHECK(devices >= 0, "the device count is validated by the caller");
  Case c;
  c.file = display_name(path);
  try {
    JsonSource source(path, max_input_bytes, open_wait);
    JsonDocument doc = parse_json_summary(source, is_case_key);
    if (doc.duplicate) {
      // Before anything else is read: with two values for one key, the rest could mean anything.
      throw InputError(doc.duplicate->path, "duplicate key " + in_quotes(doc.duplicate->key));
    }
    read_document(doc.root, path, program, devices, mesh, c);
    c.bytes += source.bytes_read();
  } catch (const InputError& e) {
    // Every message starts with the file; the inner code only knows fields.
    throw InputError(c.file, e.what());
  }
  return c;
}

}  // namespace meshrun
