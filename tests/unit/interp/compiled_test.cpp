// A program file is compiled once, at load (interp/compiled.hpp): a run after it parses no
// partition spec, builds no contraction or fusion plan and looks no primitive up by name -- for a
// plain program (one shard_map, run as a body on every device) and for one with equations around
// its shard_map (evaluated on the global arrays, the shard_map handed to the mesh) alike.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/test/unit_test.hpp>

#include "interp/compiled.hpp"
#include "interp/eval.hpp"
#include "interp/reader.hpp"
#include "grade/load.hpp"
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
  BOOST_CHECK_EQUAL(lp->def.computation->shard_maps(), 1);
}

namespace {

using json = nlohmann::json;

// An equation of f32[4] values: prim(in...) -> out.
json f32_eqn(const char* prim, const std::vector<int>& in, int out,
             const json& params = json::object()) {
  json ins = json::array();
  for (int v : in) ins.push_back({{"var", v}});
  const json out_var = {{"id", out}, {"type", {{"dtype", "f32"}, {"shape", {4}}}}};
  return {{"primitive", prim}, {"params", params}, {"in", ins}, {"out", json::array({out_var})}};
}

// A program file of one export on Mesh('data': 1) whose inputs (vars 0, 1, ...) and outputs are
// f32[4], read as meshrun reads one.
ProgramFile f32_program(const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const json& eqns,
                        const std::vector<int>& outvars) {
  const json f32 = {{"dtype", "f32"}, {"shape", {4}}};
  json in = json::array(), invars = json::array(), out = json::array(), outs = json::array();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in.push_back({{"name", inputs[i]}, {"dtype", "f32"}, {"shape", {4}}});
    invars.push_back({{"id", static_cast<int>(i)}, {"type", f32}});
  }
  for (const std::string& o : outputs) out.push_back({{"name", o}});
  for (int v : outvars) outs.push_back({{"var", v}});
  const json prog = {{"format", "meshrun-program"},
                     {"version", 1},
                     {"name", "tiny"},
                     {"inputs", in},
                     {"outputs", out},
                     {"exports",
                      {{{"mesh", json::array({json::array({"data", 1})})},
                        {"dims", json::array()},
                        {"jaxpr", {{"invars", invars}, {"eqns", eqns}, {"outvars", outs}}}}}}};
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("meshrun-compiled-test-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << prog.dump();
  ProgramFile file = read_program_file(path.string(), 1 << 20, std::chrono::seconds(1));
  std::filesystem::remove(path);
  return file;
}

}  // namespace

// An identity equation (pvary, pcast, stop_gradient, copy) whose operand is used again after it
// hands its operand's buffer on instead of copying it: compile renames the later uses to its
// result (CompiledJaxpr::run), so the identity is the operand's last use. Here
//   b = stop_gradient a;  c = neg a;  d = pvary[axes=()] b;  e = mul d a   -> outputs (d, c, e)
// -- b and d are a's very buffer, c and e read it, and the file's jaxpr is left as it was.
BOOST_AUTO_TEST_CASE(an_identity_moves_its_operand_on_when_the_operand_is_used_later) {
  const ProgramFile file =
      f32_program({"a"}, {"d", "c", "e"},
                  {f32_eqn("stop_gradient", {0}, 1), f32_eqn("neg", {0}, 2),
                   f32_eqn("pvary", {1}, 3, {{"axes", json::array()}}), f32_eqn("mul", {3, 0}, 4)},
                  {3, 2, 4});
  const Jaxpr& jx = file.exports.at(0).jaxpr;
  const std::unique_ptr<CompiledJaxpr> cj = compile_jaxpr(jx);
  BOOST_REQUIRE(cj->run != cj->jaxpr);
  BOOST_TEST(jx.eqns[1].in[0].var == 0);        // the file's jaxpr: untouched
  BOOST_TEST(cj->run->eqns[1].in[0].var == 1);  // neg reads b
  BOOST_TEST(cj->run->eqns[3].in[1].var == 3);  // mul reads d

  std::vector<Value> args;
  args.emplace_back(DType::kF32, Tensor({4}, {1.0f, -2.0f, 3.0f, 0.5f}));
  const float* buffer = args[0].t.data.data();
  DimBindings dims;
  PrimContext ctx;
  ctx.dims = &dims;
  const std::vector<Value> out = eval_jaxpr(*cj, std::move(args), ctx, nullptr);
  BOOST_REQUIRE(out.size() == 3u);
  BOOST_TEST(out[0].t.data.data() == buffer);  // moved through stop_gradient and pvary
  BOOST_TEST(out[0].t.data == (std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f}));
  BOOST_TEST(out[1].t.data == (std::vector<float>{-1.0f, 2.0f, -3.0f, -0.5f}));
  BOOST_TEST(out[2].t.data == (std::vector<float>{1.0f, 4.0f, 9.0f, 0.25f}));
}

// The rename never changes which products become an FMA (the file's bits). JAX writes w*x + w,
// w invariant, as  a = pvary w; t = mul x a; b = pvary w; s = add t b : renaming b's operand to
// a would make `a` die between the mul and its add, which XLA (and the file's own plan) contracts.
// Here with copy for pvary: s must be fma(x, w, w), one rounding, not x*w + w.
BOOST_AUTO_TEST_CASE(an_identity_rename_keeps_every_fma_contraction) {
  const ProgramFile file = f32_program({"w", "x"}, {"s"},
                                       {f32_eqn("copy", {0}, 2), f32_eqn("mul", {1, 2}, 3),
                                        f32_eqn("copy", {0}, 4), f32_eqn("add", {3, 4}, 5)},
                                       {5});
  const std::unique_ptr<CompiledJaxpr> cj = compile_jaxpr(file.exports.at(0).jaxpr);
  BOOST_TEST(cj->contractions.at[3].mul == 1);  // the file's plan: add(t, b) absorbs t = mul

  const std::vector<float> w = {1.000244140625f, 3.0f, -0.5f, 1e-3f};
  const std::vector<float> x = {-1.000244140625f, 0.3333333f, 7.0f, -1e3f};
  std::vector<Value> args;
  args.emplace_back(DType::kF32, Tensor({4}, w));
  args.emplace_back(DType::kF32, Tensor({4}, x));
  DimBindings dims;
  PrimContext ctx;
  ctx.dims = &dims;
  const std::vector<Value> out = eval_jaxpr(*cj, std::move(args), ctx, nullptr);
  BOOST_REQUIRE(out.size() == 1u);
  for (std::size_t i = 0; i < 4; ++i) {
    const float want = std::fma(x[i], w[i], w[i]);
    BOOST_TEST(out[0].t.data[i] == want, i << ": " << out[0].t.data[i] << " != fma " << want);
  }
  BOOST_TEST(std::fma(x[0], w[0], w[0]) != x[0] * w[0] + w[0]);  // the case tells them apart
}
