// dot_general: batch and contracting dimensions in any positions. The operands are brought into
// batch x M x K and batch x K x N (transposed by a copy only where their layout is not already
// that; a lhs stored batch x K x M and a rhs stored batch x N x K are read in place by the gemm's
// transposed paths, unmoved), then each batch is one
// lib/tensor gemm: every output element one FMA chain over k in order from +0, the bits of the
// plain loop. i32 products are exact integer sums, refused beyond 2^24.
#include <cstdint>
#include <string>

#include "interp/prim_util.hpp"
#include "tensor/gemm.hpp"

namespace meshrun::interp::prim {

namespace {

using I64 = std::int64_t;

struct DotDims {
  std::vector<std::size_t> lc, rc, lb, rb;  // contracting and batch axes of lhs and rhs
  std::vector<std::size_t> lf, rf;          // the free axes, in order
};

// params[key] as [[lhs axes], [rhs axes]].
void axis_pair(const Eqn& eqn, const char* key, std::size_t lrank, std::size_t rrank,
               std::vector<std::size_t>* l, std::vector<std::size_t>* r) {
  if (!eqn.params.is_object() || !eqn.params.contains(key))
    fail(std::string("param '") + key + "' missing");
  const nlohmann::json& j = eqn.params[key];
  if (!j.is_array() || j.size() != 2 || !j[0].is_array() || !j[1].is_array())
    fail(std::string("dot_general param '") + key + "' must be [[lhs axes], [rhs axes]]");
  for (int side = 0; side < 2; ++side) {
    const std::size_t rank = side == 0 ? lrank : rrank;
    std::vector<std::size_t>* out = side == 0 ? l : r;
    for (const nlohmann::json& e : j[static_cast<std::size_t>(side)]) {
      if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<std::uint64_t>() > rank) ||
          e.get<I64>() < 0 || static_cast<std::size_t>(e.get<I64>()) >= rank) {
        fail(std::string("dot_general requires ") + (side == 0 ? "lhs" : "rhs") +
             " dimension numbers to be nonnegative and less than the number of axes of the " +
             (side == 0 ? "lhs" : "rhs") + " value, got " + e.dump().substr(0, 24) + " in '" + key +
             "' for rank " + std::to_string(rank));
      }
      out->push_back(static_cast<std::size_t>(e.get<I64>()));
    }
  }
}

Shape pick(const Shape& s, const std::vector<std::size_t>& axes) {
  Shape out;
  for (std::size_t a : axes) out.push_back(s[a]);
  return out;
}

DotDims dot_dims(const Eqn& eqn, const Shape& ls, const Shape& rs) {
  DotDims d;
  axis_pair(eqn, "contracting", ls.size(), rs.size(), &d.lc, &d.rc);
  axis_pair(eqn, "batch", ls.size(), rs.size(), &d.lb, &d.rb);
  if (d.lb.size() != d.rb.size()) {
    fail(
        "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch " +
        std::to_string(d.lb.size()) + " and rhs_batch " + std::to_string(d.rb.size()));
  }
  if (d.lc.size() != d.rc.size()) {
    fail("dot_general requires equal numbers of lhs and rhs contracting dimensions, got " +
         std::to_string(d.lc.size()) + " and " + std::to_string(d.rc.size()));
  }
  for (int side = 0; side < 2; ++side) {
    const std::size_t rank = side == 0 ? ls.size() : rs.size();
    const auto& c = side == 0 ? d.lc : d.rc;
    const auto& b = side == 0 ? d.lb : d.rb;
    std::vector<int> used(rank, 0);
    for (std::size_t a : c) ++used[a];
    for (std::size_t a : b) ++used[a];
    auto& free = side == 0 ? d.lf : d.rf;
    for (std::size_t a = 0; a < rank; ++a) {
      if (used[a] > 1) {
        fail(std::string("dot_general requires ") + (side == 0 ? "lhs" : "rhs") +
             " batch and contracting dimensions to be distinct, got axis " + std::to_string(a) +
             " more than once");
      }
      if (used[a] == 0) free.push_back(a);
    }
  }
  if (pick(ls, d.lb) != pick(rs, d.rb)) {
    fail(
        "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
        "shape, got " +
        dims_str(pick(ls, d.lb)) + " and " + dims_str(pick(rs, d.rb)));
  }
  if (pick(ls, d.lc) != pick(rs, d.rc)) {
    fail("dot_general requires contracting dimensions to have the same shape, got " +
         dims_str(pick(ls, d.lc)) + " and " + dims_str(pick(rs, d.rc)));
  }
  return d;
}

