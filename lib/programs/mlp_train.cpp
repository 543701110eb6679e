// mlp-train: one SGD step of the two-layer MLP out = relu(x W1 + b1) W2 + b2 with a squared-error
// loss, on a ('data', 'model') mesh -- data and tensor parallelism at once (Megatron-style 2-D).
// Device (i, j) holds rows i of x and y (split over 'data') and hidden units j of W1, b1 and W2
// (split over 'model'). Forward: its hidden columns need nobody; a psum over 'model' (within its
// data row) adds the partial outputs. Backward: the output error is the same on the whole model
// group, so each device differentiates its own hidden units locally; one pmean over 'data'
// (within its model column) averages [loss, dW1_j, db1_j, dW2_j, db2] packed in one buffer.
// Equal shard sizes make the mean of the data shards' losses and gradients the loss and gradient
// of the whole batch: the result is one SGD step of the unsharded MLP.
#include <algorithm>

#include "mesh/device.hpp"
#include "programs/program.hpp"
#include "tensor/gemm.hpp"

namespace meshrun {

namespace {

constexpr const char* kData = "data";
constexpr const char* kModel = "model";

// p - lr * packed[at ...] as XLA:CPU fuses it (one FMA), advancing `at` past p's elements.
Tensor sgd(const Tensor& p, float lr, const std::vector<float>& packed, std::size_t& at) {
  Tensor q(p.shape);
  fma_scaled(-lr, packed.data() + at, p.data.data(), q.data.data(), p.size());
  at += p.size();
  return q;
}

// Copies t's elements into `packed` from `at` on, advancing `at` past them.
void put(std::vector<float>& packed, std::size_t& at, const Tensor& t) {
  std::copy(t.data.begin(), t.data.end(), packed.begin() + static_cast<std::ptrdiff_t>(at));
  at += t.size();
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

  // Forward. h: this device's rows and hidden units (B/d, H/m), relu(x w1 + b1) with bias and relu
  // in the product's epilogue -- the bits of matmul, add_row_vector, relu_inplace in turn.
  const Tensor h = matmul_bias_relu(x, w1, b1);
  Tensor out = dev.psum(matmul(h, w2), kModel);  // the whole (B/d, O) output of these rows
  add_row_vector(out, b2);                       // once, after the sum

  // Loss on these rows (summed over O, mean over rows, as dp-step) and d(loss)/d(out). The loss
  // in the reference program's order (reduce_sum over O, then over the rows, then div), as the
  // interpreter folds it: its bits are the reference's (docs/performance.md, "One path").
  Tensor g = out;
  float sq = 0.0f;
  const std::size_t cols = g.cols();
  for (std::size_t r = 0; r < g.rows(); ++r) {
    float row = 0.0f;
    for (std::size_t i = r * cols; i < (r + 1) * cols; ++i) {
      const float e = out.data[i] - y.data[i];
      row += e * e;
      g.data[i] = 2.0f * e * inv_rows;
    }
    sq += row;
  }

  // Backward through this device's hidden units, into the buffer the pmean averages:
  // [loss, dW1 (D, H/m), db1 (H/m,), dW2 (H/m, O), db2 (O,)], the products written in place.
  const std::size_t d = x.cols(), hm = h.cols(), o = g.cols();
  std::vector<float> packed(1 + d * hm + hm + hm * o + o);
  packed[0] = sq / static_cast<float>(x.rows());
  float* const dw1 = packed.data() + 1;
  float* const dw2 = dw1 + d * hm + hm;
  gemm(Gemm::dense(h.data.data(), g.data.data(), dw2, hm, h.rows(), o, /*a_transposed=*/true));
  Tensor dz = matmul_nt(g, w2);  // g @ w2^T (B/d, H/m), w2 read in place
  // relu'(0) = 0, as JAX and PyTorch; h > 0 exactly where x w1 + b1 > 0 (relu keeps -0 and NaN).
  // (A select, not a branch: the mask is as random as the data, and a branch on it mispredicted
  // half the time.)
  for (std::size_t i = 0; i < dz.size(); ++i) dz.data[i] = h.data[i] > 0.0f ? dz.data[i] : 0.0f;
  gemm(Gemm::dense(x.data.data(), dz.data.data(), dw1, d, x.rows(), hm, /*a_transposed=*/true));
  std::size_t at = 1 + d * hm;
  put(packed, at, sum_rows(dz));  // db1
  at += hm * o;
  put(packed, at, sum_rows(g));  // db2
  dev.pmean_inplace(packed, kData);

  at = 1;
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
  static const std::vector<ArgDef> inputs{{"x", {"B", "D"}, P{kData, None}},
                                          {"y", {"B", "O"}, P{kData, None}},
                                          {"w1", {"D", "H"}, P{None, kModel}},
                                          {"b1", {"H"}, P{kModel}},
                                          {"w2", {"H", "O"}, P{kModel, None}},
                                          {"b2", {"O"}, P()},
                                          {"lr", {}, P()}};
  static const std::vector<ArgDef> outputs{{"w1", {"D", "H"}, P{None, kModel}},
                                           {"b1", {"H"}, P{kModel}},
                                           {"w2", {"H", "O"}, P{kModel, None}},
                                           {"b2", {"O"}, P()},
                                           {"loss", {}, P()}};
  static const ProgramDef def{
      .name = "mlp-train",
      .axis = "",
      .summary =
          "one SGD step of a two-layer MLP on a ('data', 'model') mesh (x, y split by rows over "
          "'data'; w1, b1, w2 by hidden units over 'model'; psum over 'model', pmean over 'data')",
      .inputs = inputs,
      .outputs = outputs,
      .computation = one_shard_map(mlp_train_body),
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
