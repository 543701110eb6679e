// Loop fusion (lib/interp/fusion.hpp): a chain of elementwise equations over more than 64Ki
// elements -- with NaN, -0, infinities, an FMA-contractible pair inside, scalars and literals --
// gives the same bits fused as unfused (set_fusion_enabled(false): each equation its own pass),
// and the plan makes the groups it should (and none below the size threshold).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/contract.hpp"
#include "interp/eval.hpp"
#include "interp/fusion.hpp"
#include "interp/reader.hpp"

using namespace meshrun;
using namespace meshrun::interp;
using json = nlohmann::json;

namespace {

// A program of one export on Mesh('data': 1): inputs x, y, z of shape (rows, cols), s a scalar;
// outputs the chain's end and `mid`, a value the chain also uses (so the plan makes two groups).
struct Chain {
  json eqns = json::array();
  int next = 4;
  json shape;

  explicit Chain(std::size_t rows, std::size_t cols) : shape(json::array({rows, cols})) {}
  static json var(int v) { return {{"var", v}}; }
  static json lit(double x) { return {{"lit", x}, {"dtype", "f32"}}; }
  int eq(const std::string& prim, json in, json params = json::object(), bool scalar = false) {
    const int v = next++;
    eqns.push_back(
        {{"primitive", prim},
         {"params", params},
         {"in", in},
         {"out",
          json::array(
              {{{"id", v},
                {"type", {{"dtype", "f32"}, {"shape", scalar ? json::array() : shape}}}}})}});
    return v;
  }
};

std::string write_chain(const std::filesystem::path& dir, std::size_t rows, std::size_t cols) {
  Chain c(rows, cols);
  const int x = 0, y = 1, z = 2, s = 3;
  using V = json;
  const auto var = Chain::var;
  const auto lit = Chain::lit;
  const int a = c.eq("mul", V::array({var(x), var(y)}));
  const int b = c.eq("add", V::array({var(a), var(z)}));  // fma(x, y, z)
  const int m1 = c.eq("max", V::array({var(b), var(x)}));
  const int mid = c.eq("min", V::array({var(m1), lit(3.0)}));  // an output: a group ends here
  const int n1 = c.eq("neg", V::array({var(mid)}));
  const int half = c.eq("pvary", V::array({lit(0.5)}), {{"axes", {"data"}}}, true);  // an alias
  const int h1 = c.eq("mul", V::array({var(n1), var(half)}));
  const int h2 = c.eq("stop_gradient", V::array({var(h1)}));  // an alias of a member
  const int s1 = c.eq("sub", V::array({var(h2), var(s)}));
  const int t1 = c.eq("tanh", V::array({var(s1)}));
  const int p3 = c.eq("integer_pow", V::array({var(t1)}), {{"y", 3}});
  const int q = c.eq("mul", V::array({var(p3), var(s)}));
  const int r = c.eq("sub", V::array({var(z), var(q)}));  // fma(-p3, s, z)
  const int d = c.eq("div", V::array({var(r), var(y)}));
  const int sg = c.eq("sign", V::array({var(d)}));
  const int ab = c.eq("abs", V::array({var(d)}));
  const int e1 = c.eq("add_any", V::array({var(sg), var(ab)}));
  const int rs = c.eq("rsqrt", V::array({var(ab)}));
  const int lg = c.eq("logistic", V::array({var(rs)}));
  const int l1 = c.eq("log1p", V::array({var(lg)}));
  const int sq = c.eq("square", V::array({var(l1)}));
  const int ex = c.eq("exp", V::array({var(sq)}));
  const int lo = c.eq("log", V::array({var(ex)}));
  const int sr = c.eq("sqrt", V::array({var(e1)}));
  const int rd = c.eq("div", V::array({lit(2.0), var(sr)}));  // a scalar on the left
  const int er = c.eq("erf", V::array({var(lo)}));
  const int pw = c.eq("pow", V::array({var(ab), lit(1.5)}));
  const int p5 = c.eq("integer_pow", V::array({var(er)}), {{"y", -5}});
  const int mn = c.eq("min", V::array({var(p5), var(rd)}));
  const int mx = c.eq("max", V::array({lit(0.25), var(pw)}));
  const int ad = c.eq("add", V::array({var(mn), var(mx)}));
  const int out = c.eq("mul", V::array({var(ad), var(e1)}));
  const json f32s = {{"dtype", "f32"}, {"shape", c.shape}};
  json invars = json::array();
  for (int i = 0; i < 3; ++i) invars.push_back({{"id", i}, {"type", f32s}});
  invars.push_back({{"id", s}, {"type", {{"dtype", "f32"}, {"shape", json::array()}}}});
  const json prog = {{"format", "meshrun-program"},
                     {"version", 1},
                     {"name", "chain"},
                     {"inputs",
                      {{{"name", "x"}, {"dtype", "f32"}, {"shape", {"N", "D"}}},
                       {{"name", "y"}, {"dtype", "f32"}, {"shape", {"N", "D"}}},
                       {{"name", "z"}, {"dtype", "f32"}, {"shape", {"N", "D"}}},
                       {{"name", "s"}, {"dtype", "f32"}, {"shape", json::array()}}}},
                     {"outputs", {{{"name", "out"}}, {{"name", "mid"}}}},
                     {"exports",
                      {{{"mesh", json::array({json::array({"data", 1})})},
                        {"dims", json::array()},
                        {"jaxpr",
                         {{"invars", invars},
                          {"eqns", c.eqns},
                          {"outvars", json::array({var(out), var(mid)})}}}}}}};
  const std::filesystem::path path = dir / "chain.json";
  std::ofstream(path) << prog.dump();
  return path.string();
}

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("meshrun-fusion-test-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::vector<Value> run(const ProgramFile& file, const std::vector<Value>& args, bool fused) {
  const bool was = set_fusion_enabled(fused);
  DimBindings dims;
  PrimContext ctx;
  ctx.dims = &dims;
  std::vector<Value> out = eval_jaxpr(file.exports.at(0).jaxpr, args, ctx);
  set_fusion_enabled(was);
  return out;
}

std::vector<Value> inputs(std::size_t n) {
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(22);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<Value> in;
  const std::vector<float> special = {kNaN, -0.0f, 0.0f, kInf, -kInf, 1e-40f, -1e-40f, 3.0f};
  for (int k = 0; k < 3; ++k) {
    std::vector<float> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = u(rng);
    // Special values at varied places (chunk boundaries included) in each input.
    for (std::size_t i = static_cast<std::size_t>(k); i < n; i += 997)
      d[i] = special[(i / 997 + static_cast<std::size_t>(k)) % special.size()];
    d[1023] = -0.0f;
    d[1024] = kNaN;
    d[n - 1] = -0.0f;
    in.emplace_back(DType::kF32, Tensor({257, n / 257}, std::move(d)));
  }
  in.emplace_back(DType::kF32, Tensor::scalar(0.75f));
  return in;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fused_chain_has_the_unfused_bits) {
  TempDir dir;
  const std::size_t rows = 257, cols = 300;  // 77100 elements: not a whole number of chunks
  const ProgramFile file = read_program_file(write_chain(dir.path, rows, cols), 1 << 24,
                                             std::chrono::milliseconds(1000));
  const Jaxpr& jx = file.exports.at(0).jaxpr;
  DimBindings dims;
  const FusionPlan plan = plan_fusion(jx, plan_contractions(jx), &dims);
  // [mul add(fma) max min] ends at `mid` (an output); the rest is one group.
  BOOST_REQUIRE_EQUAL(plan.groups.size(), 2u);
  BOOST_CHECK_EQUAL(plan.groups[0].begin, 0u);
  BOOST_CHECK_EQUAL(plan.groups[0].end, 4u);
  BOOST_CHECK(plan.groups[0].ops.front().fma);
  BOOST_CHECK_EQUAL(plan.groups[1].begin, 4u);
  BOOST_CHECK_EQUAL(plan.groups[1].end, jx.eqns.size());
  BOOST_CHECK_LE(plan.groups[1].slots, 6);  // slots are reused, not one per equation
  BOOST_CHECK_GT(plan.groups[1].ops.size(), 20u);

  const std::vector<Value> in = inputs(rows * cols);
  const std::vector<Value> fused = run(file, in, true);
  const std::vector<Value> plain = run(file, in, false);
  BOOST_REQUIRE_EQUAL(fused.size(), 2u);
  BOOST_REQUIRE_EQUAL(plain.size(), 2u);
  std::size_t nans = 0, neg_zeros = 0;
  for (std::size_t o = 0; o < 2; ++o) {
    BOOST_REQUIRE(fused[o].t.shape == plain[o].t.shape);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < plain[o].t.size(); ++i) {
      const float a = fused[o].t.data[i], b = plain[o].t.data[i];
      // A NaN is a NaN: the sign of NaN + NaN is the operand the compiler puts first (x86 returns
      // the first source's NaN, and GCC commutes a + b at will, in place or not), and meshrun
      // prints every NaN as "nan".
      if (bits(a) != bits(b) && !(std::isnan(a) && std::isnan(b))) ++differ;
      nans += std::isnan(b) ? 1 : 0;
      neg_zeros += (b == 0.0f && std::signbit(b)) ? 1 : 0;
    }
    BOOST_CHECK_MESSAGE(differ == 0, "output " << o << ": " << differ << " elements differ");
  }
  // The chain did carry NaN and -0 through (the comparison is not vacuous).
  BOOST_CHECK_GT(nans, 0u);
  BOOST_CHECK_GT(neg_zeros, 0u);
  // The FMA is kept: fma(x, y, z) differs from x*y + z somewhere, and `mid` holds it.
  std::size_t contracted = 0;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const float x = in[0].t.data[i], y = in[1].t.data[i], z = in[2].t.data[i];
    const float two = x * y + z, one = std::fma(x, y, z);
    if (bits(two) != bits(one) && one < 3.0f && one > x) {
      ++contracted;
      BOOST_CHECK_EQUAL(bits(fused[1].t.data[i]), bits(one));
      if (contracted > 20) break;
    }
  }
  BOOST_CHECK_GT(contracted, 0u);
}

