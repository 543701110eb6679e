// conv_general_dilated, in every form jax.lax.conv_general_dilated and its gradient emit: any
// number of spatial dimensions, dimension_numbers (each operand's and the output's layout),
// window_strides, padding (negative too: the gradient crops), lhs_dilation (the gradient's
// transposed conv), rhs_dilation (atrous), feature_group_count (grouped and depthwise) and
// batch_group_count (the weight gradient of a grouped conv) (the gradient's `rev` of the kernel
// is ops/sorting.cpp's). float32 only, as XLA's semantics:
//
//   out[b, o, y] = sum over i < I, k < K of lhs[b', g I + i, x] * rhs[o, i, k]
//
// where x = (y * stride - pad_lo + k * rhs_dilation) / lhs_dilation when that is an integer
// inside the input (the holes of lhs_dilation and the padding read 0), g = o / (O / G) the
// feature group and b' = (o / (O / BG)) * (B / BG) + b the batch group.
//
// Each output element is one float32 chain of fused multiply-adds over the kernel's positions k
// (row-major) and, within each, its input features i -- the order of the contraction XLA:CPU
// hands Eigen (the im2col rows in HWIO order, one FMA a step for a contraction within one block):
// JAX 0.10.2's bits on every output and gradient of tests/jax/corpus/conv-grad (five convs: a
// strided and dilated one, its two gradients, a grouped and a batch-grouped one). A contraction
// longer than Eigen's block (some hundreds of terms) is summed in blocks there, and may then
// differ from JAX's in the last bits.
//
// The output type is refused above 2^31 elements (make_type) and the cost (2 flops a
// multiply-add, prim.flops) is counted before anything runs, so a conv of 10^12 outputs or of
// too much work is one line, exit 2.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

struct ConvDims {
  std::vector<std::size_t> lhs, rhs, out;  // batch/feature (out: batch, feature), then spatial
};

struct ConvParams {
  ConvDims dn;
  std::vector<std::int64_t> strides, lhs_dil, rhs_dil, pad_lo, pad_hi;
  std::int64_t groups = 1, batch_groups = 1;
};

std::vector<std::int64_t> ints_or(const Eqn& eqn, const char* key, std::size_t n,
                                  std::int64_t fallback) {
  if (!eqn.params.is_object() || !eqn.params.contains(key) || eqn.params[key].is_null())
    return std::vector<std::int64_t>(n, fallback);
  std::vector<std::int64_t> v = param_ints(eqn, key);
  if (v.size() != n)
    fail("conv_general_dilated param '" + std::string(key) + "' has " + std::to_string(v.size()) +
         " entries for " + std::to_string(n) + " spatial dimensions");
  return v;
}

std::int64_t int_or(const Eqn& eqn, const char* key, std::int64_t fallback) {
  if (!eqn.params.is_object() || !eqn.params.contains(key) || eqn.params[key].is_null())
    return fallback;
  return param_int(eqn, key);
}

// A permutation of 0..rank-1 from dimension_numbers[key] (the identity when absent).
std::vector<std::size_t> spec(const nlohmann::json* dn, const char* key, std::size_t rank) {
  std::vector<std::size_t> p(rank);
  for (std::size_t i = 0; i < rank; ++i) p[i] = i;
  if (dn == nullptr) return p;
  if (!dn->contains(key) || !(*dn)[key].is_array() || (*dn)[key].size() != rank)
    fail("conv_general_dilated param 'dimension_numbers' needs '" + std::string(key) +
         "': " + std::to_string(rank) + " axes");
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; i < rank; ++i) {
    const nlohmann::json& e = (*dn)[key][i];
    if (!e.is_number_integer() || e.get<std::int64_t>() < 0 ||
        e.get<std::int64_t>() >= static_cast<std::int64_t>(rank) || seen[e.get<std::size_t>()])
      fail("conv_general_dilated param 'dimension_numbers' '" + std::string(key) +
           "' is not a permutation of the " + std::to_string(rank) + " axes");
    p[i] = e.get<std::size_t>();
    seen[p[i]] = true;
  }
  return p;
}

