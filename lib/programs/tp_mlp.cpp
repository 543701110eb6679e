// tp-mlp: a tensor-parallel two-layer MLP, h = relu(x W1 + b1), out = h W2 + b2.
// W1 and b1 are split by hidden units (columns) over 'model', W2 by rows the same way; each device
// computes its own hidden columns without talking to anyone, multiplies them by its rows of W2,
// and a psum over 'model' adds the partial outputs. b2 is added once, after the psum. hidden stays
// split: each device returns its (B, H/n) block.
#include "mesh/device.hpp"
#include "programs/program.hpp"

namespace meshrun {

namespace {

constexpr const char* kAxis = "model";

// Inputs in order: x (B, D), w1 (D, H/n), b1 (H/n,), w2 (H/n, O), b2 (O,).
std::vector<Tensor> tp_mlp_body(Device& dev, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w1 = in[1];
  const Tensor& b1 = in[2];
  const Tensor& w2 = in[3];
  const Tensor& b2 = in[4];

  Tensor hidden = matmul_bias_relu(x, w1, b1);  // relu(x w1 + b1), bias and relu in the epilogue
  Tensor out = dev.psum(matmul(hidden, w2), kAxis);  // the sum of every device's partial (B, O)
  add_row_vector(out, b2);                           // once, after the sum
  return tensors(std::move(out), std::move(hidden));
}

}  // namespace

const ProgramDef& tp_mlp_program() {
  static const std::vector<ArgDef> inputs{{"x", {"B", "D"}, P()},
                                          {"w1", {"D", "H"}, P{None, kAxis}},
                                          {"b1", {"H"}, P{kAxis}},
                                          {"w2", {"H", "O"}, P{kAxis}},
                                          {"b2", {"O"}, P()}};
  static const std::vector<ArgDef> outputs{{"out", {"B", "O"}, P()},
                                           {"hidden", {"B", "H"}, P{None, kAxis}}};
  static const ProgramDef def{
      .name = "tp-mlp",
      .axis = kAxis,
      .summary =
          "tensor-parallel two-layer MLP (w1/b1 split by hidden units, w2 by rows over 'model', "
          "psum)",
      .inputs = inputs,
      .outputs = outputs,
      .computation = one_shard_map(tp_mlp_body),
      .check_values = {},  // nothing beyond the shapes
      // Split over 'model', not over every device (a 2-D --mesh replicates over the other axis).
      .structure = {input_split("w1", 1, kAxis), input_split("b1", 0, kAxis),
                    input_split("w2", 0, kAxis), reduced_over(kAxis, {"out"}),
                    output_split("hidden", 1, kAxis)},
      .mesh = {{kAxis, 8}},
      // x w1 (B x D x H) and h w2 (B x H x O).
      .flops =
          [](const std::vector<TensorRef>& in) {
            const std::size_t b = in[0].rows(), d = in[0].cols(), h = in[1].cols(),
                              o = in[3].cols();
            return 2 * b * d * h + 2 * b * h * o;
          },
  };
  return def;
}

}  // namespace meshrun
