// Text from outside (file names, JSON keys) shown inside meshrun's one-line messages and reports,
// so that no byte of it can break the line or forge another one.
#pragma once

#include <string>

namespace meshrun {

// `text` with every control byte (below 0x20, and 0x7f) written as \n, \t, \r or \xHH, and a
// backslash as \\ -- only when it holds a control byte; otherwise unchanged.
std::string escape_controls(const std::string& text);

// A path as a report line shows it: as is, or, when it holds a control byte, in double quotes
// with escape_controls applied (and a double quote as \").
std::string printable(const std::string& path);

}  // namespace meshrun
