// mlp-train: one SGD step of the two-layer MLP out = relu(x W1 + b1) W2 + b2 with a squared-error
// loss, on a ('data', 'model') mesh -- data and tensor parallelism at once (Megatron-style 2-D).
// Device (i, j) holds rows i of x and y (split over 'data') and hidden units j of W1, b1 and W2
// (split over 'model'). Forward: its hidden columns need nobody; a psum over 'model' (within its
// data row) adds the partial outputs. Backward: the output error is the same on the whole model
// group, so each device differentiates its own hidden units locally; one pmean over 'data'
// (within its model column) averages [loss, dW1_j, db1_j, dW2_j, db2] packed in one buffer.
// Equal shard sizes make the mean of the data shards' losses and gradients the loss and gradient
// of the whole batch: the result is one SGD step of the unsharded MLP.
#include <cmath>

#include "mesh/device.hpp"
#include "programs/program.hpp"

namespace meshrun {

namespace {

constexpr const char* kData = "data";
constexpr const char* kModel = "model";

// m^T. Local to this program until the tensor layer grows a matmul_nt: with it, g W2^T is the
// existing matmul, whose element (n, j) is the FMA chain over o = 0..O-1 in order.
Tensor transpose(const Tensor& m) {
  Tensor t({m.cols(), m.rows()});
  for (std::size_t i = 0; i < m.rows(); ++i)
    for (std::size_t j = 0; j < m.cols(); ++j) t(j, i) = m(i, j);
  return t;
}

// Appends t's elements to `packed`.
void pack(std::vector<float>& packed, const Tensor& t) {
  packed.insert(packed.end(), t.data.begin(), t.data.end());
}

// p -= lr * packed[at ...], advancing `at` past p's elements.
Tensor sgd(const Tensor& p, float lr, const std::vector<float>& packed, std::size_t& at) {
  Tensor q = p;
  for (float& v : q.data) v = std::fma(-lr, packed[at++], v);  // as XLA:CPU fuses w - lr * g
  return q;
}

// Inputs in order: x (B/d, D), y (B/d, O), w1 (D, H/m), b1 (H/m,), w2 (H/m, O), b2 (O,), lr ().
std::vector<Tensor> mlp_train_body(Device& dev, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  const Tensor& w1 = in[2];
  const Tensor& b1 = in[3];
  const Tensor& w2 = in[4];
  const Tensor& b2 = in[5];
  const float lr = in[6].data[0];
  const float inv_rows = 1.0f / static_cast<float>(x.rows());

  // Forward. z and h: this device's rows and hidden units (B/d, H/m).
  Tensor z = matmul(x, w1);
  add_row_vector(z, b1);
  Tensor h = z;
  relu_inplace(h);
  Tensor out = dev.psum(matmul(h, w2), kModel);  // the whole (B/d, O) output of these rows
  add_row_vector(out, b2);                       // once, after the sum

  // Loss on these rows (summed over O, mean over rows, as dp-step) and d(loss)/d(out).
  Tensor g = out;
  float sq = 0.0f;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const float e = out.data[i] - y.data[i];
    sq += e * e;
    g.data[i] = 2.0f * e * inv_rows;
  }

  // Backward through this device's hidden units.
  const Tensor dw2 = matmul_tn(h, g);    // (H/m, O)
  const Tensor db2 = sum_rows(g);        // (O,)
  Tensor dz = matmul(g, transpose(w2));  // (B/d, H/m)
  for (std::size_t i = 0; i < dz.size(); ++i)
    if (!(z.data[i] > 0.0f)) dz.data[i] = 0.0f;  // relu'(0) = 0, as JAX and PyTorch
  const Tensor dw1 = matmul_tn(x, dz);           // (D, H/m)
  const Tensor db1 = sum_rows(dz);               // (H/m,)

  std::vector<float> packed{sq * inv_rows};
  packed.reserve(1 + dw1.size() + db1.size() + dw2.size() + db2.size());
  pack(packed, dw1);
  pack(packed, db1);
  pack(packed, dw2);
  pack(packed, db2);
  dev.pmean_inplace(packed, kData);

  std::size_t at = 1;
  Tensor w1_new = sgd(w1, lr, packed, at);
  Tensor b1_new = sgd(b1, lr, packed, at);
  Tensor w2_new = sgd(w2, lr, packed, at);
  Tensor b2_new = sgd(b2, lr, packed, at);
  return tensors(std::move(w1_new), std::move(b1_new), std::move(w2_new), std::move(b2_new),
                 Tensor::scalar(packed[0]));
}

// The partial outputs each device psums over 'model': its B/d rows of out by O (the size of b2),
// from the global shapes and the mesh -- not from the blocks the program chose.
std::size_t partial_outputs(const Trace& t, int) {
  const int data = mesh_axis_position(t.mesh, kData);
  std::size_t rows = 0, outs = 0;
  for (const ArrayRecord& a : t.inputs) {
    if (a.name == "x")
      rows = a.global.at(0) /
             static_cast<std::size_t>(t.mesh.at(static_cast<std::size_t>(data)).second);
    if (a.name == "b2") outs = shape_size(a.global);
  }
  return rows * outs;
}

void mlp_train_check(const std::vector<TensorRef>& in) { check_learning_rate(in[6]); }

}  // namespace

const ProgramDef& mlp_train_program() {
  static const ProgramDef def{
      .name = "mlp-train",
      .axis = "",
      .summary =
          "one SGD step of a two-layer MLP on a ('data', 'model') mesh (x, y split by rows over "
          "'data'; w1, b1, w2 by hidden units over 'model'; psum over 'model', pmean over 'data')",
      .inputs = {{"x", {"B", "D"}, P{kData, None}},
                 {"y", {"B", "O"}, P{kData, None}},
                 {"w1", {"D", "H"}, P{None, kModel}},
                 {"b1", {"H"}, P{kModel}},
                 {"w2", {"H", "O"}, P{kModel, None}},
                 {"b2", {"O"}, P()},
                 {"lr", {}, P()}},
      .outputs = {{"w1", {"D", "H"}, P{None, kModel}},
                  {"b1", {"H"}, P{kModel}},
                  {"w2", {"H", "O"}, P{kModel, None}},
                  {"b2", {"O"}, P()},
                  {"loss", {}, P()}},
      .body = mlp_train_body,
      .check_values = mlp_train_check,
      .structure = {input_split("x", 0, kData), input_split("y", 0, kData),
                    input_split("w1", 1, kModel), input_split("b1", 0, kModel),
                    input_split("w2", 0, kModel),
                    reduced_exactly_over(kModel, "its partial outputs (x block rows x O)",
                                         partial_outputs),
                    reduced_exactly_over(kData, "loss and its gradient blocks",
                                         output_blocks({"loss", "w1", "b1", "w2", "b2"})),
                    only_reductions_over({kModel, kData}, "hidden stayed split")},
      .mesh = {{kData, 2}, {kModel, 4}},
      // programs_numpy.py's count, each product three times (forward, weight gradient, input
      // gradient), though x's gradient is never formed: 2 B D H more than are done.
      .flops =
          [](const std::vector<TensorRef>& in) {
            const std::size_t b = in[0].rows(), d = in[0].cols(), h = in[2].cols(),
                              o = in[4].cols();
            return 6 * b * d * h + 6 * b * h * o;
          },
  };
  return def;
}

}  // namespace meshrun
