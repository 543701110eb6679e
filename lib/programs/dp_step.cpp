// dp-step: one data-parallel gradient-descent step of a linear model, pred = x W + b,
//   L(W, b) = (1/N) sum_n sum_k (pred_nk - y_nk)^2.
// x and y are split by rows over 'data'; each device differentiates the loss of its own N/n rows
// (the same formula, so the mean of the shard losses and gradients is L and its gradient), and one
// pmean over 'data' averages [loss, dL/dW, dL/db] packed in one buffer.
#include "mesh/device.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"

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

  // err = x W + b - y on this device's rows.
  Tensor err = matmul(x, w);
  add_row_vector(err, b);
  for (std::size_t i = 0; i < err.size(); ++i) err.data[i] -= y.data[i];

  // Packed as [loss, dL/dW (D*K), dL/db (K)]: one pmean for all three.
  std::vector<float> packed(1 + d * k + k, 0.0f);
  float sq = 0.0f;
  for (float e : err.data) sq += e * e;
  packed[0] = sq * inv_rows;
  // d(loss)/d(pred) = 2 * err / rows.
  Tensor g = err;
  for (float& v : g.data) v = 2.0f * v * inv_rows;
  const Tensor gw = matmul_tn(x, g);  // (D, K)
  const Tensor gb = sum_rows(g);      // (K,)
  std::copy(gw.data.begin(), gw.data.end(), packed.begin() + 1);
  std::copy(gb.data.begin(), gb.data.end(), packed.begin() + 1 + static_cast<std::ptrdiff_t>(d * k));

  dev.pmean_inplace(packed, kAxis);

  Tensor w_new = w, b_new = b;
  for (std::size_t i = 0; i < w_new.size(); ++i) w_new.data[i] -= lr * packed[1 + i];
  for (std::size_t j = 0; j < k; ++j) b_new.data[j] -= lr * packed[1 + d * k + j];
  return {std::move(w_new), std::move(b_new), Tensor::scalar(packed[0])};
}

void dp_step_check(const std::vector<Tensor>& in) { check_learning_rate(in[4]); }

}  // namespace

const ProgramDef& dp_step_program() {
  static const ProgramDef def{
      "dp-step",
      kAxis,
      "data-parallel gradient step of a linear model (x, y split by rows over 'data', pmean)",
      {{"w", {"D", "K"}, P()},
       {"b", {"K"}, P()},
       {"x", {"N", "D"}, P{kAxis}},
       {"y", {"N", "K"}, P{kAxis}},
       {"lr", {}, P()}},
      {{"w", {"D", "K"}, P()}, {"b", {"K"}, P()}, {"loss", {}, P()}},
      dp_step_body,
      dp_step_check,
      {input_split("x", 0), input_split("y", 0), reduced_over(kAxis, {"loss", "w", "b"})},
      {{kAxis, 8}},
  };
  return def;
}

}  // namespace meshrun