ConvParams read_params(const Eqn& eqn, std::size_t rank) {
  if (rank < 2)
    fail("conv_general_dilated needs operands of rank >= 2, got rank " + std::to_string(rank));
  const std::size_t n = rank - 2;
  ConvParams c;
  const nlohmann::json* dn = nullptr;
  if (eqn.params.is_object() && eqn.params.contains("dimension_numbers") &&
      !eqn.params["dimension_numbers"].is_null()) {
    dn = &eqn.params["dimension_numbers"];
    if (!dn->is_object())
      fail(
          "conv_general_dilated param 'dimension_numbers' must be an object of lhs_spec, "
          "rhs_spec and out_spec");
  }
  c.dn.lhs = spec(dn, "lhs_spec", rank);
  c.dn.rhs = spec(dn, "rhs_spec", rank);
  c.dn.out = spec(dn, "out_spec", rank);
  c.strides = ints_or(eqn, "window_strides", n, 1);
  c.lhs_dil = ints_or(eqn, "lhs_dilation", n, 1);
  c.rhs_dil = ints_or(eqn, "rhs_dilation", n, 1);
  for (std::size_t d = 0; d < n; ++d) {
    if (c.strides[d] < 1 || c.strides[d] > (1 << 30) || c.lhs_dil[d] < 1 ||
        c.lhs_dil[d] > (1 << 30) || c.rhs_dil[d] < 1 || c.rhs_dil[d] > (1 << 30))
      fail(
          "conv_general_dilated needs window_strides, lhs_dilation and rhs_dilation in [1, "
          "2^30]");
  }
  c.pad_lo.assign(n, 0);
  c.pad_hi.assign(n, 0);
  if (eqn.params.is_object() && eqn.params.contains("padding")) {
    const nlohmann::json& p = eqn.params["padding"];
    if (!p.is_array() || p.size() != n)
      fail("conv_general_dilated param 'padding' must be " + std::to_string(n) + " pairs [lo, hi]");
    for (std::size_t d = 0; d < n; ++d) {
      if (!p[d].is_array() || p[d].size() != 2 || !p[d][0].is_number_integer() ||
          !p[d][1].is_number_integer())
        fail("conv_general_dilated param 'padding' must be " + std::to_string(n) +
             " pairs [lo, hi] of integers");
      c.pad_lo[d] = p[d][0].get<std::int64_t>();
      c.pad_hi[d] = p[d][1].get<std::int64_t>();
      if (std::max(std::abs(c.pad_lo[d]), std::abs(c.pad_hi[d])) > (std::int64_t{1} << 40))
        fail("conv_general_dilated param 'padding' beyond 2^40");
    }
  }
  c.groups = int_or(eqn, "feature_group_count", 1);
  c.batch_groups = int_or(eqn, "batch_group_count", 1);
  if (c.groups < 1 || c.batch_groups < 1)
    fail("conv_general_dilated needs feature_group_count and batch_group_count >= 1");
  if (c.groups > 1 && c.batch_groups > 1)
    fail("conv_general_dilated: feature_group_count and batch_group_count cannot both be > 1");
  return c;
}

// The sizes of one conv, in its canonical order (batch, feature, spatial...).
struct ConvShape {
  std::int64_t b, c, o, i, out_b;
  std::vector<std::int64_t> in, k, out;  // spatial
};

