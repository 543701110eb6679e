// Compiled with the interp layer's own include root and the ones below it (tests/CMakeLists.txt):
// the interpreter knows no exercise, so grading's headers (lib/grade/, the layer above) are not
// found. The test passes when the compiler says so.
#include "interp/program.hpp"
#include "grade/exercise.hpp"
