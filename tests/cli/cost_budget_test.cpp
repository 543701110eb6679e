// The compute budget of a program file (issue #31, class 3; interp/cost.hpp): flops and bytes
// moved summed from the inferred types before anything runs, refused with exit 2 and one line
// naming the equation, and raised by --max-flops and --max-bytes-moved. The hostile file that
// asks for 3.3e12 flops is cases/invalid-programs/dot-generals-3-tflop.json, and the one of 29
// erf_invs of f32[2^27] (47 s at one flop an element) erf-invs-47-seconds.json
// (program_file_test); each primitive's weight is checked in tests/unit/interp/cost_test.cpp.
#include <boost/test/unit_test.hpp>

#include <string>

#include "support/run_meshrun.hpp"

namespace {

using meshrun::testing::Result;
using meshrun::testing::run;

const std::string kProg = "cases/invalid-programs/valid/double.json";
const std::string kCase = "cases/invalid-programs/valid/double-case.json";

// double.json is one mul of f32[2] by a scalar in a body on 8 devices: 3 flops a device (its
// larger side: 2 + 1 operand elements), 24 in all; 8 bytes of result a device, 64 in all.
BOOST_AUTO_TEST_CASE(the_flops_budget_refuses_the_equation_beyond_it_and_the_flag_raises_it) {
  const Result over = run({"run", kProg, kCase, "--max-flops", "23"});
  BOOST_TEST(over.code == 2);
  BOOST_TEST(over.out == "");
  BOOST_TEST(over.err ==
             "meshrun: " + kProg +
                 ": exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0] (mul): mul of f32[2], f32[] -> "
                 "f32[2] on 8 devices brings the program to 24 flops, beyond the budget of 23 "
                 "(--max-flops N raises it)\n");
  const Result at = run({"run", kProg, kCase, "--max-flops", "24"});
  BOOST_TEST(at.code == 0, at.err);
  BOOST_TEST(at.out.starts_with("{\"y\":[2.0,4.0,"), at.out);
}

BOOST_AUTO_TEST_CASE(the_bytes_budget_refuses_the_equation_beyond_it_and_the_flag_raises_it) {
  const Result over = run({"run", kProg, kCase, "--max-bytes-moved", "63"});
  BOOST_TEST(over.code == 2);
  BOOST_TEST(over.err ==
             "meshrun: " + kProg +
                 ": exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0] (mul): mul of f32[2], f32[] -> "
                 "f32[2] on 8 devices brings the program to 64 bytes moved, beyond the budget of "
                 "63 (--max-bytes-moved N raises it)\n");
  BOOST_TEST(run({"run", kProg, kCase, "--max-bytes-moved", "64"}).code == 0);
}

BOOST_AUTO_TEST_CASE(check_takes_the_budget_with_program_only) {
  const Result with = run({"check", "--program", kProg, "--max-flops", "24", kCase});
  BOOST_TEST(with.code == 0, with.out << with.err);
  const Result over = run({"check", "--program", kProg, "--max-flops", "23", kCase});
  BOOST_TEST(over.code != 0);
  BOOST_TEST(meshrun::testing::has(over.out + over.err, "beyond the budget of 23"),
             over.out << over.err);
  const Result without = run({"check", "--max-flops", "24", kCase});
  BOOST_TEST(without.code == 2);
  BOOST_TEST(meshrun::testing::has(without.err, "--max-flops requires --program"), without.err);
  BOOST_TEST(run({"run", kProg, kCase, "--max-flops", "0"}).code == 2);
}

}  // namespace
