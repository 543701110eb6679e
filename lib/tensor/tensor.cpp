#include "tensor/tensor.hpp"

#include <algorithm>
#include <cmath>

#include "support/cpu_features.hpp"
#include "support/errors.hpp"
#include "tensor/gemm.hpp"

namespace meshrun {

std::string shape_str(const Shape& shape) {
  std::string s = "f32[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string dim_word(std::size_t rank, std::size_t dim, std::size_t count) {
  if (rank > 2) {
    return (count == 1 ? "entry" : "entries") + std::string(" along dimension ") +
           std::to_string(dim);
  }
  const std::string word = rank == 2 ? (dim == 0 ? "row" : "column") : "element";
  return count == 1 ? word : word + "s";
}

std::string index_suffix(const Shape& shape, std::size_t i) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : i % shape[d];
    if (shape[d] != 0) i /= shape[d];
  }
  std::string s;
  for (const std::size_t k : index) {
    s += '[';
    s += std::to_string(k);
    s += ']';
  }
  return s;
}

std::size_t shape_size(const Shape& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::vector<TensorRef> refs(const std::vector<Tensor>& tensors) {
  std::vector<TensorRef> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.emplace_back(t);
  return out;
}

Tensor::Tensor(Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {
  MESHRUN_CHECK(data.size() == shape_size(shape), "tensor data does not match its shape");
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  MESHRUN_CHECK(a.rank() == 2 && b.rank() == 2 && a.cols() == b.rows(), "matmul shapes");
  Tensor c({a.rows(), b.cols()});
  gemm(Gemm::dense(a.data.data(), b.data.data(), c.data.data(), a.rows(), a.cols(), b.cols()));
  return c;
}

Tensor matmul_tn(const Tensor& a, const Tensor& b) {
  MESHRUN_CHECK(a.rank() == 2 && b.rank() == 2 && a.rows() == b.rows(), "matmul_tn shapes");
  Tensor c({a.cols(), b.cols()});
  gemm(Gemm::dense(a.data.data(), b.data.data(), c.data.data(), a.cols(), a.rows(), b.cols(),
                   /*a_transposed=*/true));
  return c;
}

Tensor matmul_nt(const Tensor& a, const Tensor& b) {
  MESHRUN_CHECK(a.rank() == 2 && b.rank() == 2 && a.cols() == b.cols(), "matmul_nt shapes");
  Tensor c({a.rows(), b.rows()});
  gemm(Gemm::dense(a.data.data(), b.data.data(), c.data.data(), a.rows(), a.cols(), b.rows(),
                   /*a_transposed=*/false, /*b_transposed=*/true));
  return c;
}

Tensor matmul_bias_relu(const Tensor& a, const Tensor& b, const Tensor& bias) {
  MESHRUN_CHECK(a.rank() == 2 && b.rank() == 2 && a.cols() == b.rows() && bias.rank() == 1 &&
                    bias.size() == b.cols(),
                "matmul_bias_relu shapes");
  Tensor c({a.rows(), b.cols()});
  Gemm g = Gemm::dense(a.data.data(), b.data.data(), c.data.data(), a.rows(), a.cols(), b.cols());
  g.bias = bias.data.data();
  g.relu = true;
  gemm(g);
  return c;
}

void add_row_vector(Tensor& m, const Tensor& v) {
  MESHRUN_CHECK(m.rank() == 2 && v.rank() == 1 && v.size() == m.cols(), "add_row_vector shapes");
  for (std::size_t i = 0; i < m.rows(); ++i)
    for (std::size_t j = 0; j < m.cols(); ++j) m(i, j) += v.data[j];
}

void relu_inplace(Tensor& t) {
  for (auto& x : t.data) x = x < 0.0f ? 0.0f : x;
}

Tensor sum_rows(const Tensor& m) {
  MESHRUN_CHECK(m.rank() == 2, "sum_rows needs a matrix");
  Tensor s({m.cols()});
  for (std::size_t i = 0; i < m.rows(); ++i)
    for (std::size_t j = 0; j < m.cols(); ++j) s.data[j] += m(i, j);
  return s;
}

namespace {
// Written once, compiled twice: with FMA (std::fma then is the vfmadd instruction, vectorised)
// and for the baseline (a call per element); chosen from the CPU's own feature bits, as
// collectives/kernels.cpp chooses its AVX2 folds.
[[gnu::always_inline]] inline void fma_scaled_body(float a, const float* x, const float* y,
                                                   float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::fma(a, x[i], y[i]);
}
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void fma_scaled_fma(float a, const float* x, const float* y,
                                                        float* out, std::size_t n) {
  fma_scaled_body(a, x, y, out, n);
}
#endif
}  // namespace

void fma_scaled(float a, const float* x, const float* y, float* out, std::size_t n) {
#if defined(__x86_64__)
  if (cpu::has_avx2_fma()) return fma_scaled_fma(a, x, y, out, n);
#endif
  fma_scaled_body(a, x, y, out, n);
}

Tensor transpose(const Tensor& m) {
  MESHRUN_CHECK(m.rank() == 2, "transpose needs a matrix");
  constexpr std::size_t kTile = 16;  // a 16 x 16 tile: 16 cache lines read, 16 written
  const std::size_t rows = m.rows(), cols = m.cols();
  Tensor t({cols, rows});
  for (std::size_t i0 = 0; i0 < rows; i0 += kTile)
    for (std::size_t j0 = 0; j0 < cols; j0 += kTile)
      for (std::size_t i = i0; i < std::min(rows, i0 + kTile); ++i)
        for (std::size_t j = j0; j < std::min(cols, j0 + kTile); ++j)
          t.data[j * rows + i] = m.data[i * cols + j];
  return t;
}

}  // namespace meshrun
