// gather and the scatters (issue #49, lib/interp/ops/indexing.cpp) at the CLI, on program files
// written here: indices of any value meshrun holds (2^24 and -2^24, one past either end) give
// JAX's result in every mode and never a read or write outside the array (the expected values
// are worked out by hand below, from JAX's rules: clip and promise_in_bounds clamp a gather's
// start into [0, n - 1]; fill gives fill_value; a scatter drops an out-of-bounds update except
// under clip, which clamps it; repeated indices apply in index order); and every bad param is
// one line naming the file and the equation, exit 2, before anything runs. JAX's own outputs
// for every mode and dtype are tests/jax/dtype_rules/{gather,scatter}_*.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"

namespace {

using json = nlohmann::json;
using meshrun::testing::has;
using meshrun::testing::lines_of;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::TempDir;

json type(const std::string& dtype, json shape) {
  return {{"dtype", dtype}, {"shape", std::move(shape)}};
}

// A program of no mesh: x (`xt`), i (i32[K], as [K, 1] index vectors) and, for a scatter, u
// (`ut`) -> y = `prim`(x, i[:, None], u) of type `yt`.
json program(const std::string& prim, const json& params, const json& xt, const json& yt,
             const json& ut = nullptr, const std::string& idx_dtype = "i32") {
  json inputs = json::array({{{"name", "x"}, {"dtype", xt["dtype"]}, {"shape", xt["shape"]}},
                             {{"name", "i"}, {"dtype", idx_dtype}, {"shape", {"K"}}}});
  json invars =
      json::array({{{"id", 0}, {"type", xt}}, {{"id", 1}, {"type", type(idx_dtype, {"K"})}}});
  json in = json::array({{{"var", 0}}, {{"var", 2}}});
  if (!ut.is_null()) {
    inputs.push_back({{"name", "u"}, {"dtype", ut["dtype"]}, {"shape", ut["shape"]}});
    invars.push_back({{"id", 3}, {"type", ut}});
    in.push_back({{"var", 3}});
  }
  json eqns =
      json::array({{{"primitive", "broadcast_in_dim"},
                    {"params", {{"shape", {"K", 1}}, {"broadcast_dimensions", {0}}}},
                    {"in", json::array({{{"var", 1}}})},
                    {"out", json::array({{{"id", 2}, {"type", type(idx_dtype, {"K", 1})}}})}},
                   {{"primitive", prim},
                    {"params", params},
                    {"in", in},
                    {"out", json::array({{{"id", 4}, {"type", yt}}})}}});
  return {
      {"format", "meshrun-program"},
      {"version", 1},
      {"name", "indexing"},
      {"inputs", inputs},
      {"outputs", json::array({{{"name", "y"}}})},
      {"exports",
       json::array(
           {{{"mesh", json::array()},
             {"dims", {"K"}},
             {"jaxpr",
              {{"invars", invars}, {"eqns", eqns}, {"outvars", json::array({{{"var", 4}}})}}}}})}};
}

json gather_params(const std::string& mode) {
  return {{"offset_dims", json::array()},
          {"collapsed_slice_dims", {0}},
          {"start_index_map", {0}},
          {"operand_batching_dims", json::array()},
          {"start_indices_batching_dims", json::array()},
          {"slice_sizes", {1}},
          {"indices_are_sorted", false},
          {"unique_indices", false},
          {"mode", mode},
          {"fill_value", -1.5}};
}

json scatter_params(const std::string& mode) {
  return {{"update_window_dims", json::array()},
          {"inserted_window_dims", {0}},
          {"scatter_dims_to_operand_dims", {0}},
          {"operand_batching_dims", json::array()},
          {"scatter_indices_batching_dims", json::array()},
          {"indices_are_sorted", false},
          {"unique_indices", false},
          {"mode", mode}};
}

const json kF8 = type("f32", {8});
const json kFK = type("f32", {"K"});

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// x = 10..17; i: in bounds at both ends, one past either end, 2^24 and -2^24, then 3;
// u = 1, 2, 4, ..., 64 (each update's bit tells which were applied). For the inputs `prog`
// takes, of its shapes (bool: 0 and 1).
std::string case_for(const json& prog) {
  json input = json::object();
  for (const json& in : prog["inputs"]) {
    const std::string name = in["name"];
    const bool boolean = in["dtype"] == "bool";
    json v = json::array();
    if (name == "i") {
      v = {0, 7, 8, -1, 16777216, -16777216, 3};
    } else {
      const int n = in["shape"][0].is_number() ? in["shape"][0].get<int>() : 7;
      for (int k = 0; k < n; ++k) v.push_back(boolean ? k % 2 : name == "x" ? 10 + k : 1 << k);
    }
    input[name] = v;
  }
  return json{{"input", input}}.dump();
}

std::string run_ok(const TempDir& dir, const json& prog) {
  const std::string p = write(dir, "prog.json", prog.dump());
  const std::string c = write(dir, "case.json", case_for(prog));
  const Result r = run({"run", "--exact", p, c});
  BOOST_TEST(r.code == 0, r.err);
  return r.out;
}

// One line, exit 2, naming the file and the gather/scatter equation, holding `part`; nothing on
// stdout.
void refused(const TempDir& dir, const json& prog, const std::string& part,
             const std::string& eqn = "exports[0].jaxpr.eqns[1]") {
  const std::string p = write(dir, "bad.json", prog.dump());
  const std::string c = write(dir, "case.json", case_for(prog));
  const Result r = run({"run", p, c});
  BOOST_TEST(r.code == 2, part << ": exit " << r.code << ": " << r.err);
  BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
  BOOST_TEST(has(r.err, "meshrun: " + p + ": " + eqn), r.err);
  BOOST_TEST(has(r.err, part), "wanted '" << part << "', got " << r.err);
  BOOST_TEST(r.out.empty(), r.out);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(indexing)

BOOST_AUTO_TEST_CASE(a_gather_of_any_index_reads_inside_the_array) {
  TempDir dir;
  // clip and promise_in_bounds clamp: 8 and 2^24 read x[7], -1 and -2^24 read x[0].
  for (const char* mode : {"clip", "promise_in_bounds"})
    BOOST_TEST(run_ok(dir, program("gather", gather_params(mode), kF8, type("f32", {"K"}))) ==
                   "{\"y\":[10.0,17.0,17.0,10.0,17.0,10.0,13.0]}\n",
               mode);
  // fill: fill_value for each index outside [0, 7].
  BOOST_TEST(run_ok(dir, program("gather", gather_params("fill"), kF8, type("f32", {"K"}))) ==
             "{\"y\":[10.0,17.0,-1.5,-1.5,-1.5,-1.5,13.0]}\n");
}

BOOST_AUTO_TEST_CASE(a_scatter_of_any_index_writes_inside_the_array) {
  TempDir dir;
  // fill and promise_in_bounds drop the 4 updates out of bounds (4, 8, 16, 32).
  for (const char* mode : {"fill", "promise_in_bounds"}) {
    BOOST_TEST(run_ok(dir, program("scatter-add", scatter_params(mode), kF8, kF8, kFK)) ==
                   "{\"y\":[11.0,11.0,12.0,77.0,14.0,15.0,16.0,19.0]}\n",
               mode);
    BOOST_TEST(run_ok(dir, program("scatter", scatter_params(mode), kF8, kF8, kFK)) ==
                   "{\"y\":[1.0,11.0,12.0,64.0,14.0,15.0,16.0,2.0]}\n",
               mode);
  }
  // one_hot (JAX's GatherScatterMode.ONE_HOT): XLA's plain scatter, as promise_in_bounds
  BOOST_TEST(run_ok(dir, program("scatter-add", scatter_params("one_hot"), kF8, kF8, kFK)) ==
             "{\"y\":[11.0,11.0,12.0,77.0,14.0,15.0,16.0,19.0]}\n");
  BOOST_TEST(run_ok(dir, program("scatter", scatter_params("one_hot"), kF8, kF8, kFK)) ==
             "{\"y\":[1.0,11.0,12.0,64.0,14.0,15.0,16.0,2.0]}\n");
  // clip: 8 and 2^24 land on 7 (17 + 2 + 4 + 16), -1 and -2^24 on 0 (10 + 1 + 8 + 32); a set
  // keeps the last in index order (32 and 16).
  BOOST_TEST(run_ok(dir, program("scatter-add", scatter_params("clip"), kF8, kF8, kFK)) ==
             "{\"y\":[51.0,11.0,12.0,77.0,14.0,15.0,16.0,39.0]}\n");
  BOOST_TEST(run_ok(dir, program("scatter", scatter_params("clip"), kF8, kF8, kFK)) ==
             "{\"y\":[32.0,11.0,12.0,64.0,14.0,15.0,16.0,16.0]}\n");
  BOOST_TEST(run_ok(dir, program("scatter-max", scatter_params("clip"), kF8, kF8, kFK)) ==
             "{\"y\":[32.0,11.0,12.0,64.0,14.0,15.0,16.0,17.0]}\n");
  BOOST_TEST(run_ok(dir, program("scatter-mul", scatter_params("fill"), kF8, kF8, kFK)) ==
             "{\"y\":[10.0,11.0,12.0,832.0,14.0,15.0,16.0,34.0]}\n");
}

// An int32 gather's default fill is -2^31 (JAX's), beyond the 2^24 meshrun holds: refused when
// an index is out of bounds, one line, exit 2; in bounds, the program runs.
BOOST_AUTO_TEST_CASE(an_int32_fill_beyond_2_24_is_refused_only_when_used) {
  TempDir dir;
  json params = gather_params("fill");
  params["fill_value"] = nullptr;
  const json prog = program("gather", params, type("i32", {8}), type("i32", {"K"}));
  refused(dir, prog,
          "(gather): gather: an index out of bounds in mode fill gives the int32 fill "
          "value -2147483648, beyond 2^24, which meshrun holds exactly");
  const std::string p = write(dir, "in.json", prog.dump());
  const std::string c =
      write(dir, "in-case.json", R"({"input": {"x": [10, 11, 12, 13, 14, 15, 16, 17],
                                               "i": [7, 0, 3]}})");
  const Result r = run({"run", p, c});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out == "{\"y\":[17.0,10.0,13.0]}\n");
}

