// dp-step and tp-mlp through shard_map: the six documented examples of spec/problems.md (outputs
// hard-coded from there) on 1, 2, 4, 8 (and 16 where the split allows) devices; larger random
// shapes against an independent serial float32 reference over the GLOBAL arrays (full-batch loss
// and gradient for dp-step, the full x @ w1 for tp-mlp); shard_map's input errors; block_of /
// assemble round trips; replicated outputs identical on every device; repeated runs identical.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mesh/device.hpp"
#include "mesh/mesh.hpp"
#include "programs/program.hpp"
#include "shard/partition_spec.hpp"
#include "support/errors.hpp"
#include "tensor/tensor.hpp"

using namespace meshrun;

namespace {

constexpr double kAtol = 1e-5, kRtol = 1e-5;

const ProgramDef& program(const std::string& name) {
  const ProgramDef* p = find_program(name);
  BOOST_REQUIRE_MESSAGE(p != nullptr, "no program " << name);
  return *p;
}

Tensor mat(std::size_t r, std::size_t c, std::vector<float> v) {
  return Tensor({r, c}, std::move(v));
}
Tensor vec(std::vector<float> v) {
  const std::size_t n = v.size();
  return Tensor({n}, std::move(v));
}

// Largest |got - want| - (atol + rtol |want|) over all elements (<= 0 means within tolerance), and
// the largest absolute difference.
struct Diff {
  double excess = -1e300, max_abs = 0;
};
// `scale`, when given, is the magnitude each element is relative to (e.g. the sum of the absolute
// values of the terms it adds up); by default the element's own |want|.
Diff compare(const Tensor& got, const Tensor& want, const Tensor* scale = nullptr) {
  Diff d;
  BOOST_REQUIRE(got.shape == want.shape);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got.data[i], w = want.data[i];
    const double diff = std::fabs(g - w);
    const double mag = scale ? std::max<double>(scale->data[i], std::fabs(w)) : std::fabs(w);
    d.max_abs = std::max(d.max_abs, diff);
    d.excess = std::max(d.excess, diff - (kAtol + kRtol * mag));
  }
  return d;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what,
                  const Tensor* scale = nullptr) {
  BOOST_TEST_REQUIRE((got.shape == want.shape),
                     what << ": shape " << shape_str(got.shape) << " vs " << shape_str(want.shape));
  const Diff d = compare(got, want, scale);
  BOOST_TEST(d.excess <= 0.0, what << ": max |diff| " << d.max_abs);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
         (a.data.empty() ||
          std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0);
}

struct Example {
  std::string program;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::size_t split_len;  // the length of the split dimension: device counts must divide it
};

