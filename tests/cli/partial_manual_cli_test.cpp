// Partial manual shard_maps (JAX's axis_names= a subset of the mesh axes, issue #50): what the
// body may not name is refused before anything runs, exit 2, one line naming the file, the
// equation and why -- a spec or a collective over an automatic axis, manual_axes naming an axis
// the mesh lacks or one twice, or not a list; a nested shard_map manual over, or splitting over,
// an axis its enclosing one is manual over. The programs are tests/jax/corpus/partial-auto.json
// and partial-nested.json with one text replaced. On the old code the edited partial-auto
// programs ran (manual_axes was ignored) and every nested one was refused as nested.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

using namespace meshrun::testing;

namespace {

const std::string kProgram = "tests/jax/corpus/partial-auto.json";
const std::string kCase = "tests/jax/corpus/partial-auto/case1.json";

std::string with(const std::string& from, const std::string& to) {
  std::string text = slurp(kSource + "/" + kProgram);
  const std::size_t at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

BOOST_AUTO_TEST_CASE(what_a_partial_shard_map_may_not_name_is_exit_2_in_one_line) {
  TempDir dir;
  const std::string sm = ": exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0] (shard_map): ";
  struct Bad {
    std::string from, to, why;
  };
  const std::string manual = R"("manual_axes":["i"])";
  const std::vector<Bad> bad = {
      {R"("psum_invariant","params":{"axes":["i"]})", R"("psum_invariant","params":{"axes":["j"]})",
       ": exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0].params.jaxpr.eqns[2] (psum_invariant at "
       "partial_auto.py:28 (make.<locals>.g)): psum_invariant: unknown axis name 'j' (the mesh's "
       "axes are ('i',))"},
      {R"("in_specs":[["i",null]])", R"("in_specs":[["j",null]])",
       sm + "in_specs[0] P('j', None) splits over 'j', an automatic axis (the shard_map is manual "
            "over ('i',) only)"},
      {R"("out_specs":[["i",null],[]])", R"("out_specs":[["i","j"],[]])",
       sm + "out_specs[0] P('i', 'j') splits over 'j', an automatic axis (the shard_map is manual "
            "over ('i',) only)"},
      {manual, R"("manual_axes":["k"])",
       sm + "manual_axes names 'k', which is not in the mesh's axis names ('i', 'j')"},
      {manual, R"("manual_axes":["i","i"])", sm + "manual_axes names 'i' more than once"},
      {manual, R"("manual_axes":"i")",
       sm + "param 'manual_axes' must be a non-empty list of mesh axis names"},
      {manual, R"("manual_axes":[])",
       sm + "param 'manual_axes' must be a non-empty list of mesh axis names"},
  };
  for (const Bad& b : bad) {
    const std::string file = dir.write("bad.json", with(b.from, b.to));
    const Result r = run({"run", file, kCase});
    BOOST_TEST_CONTEXT(b.to) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.out == "");
      BOOST_TEST(r.err == "meshrun: " + file + b.why + "\n");
    }
  }
  // Manual over every axis, in any order, is a full shard_map: the same numbers.
  const std::string all = dir.write("all.json", with(manual, R"("manual_axes":["j","i"])"));
  const Result ok = run(
      {"check", "--atol", "0", "--rtol", "0", "--program", all, "tests/jax/corpus/partial-auto"});
  BOOST_TEST(ok.code == 0, ok.err);
}

BOOST_AUTO_TEST_CASE(a_nested_shard_map_over_an_enclosing_manual_axis_is_exit_2_in_one_line) {
  TempDir dir;
  const std::string program = "tests/jax/corpus/partial-nested.json";
  const std::string text = slurp(kSource + "/" + program);
  const std::string inner = R"("manual_axes":["j"])";
  const std::string eqn =
      ": exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0].params.jaxpr.eqns[0] "
      "(shard_map at partial_nested.py:30 (make.<locals>.h)): ";
  struct Bad {
    std::string from, to, why;
  };
  const std::vector<Bad> bad = {
      {inner, R"("manual_axes":["i"])",
       "manual over 'i', which its enclosing shard_map is manual over already"},
      {inner + R"(,"in_specs":[[null,"j"]])", inner + R"(,"in_specs":[["i","j"]])",
       "in_specs[0] P('i', 'j') splits over 'i', which its enclosing shard_map is manual over "
       "(the shard_map is manual over ('j',) only)"},
  };
  for (const Bad& b : bad) {
    std::string edited = text;
    const std::size_t at = edited.find(b.from);
    BOOST_REQUIRE(at != std::string::npos);
    const std::string file = dir.write("bad.json", edited.replace(at, b.from.size(), b.to));
    const Result r = run({"run", file, "tests/jax/corpus/partial-nested/case1.json"});
    BOOST_TEST_CONTEXT(b.to) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.out == "");
      BOOST_TEST(r.err == "meshrun: " + file + eqn + b.why + "\n");
    }
  }
  // Without "manual_axes" the inner shard_map is manual over every axis, 'i' included.
  std::string full = text;
  full.erase(full.find(inner), inner.size() + 1);
  const std::string file = dir.write("full.json", full);
  const Result r = run({"run", file, "tests/jax/corpus/partial-nested/case1.json"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err ==
             "meshrun: " + file + eqn +
                 "manual over 'i', which its enclosing shard_map is manual over already\n");
}