BOOST_AUTO_TEST_CASE(every_bad_gather_param_is_one_line_exit_2) {
  TempDir dir;
  const json yt = type("f32", {"K"});
  const auto with = [&](const char* key, json v) {
    json p = gather_params("clip");
    if (v.is_null()) {
      p.erase(key);
    } else {
      p[key] = std::move(v);
    }
    return program("gather", p, kF8, yt);
  };
  refused(
      dir, with("offset_dims", {2}),
      "Offset dimension 0 in gather op is out of bounds; got 2, but should have been in [0, 2)");
  refused(dir, with("offset_dims", "x"), "param 'offset_dims' must be a list, got a string");
  refused(dir, with("collapsed_slice_dims", {1}),
          "Invalid collapsed_slice_dims set in gather op; valid range is [0, 1); got: 1.");
  refused(dir, with("start_index_map", {0, 0}),
          "Gather op has 2 elements in start_index_map and the bound of dimension "
          "index_vector_dim=1 of indices is 1. These two numbers must be equal.");
  refused(dir, with("start_index_map", {-3}),
          "Invalid start_index_map; domain is [0, 1), got: 0->-3.");
  refused(dir, with("start_index_map", {4294967296}),
          "Invalid start_index_map; domain is [0, 1), got: 0->4294967296.");
  refused(dir, with("slice_sizes", {9}),
          "Slice size at index 0 in gather op is out of range, must be within [0, 8 + 1), got 9.");
  refused(dir, with("slice_sizes", {2}),
          "Gather op can only collapse slice dims with bound 1, but bound is 2");
  refused(dir, with("slice_sizes", {1, 1}),
          "Gather op must have one slice size for every input dimension; got: "
          "len(slice_sizes)=2, input_shape.rank=1");
  refused(dir, with("slice_sizes", {-1}), "param 'slice_sizes' holds the size -1");
  refused(dir, with("operand_batching_dims", {0}),
          "collapsed_slice_dims and operand_batching_dims in gather op must be disjoint");
  refused(dir, with("start_indices_batching_dims", {1}),
          "Gather op cannot have the index vector dimension as a batching dimension");
  refused(dir, with("mode", "wrap"),
          "gather param 'mode' must be \"clip\", \"fill\", \"promise_in_bounds\" or (a scatter) "
          "\"one_hot\", got \"wrap\"");
  // JAX's GatherScatterMode.ONE_HOT on a gather: JAX 0.10.2 cannot lower it either
  refused(dir, with("mode", "one_hot"), "gather with mode \"one_hot\": JAX 0.10.2 cannot lower it");
  refused(dir, with("mode", nullptr), "param 'mode' missing");
  refused(dir, with("fill_value", "lots"), "gather param 'fill_value' must be null or a float32");
  refused(dir, with("unique_indices", 1), "param 'unique_indices' must be a bool, got an integer");
  // indices of another dtype; an output declared of another shape than the gather's
  refused(dir, program("gather", gather_params("clip"), kF8, yt, nullptr, "f32"),
          "gather indices must be int32 (the integer dtype meshrun holds), got f32[7,1]");
  refused(dir, program("gather", gather_params("clip"), kF8, type("f32", {"K", 1})),
          "exports[0].jaxpr.eqns[1].out[0]: declared f32[7,1], but gather gives f32[7]");
}