// The six documented examples, inputs and outputs copied from spec/problems.md.
std::vector<Example> documented_examples() {
  std::vector<Example> ex;
  // dp-step 1
  ex.push_back({"dp-step",
                {mat(1, 1, {0.0f}), vec({0.0f}), mat(8, 1, {1, 2, 3, 4, 5, 6, 7, 8}),
                 mat(8, 1, {3, 5, 7, 9, 11, 13, 15, 17}), Tensor::scalar(0.01f)},
                {mat(1, 1, {1.11f}), vec({0.2f}), Tensor::scalar(121.0f)},
                8});
  // dp-step 2
  ex.push_back(
      {"dp-step",
       {mat(2, 1, {0.1f, 0.3f}), vec({0.0f}),
        mat(16, 2, {0.2f, 0.1f,  0.7f,  0.8f,  0.2f, -0.7f, -1.3f, -3.2f, -0.9f, -0.8f, 0.1f,
                    0.3f, 0.3f,  -0.3f, -0.4f, 0.2f, 0.1f,  -0.5f, 0.4f,  0.2f,  -0.6f, 0.5f,
                    0.1f, -0.2f, 0.5f,  0.0f,  1.0f, 1.0f,  -0.1f, 0.4f,  -0.9f, -0.4f}),
        mat(16, 1,
            {-0.8f, -0.4f, -0.3f, 0.1f, -0.6f, -0.3f, -0.6f, -0.7f, 0.1f, -0.2f, -0.4f, -0.4f,
             -0.7f, 0.2f, -0.1f, -0.3f}),
        Tensor::scalar(0.1f)},
       {mat(2, 1, {0.072288f, 0.239088f}), vec({-0.057f}), Tensor::scalar(0.303913f)},
       16});
  // dp-step 3
  ex.push_back({"dp-step",
                {mat(2, 2, {0.1f, 1.0f, -1.3f, -0.4f}), vec({-0.2f, -0.3f}),
                 mat(8, 2,
                     {-0.5f, 0.8f, 0.4f, -0.4f, -0.9f, -0.1f, 0.8f, 0.7f, 2.0f, 0.0f, -0.7f, -0.4f,
                      -0.2f, -0.4f, -0.9f, 0.1f}),
                 mat(8, 2,
                     {-0.7f, 1.1f, 0.6f, -0.6f, 0.1f, 1.3f, -1.0f, -0.2f, 0.2f, -1.1f, 0.0f, 1.0f,
                      -0.3f, 0.6f, -0.5f, 1.0f}),
                 Tensor::scalar(0.05f)},
                {mat(2, 2, {0.104475f, 0.8363f, -1.291212f, -0.39135f}),
                 vec({-0.195125f, -0.22975f}), Tensor::scalar(3.745738f)},
                8});
  // tp-mlp 1
  ex.push_back(
      {"tp-mlp",
       {mat(1, 2, {0.0f, 0.5f}),
        mat(2, 8,
            {-0.8f, 0.2f, -1.2f, -0.7f, -0.1f, 0.9f, -1.4f, 1.0f, 1.3f, -0.4f, 0.7f, 1.4f, 1.7f,
             0.6f, -0.6f, -0.9f}),
        vec({-0.1f, -0.1f, 0.0f, -0.1f, 0.3f, 0.4f, -0.3f, 0.1f}),
        mat(8, 1, {1.1f, 0.0f, 1.4f, 0.2f, 0.5f, 0.0f, 0.2f, -1.0f}), vec({0.6f})},
       {mat(1, 1, {2.39f}), mat(1, 8, {0.55f, 0.0f, 0.35f, 0.6f, 1.15f, 0.7f, 0.0f, 0.0f})},
       8});
  // tp-mlp 2
  ex.push_back(
      {"tp-mlp",
       {mat(2, 3, {0.0f, 0.8f, 0.7f, -0.1f, 0.4f, -0.3f}),
        mat(3, 8, {-0.8f, 0.7f, 0.5f, 0.2f,  0.0f, -0.9f, 0.8f,  0.1f, 0.0f,  0.2f, -0.6f, 0.2f,
                   0.4f,  1.5f, 0.1f, -0.7f, 1.3f, 0.2f,  -0.1f, 0.2f, -1.3f, 0.0f, 0.0f,  -1.2f}),
        vec({0.6f, -0.4f, 0.3f, 0.2f, -0.3f, 0.4f, 0.0f, 0.3f}),
        mat(8, 2,
            {0.0f, -0.4f, 0.8f, -0.5f, -0.6f, 0.5f, 0.0f, -0.4f, 0.0f, -0.4f, 0.9f, -0.2f, 0.9f,
             -0.1f, 0.6f, 0.2f}),
        vec({-0.4f, 0.1f})},
       {mat(2, 2, {1.112f, -1.032f, 0.779f, -0.32f}),
        mat(2, 8,
            {1.51f, 0.0f, 0.0f, 0.5f, 0.0f, 1.6f, 0.08f, 0.0f, 0.29f, 0.0f, 0.04f, 0.2f, 0.25f,
             1.09f, 0.0f, 0.37f})},
       8});
  // tp-mlp 3
  ex.push_back(
      {"tp-mlp",
       {mat(3, 2, {-1.6f, 1.8f, -0.3f, -0.9f, -0.5f, -0.3f}),
        mat(2, 16, {0.5f,  -0.6f, -0.8f, -0.7f, 0.3f,  0.2f, 0.9f, 1.2f, 0.2f, 0.3f,  -0.8f,
                    0.8f,  1.5f,  -1.2f, -1.2f, -0.9f, 0.8f, 1.0f, 0.1f, 0.0f, -1.4f, -1.0f,
                    -0.3f, 1.2f,  -0.5f, -0.6f, 0.5f,  0.5f, 1.5f, 0.0f, 0.6f, -0.2f}),
        vec({0.3f, 0.1f, 0.0f, 0.0f, 0.4f, -0.1f, 0.7f, 0.0f, 0.5f, -0.1f, 0.6f, -0.3f, -0.2f,
             -0.2f, -0.2f, -0.2f}),
        mat(16, 2, {0.2f,  -0.4f, -0.5f, 0.4f,  0.3f,  -0.4f, 0.0f, 0.4f, -0.1f, 0.0f,  0.3f,
                    -0.4f, 0.3f,  0.4f,  0.2f,  -0.7f, 0.2f,  0.1f, 0.0f, -0.2f, -0.7f, 0.8f,
                    -0.1f, -0.1f, 0.6f,  -0.7f, -0.9f, 0.3f,  0.4f, 0.4f, -0.3f, -0.3f}),
        vec({-0.2f, 0.5f})},
       {mat(3, 2, {-3.534f, 4.49f, -0.194f, 0.812f, -0.924f, 1.478f}),
        mat(3, 16,
            {0.94f, 2.86f, 1.46f, 1.12f, 0.0f,  0.0f,  0.0f,  0.24f, 0.0f,  0.0f,  2.78f, 0.0f,
             0.1f,  1.72f, 2.8f,  0.88f, 0.0f,  0.0f,  0.15f, 0.21f, 1.57f, 0.74f, 0.7f,  0.0f,
             0.89f, 0.35f, 0.39f, 0.0f,  0.0f,  0.16f, 0.0f,  0.25f, 0.0f,  0.1f,  0.37f, 0.35f,
             0.67f, 0.1f,  0.34f, 0.0f,  0.55f, 0.0f,  0.85f, 0.0f,  0.0f,  0.4f,  0.22f, 0.31f})},
       16});
  return ex;
}

