// Rewriting a case's `expected` and nothing else (`meshrun check --update`): a small scanner finds
// the byte range of the top-level "expected" value -- or, when there is none, the end of the last
// top-level value, where `,"expected":...` goes -- so every other byte of the file (key order,
// other keys, spacing, the numbers' spelling in `input`) stays exactly as it was.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace meshrun