DType out_dtype(const Eqn& eqn, DType in) {
  if (!eqn.params.is_object() || !eqn.params.contains("preferred_element_type") ||
      eqn.params["preferred_element_type"].is_null())
    return in;
  return param_dtype(eqn, "preferred_element_type");
}

// Operands of two dtypes (jnp.take_along_axis(..., mode="one_hot"): a bool one-hot matrix times
// float32): JAX's dtype rule (_dot_general_dtype_rule, XLA's HigherPrecisionType) gives the
// higher of the two, float32 over int32 over bool, and XLA converts both operands to it -- exact
// here, where bool is 0 or 1 and int32 within 2^24, so the product is that dtype's.
DType compute_dtype(DType a, DType b) {
  const auto rank = [](DType t) { return is_float(t) ? 2 : t == DType::kBool ? 0 : 1; };
  return rank(a) >= rank(b) ? a : b;
}

std::vector<ValueType> dot_infer(const Eqn& eqn, std::span<const ValueType> in,
                                 const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  const DType compute = compute_dtype(in[0].dtype, in[1].dtype);
  if (in[0].dtype != in[1].dtype && (is_narrow(in[0].dtype) || is_narrow(in[1].dtype)))
    fail(std::string("dot_general of ") + dtype_word(in[0].dtype) + " and " +
         dtype_word(in[1].dtype) + " is not supported");
  if (compute == DType::kBool) fail("dot_general does not accept dtype bool");
  const DType dtype = out_dtype(eqn, compute);
  if (dtype == DType::kBool) fail("dot_general preferred_element_type bool is not supported");
  const DotDims d = dot_dims(eqn, in[0].shape, in[1].shape);
  Shape out = pick(in[0].shape, d.lb);
  for (std::size_t s : pick(in[0].shape, d.lf)) out.push_back(s);
  for (std::size_t s : pick(in[1].shape, d.rf)) out.push_back(s);
  return {make_type(dtype, std::move(out))};
}

std::vector<std::size_t> cat(std::initializer_list<const std::vector<std::size_t>*> parts) {
  std::vector<std::size_t> v;
  for (const auto* p : parts) v.insert(v.end(), p->begin(), p->end());
  return v;
}

bool is_identity(const std::vector<std::size_t>& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != i) return false;
  return true;
}

// x's elements in the order of its axes `perm` (a transposed copy).
std::vector<float> permuted(const Tensor& x, const std::vector<std::size_t>& perm) {
  const std::vector<I64> xs = strides_of(x.shape);
  Shape shape;
  std::vector<I64> src;
  for (std::size_t p : perm) {
    shape.push_back(x.shape[p]);
    src.push_back(xs[p]);
  }
  std::vector<float> out(x.size());
  copy_strided(shape, x.data.data(), src, out.data(), strides_of(shape));
  return out;
}

std::size_t prod(const Shape& s) { return shape_size(s); }

