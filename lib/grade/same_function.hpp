// The exercise's function on other numbers: a right program computes what the exercise's
// reference computes on any inputs of the case's shapes, not on the cases alone. A program that
// tells a case's numbers from others (every shipped case's are decimals of two places) and does
// the forbidden work only there -- a gather of every weight, multiplied by a 0/1 factor that is 1
// on decimals -- hides it from the checks by values, which run on random numbers; the same
// program does not compute the exercise's outputs on random numbers, and this sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grade/held.hpp"
#include "interp/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// Runs `lp` on the case's inputs with every float32 one not marked in `keep` (the exercise's
// "positive" inputs, lr: its domain is the case's) drawn at random in +-[0.5, 2), and the
// reference on the same; fails when an output differs from the reference's by more than
// 2e-5 (1 + the largest magnitude of that output) -- a sum in another order differs by far less,
// a program that computes something else on these numbers by far more. Then the same 256 times
// larger and 256 times smaller (the kept inputs scaled with them), within 2e-5 of the largest
// magnitude (a clip, a clamped lr or a branch right only while the numbers stay small). A draw on
// which either run fails (the checks by values fail closed on that), or the reference's outputs are
// not all finite, judges nothing; nothing is judged when the reference cannot be read. Last, at
// the cases' magnitude with zeros: the blocks of the second and last devices along each axis of
// every input split by `specs` (per input of the def) and the first row of every drawn input of
// rank 2 or more (a program that takes zeros for padding, or a zero block for nothing to pass on);
// then with the last device's block along each axis a copy of the first's, and row 1 of every
// drawn input of rank 2 or more a copy of row 0 and its column 0 one number (a ring that skips a
// block equal to its own, a batch deduplicated, a constant feature frozen); then every number
// positive and a bfloat16 (a bf16 path on bf16-exact inputs, every relu active taken as linear);
// then 5 in 8 numbers zero and every device's block along each axis a copy of the first's (blocks
// all equal taken as reduced, mostly-zero blocks sent as zero); then whole numbers of
// 2^27 to 2^29 in magnitude (a block of whole numbers computed in int32, which wraps; a program
// that fails there where the reference runs fails). On every
// draw the kept inputs are the case's times 1.171875 (and the draw's magnitude): seven significant
// digits where every case's lr has one.
// With `columns` (per input of the def: the outputs' columns, along the last dimension, scale
// with its columns -- w in matmul-2d, x in the ring, w2 and b2 in tp-mlp), one more draw at the
// cases' magnitudes on which the program runs again with every other column of those inputs
// times 2^-40: each column of the outputs marked in `column_outputs` (per output of the def) must
// be its first run's times the same, within 2e-5 of the
// column's largest (a program that sets the elements under 1e-5 of the output's largest to zero,
// "noise cleanup", computes something else on the small columns).
// With `apart` (an input whose slice 0 along its rows or columns the marked outputs' other
// slices do not depend on: x's rows and out's in matmul-2d, tp-mlp and the ring, y's columns and
// w's and b's in dp-step), one more draw at the cases' magnitudes on which the program runs again
// with that slice times 2^20: every other slice of those outputs must be its first run's, within
// 2e-5 of the slice's largest (values rounded to a grid of their column's or array's largest:
// an outlier row takes the precision of the rest).
// The cases of a mesh and shapes share the runs.
struct Apart {
  std::size_t input = SIZE_MAX;  // per input of the def; SIZE_MAX: no such draw
  bool columns = false;          // slices along the last dimension (else the first)
  std::vector<bool> outputs;     // per output of the def
};
StructuralRule same_function(const LoadedProgram& lp, std::vector<bool> keep,
                             ReferenceFile reference, std::vector<PartitionSpec> specs = {},
                             std::vector<bool> columns = {}, std::vector<bool> column_outputs = {},
                             Apart apart = {});

}  // namespace meshrun::interp