ConvShape conv_shape(const ConvParams& p, const Shape& lhs, const Shape& rhs) {
  const std::size_t n = lhs.size() - 2;
  ConvShape s;
  s.b = static_cast<std::int64_t>(lhs[p.dn.lhs[0]]);
  s.c = static_cast<std::int64_t>(lhs[p.dn.lhs[1]]);
  s.o = static_cast<std::int64_t>(rhs[p.dn.rhs[0]]);
  s.i = static_cast<std::int64_t>(rhs[p.dn.rhs[1]]);
  if (s.c != s.i * p.groups)
    fail("conv_general_dilated: the lhs has " + std::to_string(s.c) +
         " features, not rhs's input features (" + std::to_string(s.i) +
         ") times feature_group_count (" + std::to_string(p.groups) + ")");
  if (s.o % p.groups != 0 || s.o % p.batch_groups != 0)
    fail("conv_general_dilated: the rhs's " + std::to_string(s.o) +
         " output features are not a multiple of feature_group_count and batch_group_count");
  if (s.b % p.batch_groups != 0)
    fail("conv_general_dilated: the lhs batch " + std::to_string(s.b) +
         " is not a multiple of batch_group_count " + std::to_string(p.batch_groups));
  s.out_b = s.b / p.batch_groups;
  for (std::size_t d = 0; d < n; ++d) {
    const auto in = static_cast<std::int64_t>(lhs[p.dn.lhs[d + 2]]);
    const auto k = static_cast<std::int64_t>(rhs[p.dn.rhs[d + 2]]);
    const std::string what = "conv_general_dilated's spatial size";
    const std::int64_t dilated_in =
        in == 0 ? 0 : checked_add(checked_mul(in - 1, p.lhs_dil[d], what), 1, what);
    const std::int64_t padded =
        checked_add(checked_add(dilated_in, p.pad_lo[d], what), p.pad_hi[d], what);
    if (k == 0) fail("conv_general_dilated: the kernel has a spatial dimension of size 0");
    const std::int64_t dilated_k = checked_add(checked_mul(k - 1, p.rhs_dil[d], what), 1, what);
    const std::int64_t out = padded < dilated_k ? 0 : (padded - dilated_k) / p.strides[d] + 1;
    s.in.push_back(in);
    s.k.push_back(k);
    s.out.push_back(std::max<std::int64_t>(out, 0));
  }
  return s;
}

Types conv_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  for (const ValueType& t : in) check_dtype(eqn, t.dtype, kF);
  // bf16 and f16 (issue #49, dtypes2): both operands of the dtype, converted to f32 by XLA:CPU,
  // the f32 conv, its result rounded once (the evaluator's fit), or left f32 with
  // preferred_element_type f32.
  if (in[0].dtype != in[1].dtype)
    fail("conv_general_dilated of " + std::string(dtype_word(in[0].dtype)) + " and " +
         dtype_word(in[1].dtype) + " is not supported (operands of one dtype)");
  DType result = in[0].dtype;
  if (in[0].shape.size() != in[1].shape.size())
    fail("conv_general_dilated needs operands of one rank, got " + dims_str(in[0].shape) + " and " +
         dims_str(in[1].shape));
  if (eqn.params.is_object() && eqn.params.contains("preferred_element_type")) {
    const nlohmann::json& t = eqn.params["preferred_element_type"];
    if (!t.is_null() && !(t.is_string() && (t == "f32" || t == "float32")))
      fail("conv_general_dilated param 'preferred_element_type': only float32 is supported");
    if (t.is_string()) result = DType::kF32;
  }
  const ConvParams p = read_params(eqn, in[0].shape.size());
  const ConvShape s = conv_shape(p, in[0].shape, in[1].shape);
  Shape out(in[0].shape.size());
  out[p.dn.out[0]] = static_cast<std::size_t>(s.out_b);
  out[p.dn.out[1]] = static_cast<std::size_t>(s.o);
  for (std::size_t d = 0; d < s.out.size(); ++d)
    out[p.dn.out[d + 2]] = static_cast<std::size_t>(s.out[d]);
  return {make_type(result, out)};
}

// 2 flops a multiply-add: each output element sums I * prod(K) products, the rhs's elements
// over its O output features.
std::uint64_t conv_flops(const Eqn& eqn, std::span<const ValueType> ops,
                         std::span<const ValueType> outs) {
  const ConvParams p = read_params(eqn, ops[1].shape.size());
  long double f = 2;
  for (std::size_t d : outs[0].shape) f *= static_cast<long double>(d);
  const std::size_t o = ops[1].shape[p.dn.rhs[0]];
  if (o == 0) return 0;
  for (std::size_t d : ops[1].shape) f *= static_cast<long double>(d);
  f /= static_cast<long double>(o);
  return f >= 1.8e19L ? UINT64_MAX : static_cast<std::uint64_t>(f);
}

