// Tensor: a dense row-major float32 array of any rank (the built-in programs use 0..2; a program
// file's values go up to kMaxRank), plus the few kernels the programs use. Kernels accumulate in
// float32 in a fixed order, so a program gives the same bits every run. Matrix products accumulate
// with fused multiply-add, as JAX's CPU backend does (XLA:CPU always allows FMA fusion); they run
// on gemm (tensor/gemm.hpp), blocked and vectorised without changing an element's chain, so the
// bits are those of the plain loop.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace meshrun {

using Shape = std::vector<std::size_t>;

// The most dimensions an array of a case, a .npy input or a result may have: a program file's
// shapes are capped at 8 dimensions (interp's reader, "more than 8 dimensions"), so no input or
// output of a program has more.
inline constexpr std::size_t kMaxRank = 8;

// "f32[16,2]" -- JAX's notation, used in traces and messages.
std::string shape_str(const Shape& shape);
std::size_t shape_size(const Shape& shape);
// How dimension `dim` of a rank-`rank` array is called in messages, for `count` of them:
// "row"/"rows", "column"/"columns" (rank 2), "element"/"elements" (rank 1), "entry along
// dimension 2"/"entries along dimension 2" (rank 3 or more).
std::string dim_word(std::size_t rank, std::size_t dim, std::size_t count);
// "[3][1]": the indices of flat (row-major) element `i` of an array of `shape` ("" for a scalar).
std::string index_suffix(const Shape& shape, std::size_t i);

struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(shape_size(shape), 0.0f) {}
  Tensor(Shape s, std::vector<float> d);
  static Tensor scalar(float v) { return Tensor({}, {v}); }

  std::size_t rank() const { return shape.size(); }
  std::size_t size() const { return data.size(); }
  std::size_t dim(std::size_t i) const { return shape.at(i); }
  std::size_t rows() const { return shape.at(0); }
  std::size_t cols() const { return shape.at(1); }
  float& operator()(std::size_t i, std::size_t j) { return data[i * shape[1] + j]; }
  float operator()(std::size_t i, std::size_t j) const { return data[i * shape[1] + j]; }
  std::span<float> span() { return data; }
  std::span<const float> span() const { return data; }
  bool operator==(const Tensor&) const = default;
};

// A read-only view of a dense row-major float32 array held elsewhere: a Tensor's data, or an
// input left in its mapped .npy file (io/npy.hpp), which each device's block is cut from.
struct TensorRef {
  Shape shape;
  const float* data = nullptr;  // shape_size(shape) values

  TensorRef() = default;
  TensorRef(Shape s, const float* d) : shape(std::move(s)), data(d) {}
  explicit TensorRef(const Tensor& t) : shape(t.shape), data(t.data.data()) {}
  std::size_t rank() const { return shape.size(); }
  std::size_t size() const { return shape_size(shape); }
  std::size_t rows() const { return shape.at(0); }
  std::size_t cols() const { return shape.at(1); }
};

// A view of each of `tensors`.
std::vector<TensorRef> refs(const std::vector<Tensor>& tensors);

// c = a @ b for a (M, K), b (K, N); c[i][j] = fma(a[i][k], b[k][j], c[i][j]) for k = 0..K-1.
Tensor matmul(const Tensor& a, const Tensor& b);
// c = a^T @ b for a (K, M), b (K, N).
Tensor matmul_tn(const Tensor& a, const Tensor& b);
// c = a @ b^T for a (M, K), b (N, K): b read in place, its rows packed as op(B)'s columns (the
// bits of matmul(a, transpose(b)) without the transposed copy).
Tensor matmul_nt(const Tensor& a, const Tensor& b);
// relu(a @ b + bias) in one pass, with the bits of matmul, add_row_vector, relu_inplace in turn:
// each element's chain, then + bias[j], then relu, in the matmul's epilogue while it is in a
// register (tp-mlp's hidden layer).
Tensor matmul_bias_relu(const Tensor& a, const Tensor& b, const Tensor& bias);
// m (M, N) + v (N,) broadcast over rows, in place.
void add_row_vector(Tensor& m, const Tensor& v);
void relu_inplace(Tensor& t);
// column sums of m (M, N) -> (N,), summed over rows in order.
Tensor sum_rows(const Tensor& m);
// out[i] = fma(a, x[i], y[i]) for i < n, one rounding each (an SGD update w - lr * g as XLA:CPU
// fuses it: a = -lr). On the CPU's vector FMA where it has one, else std::fma: the same bits.
// out may be y.
void fma_scaled(float a, const float* x, const float* y, float* out, std::size_t n);
// m^T (C, R) of m (R, C), by tiles (a plain strided copy misses the cache on every write).
Tensor transpose(const Tensor& m);

// {a, b, c} as a vector without copying them: a braced list's elements are const, so
// `return {std::move(a), ...}` copies every tensor into fresh pages (a 2 MB hidden layer of
// tp-mlp's cost 1.3 ms of page faults).
template <class... T>
std::vector<Tensor> tensors(T&&... t) {
  std::vector<Tensor> v;
  v.reserve(sizeof...(t));
  (v.push_back(std::forward<T>(t)), ...);
  return v;
}

}  // namespace meshrun
