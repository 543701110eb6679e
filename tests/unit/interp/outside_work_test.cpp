// not_combined_outside (lib/grade/outside_work.hpp): an equation outside every shard_map that
// combines devices' blocks none of its operands had combined fails the rule when one of the named
// outputs follows from it -- the gallery's programs of sneaky10 that did the exercise's work
// outside in pieces -- and a right program's work outside (an update on the gradient the mesh
// combined, a loss averaged outside) passes.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "grade/load.hpp"
#include "grade/outside_work.hpp"
#include "interp/program.hpp"
#include "io/case_reader.hpp"
#include "programs/program.hpp"
#include "trace/trace.hpp"

using namespace meshrun;
using namespace meshrun::interp;

namespace {

std::string source(const std::string& relative) {
  return std::string(MESHRUN_SOURCE_DIR) + "/" + relative;
}

// The rule on `program` (a gallery file) graded on `case_file`, naming `outputs`; `keep`: the
// exercise's inputs not drawn (lr).
std::optional<std::string> verdict(const std::string& program, const std::string& case_file,
                                   const std::vector<std::string>& outputs,
                                   const std::vector<bool>& keep = {}) {
  const auto lp = load_program(source(program), 1 << 26, std::chrono::seconds(1), "");
  BOOST_REQUIRE(lp->exercise != nullptr);
  const Case c = read_case(source(case_file), &lp->def, 0);
  std::vector<PartitionSpec> specs;
  for (const ArgDef& in : lp->exercise->def.inputs) specs.push_back(in.spec);
  const StructuralRule rule =
      not_combined_outside(*lp, specs, keep, outputs, std::make_shared<CaseMemo>());
  const std::vector<TensorRef> inputs = c.input_refs();
  Trace t;
  t.mesh = run_mesh(lp->def, {}, c.mesh, 0);
  t.input_values = &inputs;
  return rule.check(t);
}

const std::vector<bool> kDpKeep = {false, false, false, false, true};  // w, b, x, y; lr kept

BOOST_AUTO_TEST_CASE(a_step_computed_outside_in_halves_combines_the_rows_of_four_devices) {
  const auto why = verdict("cases/submissions/dp-step/wrong-outside-step-in-halves.json",
                           "cases/dp-step/example1.json", {"w", "b"}, kDpKeep);
  BOOST_REQUIRE(why.has_value());
  // Half the rows: the blocks of 'data' devices 0 to 3 (or 4 to 7), combined by a product
  // outside, and the step follows from it.
  BOOST_TEST(why->find("outside every shard_map") != std::string::npos, *why);
  BOOST_TEST(why->find("'data' devices 0, 1, 2 and 3") != std::string::npos, *why);
  BOOST_TEST(why->find("and w follows from it") != std::string::npos, *why);
}

BOOST_AUTO_TEST_CASE(a_product_outside_in_quarters_combines_a_row_block_with_a_column_block) {
  const auto why = verdict("cases/submissions/matmul-2d/wrong-outside-product-in-quarters.json",
                           "cases/exercises/matmul-2d/cases/example1.json", {"out"});
  BOOST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("dot_general outside every shard_map") != std::string::npos, *why);
  BOOST_TEST(
      why->find("the blocks of 'data' device 0; the blocks of 'model' device") != std::string::npos,
      *why);
}

BOOST_AUTO_TEST_CASE(partial_outputs_summed_outside_after_a_decoy_psum_fail) {
  const auto why = verdict("cases/submissions/tp-mlp/wrong-partials-outside-zero-decoy-psum.json",
                           "cases/tp-mlp/example1.json", {"out"});
  BOOST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("'model' devices 0, 1, 2, 3, 4, 5, 6 and 7") != std::string::npos, *why);
}

// The loss averaged outside from each device's loss combines the blocks outside: the rule fails
// when it names the loss, and holds when it names only the step (the loss does not feed w, b).
BOOST_AUTO_TEST_CASE(a_loss_averaged_outside_counts_only_for_the_outputs_named) {
  const std::string program = "cases/submissions/dp-step/right-loss-mean-outside.json";
  BOOST_TEST(!verdict(program, "cases/dp-step/example1.json", {"w", "b"}, kDpKeep).has_value());
  const auto why = verdict(program, "cases/dp-step/example1.json", {"loss"}, kDpKeep);
  BOOST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("loss follows") != std::string::npos, *why);
}

// p - lr * g outside on the g the mesh averaged: g depends on every block p does.
BOOST_AUTO_TEST_CASE(an_update_outside_on_the_meshs_gradient_combines_nothing) {
  BOOST_TEST(!verdict("cases/submissions/mlp-train/right-sgd-update-outside.json",
                      "cases/mlp-train/example1.json", {"w1", "b1", "w2", "b2"},
                      {false, false, false, false, false, false, true})
                  .has_value());
}

}  // namespace