// acc[o] for o < run: the chain fma(l[i], r[i][o], acc[o]) over the kernel positions kk whose
// input position `offsets[kk]` is inside (the others read a 0), then i < I; l is the lhs row
// (C floats a position), r the rhs at [kk][i][o] with O floats a row. Each output keeps its own
// chain, in the same order whatever the vector width: the AVX2 build (runtime-dispatched) computes
// the very bits of the generic one, 8 outputs at a time.
#define MESHRUN_CONV_SEGMENT_BODY                                                 \
  for (std::int64_t kk = 0; kk < k_sp; ++kk) {                                    \
    if (offsets[kk] < 0) continue;                                                \
    const float* lv = l + offsets[kk] * c;                                        \
    const float* rk = r + kk * in * o_stride;                                     \
    for (std::int64_t i = 0; i < in; ++i) {                                       \
      const float a = lv[i];                                                      \
      const float* ri = rk + i * o_stride;                                        \
      for (std::int64_t o = 0; o < run; ++o) acc[o] = std::fma(a, ri[o], acc[o]); \
    }                                                                             \
  }
void conv_segment_generic(const float* l, std::int64_t c, const float* r, std::int64_t in,
                          std::int64_t o_stride, const std::int64_t* offsets, std::int64_t k_sp,
                          float* acc, std::int64_t run) {
  MESHRUN_CONV_SEGMENT_BODY
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) void conv_segment_fma(
    const float* l, std::int64_t c, const float* r, std::int64_t in, std::int64_t o_stride,
    const std::int64_t* offsets, std::int64_t k_sp, float* acc, std::int64_t run) {
  MESHRUN_CONV_SEGMENT_BODY
}
#endif
#undef MESHRUN_CONV_SEGMENT_BODY

void conv_segment(const float* l, std::int64_t c, const float* r, std::int64_t in,
                  std::int64_t o_stride, const std::int64_t* offsets, std::int64_t k_sp, float* acc,
                  std::int64_t run) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (has_fma) return conv_segment_fma(l, c, r, in, o_stride, offsets, k_sp, acc, run);
#endif
  conv_segment_generic(l, c, r, in, o_stride, offsets, k_sp, acc, run);
}