BOOST_AUTO_TEST_CASE(small_arrays_are_not_fused) {
  TempDir dir;
  const ProgramFile file =
      read_program_file(write_chain(dir.path, 16, 300), 1 << 24, std::chrono::milliseconds(1000));
  const Jaxpr& jx = file.exports.at(0).jaxpr;
  DimBindings dims;
  BOOST_CHECK(plan_fusion(jx, plan_contractions(jx), &dims).groups.empty());
}

// mlp-train's backward computes dW2 and dW1 as (g^T h)^T and (dz^T x)^T: a 2-D dot_general whose
// only use is a transpose [1, 0]. The plan runs each as the swapped product (h^T g, x^T dz) at the
// transpose, so no transposed copy is made; the product's own equation is absorbed. (That the bits
// are those of the product then the transpose is checked by the programs' --exact outputs.)
BOOST_AUTO_TEST_CASE(a_dot_only_transposed_runs_swapped) {
  const ProgramFile file =
      read_program_file(std::string(MESHRUN_SOURCE_DIR) + "/cases/programs/mlp-train.json", 1 << 26,
                        std::chrono::milliseconds(1000));
  // The shard_map's body, wherever it is nested (jit calls hold it).
  const Jaxpr* body = nullptr;
  const std::function<void(const Jaxpr&)> find = [&](const Jaxpr& jx) {
    for (const Eqn& q : jx.eqns) {
      if (q.primitive == "shard_map") body = q.sub("jaxpr");
      for (const auto& [name, sub] : q.subs)
        if (body == nullptr && sub) find(*sub);
    }
  };
  find(file.exports.at(0).jaxpr);
  BOOST_REQUIRE(body != nullptr);
  const ContractionPlan plan = plan_contractions(*body);
  std::size_t swapped = 0;
  for (std::size_t e = 0; e < body->eqns.size(); ++e) {
    if (plan.swapped_dot[e] < 0) continue;
    ++swapped;
    const auto m = static_cast<std::size_t>(plan.swapped_dot[e]);
    BOOST_CHECK_EQUAL(body->eqns[e].primitive, "transpose");
    BOOST_CHECK_EQUAL(body->eqns[m].primitive, "dot_general");
    BOOST_CHECK(plan.absorbed[m]);
    const Eqn q = swapped_dot_eqn(body->eqns[m], body->eqns[e]);
    BOOST_CHECK(q.in[0].var == body->eqns[m].in[1].var && q.in[1].var == body->eqns[m].in[0].var);
    BOOST_CHECK(q.out == body->eqns[e].out);
  }
  BOOST_CHECK_EQUAL(swapped, 2u);
  // The forward products (used by more than a transpose) run as they are.
  std::size_t dots = 0;
  for (std::size_t e = 0; e < body->eqns.size(); ++e)
    if (body->eqns[e].primitive == "dot_general" && !plan.absorbed[e]) ++dots;
  BOOST_CHECK_EQUAL(dots, 3u);
}
