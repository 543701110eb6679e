// Which elements of an input a device holds in any encoding: the numbers of its values that are
// functions of one element of that input alone. held.cpp's check by values sees an element
// where a number keeps its fraction bits (a copy, e * 2^k, identity arithmetic); a program that
// stores it as a * e + c, as two float pieces hi + lo, scaled per column, as an int32
// fixed-point part and a remainder, or as its bits xor'ed with a key, keeps none of them, yet
// each stored number is computed from e alone and gives it back. This sees those by
// dependence: the program runs again with subsets of the input's elements redrawn, and a number
// that changes exactly when element e is redrawn is a function of e (and of no other element of
// that input).
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grade/draws.hpp"
#include "interp/program.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

// A product or a reduction (dot_general, conv, reduce_*, the cumulative ops, argmax/argmin): what,
// done on a whole input outside the shard_maps, is the work of every device done on one, and what
// the count model takes to hold none of its operands' elements (held.cpp).
bool computes(const std::string& primitive);

struct DependsInput {
  std::size_t def_input = 0;  // in the run's inputs
  std::size_t size = 0;
};

// What the dependence runs found: the first device (in device order) that holds all of an
// input, or elements of it another device was handed; or a product or reduction outside every
// shard_map one of whose operands holds all of it.
struct DependsFinding {
  enum Kind { kWhole, kOverRun, kForeign, kOutside } kind = kWhole;
  int device = -1;            // -1: outside every shard_map
  std::size_t input = 0;      // index into the DependsInput list
  std::size_t elements = 0;   // kForeign: how many; else the input's size
  std::size_t values = 0;     // kOverRun: in how many values
  bool every_device = false;  // every device has the same finding at the same place
  const Jaxpr* jx = nullptr;  // where: the value (kWhole, kOutside: the product), or the first
  const Eqn* eqn = nullptr;   // value holding one of them (kForeign), or the last (kOverRun);
  std::size_t k = 0;          // eqn null: jx's operand k as received
};

// Runs `lp` on `base` (already drawn: every graded float32 input's elements distinct random
// numbers) and then, per input of `inputs`, on copies with subsets of its elements redrawn --
// each element's subsets a codeword of a constant-weight code, two independent codes -- and
// finds every number of every device's values (over the whole run) that changed exactly when one
// element was redrawn, in both codes; a number that holds an element another device was handed
// must then also change exactly when that element is redrawn among every element of the
// `redrawable` inputs (the float32 ones) the device was not handed -- a function of that element
// and of what the device has, which gives the element back. What a device was handed: the
// numbers of its shard_map operands as received. `over_run`: the device's values over the run count
// together and another device's element fails (else only one value holding all of an input fails).
// nullopt: nothing found, or the runs could not be compared (they took another path, or the
// values are too many to keep: docs/grading.md). `follow`: the path every run takes
// (draws.hpp; null: its own).
// `capped`, when given: the first device (-1: outside) whose values went past what the runs keep
// (the numbers after it are not judged), and how many numbers it computed; device -2: none did.
struct DependsCap {
  int device = -2;
  std::size_t numbers = 0;  // over the run (a value of equal numbers counts one)
  std::size_t kept = 0;     // what the runs keep per device
};
std::optional<DependsFinding> held_by_dependence(
    const LoadedProgram& lp, const MeshShape& mesh, const std::vector<Tensor>& base,
    const std::vector<DependsInput>& inputs, const std::vector<bool>& redrawable, bool over_run,
    const std::set<const Jaxpr*>& bodies, const RunPath* follow, DependsCap* capped = nullptr);

}  // namespace meshrun::interp
