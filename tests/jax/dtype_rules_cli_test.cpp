// Every primitive's result dtype and value as JAX's (issue #31, class 5), with no Python:
// tests/jax/dtype_rules/NAME.json is a program JAX 0.10.2 exported (its declared types are JAX's),
// NAME.case.json its inputs and JAX's outputs (tests/jax/dtype_rules.py wrote both; `make
// jax-check` regenerates them with live JAX and fails if they changed). meshrun must run each with
// exit 0 at --atol 0 --rtol 0: its inferred dtype is checked against the declared one before the
// run (exit 2 otherwise), and every value must be JAX's own (exit 1 otherwise). The printed values
// are compared bit for bit too (--exact prints each float32's shortest exact form; -0 as 0).
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace {

using meshrun::testing::kSource;
using meshrun::testing::names;
using meshrun::testing::run;
using meshrun::testing::slurp;

const std::string kDir = kSource + "/tests/jax/dtype_rules";

// The float32's bits; -0 as 0, since results are written so (docs/cli.md: a sign on zero only
// confuses a reader).
std::uint32_t bits(double v) {
  const float f = v == 0 ? 0.0f : static_cast<float>(v);
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Flattened numbers of a nested JSON array (or a scalar).
void flatten(const nlohmann::json& v, std::vector<double>& out) {
  if (v.is_number()) {
    out.push_back(v.get<double>());
    return;
  }
  for (const auto& e : v) flatten(e, out);
}

BOOST_AUTO_TEST_CASE(every_entry_gives_jaxs_dtype_and_bits) {
  std::size_t entries = 0;
  for (const std::string& f : names(kDir)) {
    if (!f.ends_with(".case.json")) continue;
    const std::string name = f.substr(0, f.size() - std::string(".case.json").size());
    ++entries;
    const std::string prog = kDir + "/" + name + ".json", c = kDir + "/" + f;
    const auto r = run({"run", prog, c, "--atol", "0", "--rtol", "0", "--exact"});
    BOOST_TEST(r.code == 0, name << ": exit " << r.code << ": " << r.err);
    if (r.code != 0) continue;
    std::vector<double> got, want;
    flatten(meshrun::testing::parse_json(r.out)["out"], got);
    flatten(meshrun::testing::parse_json(slurp(c))["expected"]["out"], want);
    BOOST_TEST_REQUIRE(got.size() == want.size(), name);
    for (std::size_t i = 0; i < got.size(); ++i)
      BOOST_TEST(bits(got[i]) == bits(want[i]),
                 name << "[" << i << "]: meshrun " << got[i] << ", JAX " << want[i]);
  }
  // The table of tests/jax/dtype_rules.py: a fixture lost is a rule no longer tested.
  BOOST_TEST(entries >= 157u);
}

// Issue #49, dtypes: what meshrun cannot run on bf16 ... u16 as XLA:CPU does is refused before
// anything runs, exit 2, one line naming the file and the field (tests/jax/dtype_refusals.py:
// programs JAX 0.10.2 runs; each case's description holds a part of the message).
BOOST_AUTO_TEST_CASE(narrow_dtypes_refused_before_a_run) {
  const std::string dir = kSource + "/tests/jax/dtype_refusals";
  std::size_t entries = 0;
  for (const std::string& f : names(dir)) {
    if (!f.ends_with(".case.json")) continue;
    ++entries;
    const std::string name = f.substr(0, f.size() - std::string(".case.json").size());
    const std::string c = dir + "/" + f;
    const std::string desc = meshrun::testing::parse_json(slurp(c))["description"];
    const std::string want = desc.substr(std::string("refusal: ").size());
    const auto r = run({"run", dir + "/" + name + ".json", c, "--atol", "0", "--rtol", "0"});
    BOOST_TEST(r.code == 2, name << ": exit " << r.code << ": " << r.err);
    BOOST_TEST(r.out.empty(), name << ": printed " << r.out);
    BOOST_TEST(r.err.find(want) != std::string::npos, name << ": " << r.err);
    BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, name << ": " << r.err);
  }
  BOOST_TEST(entries >= 7u);
}

// Issue #49, dtypes2: .npy inputs in the narrow dtypes as np.save writes them
// (tests/jax/dtype_npy.py: each case is a dtype_rules case with input x from a .npy file), JAX's
// bits; a value the program's dtype does not hold refused, exit 2.
BOOST_AUTO_TEST_CASE(narrow_dtypes_from_npy) {
  const std::string dir = kSource + "/tests/jax/dtype_npy";
  std::size_t entries = 0;
  for (const std::string& f : names(dir)) {
    if (!f.ends_with(".case.json")) continue;
    ++entries;
    const std::string name = f.substr(0, f.size() - std::string(".case.json").size());
    const std::string c = dir + "/" + f;
    const auto cj = meshrun::testing::parse_json(slurp(c));
    const std::string desc = cj["description"];
    const std::string prog = kDir + "/" + cj["name"].get<std::string>() + ".json";
    const auto r = run({"run", prog, c, "--atol", "0", "--rtol", "0", "--exact"});
    if (desc.starts_with("refusal: ")) {
      BOOST_TEST(r.code == 2, name << ": exit " << r.code << ": " << r.err);
      BOOST_TEST(r.err.find(desc.substr(std::string("refusal: ").size())) != std::string::npos,
                 name << ": " << r.err);
      continue;
    }
    BOOST_TEST(r.code == 0, name << ": exit " << r.code << ": " << r.err);
    if (r.code != 0) continue;
    std::vector<double> got, want;
    flatten(meshrun::testing::parse_json(r.out)["out"], got);
    flatten(cj["expected"]["out"], want);
    BOOST_TEST_REQUIRE(got.size() == want.size(), name);
    for (std::size_t i = 0; i < got.size(); ++i)
      BOOST_TEST(bits(got[i]) == bits(want[i]),
                 name << "[" << i << "]: meshrun " << got[i] << ", JAX " << want[i]);
  }
  BOOST_TEST(entries >= 7u);
}

}  // namespace
