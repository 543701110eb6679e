#include "tensor/tensor.hpp"

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
  const std::string word = rank == 2 ? (dim == 0 ? "row" : "column") : "element";
  return count == 1 ? word : word + "s";
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

}  // namespace meshrun
