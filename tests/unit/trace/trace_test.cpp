// The trace and the structural rules: the real programs pass every rule; deliberately wrong
// programs (a device handed the full x or w1, no reduction over the axis, hidden not left split)
// fail the rule that names the mistake -- even where their numbers are right.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "mesh/mesh.hpp"
#include "programs/program.hpp"
#include "trace/structure.hpp"
#include "trace/trace.hpp"

using namespace meshrun;

namespace {

// The first documented dp-step example: x = 1..8, y = 2x + 1.
std::vector<Tensor> dp_inputs() {
  std::vector<float> x, y;
  for (int i = 1; i <= 8; ++i) {
    x.push_back(static_cast<float>(i));
    y.push_back(static_cast<float>(2 * i + 1));
  }
  return {Tensor({1, 1}, {0.0f}), Tensor({1}, {0.0f}), Tensor({8, 1}, x), Tensor({8, 1}, y),
          Tensor::scalar(0.01f)};
}

// The first documented tp-mlp example.
std::vector<Tensor> tp_inputs() {
  return {Tensor({1, 2}, {0.0f, 0.5f}),
          Tensor({2, 8}, {-0.8f, 0.2f, -1.2f, -0.7f, -0.1f, 0.9f, -1.4f, 1.0f, 1.3f, -0.4f, 0.7f,
                          1.4f, 1.7f, 0.6f, -0.6f, -0.9f}),
          Tensor({8}, {-0.1f, -0.1f, 0.0f, -0.1f, 0.3f, 0.4f, -0.3f, 0.1f}),
          Tensor({8, 1}, {1.1f, 0.0f, 1.4f, 0.2f, 0.5f, 0.0f, 0.2f, -1.0f}), Tensor({1}, {0.6f})};
}

StructuralVerdict run_and_check(const ProgramDef& p, const std::vector<Tensor>& in, int n,
                                std::vector<Tensor>* out = nullptr, Trace* trace_out = nullptr) {
  Mesh mesh(n, p.axis);
  Trace trace;
  auto result = shard_map(mesh, p, in, &trace);
  if (out) *out = result;
  if (trace_out) *trace_out = trace;
  return check_structure(p.structure, trace);
}

bool mentions(const StructuralVerdict& v, const std::string& text) {
  for (const auto& f : v.failures)
    if (f.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(real_programs_pass_every_rule) {
  for (int n : {1, 2, 4, 8}) {
    auto v = run_and_check(*find_program("dp-step"), dp_inputs(), n);
    BOOST_TEST(v.ok());
    BOOST_TEST(v.passed.size() == 3u);
    auto t = run_and_check(*find_program("tp-mlp"), tp_inputs(), n);
    BOOST_TEST(t.ok());
    BOOST_TEST(t.passed.size() == 5u);
  }
}

BOOST_AUTO_TEST_CASE(trace_records_blocks_and_collectives) {
  Trace trace;
  run_and_check(*find_program("dp-step"), dp_inputs(), 8, nullptr, &trace);
  BOOST_TEST(trace.devices == 8);
  BOOST_TEST(trace.axis == "data");
  BOOST_REQUIRE(trace.inputs.size() == 5u);
  BOOST_TEST(trace.inputs[2].name == "x");
  BOOST_TEST((trace.inputs[2].global == Shape{8, 1}));
  for (int d = 0; d < 8; ++d) {
    BOOST_TEST((trace.inputs[2].blocks[d] == Shape{1, 1}));
    BOOST_TEST((trace.inputs[0].blocks[d] == Shape{1, 1}));  // w replicated
    BOOST_REQUIRE(trace.collectives[d].size() == 1u);
    BOOST_TEST(trace.collectives[d][0].op == "pmean");
    BOOST_TEST(trace.collectives[d][0].seq == 1u);
    BOOST_TEST((trace.collectives[d][0].in_shape == Shape{3}));  // loss, dW, db in one buffer
  }
  const std::string text = format_trace(trace);
  BOOST_TEST(text.find("mesh: Mesh('data': 8)") != std::string::npos);
  BOOST_TEST(text.find("x: f32[8,1] P('data',)") != std::string::npos);
  BOOST_TEST(text.find("device 7: f32[1,1]{V:data}  rows [7:8)") != std::string::npos);
  BOOST_TEST(text.find("device 3: #1 pmean[axis_name='data'] f32[3]{V:data} -> f32[3]  12 bytes") !=
             std::string::npos);
  const std::string boxes = format_sharding(trace);
  BOOST_TEST(boxes.find("dev 0,1,2,3,4,5,6,7") != std::string::npos);
  BOOST_TEST(boxes.find("rows [7:8)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(tp_trace_shows_column_blocks) {
  Trace trace;
  run_and_check(*find_program("tp-mlp"), tp_inputs(), 4, nullptr, &trace);
  BOOST_TEST((trace.inputs[1].blocks[3] == Shape{2, 2}));   // w1 (D, H/4)
  BOOST_TEST((trace.outputs[1].blocks[0] == Shape{1, 2}));  // hidden (B, H/4)
  BOOST_TEST(format_trace(trace).find("device 3: f32[2,2]{V:model}  columns [6:8)") !=
             std::string::npos);
  BOOST_TEST(format_sharding(trace).find("[6:8)") != std::string::npos);
}

// dp-step with x and y replicated: every device gets the full batch. The numbers are still right
// (each device computes the full gradient; their mean is the same), but the rule catches it.
BOOST_AUTO_TEST_CASE(full_x_on_every_device_fails_input_split) {
  ProgramDef wrong = *find_program("dp-step");
  wrong.inputs[2].spec = P();
  wrong.inputs[3].spec = P();
  std::vector<Tensor> out;
  auto v = run_and_check(wrong, dp_inputs(), 8, &out);
  BOOST_TEST(!v.ok());
  BOOST_TEST(mentions(v, "device 0 held f32[8,1] (the full x), expected f32[1,1]"));
  BOOST_TEST(mentions(v, "(the full y)"));
  BOOST_TEST(std::abs(out[0].data[0] - 1.11f) < 1e-5f);  // numbers alone would not have caught it
}

// dp-step that never reduces: each device gathers every shard's gradient and sums them itself.
// Outputs are identical on all devices, but there is no psum/pmean over 'data'.
BOOST_AUTO_TEST_CASE(no_reduction_fails_reduced_over) {
  ProgramDef wrong = *find_program("dp-step");
  wrong.computation =
      one_shard_map([](Device& dev, const std::vector<Tensor>& in) -> std::vector<Tensor> {
        Tensor g({1});
        g.data[0] = in[2].data[0];  // something per device
        Tensor all = dev.all_gather(g, "data");
        float s = 0;
        for (float v : all.data) s += v;
        return {in[0], in[1], Tensor::scalar(s)};
      });
  auto v = run_and_check(wrong, dp_inputs(), 8);
  BOOST_TEST(!v.ok());
  BOOST_TEST(
      mentions(v, "device 0 reduced 0 elements over 'data', fewer than the 3 of loss, w, b"));
}

// tp-mlp where every device holds the whole of w1, b1 and w2 and computes everything itself:
// right numbers, no psum, hidden replicated instead of split.
BOOST_AUTO_TEST_CASE(full_weights_fail_tp_rules) {
  ProgramDef wrong = *find_program("tp-mlp");
  for (auto& a : wrong.inputs) a.spec = P();
  wrong.outputs[1].spec = P();
  wrong.computation =
      one_shard_map([](Device&, const std::vector<Tensor>& in) -> std::vector<Tensor> {
        Tensor h = matmul(in[0], in[1]);
        add_row_vector(h, in[2]);
        relu_inplace(h);
        Tensor out = matmul(h, in[3]);
        add_row_vector(out, in[4]);
        return {out, h};
      });
  std::vector<Tensor> out;
  auto v = run_and_check(wrong, tp_inputs(), 8, &out);
  BOOST_TEST(std::abs(out[0].data[0] - 2.39f) < 1e-5f);
  BOOST_TEST(!v.ok());
  BOOST_TEST(mentions(v, "device 0 held f32[2,8] (the full w1), expected f32[2,1]"));
  BOOST_TEST(mentions(v, "(the full w2)"));
  BOOST_TEST(mentions(v, "over 'model'"));
  BOOST_TEST(mentions(v, "device 0 held f32[1,8] (the full hidden), expected f32[1,1]"));
  BOOST_TEST(v.failures.size() == 5u);
}

// An output its spec replicates whose copies differ, unchecked (check_vma=False: JAX returns
// device 0's copy): replicas_agree fails naming the output and the devices; copies that agree
// pass it.
BOOST_AUTO_TEST_CASE(replicas_that_differ_fail_replicas_agree) {
  for (const bool differ : {true, false}) {
    ProgramDef p = *find_program("dp-step");
    for (auto& a : p.outputs) a.check_replicas = false;
    p.computation =
        one_shard_map([differ](Device& dev, const std::vector<Tensor>& in) -> std::vector<Tensor> {
          Tensor w = in[0];
          if (differ && dev.index() == 3) w.data[0] += 1.0f;  // device 3's copy alone moves
          return {w, in[1], Tensor::scalar(0.0f)};
        });
    Trace trace;
    run_and_check(p, dp_inputs(), 8, nullptr, &trace);
    const StructuralVerdict v = check_structure({replicas_agree()}, trace);
    BOOST_TEST(v.ok() == !differ);
    if (differ) {
      BOOST_TEST(mentions(v, "devices 0 and 3 hold different values"));
      BOOST_TEST(mentions(v, "of w (check_vma=False"));
    }
  }
}
