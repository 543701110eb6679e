// dp-step: one data-parallel gradient-descent step of a linear model, pred = x W + b,
//   L(W, b) = (1/N) sum_n sum_k (pred_nk - y_nk)^2.
// x and y are split by rows over 'data'; each device differentiates the loss of its own N/n rows
// (the same formula, so the mean of the shard losses and gradients is L and its gradient), and one
// pmean over 'data' averages [loss, dL/dW, dL/db] packed in one buffer.
#include <cmath>

#include "mesh/device.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"
#include "tensor/linear_mse.hpp"

namespace meshrun {

namespace {

constexpr const char* kAxis = "data";

// Inputs in order: w (D, K), b (K,), x (N/n, D), y (N/n, K), lr ().
std::vector<Tensor> dp_step_body(Device& dev, const std::vector<Tensor>& in) {
  const Tensor& w = in[0];
  const Tensor& b = in[1];
  const Tensor& x = in[2];
  const Tensor& y = in[3];
  const float lr = in[4].data[0];
  const std::size_t rows = x.rows(), d = w.rows(), k = w.cols();
  const float inv_rows = 1.0f / static_cast<float>(rows);

  // Packed as [loss, dL/dW (D*K), dL/db (K)]: one pmean for all three. err = x W + b - y on this
  // device's rows, d(loss)/d(pred) = 2 * err / rows, dL/dW = x^T of that, dL/db its column sums:
  // all in one pass over the shard, written straight into the packed buffer.
  std::vector<float> packed(1 + d * k + k, 0.0f);
  const std::span<float> grads = std::span(packed).subspan(1);
  const float sq = linear_mse_grad(x, y, w, b, inv_rows, grads.first(d * k), grads.subspan(d * k));
  packed[0] = sq / static_cast<float>(rows);  // the reference's div: the loss's bits are its own

  dev.pmean_inplace(packed, kAxis);

  // w - lr * g as XLA:CPU computes it: one fused multiply-add (docs/jax.md).
  Tensor w_new = w, b_new = b;
  for (std::size_t i = 0; i < w_new.size(); ++i)
    w_new.data[i] = std::fma(-lr, packed[1 + i], w_new.data[i]);
  for (std::size_t j = 0; j < k; ++j)
    b_new.data[j] = std::fma(-lr, packed[1 + d * k + j], b_new.data[j]);
  return tensors(std::move(w_new), std::move(b_new), Tensor::scalar(packed[0]));
}

void dp_step_check(const std::vector<TensorRef>& in) { check_learning_rate(in[4]); }

}  // namespace

const ProgramDef& dp_step_program() {
  static const std::vector<ArgDef> inputs{{"w", {"D", "K"}, P()},
                                          {"b", {"K"}, P()},
                                          {"x", {"N", "D"}, P{kAxis}},
                                          {"y", {"N", "K"}, P{kAxis}},
                                          {"lr", {}, P()}};
  static const std::vector<ArgDef> outputs{
      {"w", {"D", "K"}, P()}, {"b", {"K"}, P()}, {"loss", {}, P()}};
  static const ProgramDef def{
      .name = "dp-step",
      .axis = kAxis,
      .summary =
          "data-parallel gradient step of a linear model (x, y split by rows over 'data', pmean)",
      .inputs = inputs,
      .outputs = outputs,
      .computation = one_shard_map(dp_step_body),
      .check_values = dp_step_check,
      // The split over 'data', not over every device: on a 2-D mesh (--mesh data=4,model=2) x is
      // replicated over the other axis, as the program's spec says.
      .structure = {input_split("x", 0, kAxis), input_split("y", 0, kAxis),
                    reduced_over(kAxis, {"loss", "w", "b"})},
      .mesh = {{kAxis, 8}},
      // x W forward and x^T g backward: N x D x K multiply-adds each, 2 flops apiece.
      .flops =
          [](const std::vector<TensorRef>& in) {
            return 2 * (2 * in[2].rows() * in[2].cols() * in[0].cols());
          },
  };
  return def;
}

}  // namespace meshrun
