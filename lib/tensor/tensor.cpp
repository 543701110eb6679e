#include "tensor/tensor.hpp"

#include <cmath>

#include "support/errors.hpp"

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
  const std::string word = rank == 2 ? (dim == 0 ? "row" : "column") : "element";
  return count == 1 ? word : word + "s";
}

std::size_t shape_size(const Shape& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

Tensor::Tensor(Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {
  MESHRUN_CHECK(data.size() == shape_size(shape), "tensor data does not match its shape");
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  MESHRUN_CHECK(a.rank() == 2 && b.rank() == 2 && a.cols() == b.rows(), "matmul shapes");
  const std::size_t m = a.rows(), k = a.cols(), n = b.cols();
  Tensor c({m, n});
  for (std::size_t i = 0; i < m; ++i) {
    float* ci = &c.data[i * n];
    for (std::size_t p = 0; p < k; ++p) {  // i-p-j order: c[i][j] still sums p = 0..k-1 in order
      const float aip = a.data[i * k + p];
      const float* bp = &b.data[p * n];
      for (std::size_t j = 0; j < n; ++j) ci[j] = std::fma(aip, bp[j], ci[j]);
    }
  }
  return c;
}

Tensor matmul_tn(const Tensor& a, const Tensor& b) {
  MESHRUN_CHECK(a.rank() == 2 && b.rank() == 2 && a.rows() == b.rows(), "matmul_tn shapes");
  const std::size_t k = a.rows(), m = a.cols(), n = b.cols();
  Tensor c({m, n});
  for (std::size_t p = 0; p < k; ++p) {
    const float* ap = &a.data[p * m];
    const float* bp = &b.data[p * n];
    for (std::size_t i = 0; i < m; ++i) {
      float* ci = &c.data[i * n];
      for (std::size_t j = 0; j < n; ++j) ci[j] = std::fma(ap[i], bp[j], ci[j]);
    }
  }
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

}  // namespace meshrun
