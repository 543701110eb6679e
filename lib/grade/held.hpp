// No device holds a whole input: which elements of each input a value holds, seen by values,
// checked on the export the run bound (rules.hpp uses it for "no device holds a full weight
// matrix w1 or w2" and "no device holds a full x or y").
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grade/draws.hpp"
#include "interp/program.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

// Fails when some value a device computes holds every element of one of the inputs `names`, on a
// mesh whose `axis` has more than one device, or when a product outside every body takes a whole
// one (the computation not split at all). Which elements a value holds is seen by values: the
// program runs twice more with those inputs' elements replaced by distinct random float32
// values, every value of every device observed (run_observed, program.hpp), and a value holds
// element e when one of its numbers has e's 23 fraction bits (e, -e, e times a power of two) at
// both draws -- so copies, gathers, identity arithmetic (`w1 + 0 * x[0, 0]`, `max(w1, w1)`, a sum
// over an axis of length 1) and one-hot or permutation products are seen whatever computed them,
// and copies of a device's own rows hold those rows only. The count model (how many elements at
// most, per input) stays for the work outside the shard_maps and for a program that cannot run on
// the drawn values. docs/grading.md says what the values check cannot see.
// `lp` must outlive the rule.
// What counts together, the scope:
// - kValue: one value must hold it all (a ring passes every block of x through a device and may
//   keep them apart: ring-allreduce);
// - kAlive (`at_once`): values alive at one time on one device count together, so two halves of
//   w1 both alive hold all of it;
// - kRun (`over_the_run`): every value a device ever computed counts together, as well as the
//   above, so w1 received a row at a time, or x's blocks passed round a ring and each used, are
//   all of it: the device did every device's share of the work (the weights' and the data's
//   rules).
using DerivedOperands =
    std::function<std::vector<std::pair<const Eqn*, std::size_t>>(const Export&)>;

enum class HoldScope { kValue, kAlive, kRun };
// The exercise's reference program file (null: none could be read), for what a right program
// receives and computes (traffic.hpp).
using ReferenceFile = std::function<const LoadedProgram*()>;
StructuralRule no_full_in_body(const LoadedProgram& lp, std::vector<std::string> names,
                               const std::string& axis, const std::string& description,
                               HoldScope scope = HoldScope::kValue,
                               ReferenceFile reference = nullptr,
                               std::shared_ptr<CaseMemo> memo = nullptr);
// No device receives enough numbers computed from the elements of `names` it was not handed to
// carry another device's block of them (or all of them), however mixed -- judged where the
// exercise's reference program, even n times over, receives fewer (traffic.hpp).
StructuralRule receives_little(const LoadedProgram& lp, std::vector<std::string> names,
                               const std::string& description, ReferenceFile reference,
                               std::shared_ptr<CaseMemo> memo = nullptr);

// Whether each device is handed, of each input `names`, whole slices along `dim` (rows, for
// dim 0) and no more of them than its share over `axis`, by values: what its shard_map operands
// hold as received, on one draw of random values -- so x handed transposed, or by strided rows,
// is rows; a column block is not. first: the values could be checked (else the caller's own
// verdict stands); second: what broke it.
// `derived`: the shard_map operands (equation, operand) derived from them, in the export the run
// bound; each of their nonzero
// numbers must be one of the inputs' elements (a re-layout of them, not mixtures).
std::pair<bool, std::optional<std::string>> handed_slices(const LoadedProgram& lp, const Trace& t,
                                                          const std::vector<std::string>& names,
                                                          int dim, const std::string& axis,
                                                          const DerivedOperands& derived,
                                                          CaseMemo* memo = nullptr);

}  // namespace meshrun::interp
