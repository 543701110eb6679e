// axis_index_groups that JAX would not run (issue #50) are refused before anything runs: exit 2,
// one line naming the file, the equation and why -- groups of unequal sizes, a table that is not
// a partition of the axis' indices, and groups on psum_invariant (JAX 0.10.2 raises
// NotImplementedError for a psum with groups under check_vma=True). The programs are
// tests/jax/corpus/groups-reduce.json with its first table (of the f32 psum) replaced.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

using namespace meshrun::testing;

namespace {

const std::string kProgram = "tests/jax/corpus/groups-reduce.json";
const std::string kCase = "tests/jax/corpus/groups-reduce/case1.json";
const std::string kPsum = R"("primitive":"psum","params":{"axes":["i"],"axis_index_groups":)";
const std::string kTable = "[[6,0,3,5],[1,7,2,4]]";

// The program with its first psum's table replaced by `table` (and its primitive by `prim`).
std::string with_table(const std::string& table, const std::string& prim = "psum") {
  std::string text = slurp(kSource + "/" + kProgram);
  const std::size_t at = text.find(kPsum + kTable);
  BOOST_REQUIRE(at != std::string::npos);
  std::string psum = kPsum;
  psum.replace(psum.find("psum"), 4, prim);
  return text.replace(at, kPsum.size() + kTable.size(), psum + table);
}

}  // namespace

BOOST_AUTO_TEST_CASE(groups_jax_would_not_run_are_exit_2_in_one_line) {
  TempDir dir;
  const std::string eqn = ": exports[0].jaxpr.eqns[0].params.jaxpr.eqns[0].params.jaxpr.eqns[0] ";
  struct Bad {
    std::string table, prim, why;
  };
  const std::vector<Bad> bad = {
      {"[[6,0,3],[5,1,7,2,4]]", "psum",
       "(psum at groups_reduce.py:28 (body)): psum param 'axis_index_groups' is not a partition of "
       "the axes' 8 indices into "
       "groups of one size: groups of 3 and 5 members (they must be of one size)"},
      {"[[6,0,3,5],[1,7,2,2]]", "psum",
       "(psum at groups_reduce.py:28 (body)): psum param 'axis_index_groups' is not a partition of "
       "the axes' 8 indices into "
       "groups of one size: member 2 is in two groups"},
      {"[[6,0,3,5]]", "psum",
       "(psum at groups_reduce.py:28 (body)): psum param 'axis_index_groups' is not a partition of "
       "the axes' 8 indices into "
       "groups of one size: member 1 is in no group"},
      {"[[6,0,3,5],[1,7,2,8]]", "psum",
       "(psum at groups_reduce.py:28 (body)): psum param 'axis_index_groups' names index 8, not in "
       "[0, 8) (the group over the "
       "axes has 8 members)"},
      {"[[0,1],[2,3]]", "psum",
       "(psum at groups_reduce.py:28 (body)): psum param 'axis_index_groups' is not a partition of "
       "the axes' 8 indices into "
       "groups of one size: member 4 is in no group"},
      {"[[6,0,3,5],[1,7,2,4]]", "psum_invariant",
       "(psum_invariant at groups_reduce.py:28 (body)): psum_invariant with axis_index_groups: JAX "
       "0.10.2 raises "
       "NotImplementedError for it (psum under check_vma=True, all_gather to='invarying')"},
      {"[6,0,3,5]", "psum",
       "(psum at groups_reduce.py:28 (body)): psum param 'axis_index_groups' must be a non-empty "
       "list of lists of axis indices"},
  };
  for (const Bad& b : bad) {
    const std::string file = dir.write("bad.json", with_table(b.table, b.prim));
    const Result r = run({"run", file, kCase});
    BOOST_TEST_CONTEXT(b.table << " on " << b.prim) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.out == "");
      BOOST_TEST(r.err == "meshrun: " + file + eqn + b.why + "\n");
    }
  }
  // The table as exported runs (the corpus test checks its numbers bit for bit).
  const std::string good = dir.write("good.json", with_table(kTable));
  const Result ok = run(
      {"check", "--atol", "0", "--rtol", "0", "--program", good, "tests/jax/corpus/groups-reduce"});
  BOOST_TEST(ok.code == 0, ok.err);
}