BOOST_AUTO_TEST_CASE(every_bad_scatter_param_is_one_line_exit_2) {
  TempDir dir;
  const auto with = [&](const char* prim, const char* key, json v) {
    json p = scatter_params("fill");
    p[key] = std::move(v);
    return program(prim, p, kF8, kF8, kFK);
  };
  refused(dir, with("scatter-add", "update_window_dims", {0}),
          "Updates tensor must be of rank 2; got 1.");
  refused(dir, with("scatter", "inserted_window_dims", json::array()),
          "Scatter op has window of size 0; doesn't match operand of rank 1.");
  refused(dir, with("scatter-mul", "inserted_window_dims", {0, 0}),
          "inserted_window_dims in scatter-mul op must not repeat; got: (0, 0).");
  refused(dir, with("scatter-min", "scatter_dims_to_operand_dims", {5}),
          "Invalid scatter_dims_to_operand_dims mapping; domain is [0, 1), got: 0->5.");
  refused(dir, with("scatter-max", "scatter_indices_batching_dims", {0}),
          "Scatter op requires equal numbers of operand_batching_dims and "
          "scatter_indices_batching_dims, got () and (0,).");
  refused(dir, with("scatter-sub", "mode", 2), "scatter-sub param 'mode' must be");
  // updates of another dtype, and of another length than the indices
  refused(dir, program("scatter-add", scatter_params("clip"), kF8, kF8, type("i32", {"K"})),
          "scatter-add requires arguments to have the same dtypes, got float32, int32.");
  refused(dir, program("scatter", scatter_params("clip"), kF8, kF8, type("f32", {3})),
          "Bounds of the scatter dimensions of updates must be the same as the bounds of the "
          "corresponding dimensions of scatter indices. For scatter dimension 0, updates bound "
          "is 3, indices bound is 7.");
  // JAX's add and mul do not take bool
  refused(dir,
          program("scatter-add", scatter_params("clip"), type("bool", {8}), type("bool", {8}),
                  type("bool", {"K"})),
          "scatter-add does not accept dtype bool");
}