std::vector<float> uniform(std::mt19937_64& g, std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = u(g);
  return v;
}

// The independent reference of dp-step: plain serial loops over the global arrays, full batch.
template <class T>
std::vector<Tensor> dp_step_reference(const std::vector<Tensor>& in) {
  const Tensor &w = in[0], &b = in[1], &x = in[2], &y = in[3];
  const T lr = static_cast<T>(in[4].data[0]);
  const std::size_t N = x.rows(), D = w.rows(), K = w.cols();
  std::vector<T> err(N * K);
  T loss = 0;
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) {
      T p = 0;
      for (std::size_t d = 0; d < D; ++d)
        p = std::fma(static_cast<T>(x(n, d)), static_cast<T>(w(d, k)), p);
      const T e = p + static_cast<T>(b.data[k]) - static_cast<T>(y(n, k));
      err[n * K + k] = e;
      loss += e * e;
    }
  loss /= static_cast<T>(N);
  Tensor w_new({D, K}), b_new({K});
  for (std::size_t d = 0; d < D; ++d)
    for (std::size_t k = 0; k < K; ++k) {
      T g = 0;
      for (std::size_t n = 0; n < N; ++n) g += static_cast<T>(x(n, d)) * err[n * K + k];
      g = T(2) * g / static_cast<T>(N);
      w_new(d, k) = static_cast<float>(static_cast<T>(w(d, k)) - lr * g);
    }
  for (std::size_t k = 0; k < K; ++k) {
    T g = 0;
    for (std::size_t n = 0; n < N; ++n) g += err[n * K + k];
    g = T(2) * g / static_cast<T>(N);
    b_new.data[k] = static_cast<float>(static_cast<T>(b.data[k]) - lr * g);
  }
  return {w_new, b_new, Tensor::scalar(static_cast<float>(loss))};
}

