// Case files: what a user hands meshrun. Either a case
//   {"problem": "dp-step", "name": "...", "description": "..."?, "mesh": {"data": 2, ...}?,
//    "input": {...}, "expected": {...}?}
// or a bare input object whose keys are the program's input names. read_case validates
// everything a program relies on (keys, types, ranks, shapes bound across inputs, divisibility
// by the device count, float32 range, the program's own value checks) so the mesh only ever sees
// well-formed inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/json_text.hpp"
#include "io/npy.hpp"
#include "programs/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

// A .npy file a case's input names: the field ("input.w") and the path as opened.
struct NpyFile {
  std::string field, path;
  FileStamp stamp;  // as it was read
};

struct Case {
  std::string file;         // as shown in messages ("<stdin>" for "-")
  std::string problem;      // the program's name
  std::string name;         // "" for a bare input object
  std::string description;  // optional
  // The optional "mesh" key, {"data": 2, "model": 4}; empty when absent. JSON objects are
  // unordered, so the axes come in the program's default mesh order (others after, in file order).
  std::vector<std::pair<std::string, int>> mesh;
  // In ProgramDef::inputs order. A float32 .npy array is not copied: its Tensor here holds the
  // shape only (no data), its values stay in the file's mapping (`mapped`, io/npy.hpp), and each
  // device's block is read from there. input_refs() sees every input's values.
  std::vector<Tensor> inputs;
  std::vector<MappedArray> mapped;              // per input; set when it stays mapped
  std::optional<std::vector<Tensor>> expected;  // in ProgramDef::outputs order
  std::vector<NpyFile> npy_files;               // every .npy file the inputs name, in input order
  std::uint64_t bytes = 0;  // read: the case file and the .npy files it names (--timings)

  // Every input, from its Tensor or its mapping: what shard_map, check_values and flops take.
  std::vector<TensorRef> input_refs() const;
};

// Reads `path` ("-" = stdin) for `program` (nullptr: the case's "problem" names it; a bare input
// object then cannot be read) and checks it against the mesh it will run on: run_mesh(program,
// `mesh` (--mesh, empty if not given), the case's "mesh", `devices` (--devices, 0 if not given)).
// Throws InputError whose what() is one line: the file, the JSON field (input fields are always
// "input.<name>", also in a bare input object), and what is wrong, e.g.
// "case.json: input.x: 12 rows are not divisible by 8 devices". An input larger than
// `max_input_bytes` is refused before it is read whole; a case file that is a FIFO must start
// arriving within `open_wait` (--timeout).
Case read_case(const std::string& path, const ProgramDef* program, int devices,
               const std::vector<std::pair<std::string, int>>& mesh = {},
               std::uint64_t max_input_bytes = kDefaultMaxInputBytes,
               std::chrono::milliseconds open_wait = std::chrono::seconds(10));

}  // namespace meshrun
