// A program file is compiled once, at load (interp/compiled.hpp): a run after it parses no
// partition spec, builds no contraction or fusion plan and looks no primitive up by name -- for a
// plain program (one shard_map, run as a body on every device) and for one with equations around
// its shard_map (evaluated on the global arrays, the shard_map handed to the mesh) alike.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "interp/compiled.hpp"
#include "interp/program.hpp"
#include "io/case_reader.hpp"
#include "mesh/mesh.hpp"
#include "programs/program.hpp"

using namespace meshrun;
using namespace meshrun::interp;

namespace {

struct Counts {
  std::uint64_t specs, plans, lookups;
  static Counts now() {
    CompileCounters& c = compile_counters();
    return {c.spec_parses.load(), c.plans.load(), c.primitive_lookups.load()};
  }
};

std::string source(const std::string& relative) {
  return std::string(MESHRUN_SOURCE_DIR) + "/" + relative;
}

// Loads `program`, then runs `case_file` on it `runs` times; the counts the runs added.
Counts counts_of_runs(const std::string& program, const std::string& case_file, int runs,
                      Counts* at_load, std::vector<float>* first_output) {
  const Counts before = Counts::now();
  const auto lp = load_program(source(program), 1 << 26, std::chrono::seconds(1), "");
  const Counts loaded = Counts::now();
  *at_load = {loaded.specs - before.specs, loaded.plans - before.plans,
              loaded.lookups - before.lookups};
  const Case c = read_case(source(case_file), &lp->def, 0);
  for (int r = 0; r < runs; ++r) {
    Mesh mesh(run_mesh(lp->def, {}, c.mesh, 0));
    const std::vector<Tensor> out = shard_map(mesh, lp->def, c.input_refs());
    BOOST_REQUIRE(!out.empty());
    if (r == 0) *first_output = out.front().data;
    BOOST_CHECK(out.front().data == *first_output);  // every run the same bits
  }
  const Counts after = Counts::now();
  return {after.specs - loaded.specs, after.plans - loaded.plans, after.lookups - loaded.lookups};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_plain_program_runs_without_parsing_or_planning) {
  Counts load{}, runs{};
  std::vector<float> out;
  runs = counts_of_runs("cases/programs/mlp-train.json", "cases/mlp-train/example1.json", 3, &load,
                        &out);
  // The load did the work: every export's specs, every jaxpr's plans, every equation's primitive.
  BOOST_CHECK_GT(load.specs, 0u);
  BOOST_CHECK_GT(load.plans, 0u);
  BOOST_CHECK_GT(load.lookups, 10u);
  // Three runs on eight devices did none of it.
  BOOST_CHECK_EQUAL(runs.specs, 0u);
  BOOST_CHECK_EQUAL(runs.plans, 0u);
  BOOST_CHECK_EQUAL(runs.lookups, 0u);
}

BOOST_AUTO_TEST_CASE(a_program_with_equations_around_its_shard_map_runs_without_parsing) {
  Counts load{}, runs{};
  std::vector<float> out;
  runs = counts_of_runs("cases/submissions/mlp-train/right-loss-mean-outside.json",
                        "cases/mlp-train/example1.json", 3, &load, &out);
  BOOST_CHECK_GT(load.specs, 0u);
  BOOST_CHECK_GT(load.plans, 0u);
  BOOST_CHECK_EQUAL(runs.specs, 0u);
  BOOST_CHECK_EQUAL(runs.plans, 0u);
  BOOST_CHECK_EQUAL(runs.lookups, 0u);
}

// The shard_maps of an export are listed once, in evaluation order, each with its params read.
BOOST_AUTO_TEST_CASE(the_shard_maps_are_listed_at_load_with_their_specs) {
  const auto lp = load_program(source("cases/submissions/mlp-train/right-loss-mean-outside.json"),
                               1 << 26, std::chrono::seconds(1), "");
  BOOST_REQUIRE(!lp->plain);
  BOOST_REQUIRE_EQUAL(lp->compiled.exports.size(), lp->file.exports.size());
  for (const CompiledExport& ce : lp->compiled.exports) {
    BOOST_REQUIRE_EQUAL(ce.shard_maps.size(), 1u);
    const CompiledShardMap& sm = *ce.shard_maps.front();
    BOOST_CHECK_EQUAL(sm.eqn->primitive, "shard_map");
    BOOST_CHECK(sm.specs_read);
    BOOST_CHECK(sm.param_error.empty());
    BOOST_CHECK(sm.mesh == ce.exp->mesh);
    BOOST_CHECK_EQUAL(sm.in.size(), sm.in_specs.size());
    BOOST_CHECK_EQUAL(sm.out.size(), sm.out_specs.size());
  }
  BOOST_CHECK_EQUAL(lp->def.shard_maps, 1);
}