// The independent reference of tp-mlp: the full x @ w1 and h @ w2. A third tensor holds, for each
// element of out, |b2| + sum_j |h_ij w2_jo|: the magnitude its float32 rounding error scales with.
template <class T>
std::vector<Tensor> tp_mlp_reference(const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &w1 = in[1], &b1 = in[2], &w2 = in[3], &b2 = in[4];
  const std::size_t B = x.rows(), D = x.cols(), H = w1.cols(), O = w2.cols();
  std::vector<T> h(B * H);
  Tensor hidden({B, H}), out({B, O});
  for (std::size_t i = 0; i < B; ++i)
    for (std::size_t j = 0; j < H; ++j) {
      T a = 0;
      // Fused multiply-add, as JAX's CPU backend (XLA:CPU always allows FMA fusion) computes it.
      for (std::size_t d = 0; d < D; ++d)
        a = std::fma(static_cast<T>(x(i, d)), static_cast<T>(w1(d, j)), a);
      a += static_cast<T>(b1.data[j]);
      h[i * H + j] = a > 0 ? a : T(0);
      hidden(i, j) = static_cast<float>(h[i * H + j]);
    }
  Tensor mag({B, O});
  for (std::size_t i = 0; i < B; ++i)
    for (std::size_t o = 0; o < O; ++o) {
      T a = 0;
      double m = std::fabs(b2.data[o]);
      for (std::size_t j = 0; j < H; ++j) {
        a = std::fma(h[i * H + j], static_cast<T>(w2(j, o)), a);
        m += std::fabs(static_cast<double>(h[i * H + j]) * w2(j, o));
      }
      out(i, o) = static_cast<float>(a + static_cast<T>(b2.data[o]));
      mag(i, o) = static_cast<float>(m);
    }
  return {out, hidden, mag};
}

std::vector<Tensor> random_dp_inputs(std::mt19937_64& g, std::size_t N, std::size_t D,
                                     std::size_t K) {
  return {Tensor({D, K}, uniform(g, D * K)), Tensor({K}, uniform(g, K)),
          Tensor({N, D}, uniform(g, N * D)), Tensor({N, K}, uniform(g, N * K)),
          Tensor::scalar(0.1f)};
}
std::vector<Tensor> random_tp_inputs(std::mt19937_64& g, std::size_t B, std::size_t D,
                                     std::size_t H, std::size_t O) {
  return {Tensor({B, D}, uniform(g, B * D)), Tensor({D, H}, uniform(g, D * H)),
          Tensor({H}, uniform(g, H)), Tensor({H, O}, uniform(g, H * O)),
          Tensor({O}, uniform(g, O))};
}

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(documented_examples_suite)

BOOST_AUTO_TEST_CASE(six_examples_on_1_2_4_8_16_devices) {
  const auto examples = documented_examples();
  int runs = 0;
  for (std::size_t e = 0; e < examples.size(); ++e) {
    const Example& ex = examples[e];
    const ProgramDef& p = program(ex.program);
    for (int n : {1, 2, 4, 8, 16}) {
      if (ex.split_len % static_cast<std::size_t>(n) != 0) continue;
      Mesh mesh(n, p.axis);
      const auto out = shard_map(mesh, p, ex.inputs);
      BOOST_TEST_REQUIRE(out.size() == ex.outputs.size());
      for (std::size_t o = 0; o < out.size(); ++o)
        expect_close(out[o], ex.outputs[o],
                     ex.program + " example " + std::to_string(e + 1) + " on " + std::to_string(n) +
                         " devices, output " + p.outputs[o].name);
      ++runs;
    }
  }
  BOOST_TEST(runs == 4 + 5 + 4 + 4 + 4 + 5);
}

