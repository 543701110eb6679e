// Rewriting a case's `expected` and nothing else (`meshrun check --update`): a small scanner finds
// the byte range of the top-level "expected" value -- or, when there is none, the end of the last
// top-level value, where `,"expected":...` goes -- so every other byte of the file (key order,
// other keys, spacing, the numbers' spelling in `input`) stays exactly as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/case_reader.hpp"

namespace meshrun {

struct ExpectedSpan {
  bool present = false;
  std::size_t begin = 0, end = 0;  // present: the value's bytes [begin, end); else begin == end
                                   // is where to insert (just after the last top-level value)
  bool empty_object = false;       // the case is `{}`: insert without a leading comma
};

// Scans `text`, which must hold one JSON object. Throws InputError(field "expected") for text that
// is not one (unterminated string or brackets, trailing bytes) or that holds "expected" twice.
ExpectedSpan find_expected(std::string_view text);

// `text` with its top-level "expected" value replaced by (or, when absent, a new "expected" member
// holding) `value`, which must be one JSON value.
std::string with_expected(std::string_view text, std::string_view value);

// The bytes of the case file at `path` as `check --update` runs it; "" for a file larger than
// `max_bytes` (the run refuses it unread). Throws OutputError when it cannot be read.
std::string case_bytes(const std::string& path, std::uint64_t max_bytes);

// Blesses the case file at `path`: replaces it (atomically, OutputFile's kAtomic: mode, owner and
// group kept) by with_expected(ran_bytes, value) -- a compare-and-swap, done only while the file
// still holds `ran_bytes`, the bytes the run read (an editor's save or a `git checkout` during the
// run is not overwritten with results of the old inputs; the window left is the microseconds
// between the comparison and the rename). Returns "" when written, else why it was not:
//   - "read-only (mode 0444); ..." -- the owner's write bit is off, or this user may not write it
//     (also for root, whom the OS would let: a read-only case is the user's "do not touch");
//   - "has 2 hard links, ..." -- the rename would split them (the others keep the old text);
//   - "changed during the run; ..." -- the case file no longer holds `ran_bytes`;
//   - "input.w's x.npy changed during the run; ..." -- one of `inputs`, the .npy files the run
//     read, is not the file it was (another file, size, modification or change time).
// Throws InputError/OutputError when the file cannot be written.
std::string rewrite_expected(const std::string& path, const std::string& ran_bytes,
                             std::string_view value, std::uint64_t max_bytes,
                             const std::vector<NpyFile>& inputs = {});

}  // namespace meshrun
