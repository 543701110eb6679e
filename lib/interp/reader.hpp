// Reading a program file (docs/program-format.md): untrusted input, read in bounded time and
// memory, every error one InputError line naming the file and the place
// ("prog.json: exports[0].jaxpr.eqns[3].in[1]: variable 7 is used before it is defined").
// What the reader checks: the JSON, the keys and their types, the dtypes, the dimension
// expressions, variables defined once and before use, constants as long as their shapes, the
// limits. What it cannot check without the case's shapes -- an equation's operands against its
// primitive -- check_export (eval.hpp) does before anything runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "interp/ir.hpp"
#include "interp/program_json.hpp"

namespace meshrun::interp {

inline constexpr int kMaxJaxprDepth = 64;
inline constexpr std::size_t kMaxEquations = 1'000'000;
inline constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 31;

// `path` ("-": stdin); a file larger than `max_bytes` is refused before it is read whole, a FIFO
// must start arriving within `open_wait`.
ProgramFile read_program_file(const std::string& path, std::uint64_t max_bytes,
                              std::chrono::milliseconds open_wait);

}  // namespace meshrun::interp
