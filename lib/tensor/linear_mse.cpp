#include "tensor/linear_mse.hpp"

#include <algorithm>
#include <vector>

#include "support/errors.hpp"
#include "tensor/gemm.hpp"

namespace meshrun {

namespace {
// Rows per block: the block of x (at most this many floats) stays in L2 between its two reads.
constexpr std::size_t kBlockFloats = std::size_t{32} * 1024;
}  // namespace

float linear_mse_grad(const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& b,
                      float inv_rows, std::span<float> gw, std::span<float> gb) {
  const std::size_t rows = x.rows(), d = w.rows(), k = w.cols();
  MESHRUN_CHECK(x.cols() == d && y.rows() == rows && y.cols() == k && b.size() == k &&
                    gw.size() == d * k && gb.size() == k,
                "linear_mse_grad shapes");
  std::fill(gw.begin(), gw.end(), 0.0f);
  std::fill(gb.begin(), gb.end(), 0.0f);
  const std::size_t block = std::max<std::size_t>(1, kBlockFloats / std::max<std::size_t>(d, 1));
  std::vector<float> g(std::min(block, rows) * k);  // this block's err, then its g
  float sq = 0.0f;
  for (std::size_t r0 = 0; r0 < rows; r0 += block) {
    const std::size_t nr = std::min(block, rows - r0);
    const float* xb = x.data.data() + r0 * d;
    const float* yb = y.data.data() + r0 * k;
    gemm(Gemm::dense(xb, w.data.data(), g.data(), nr, d, k));
    for (std::size_t i = 0; i < nr; ++i) {
      float row = 0.0f;  // reduce_sum over axis 1, then over axis 0 (linear_mse.hpp)
      for (std::size_t j = 0; j < k; ++j) {
        float& v = g[i * k + j];
        const float err = v + b.data[j] - yb[i * k + j];
        row += err * err;
        v = 2.0f * err * inv_rows;
        gb[j] += v;
      }
      sq += row;
    }
    // gw's chains continue over this block's rows, after the previous blocks' rows.
    Gemm gw_part = Gemm::dense(xb, g.data(), gw.data(), d, nr, k, /*a_transposed=*/true);
    gw_part.accumulate = true;
    gemm(gw_part);
  }
  return sq;
}

}  // namespace meshrun