// The documented examples also agree with the independent reference (checks the reference).
BOOST_AUTO_TEST_CASE(reference_reproduces_documented_examples) {
  for (const Example& ex : documented_examples()) {
    const auto ref = ex.program == "dp-step" ? dp_step_reference<float>(ex.inputs)
                                             : tp_mlp_reference<float>(ex.inputs);
    for (std::size_t o = 0; o < ex.outputs.size(); ++o)
      expect_close(ref[o], ex.outputs[o], ex.program + " reference");
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(random_shapes)

BOOST_AUTO_TEST_CASE(dp_step_512x64x16_against_full_batch_reference) {
  std::mt19937_64 g(2024);
  const auto in = random_dp_inputs(g, 512, 64, 16);
  const auto ref32 = dp_step_reference<float>(in);
  const auto ref64 = dp_step_reference<double>(in);
  const ProgramDef& p = program("dp-step");
  for (int n : {1, 2, 4, 8, 16}) {
    Mesh mesh(n, "data");
    const auto out = shard_map(mesh, p, in);
    for (std::size_t o = 0; o < out.size(); ++o) {
      const std::string what =
          "dp-step N=512 D=64 K=16 on " + std::to_string(n) + " devices, " + p.outputs[o].name;
      expect_close(out[o], ref32[o], what + " vs float32 reference");
      expect_close(out[o], ref64[o], what + " vs float64 reference");
      BOOST_TEST_MESSAGE(what << ": max |diff| vs f32 ref " << compare(out[o], ref32[o]).max_abs
                              << ", vs f64 ref " << compare(out[o], ref64[o]).max_abs);
    }
  }
}

BOOST_AUTO_TEST_CASE(tp_mlp_32x16x2048x8_against_full_reference) {
  std::mt19937_64 g(4048);
  const auto in = random_tp_inputs(g, 32, 16, 2048, 8);
  const auto ref32 = tp_mlp_reference<float>(in);
  const auto ref64 = tp_mlp_reference<double>(in);
  const ProgramDef& p = program("tp-mlp");
  for (int n : {1, 2, 4, 8, 16}) {
    Mesh mesh(n, "model");
    const auto out = shard_map(mesh, p, in);
    BOOST_TEST_REQUIRE(out.size() == 2u);
    for (std::size_t o = 0; o < out.size(); ++o) {
      const std::string what =
          "tp-mlp B=32 D=16 H=2048 O=8 on " + std::to_string(n) + " devices, " + p.outputs[o].name;
      // Against the float32 reference: atol + rtol * magnitude. The reference adds all 2048 terms
      // in one serial sum, the mesh adds n partial sums; the two orders round differently, by up
      // to ~1e-4 absolute here, in proportion to sum |h w2| (not to |out|, which can be small).
      expect_close(out[o], ref32[o], what + " vs float32 reference", o == 0 ? &ref64[2] : nullptr);
      // Against the float64 reference the float32 rounding of a 2048-term sum is real (measured up
      // to ~5e-5 absolute on elements of small |out| whose terms are large): relative to the
      // magnitude of the terms instead.
      expect_close(out[o], ref64[o], what + " vs float64 reference", o == 0 ? &ref64[2] : nullptr);
      BOOST_TEST_MESSAGE(what << ": max |diff| vs f32 ref " << compare(out[o], ref32[o]).max_abs
                              << ", vs f64 ref " << compare(out[o], ref64[o]).max_abs);
    }
    // hidden is computed per column in the same order (sum over D, then + b1, relu) by device and
    // reference: the bits must agree.
    BOOST_TEST(same_bits(out[1], ref32[1]),
               "hidden on " << n << " devices differs from the reference bits");
  }
}

// Odd device counts and odd shapes.
BOOST_AUTO_TEST_CASE(other_shapes_and_device_counts) {
  std::mt19937_64 g(7);
  for (int n : {3, 5, 6, 7, 12}) {
    const std::size_t N = static_cast<std::size_t>(n) * 4;
    const auto dp = random_dp_inputs(g, N, 3, 2);
    Mesh dmesh(n, "data");
    const auto dout = shard_map(dmesh, program("dp-step"), dp);
    const auto dref = dp_step_reference<float>(dp);
    for (std::size_t o = 0; o < dout.size(); ++o)
      expect_close(dout[o], dref[o], "dp-step n=" + std::to_string(n));

    const auto tp = random_tp_inputs(g, 5, 3, static_cast<std::size_t>(n) * 3, 4);
    Mesh tmesh(n, "model");
    const auto tout = shard_map(tmesh, program("tp-mlp"), tp);
    const auto tref = tp_mlp_reference<float>(tp);
    BOOST_TEST_REQUIRE(tout.size() == 2u);
    for (std::size_t o = 0; o < tout.size(); ++o)
      expect_close(tout[o], tref[o], "tp-mlp n=" + std::to_string(n));
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(rows_not_divisible) {
  std::mt19937_64 g(1);
  Mesh mesh(8, "data");
  const auto in = random_dp_inputs(g, 12, 2, 1);
  try {
    (void)shard_map(mesh, program("dp-step"), in);
    BOOST_TEST(false, "accepted 12 rows on 8 devices");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == "input.x: 12 rows are not divisible by 8 devices");
    BOOST_TEST(e.field() == "input.x");
  }
  // y split the same way: x fine, y wrong.
  auto in2 = random_dp_inputs(g, 16, 2, 1);
  in2[3] = Tensor({12, 1});
  try {
    (void)shard_map(mesh, program("dp-step"), in2);
    BOOST_TEST(false, "accepted 12 rows of y");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == "input.y: 12 rows are not divisible by 8 devices");
  }
}

BOOST_AUTO_TEST_CASE(columns_not_divisible_and_wrong_axis) {
  std::mt19937_64 g(2);
  Mesh mesh(8, "model");
  const auto in = random_tp_inputs(g, 2, 3, 12, 2);
  try {
    (void)shard_map(mesh, program("tp-mlp"), in);
    BOOST_TEST(false, "accepted H=12 on 8 devices");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == "input.w1: 12 columns are not divisible by 8 devices");
  }
  // dp-step on a mesh whose axis is 'model'.
  const auto dp = random_dp_inputs(g, 16, 2, 1);
  BOOST_CHECK_THROW((void)shard_map(mesh, program("dp-step"), dp), InputError);
  // The mesh is still usable.
  const auto good = random_tp_inputs(g, 2, 3, 16, 2);
  const auto out = shard_map(mesh, program("tp-mlp"), good);
  expect_close(out[0], tp_mlp_reference<float>(good)[0], "tp-mlp after errors");
}

BOOST_AUTO_TEST_CASE(unknown_program) { BOOST_TEST(find_program("nope") == nullptr); }

// find_program builds only the program it is asked for; it must hand out the same definitions,
// under the same names, as all_programs (the --help order).
BOOST_AUTO_TEST_CASE(find_program_agrees_with_all_programs) {
  const std::vector<std::string> names = {"dp-step", "tp-mlp", "mlp-train"};
  for (const std::string& name : names) {
    const ProgramDef* p = find_program(name);
    BOOST_REQUIRE(p != nullptr);
    BOOST_TEST(p->name == name);
  }
  const auto& all = all_programs();
  BOOST_REQUIRE_EQUAL(all.size(), names.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    BOOST_TEST(all[i]->name == names[i]);
    BOOST_TEST(find_program(names[i]) == all[i]);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(partition_specs)

BOOST_AUTO_TEST_CASE(spec_strings_and_split_dims) {
  BOOST_TEST(P().str() == "P()");
  BOOST_TEST(P{"data"}.str() == "P('data',)");
  BOOST_TEST((P{None, "model"}.str() == "P(None, 'model')"));
  BOOST_TEST(P{"data"}.split_dim("data") == 0);
  BOOST_TEST(P{"data"}.split_dim("model") == -1);
  BOOST_TEST((P{None, "model"}.split_dim("model") == 1));
  BOOST_TEST(P().replicated());
  BOOST_TEST(!P{"data"}.replicated());
}

namespace {
Tensor iota_tensor(const Shape& s) {
  Tensor t(s);
  for (std::size_t i = 0; i < t.size(); ++i) t.data[i] = static_cast<float>(i) * 1.5f - 7.0f;
  return t;
}
}  // namespace

BOOST_AUTO_TEST_CASE(block_of_and_assemble_round_trip) {
  // P(): every device gets the whole array; assemble returns it.
  for (const Shape& s : {Shape{}, Shape{5}, Shape{3, 4}}) {
    const Tensor g = iota_tensor(s);
    std::vector<Tensor> blocks;
    for (int d = 0; d < 4; ++d) {
      blocks.push_back(block_of(g, P(), "data", d, 4));
      BOOST_TEST(same_bits(blocks.back(), g));
    }
    BOOST_TEST(same_bits(assemble(blocks, P(), "data"), g));
    BOOST_TEST((block_shape(s, P(), "data", 4) == s));
  }
  // P('data'): device d gets rows d*R/n .. (d+1)*R/n - 1.
  for (const Shape& s : {Shape{16}, Shape{8, 3}, Shape{16, 1}, Shape{12, 5}, Shape{4, 4}}) {
    const Tensor g = iota_tensor(s);
    const std::size_t R = s[0], C = s.size() == 2 ? s[1] : 1;
    for (int n : {1, 2, 4}) {
      if (R % static_cast<std::size_t>(n)) continue;
      const std::size_t part = R / static_cast<std::size_t>(n);
      std::vector<Tensor> blocks;
      for (int d = 0; d < n; ++d) {
        Tensor b = block_of(g, P{"data"}, "data", d, n);
        Shape want_shape = s;
        want_shape[0] = part;
        BOOST_TEST((b.shape == want_shape));
        BOOST_TEST((block_shape(s, P{"data"}, "data", n) == want_shape));
        bool ok = b.size() == part * C;
        for (std::size_t i = 0; ok && i < part; ++i)
          for (std::size_t j = 0; j < C; ++j)
            ok =
                ok && b.data[i * C + j] == g.data[(static_cast<std::size_t>(d) * part + i) * C + j];
        BOOST_TEST(ok, "P('data') " << shape_str(s) << " n=" << n << " block " << d);
        blocks.push_back(std::move(b));
      }
      BOOST_TEST(same_bits(assemble(blocks, P{"data"}, "data"), g),
                 "P('data') " << shape_str(s) << " n=" << n);
    }
  }
  // P(None, 'model'): device d gets columns d*C/n .. (d+1)*C/n - 1 of every row.
  for (const Shape& s : {Shape{3, 16}, Shape{1, 8}, Shape{5, 4}, Shape{2, 12}, Shape{7, 2}}) {
    const Tensor g = iota_tensor(s);
    const std::size_t R = s[0], C = s[1];
    for (int n : {1, 2, 4}) {
      if (C % static_cast<std::size_t>(n)) continue;
      const std::size_t part = C / static_cast<std::size_t>(n);
      std::vector<Tensor> blocks;
      for (int d = 0; d < n; ++d) {
        Tensor b = block_of(g, P{None, "model"}, "model", d, n);
        BOOST_TEST((b.shape == Shape{R, part}));
        bool ok = b.size() == R * part;
        for (std::size_t i = 0; ok && i < R; ++i)
          for (std::size_t j = 0; j < part; ++j)
            ok = ok &&
                 b.data[i * part + j] == g.data[i * C + static_cast<std::size_t>(d) * part + j];
        BOOST_TEST(ok, "P(None,'model') " << shape_str(s) << " n=" << n << " block " << d);
        blocks.push_back(std::move(b));
      }
      BOOST_TEST(same_bits(assemble(blocks, P{None, "model"}, "model"), g),
                 "P(None,'model') " << shape_str(s) << " n=" << n);
    }
  }
  // A spec over another axis is replicated on this one.
  const Tensor g = iota_tensor({4, 4});
  BOOST_TEST(same_bits(block_of(g, P{"model"}, "data", 1, 2), g));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(replication_and_determinism)

// Runs the program's body on every device of a mesh directly (not through shard_map) and checks
// that each replicated output has the same bits on every device.
BOOST_AUTO_TEST_CASE(replicated_outputs_identical_on_all_devices) {
  std::mt19937_64 g(99);
  struct Run {
    std::string name;
    std::vector<Tensor> inputs;
  };
  const std::vector<Run> runs{{"dp-step", random_dp_inputs(g, 512, 64, 16)},
                              {"tp-mlp", random_tp_inputs(g, 32, 16, 2048, 8)}};
  for (const Run& r : runs) {
    const ProgramDef& p = program(r.name);
    for (int n : {2, 8, 16}) {
      Mesh mesh(n, p.axis);
      const Body body = body_of(p);
      std::vector<std::vector<Tensor>> outs(static_cast<std::size_t>(n));
      mesh.run([&](Device& dev) {
        std::vector<Tensor> blocks;
        for (std::size_t i = 0; i < r.inputs.size(); ++i)
          blocks.push_back(block_of(r.inputs[i], p.inputs[i].spec, p.axis, dev.index(), n));
        outs[dev.index()] = body(dev, blocks);
      });
      for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        if (p.outputs[o].spec.split_dim(p.axis) >= 0) continue;
        for (int d = 1; d < n; ++d)
          BOOST_TEST(same_bits(outs[0][o], outs[d][o]),
                     r.name << " output " << p.outputs[o].name << ": device " << d
                            << " differs from device 0 (n=" << n << ")");
      }
    }
  }
}

// shard_map's own replication check fires when a body breaks it.
BOOST_AUTO_TEST_CASE(shard_map_rejects_non_replicated_output_declared_replicated) {
  ProgramDef bad;
  bad.name = "bad";
  bad.axis = "data";
  bad.inputs = {{"x", {"N"}, P{"data"}}};
  bad.outputs = {{"y", {"N"}, P()}};
  bad.computation = one_shard_map([](Device& dev, const std::vector<Tensor>& in) {
    Tensor y = in[0];
    if (dev.index() == 1) y.data[0] += 1.0f;
    return std::vector<Tensor>{y};
  });
  Mesh mesh(4, "data");
  try {
    (void)shard_map(mesh, bad, {Tensor({4}, {1, 1, 1, 1})});
    BOOST_TEST(false, "accepted");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find(
                   "declared P() but devices 0 and 1 hold different values") != std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(repeated_runs_give_identical_bits) {
  std::mt19937_64 g(5);
  const auto dp = random_dp_inputs(g, 512, 64, 16);
  const auto tp = random_tp_inputs(g, 32, 16, 2048, 8);
  Mesh dmesh(8, "data"), tmesh(8, "model");
  const auto d0 = shard_map(dmesh, program("dp-step"), dp);
  const auto t0 = shard_map(tmesh, program("tp-mlp"), tp);
  for (int rep = 0; rep < 20; ++rep) {
    const auto d = shard_map(dmesh, program("dp-step"), dp);
    const auto t = shard_map(tmesh, program("tp-mlp"), tp);
    for (std::size_t o = 0; o < d.size(); ++o)
      BOOST_TEST(same_bits(d[o], d0[o]), "dp-step rep " << rep << " output " << o);
    for (std::size_t o = 0; o < t.size(); ++o)
      BOOST_TEST(same_bits(t[o], t0[o]), "tp-mlp rep " << rep << " output " << o);
  }
}

BOOST_AUTO_TEST_SUITE_END()
