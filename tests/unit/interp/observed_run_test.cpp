// run_observed (interp/program.hpp): the run grading's "holds" reads (lib/grade/held.cpp) shows
// every value the program computes -- each shard_map body's operands as received and every
// equation's result, on every device, and the values outside the shard_maps (device -1) -- and
// returns what an ordinary run returns, bit for bit.
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "grade/draws.hpp"
#include "grade/load.hpp"
#include "interp/program.hpp"
#include "io/case_reader.hpp"
#include "mesh/mesh.hpp"
#include "programs/program.hpp"

using namespace meshrun;
using namespace meshrun::interp;
namespace tt = boost::test_tools;

namespace {

std::string source(const std::string& relative) {
  return std::string(MESHRUN_SOURCE_DIR) + "/" + relative;
}

// Per device: the operands received and the equations' results seen.
class Recorder final : public ValueObserver {
 public:
  void seen(int device, const Jaxpr&, const Eqn* eqn, std::size_t, const Value& v) override {
    const std::lock_guard<std::mutex> lock(mutex);
    (eqn == nullptr ? operands : results)[device] += 1;
    if (eqn != nullptr) primitives[device].insert(eqn->primitive);
    elements += v.t.size();
  }
  std::mutex mutex;
  std::map<int, int> operands, results;
  std::map<int, std::set<std::string>> primitives;
  std::size_t elements = 0;
};

void observed_like_a_run(const std::string& program, const std::string& case_file, int devices,
                         const std::set<std::string>& body_primitives) {
  const auto lp = load_program(source(program), 1 << 26, std::chrono::seconds(1), "");
  const Case c = read_case(source(case_file), &lp->def, 0);
  const MeshShape shape = run_mesh(lp->def, {}, c.mesh, 0);
  Mesh mesh(shape);
  const std::vector<Tensor> plain = shard_map(mesh, lp->def, c.input_refs());
  Recorder r;
  const std::vector<Tensor> seen = run_observed(*lp, shape, c.input_refs(), r);
  BOOST_REQUIRE(seen.size() == plain.size());
  for (std::size_t k = 0; k < seen.size(); ++k) BOOST_TEST(seen[k].data == plain[k].data);
  for (int d = 0; d < devices; ++d) {
    BOOST_TEST(r.operands[d] >= 1, "device " << d << " received its operands");
    BOOST_TEST(r.results[d] >= 1, "device " << d << " computed");
    for (const std::string& p : body_primitives)
      BOOST_TEST(r.primitives[d].count(p) == 1u, "device " << d << " " << p);
  }
  BOOST_TEST(r.elements > 0u);
}

}  // namespace

// A plain program: tp-mlp's body on 8 devices, its products, its psum and b2's add all seen.
BOOST_AUTO_TEST_CASE(every_value_of_every_device_is_seen) {
  observed_like_a_run("cases/submissions/tp-mlp/right.json", "cases/tp-mlp/example1.json", 8,
                      {"dot_general", "psum_invariant", "add", "max"});
}

// Two shard_maps and work outside them: both bodies' values are seen, and the outside's
// (device -1: the slices and adds of the blocks a decoy ring returned).
BOOST_AUTO_TEST_CASE(every_shard_map_and_the_outside_are_seen) {
  const auto lp =
      load_program(source("cases/submissions/ring-allreduce/wrong-ring-decoy-adds-outside.json"),
                   1 << 26, std::chrono::seconds(1), "");
  const Case c =
      read_case(source("cases/exercises/ring-allreduce/cases/example1.json"), &lp->def, 0);
  Recorder r;
  run_observed(*lp, run_mesh(lp->def, {}, c.mesh, 0), c.input_refs(), r);
  BOOST_TEST(r.primitives[-1].count("add") == 1u);
  BOOST_TEST(r.primitives[0].count("ppermute") == 1u);
  observed_like_a_run("cases/submissions/tp-mlp/right-psum-first-b2-second-map.json",
                      "cases/tp-mlp/example1.json", 8, {"dot_general", "psum_invariant", "add"});
}

// run_following (grade/draws.hpp): a run records the discrete values its primitives compute, and
// a run on other numbers takes them in their place -- here a lax.cond on the block's magnitude
// (ring-allreduce/wrong-cond-small-only: below 100 the ring's sum, above the block alone). On the
// case's numbers times 1000 the program by itself takes the other branch; following the case's
// decisions, it runs the ring and returns 1000 times the case's sum.
BOOST_AUTO_TEST_CASE(a_run_on_other_numbers_takes_the_recorded_decisions) {
  const auto lp =
      load_program(source("cases/submissions/ring-allreduce/wrong-cond-small-only.json"), 1 << 26,
                   std::chrono::seconds(1), "");
  const Case c =
      read_case(source("cases/exercises/ring-allreduce/cases/example1.json"), &lp->def, 0);
  const MeshShape shape = run_mesh(lp->def, {}, c.mesh, 0);
  RunPath on_case;
  const std::vector<Tensor> plain =
      run_following(*lp, shape, c.input_refs(), nullptr, nullptr, &on_case);
  BOOST_REQUIRE(c.expected.has_value());
  const std::vector<float>& sum = c.expected->at(0).data;  // [4.17, -3.7]
  BOOST_REQUIRE(plain.at(0).data.size() == sum.size());
  for (std::size_t k = 0; k < sum.size(); ++k)
    BOOST_TEST(plain[0].data[k] == sum[k], tt::tolerance(1e-5f));
  BOOST_TEST(on_case.values.size() == 9u);  // outside, then 8 devices
  BOOST_TEST(!on_case.values.at(1).empty(), "device 0 recorded its comparison");
  BOOST_TEST(on_case.hash() == on_case.digest_of());

  std::vector<Tensor> big;
  for (const Tensor& t : c.inputs) {
    big.push_back(t);
    for (float& f : big.back().data) f *= 1000.0f;
  }
  const std::vector<Tensor> own = run_following(*lp, shape, refs(big), nullptr, nullptr);
  const std::vector<Tensor> followed = run_following(*lp, shape, refs(big), nullptr, &on_case);
  // Its own decision: device 0's block, not the sum.
  BOOST_TEST(own.at(0).data.at(0) == 1000.0f * c.inputs[0].data[0], tt::tolerance(1e-5f));
  for (std::size_t k = 0; k < sum.size(); ++k)
    BOOST_TEST(followed.at(0).data[k] == 1000.0f * sum[k], tt::tolerance(1e-4f));
}

// The case's decisions are recorded once per program and case, whichever rule asks (CaseMemo).
BOOST_AUTO_TEST_CASE(the_case_memo_runs_each_case_once) {
  CaseMemo memo;
  int runs = 0;
  const auto record = [&](RunPath& p) {
    ++runs;
    p.values.assign(2, {});
  };
  BOOST_TEST(memo.path("case-a", record).values.size() == 2u);
  BOOST_TEST(memo.path("case-a", record).values.size() == 2u);
  BOOST_TEST(runs == 1);
  memo.path("case-b", record);
  BOOST_TEST(runs == 2);
  // A run that throws keeps nothing: the next asks again.
  BOOST_CHECK_THROW(memo.path("case-c", [](RunPath&) { throw std::runtime_error("refused"); }),
                    std::runtime_error);
  memo.path("case-c", record);
  BOOST_TEST(runs == 3);
  int asked = 0;
  BOOST_TEST(memo.decides("k", [&] { return ++asked, true; }));
  BOOST_TEST(memo.decides("k", [&] { return ++asked, false; }));
  BOOST_TEST(asked == 1);
}