// x.at[i].apply(f) (issue #49): scatter-apply runs its update_jaxpr on each element an index
// vector selects, once per occurrence (XLA:CPU's scatter loop calls it per update). f = 2 v + 1
// here; JAX's own bits, elementwise math and repeated indices included, are
// tests/jax/dtype_rules/scatter_apply-*.
json apply_body(json eqns, const std::string& dtype = "f32") {
  return {{"invars", json::array({{{"id", 0}, {"type", type(dtype, json::array())}},
                                  {{"id", 1}, {"type", type(dtype, json::array())}}})},
          {"constvars", json::array()},
          {"consts", json::array()},
          {"eqns", std::move(eqns)},
          {"outvars", json::array({{{"var", 3}}})}};
}

json two_v_plus_one() {
  const json s = type("f32", json::array());
  return json::array({{{"primitive", "mul"},
                       {"params", json::object()},
                       {"in", json::array({{{"var", 0}}, {{"lit", 2.0}, {"dtype", "f32"}}})},
                       {"out", json::array({{{"id", 2}, {"type", s}}})}},
                      {{"primitive", "add"},
                       {"params", json::object()},
                       {"in", json::array({{{"var", 2}}, {{"lit", 1.0}, {"dtype", "f32"}}})},
                       {"out", json::array({{{"id", 3}, {"type", s}}})}}});
}

json apply_params(const std::string& mode, json body) {
  json p = scatter_params(mode);
  p["update_jaxpr"] = std::move(body);
  return p;
}

