// One path (issue #30.4): `meshrun <program> CASE` runs the hand-written body, and the shipped
// reference program (cases/programs/<program>.json) is what `meshrun run` interprets. The
// hand-written body may stand in for the reference only where it is bit-identical to it
// (docs/performance.md, "One path": the figures that make it the faster one). Checked here on
// every case of the three programs, --exact: every output of every case the same bits. dp-step
// and mlp-train sum the loss as the reference program does (reduce_sum over the columns, then
// over the rows, then a division by the rows); until 2026-12-03 they summed it in one chain and
// multiplied by 1/rows, up to 4 units in the last place away. Should any output ever differ, the
// hand-written body must go (or follow the reference again).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

using namespace meshrun::testing;

namespace {

std::vector<std::string> cases_of(const std::string& program) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/cases/" + program))
    if (e.path().extension() == ".json")
      files.push_back("cases/" + program + "/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

// `meshrun P CASE --exact` against `meshrun run cases/programs/P.json CASE --exact`: the same
// exit code, and every output the same bits.
void same_as_the_reference(const std::string& program) {
  const std::vector<std::string> files = cases_of(program);
  BOOST_REQUIRE(files.size() >= 8u);
  for (const std::string& file : files) {
    const Result hand = run({program, file, "--exact"});
    const Result ref = run({"run", "cases/programs/" + program + ".json", file, "--exact"});
    BOOST_TEST_CONTEXT(program << " " << file) {
      BOOST_TEST(hand.code == ref.code, hand.err << " / " << ref.err);
      if (hand.code != 0 && hand.code != 1) continue;
      const nlohmann::json h = meshrun::testing::parse_json(hand.out);
      const nlohmann::json r = meshrun::testing::parse_json(ref.out);
      BOOST_TEST(h.size() == r.size());
      for (const auto& [name, value] : h.items()) {
        BOOST_REQUIRE(r.contains(name));
        // Printed --exact (each float32's shortest round trip): the same text is the same bits.
        BOOST_TEST(value.dump() == r[name].dump(), name);
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(tp_mlp_hand_written_is_bit_identical_to_the_reference) {
  same_as_the_reference("tp-mlp");
}

BOOST_AUTO_TEST_CASE(dp_step_hand_written_is_bit_identical_to_the_reference) {
  same_as_the_reference("dp-step");
}

BOOST_AUTO_TEST_CASE(mlp_train_hand_written_is_bit_identical_to_the_reference) {
  same_as_the_reference("mlp-train");
}