std::vector<Value> dot_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                            PrimContext&) {
  const Tensor& l = in[0]->t;
  const Tensor& r = in[1]->t;
  const DotDims d = dot_dims(eqn, l.shape, r.shape);
  const std::size_t nb = prod(pick(l.shape, d.lb)), m = prod(pick(l.shape, d.lf)),
                    k = prod(pick(l.shape, d.lc)), n = prod(pick(r.shape, d.rf));
  Shape shape = pick(l.shape, d.lb);
  for (std::size_t s : pick(l.shape, d.lf)) shape.push_back(s);
  for (std::size_t s : pick(r.shape, d.rf)) shape.push_back(s);
  // bf16 and f16 as XLA:CPU computes them: operands converted to f32, the f32 product, converted
  // to the result's dtype once after (the evaluator's fit, ops/narrow_dtypes.cpp).
  const bool fl = is_float(compute_dtype(in[0]->dtype, in[1]->dtype));
  Value out(out_dtype(eqn, compute_dtype(in[0]->dtype, in[1]->dtype)), Tensor(shape));
  if (nb * m * n == 0)
    return [&] {
      std::vector<Value> v;
      v.push_back(std::move(out));
      return v;
    }();

  // lhs as batch x M x K, or batch x K x M read transposed; rhs as batch x K x N, or batch x N x K
  // read transposed.
  const std::vector<std::size_t> l_mk = cat({&d.lb, &d.lf, &d.lc}),
                                 l_km = cat({&d.lb, &d.lc, &d.lf});
  const std::vector<std::size_t> r_kn = cat({&d.rb, &d.rc, &d.rf}),
                                 r_nk = cat({&d.rb, &d.rf, &d.rc});
  std::vector<float> lbuf, rbuf;
  const float* a = l.data.data();
  bool a_t = false;
  if (is_identity(l_km) && !is_identity(l_mk) && fl) {
    a_t = true;
  } else if (!is_identity(l_mk)) {
    lbuf = permuted(l, l_mk);
    a = lbuf.data();
  }
  const float* b = r.data.data();
  bool b_t = false;
  if (is_identity(r_nk) && !is_identity(r_kn) && fl) {
    b_t = true;  // x @ w.T: w's rows are op(B)'s columns, packed by the gemm as it goes
  } else if (!is_identity(r_kn)) {
    rbuf = permuted(r, r_kn);
    b = rbuf.data();
  }
  float* c = out.t.data.data();
  if (fl) {
    if (k > 0) {
      for (std::size_t i = 0; i < nb; ++i)
        gemm(Gemm::dense(a + i * m * k, b + i * k * n, c + i * m * n, m, k, n, a_t, b_t));
    }
    // preferred_element_type int32 on float32 operands: JAX computes the float32 product and
    // converts it, truncating toward zero (93.5 -> 93), as convert_element_type does.
    if (out.dtype == DType::kI32) {
      for (float& v : out.t.data) v = f32_to_i32(v, eqn);
    }
  } else {
    // i8 ... u16 (issue #49, dtypes2): the exact sum wrapped into the result's dtype (XLA's
    // integer dot wraps), or an int32 / float32 result of preferred_element_type as int32's.
    float (*wrap)(I64) = is_narrow(out.dtype) ? dtype_info(out.dtype).wrap : nullptr;
    for (std::size_t i = 0; i < nb; ++i) {
      for (std::size_t p = 0; p < m; ++p) {
        for (std::size_t q = 0; q < n; ++q) {
          I64 acc = 0;
          for (std::size_t t = 0; t < k; ++t)
            acc +=
                static_cast<I64>(a[(i * m + p) * k + t]) * static_cast<I64>(b[(i * k + t) * n + q]);
          c[(i * m + p) * n + q] = wrap != nullptr ? wrap(acc) : int_result(acc, eqn);
        }
      }
    }
  }
  std::vector<Value> v;
  v.push_back(std::move(out));
  return v;
}

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

// 2 x multiply-adds: every output element times the contracted extent (infer checked the params:
// the contracting axes are axes of the lhs).
std::uint64_t dot_flops(const Eqn& eqn, std::span<const ValueType> ops,
                        std::span<const ValueType> outs) {
  if (ops.size() != 2 || outs.size() != 1) return 0;
  std::uint64_t out = 1;
  for (std::size_t d : outs[0].shape) out = sat_mul(out, d);
  std::uint64_t contracted = 1;
  const auto c = eqn.params.find("contracting");
  if (c != eqn.params.end() && c->is_array() && !c->empty() && (*c)[0].is_array()) {
    for (const auto& d : (*c)[0]) {
      if (d.is_number_unsigned() && d.get<std::size_t>() < ops[0].shape.size())
        contracted = sat_mul(contracted, ops[0].shape[d.get<std::size_t>()]);
    }
  }
  return sat_mul(2, sat_mul(out, contracted));
}

constexpr Primitive dot_general() {
  Primitive p{&dot_infer, &dot_eval};
  p.flops = &dot_flops;
  return p;
}

}  // namespace

std::span<const Entry> dot_entries() {
  static const Entry kEntries[] = {{"dot_general", dot_general()}};
  return kEntries;
}

}  // namespace meshrun::interp::prim
