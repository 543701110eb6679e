// Validators for numeric flags, so options mean what they say: integers are decimal ("010" is ten,
// "0x8" and "1.5" are refused), reals are finite ("nan" and "inf" are refused), and each message
// says what was wanted: "--devices: must be an integer, got '1.5'".
#pragma once

#include <string>

namespace CLI {
class Validator;
}  // namespace CLI

namespace meshrun {

// A decimal integer in [min, max]; normalises the text so CLI11's own conversion (which reads a
// leading 0 as octal and 0x as hex) sees plain decimal.
CLI::Validator decimal_integer(long min, long max);

// A finite real in [min, max]; `unit` (e.g. " seconds") follows the bounds in the message.
CLI::Validator finite_real(double min, double max, const std::string& unit = "");

// A flag naming a file (`kind` "FILE") or directory ("DIR") meshrun writes: refuses an empty name
// ("must name a file").
CLI::Validator path_to_write(const std::string& kind);

// A flag or argument that names something meshrun reads or looks up (a case or program file, an
// exercise, the mesh's axes): refuses an empty word with "must name <what>". An empty word would
// otherwise read as the flag not given (`check --program ''` graded the built-in program) or fail
// later without saying which argument it was ("cannot read").
CLI::Validator names(const std::string& what, const std::string& kind);

}  // namespace meshrun