BOOST_AUTO_TEST_CASE(scatter_apply_runs_f_once_per_occurrence) {
  TempDir dir;
  // fill: 0, 7 and 3 once each (the updates u are not read)
  BOOST_TEST(
      run_ok(dir, program("scatter-apply", apply_params("fill", apply_body(two_v_plus_one())), kF8,
                          kF8, kFK)) == "{\"y\":[21.0,11.0,12.0,27.0,14.0,15.0,16.0,35.0]}\n");
  // clip: 0, -1 and -2^24 all land on 0 (10 -> 21 -> 43 -> 87), 7, 8 and 2^24 on 7
  BOOST_TEST(
      run_ok(dir, program("scatter-apply", apply_params("clip", apply_body(two_v_plus_one())), kF8,
                          kF8, kFK)) == "{\"y\":[87.0,11.0,12.0,27.0,14.0,15.0,16.0,143.0]}\n");
}

BOOST_AUTO_TEST_CASE(a_scatter_apply_body_not_elementwise_is_one_line_exit_2) {
  TempDir dir;
  const auto with_body = [&](json body) {
    return program("scatter-apply", apply_params("fill", std::move(body)), kF8, kF8, kFK);
  };
  json wide = two_v_plus_one();  // v broadcast to f32[3]: not a function of one element
  wide[0] = {{"primitive", "broadcast_in_dim"},
             {"params", {{"shape", {3}}, {"broadcast_dimensions", json::array()}}},
             {"in", json::array({{{"var", 0}}})},
             {"out", json::array({{{"id", 2}, {"type", type("f32", {3})}}})}};
  refused(dir, with_body(apply_body(wide)),
          "(scatter-apply): scatter-apply: its update_jaxpr.eqns[0].out[0]: broadcast_in_dim "
          "gives f32[3], not a scalar (meshrun runs a body elementwise over its scalar invars)");
  json coll = two_v_plus_one();  // a collective: no device's value to take
  coll[0]["primitive"] = "psum";
  coll[0]["params"] = {{"axes", {"data"}}};
  coll[0]["in"] = json::array({{{"var", 0}}});
  refused(dir, with_body(apply_body(coll)), "its update_jaxpr.eqns[0]: primitive 'psum'");
  json consts = apply_body(two_v_plus_one());
  consts["constvars"] = json::array({{{"id", 9}, {"type", type("f32", {8})}}});
  refused(dir, with_body(consts), "its update_jaxpr: closes over values (constvars)");
  refused(dir, with_body(apply_body(two_v_plus_one(), "i32")),
          "its invars must be two scalars of the operand's and the updates' dtype, float32 and "
          "float32");
  json unknown = two_v_plus_one();
  unknown[1]["in"][0]["var"] = 7;
  refused(dir, with_body(apply_body(unknown)),
          "its update_jaxpr.eqns[1].in[0]: a variable used before it is defined");
  refused(dir, with_body(nullptr), "its update_jaxpr: not a jaxpr");
}

// The compute budget counts each index vector's own work: 2^28 of them (a scalar index
// broadcast) is beyond the default 2^38 flops, refused before the run.
BOOST_AUTO_TEST_CASE(the_budget_counts_every_index_vector) {
  TempDir dir;
  json prog = program("gather", gather_params("clip"), kF8, type("f32", {268435456}));
  prog["inputs"][1]["shape"] = json::array();
  prog["exports"][0]["dims"] = json::array();
  auto& jx = prog["exports"][0]["jaxpr"];
  jx["invars"][1]["type"]["shape"] = json::array();
  jx["eqns"][0]["params"] = {{"shape", {268435456, 1}}, {"broadcast_dimensions", json::array()}};
  jx["eqns"][0]["out"][0]["type"]["shape"] = {268435456, 1};
  const std::string p = write(dir, "big.json", prog.dump());
  const std::string c =
      write(dir, "big-case.json", R"({"input": {"x": [1, 2, 3, 4, 5, 6, 7, 8], "i": 3}})");
  const Result r = run({"run", p, c});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
  BOOST_TEST(has(r.err,
                 "exports[0].jaxpr.eqns[1] (gather): gather of f32[8], i32[268435456,1] -> "
                 "f32[268435456] on 1 device brings the program to "),
             r.err);
  BOOST_TEST(has(r.err, "(--max-flops N raises it)"), r.err);
  BOOST_TEST(r.seconds < 10);
}

BOOST_AUTO_TEST_SUITE_END()
