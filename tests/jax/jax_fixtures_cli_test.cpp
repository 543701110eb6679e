// meshrun's bits against JAX's (issue #21): tests/jax/fixtures/<program>/*.json hold JAX 0.10.2's
// outputs as `expected` (bench/jax/oracle.py, MANIFEST there); bits.txt the number of output
// elements and how many of them meshrun reproduced bit for bit when they were committed. Graded
// with `meshrun check --atol 0 --rtol 0 --json`, every element that is not bit-identical is a
// differing element; the test fails when more differ than bits.txt allows, or when the fixtures
// hold another number of elements than it counts (a fixture lost or added without re-measuring).
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace {

using meshrun::testing::kSource;
using meshrun::testing::run;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;
namespace fs = std::filesystem;

const std::string kFixtures = kSource + "/tests/jax/fixtures";

struct Counts {
  std::size_t elements = 0, identical = 0;
};

std::size_t count_numbers(const nlohmann::json& v) {
  if (v.is_number()) return 1;
  std::size_t n = 0;
  for (const auto& e : v) n += count_numbers(e);
  return n;
}

// bits.txt: "# ..." comments, then "PROGRAM ELEMENTS IDENTICAL" per line.
std::map<std::string, Counts> baseline(const std::string& file = "bits.txt") {
  std::map<std::string, Counts> out;
  std::istringstream in(slurp(kFixtures + "/" + file));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream l(line);
    std::string p;
    Counts c;
    BOOST_REQUIRE(l >> p >> c.elements >> c.identical);
    out[p] = c;
  }
  return out;
}

// The exported programs (cases/programs/, `meshrun check --program`) against the same fixtures:
// within the tolerance on every case, and no fewer elements bit-identical than bits-programs.txt.
BOOST_AUTO_TEST_CASE(exported_programs_bit_identical_share_does_not_drop) {
  const auto base = baseline("bits-programs.txt");
  BOOST_REQUIRE_EQUAL(base.size(), 3u);
  // Each grades every fixture by the exercise's rules too: mlp-train's 40-odd under ASan took
  // about 60 s (the default bound) once the rules of 2026-12-07 ran more checks by values.
  meshrun::testing::RunOptions slow;
  slow.hang = std::chrono::seconds(600);
  for (const auto& [program, b] : base) {
    const std::string prog = kSource + "/cases/programs/" + program + ".json";
    const auto tolerant =
        meshrun::testing::run_with({"check", "--program", prog, kFixtures + "/" + program}, slow);
    BOOST_TEST(tolerant.code == 0, program << ": " << tolerant.out << tolerant.err);
    TempDir dir;
    const auto r =
        meshrun::testing::run_with({"check", "--program", prog, "--atol", "0", "--rtol", "0",
                                    "--json", dir / "r.json", kFixtures + "/" + program},
                                   slow);
    BOOST_REQUIRE(!r.killed);
    BOOST_TEST((r.code == 0 || r.code == 1), "exit " << r.code << ": " << r.err);
    const auto report = meshrun::testing::parse_json(slurp(dir / "r.json"));
    std::size_t elements = 0, differing = 0;
    for (const auto& c : report["cases"]) {
      BOOST_TEST(c["error"].is_null(), c["case"] << ": " << c["error"]);
      differing += c["differing_elements"].get<std::size_t>();
    }
    for (const auto& f : fs::directory_iterator(kFixtures + "/" + program))
      if (f.path().extension() == ".json")
        elements += count_numbers(meshrun::testing::parse_json(slurp(f.path()))["expected"]);
    BOOST_TEST(elements == b.elements, program);
    BOOST_TEST(elements - differing >= b.identical,
               program << " interpreted: " << elements - differing << " of " << elements
                       << " bit-identical to JAX, " << b.identical << " when measured");
  }
}

BOOST_AUTO_TEST_CASE(bit_identical_share_does_not_drop) {
  const auto base = baseline();
  BOOST_REQUIRE_EQUAL(base.size(), 3u);
  std::map<std::string, Counts> now;
  for (const auto& [program, c] : base) {
    for (const auto& f : fs::directory_iterator(kFixtures + "/" + program))
      if (f.path().extension() == ".json")
        now[program].elements +=
            count_numbers(meshrun::testing::parse_json(slurp(f.path()))["expected"]);
  }
  TempDir dir;
  const auto r = run({"check", "--atol", "0", "--rtol", "0", "--json", dir / "r.json", kFixtures});
  BOOST_REQUIRE(!r.killed);
  BOOST_TEST((r.code == 0 || r.code == 1), "exit " << r.code << ": " << r.err);
  const auto report = meshrun::testing::parse_json(slurp(dir / "r.json"));
  BOOST_REQUIRE(report["complete"].get<bool>());
  std::map<std::string, std::size_t> differing;
  for (const auto& c : report["cases"]) {
    BOOST_TEST(c["error"].is_null(), c["case"] << ": " << c["error"]);
    differing[c["problem"].get<std::string>()] += c["differing_elements"].get<std::size_t>();
  }
  for (const auto& [program, b] : base) {
    const Counts& n = now[program];
    BOOST_TEST(n.elements == b.elements, program << ": the fixtures hold " << n.elements
                                                 << " elements, bits.txt counted " << b.elements);
    const std::size_t identical = n.elements - differing[program];
    BOOST_TEST(identical >= b.identical, program << ": " << identical << " of " << n.elements
                                                 << " elements bit-identical to JAX, "
                                                 << b.identical << " when measured");
    BOOST_TEST_MESSAGE(program << ": " << identical << " of " << n.elements
                               << " elements bit-identical to JAX (baseline " << b.identical
                               << ")");
  }
}

// The ratchet can fail: a fixture whose expected is JAX's, changed by one ulp in the first
// element, is one more differing element than the same fixture unchanged.
BOOST_AUTO_TEST_CASE(one_ulp_counts_as_differing) {
  TempDir dir;
  const std::string src = slurp(kSource + "/tests/jax/fixtures/dp-step/cases-example1.json");
  // JAX's dp-step example 1: w = 1.11 exactly as the float32 1.11 (0x3F8E147B).
  BOOST_REQUIRE(meshrun::testing::has(src, "\"expected\":{\"w\":[[1.11]]"));
  std::string moved = src;
  moved.replace(moved.find("\"expected\":{\"w\":[[1.11]]"), 24,
                "\"expected\":{\"w\":[[1.1100001]]");
  dir.write("same.json", src);
  dir.write("moved.json", moved);
  const auto r = run({"check", "--atol", "0", "--rtol", "0", "--json", dir / "r.json", dir.path});
  const auto report = meshrun::testing::parse_json(slurp(dir / "r.json"));
  std::map<std::string, std::size_t> d;
  for (const auto& c : report["cases"])
    d[fs::path(c["case"].get<std::string>()).filename()] = c["differing_elements"];
  BOOST_TEST(d.at("moved.json") == d.at("same.json") + 1);
}

}  // namespace
