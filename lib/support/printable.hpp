// Text from outside (file names, JSON keys) shown inside meshrun's one-line messages and reports,
// so that no byte of it can break the line or forge another one.
#pragma once

#include <string>

namespace meshrun {

// Whether `text` holds a control byte: below 0x20, 0x7f, or a C1 control U+0080..U+009F in
// UTF-8 (0xC2 0x80..0x9F; U+009B is CSI, a terminal's ESC [).
bool holds_control(const std::string& text);

// `text` with every control byte (below 0x20, 0x7f, and a C1 control's two bytes) written as \n,
// \t, \r or \xHH, and a backslash as \\ -- only when it holds a control byte; otherwise unchanged.
std::string escape_controls(const std::string& text);

// A path as a report line shows it: as is, or, when it holds a control byte, in double quotes
// with escape_controls applied (and a double quote as \").
std::string printable(const std::string& path);

}  // namespace meshrun