Values conv_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Tensor& lhs = in[0]->t;
  const Tensor& rhs = in[1]->t;
  const std::size_t rank = lhs.shape.size();
  const std::size_t n = rank - 2;
  const ConvParams p = read_params(eqn, rank);
  const ConvShape s = conv_shape(p, lhs.shape, rhs.shape);

  // lhs as [B][spatial...][C] and rhs as [K...][I][O]: a step of the sum reads one lhs value and
  // a run of the rhs over the output features, each with its own chain (conv_segment).
  Shape lhs_c(rank), rhs_c(rank);
  std::vector<std::int64_t> lhs_src(rank), rhs_src(rank);
  const std::vector<std::int64_t> ls = strides_of(lhs.shape), rs = strides_of(rhs.shape);
  lhs_c[0] = lhs.shape[p.dn.lhs[0]];
  lhs_src[0] = ls[p.dn.lhs[0]];
  for (std::size_t d = 0; d < n; ++d) {
    lhs_c[d + 1] = lhs.shape[p.dn.lhs[d + 2]];
    lhs_src[d + 1] = ls[p.dn.lhs[d + 2]];
  }
  lhs_c[rank - 1] = lhs.shape[p.dn.lhs[1]];
  lhs_src[rank - 1] = ls[p.dn.lhs[1]];
  for (std::size_t d = 0; d < n; ++d) {
    rhs_c[d] = rhs.shape[p.dn.rhs[d + 2]];
    rhs_src[d] = rs[p.dn.rhs[d + 2]];
  }
  rhs_c[rank - 2] = rhs.shape[p.dn.rhs[1]];
  rhs_src[rank - 2] = rs[p.dn.rhs[1]];
  rhs_c[rank - 1] = rhs.shape[p.dn.rhs[0]];
  rhs_src[rank - 1] = rs[p.dn.rhs[0]];
  std::vector<float> L(lhs.size()), R(rhs.size());
  copy_strided(lhs_c, lhs.data.data(), lhs_src, L.data(), strides_of(lhs_c));
  copy_strided(rhs_c, rhs.data.data(), rhs_src, R.data(), strides_of(rhs_c));

  std::int64_t in_sp = 1, k_sp = 1, out_sp = 1;
  for (std::size_t d = 0; d < n; ++d) {
    in_sp *= s.in[d];
    k_sp *= s.k[d];
    out_sp *= s.out[d];
  }
  // The result as [B'][O][spatial...], then into out_spec's layout.
  Shape out_c(rank);
  out_c[0] = static_cast<std::size_t>(s.out_b);
  out_c[1] = static_cast<std::size_t>(s.o);
  for (std::size_t d = 0; d < n; ++d) out_c[d + 2] = static_cast<std::size_t>(s.out[d]);
  std::vector<float> O(static_cast<std::size_t>(s.out_b * s.o * out_sp));

  const std::int64_t o_per_group = s.o / p.groups, o_per_bgroup = s.o / p.batch_groups;
  const std::int64_t b_per_bgroup = s.b / p.batch_groups;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(k_sp));  // input position or -1
  std::vector<std::int64_t> y(n, 0), k(n, 0);
  std::vector<float> acc(static_cast<std::size_t>(s.o));
  for (std::int64_t q = 0; q < out_sp; ++q) {
    // y: q's multi-index; offsets[kk]: the input position kernel offset kk reads, or -1.
    for (std::int64_t r = q, d = static_cast<std::int64_t>(n) - 1; d >= 0; --d) {
      y[d] = r % s.out[d];
      r /= s.out[d];
    }
    for (std::int64_t kk = 0; kk < k_sp; ++kk) {
      for (std::int64_t r = kk, d = static_cast<std::int64_t>(n) - 1; d >= 0; --d) {
        k[d] = r % s.k[d];
        r /= s.k[d];
      }
      std::int64_t pos = 0;
      for (std::size_t d = 0; d < n && pos >= 0; ++d) {
        const std::int64_t x = y[d] * p.strides[d] - p.pad_lo[d] + k[d] * p.rhs_dil[d];
        if (x < 0 || x % p.lhs_dil[d] != 0 || x / p.lhs_dil[d] >= s.in[d]) {
          pos = -1;
        } else {
          pos = pos * s.in[d] + x / p.lhs_dil[d];
        }
      }
      offsets[kk] = pos;
    }
    for (std::int64_t b = 0; b < s.out_b; ++b) {
      // The output features in runs of one feature group and one batch group (one of the two
      // counts is 1): each run reads one lhs row.
      const std::int64_t run = p.groups > 1 ? o_per_group : o_per_bgroup;
      for (std::int64_t o0 = 0; o0 < s.o; o0 += run) {
        const std::int64_t g = o0 / o_per_group;
        const std::int64_t src_b = (o0 / o_per_bgroup) * b_per_bgroup + b;
        const float* lrow = L.data() + (src_b * in_sp) * s.c + g * s.i;
        std::fill(acc.begin(), acc.begin() + run, 0.0f);
        conv_segment(lrow, s.c, R.data() + o0, s.i, s.o, offsets.data(), k_sp, acc.data(), run);
        for (std::int64_t o = 0; o < run; ++o)
          O[static_cast<std::size_t>((b * s.o + o0 + o) * out_sp + q)] = acc[o];
      }
    }
  }
  Shape out_shape(rank);
  std::vector<std::int64_t> dst(rank);
  Tensor result;
  for (std::size_t d = 0; d < rank; ++d) out_shape[p.dn.out[d]] = out_c[d];
  result = Tensor(out_shape);
  const std::vector<std::int64_t> os = strides_of(out_shape);
  for (std::size_t d = 0; d < rank; ++d) dst[d] = os[p.dn.out[d]];
  copy_strided(out_c, O.data(), strides_of(out_c), result.data.data(), dst);
  const bool to_f32 = eqn.params.is_object() && eqn.params.contains("preferred_element_type") &&
                      eqn.params["preferred_element_type"].is_string();
  return one(Value(to_f32 ? DType::kF32 : in[0]->dtype, std::move(result)));
}

constexpr Primitive conv() {
  Primitive p{&conv_infer, &conv_eval};
  p.flops = &conv_flops;
  return p;
}

}  // namespace

std::span<const Entry> conv_entries() {
  static const Entry kEntries[] = {
      {"conv_general_dilated", conv()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
