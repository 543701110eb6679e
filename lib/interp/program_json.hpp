// The program file's JSON, read in time and memory linear in the file (issue #31): the text is
// read whole within its byte limit, then parsed by a SAX handler that builds the document itself
// and refuses, before it allocates, nesting deeper than kMaxProgramJsonDepth, more than
// kMaxProgramJsonValues values, and a key given twice in one object. nlohmann's DOM parser with a
// callback (what the reader used before) scans an array's elements at the end of each of them:
// 10^6 empty objects in one array took minutes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace meshrun::interp {

// Each nested jaxpr is about 6 JSON levels deep: 1024 lets kMaxJaxprDepth be the limit that
// speaks for jaxprs, and still refuses 100,000 nested '[' long before they cost anything.
inline constexpr int kMaxProgramJsonDepth = 1024;
// JSON values (objects, arrays, strings, numbers, booleans, nulls; a key is not a value) in one
// program file. A program of 10^6 equations (the equation limit) holds about 16-30 per equation;
// each costs the document at most ~160 bytes besides its text, so the document of the largest
// file stays within ~5 GiB whatever its shape.
inline constexpr std::uint64_t kMaxProgramJsonValues = std::uint64_t{1} << 25;

// The JSON of `path` ("-": stdin). InputError without the file name: "invalid JSON at line L,
// column C (byte B): ...", "nesting deeper than 1024 levels", "more than 33554432 JSON values",
// "exports[0].jaxpr.eqns[3]: duplicate key \"in\"", or, when the machine runs out of memory
// while building it, "out of memory after N JSON values".
nlohmann::json read_program_json(const std::string& path, std::uint64_t max_bytes,
                                 std::chrono::milliseconds open_wait);
// The same from the text itself (an exercise file, embedded or read).
nlohmann::json parse_program_json(const std::string& text);

}  // namespace meshrun::interp
