// The whole per-device arithmetic of a linear model's mean-squared-error gradient (dp-step) in one
// pass over the shard, with the bits of the unfused ops it replaces (see linear_mse_grad).
#pragma once

#include <span>

#include "tensor/tensor.hpp"

namespace meshrun {

// For x (R, D), y (R, K), w (D, K), b (K,): err = x @ w + b - y (the product's chain, then + b,
// then - y, each rounded), and with g = 2 * err * inv_rows (rounded after each multiply):
//   returns sq = the sum over the rows of each row's sum of err * err (each square rounded; a
//                row summed in order, then the rows' sums in order): the reference program's
//                reduce_sum over axis 1, then over axis 0, as meshrun's interpreter folds them
//                (the caller divides it by the rows into the loss),
//   gw (D*K) = x^T @ g (each element one FMA chain over the rows in order),
//   gb (K)   = the column sums of g, summed over the rows in order.
// Rows go through in blocks small enough that a block of x read for err is still in cache when
// it is read again for gw: x and y leave memory once.
float linear_mse_grad(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& b,
                      float inv_rows, std::span<float> gw, std::span<float> gb);

}  // namespace meshrun
