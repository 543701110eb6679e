// The primitives that move elements without computing on them: broadcast_in_dim, reshape,
// squeeze, expand_dims, transpose, iota, concatenate (slices and pad: slicing.cpp). Each is one
// strided copy (prim::copy_strided); a reshape of an owned operand keeps its buffer.
#include <algorithm>
#include <cstdint>
#include <string>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

using I64 = std::int64_t;

// ---- broadcast_in_dim ----

Types broadcast_in_dim_infer(const Eqn& eqn, std::span<const ValueType> in,
                             const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  Shape shape = param_shape(eqn, "shape", ctx);
  const std::vector<I64> dims = param_ints(eqn, "broadcast_dimensions");
  const Shape& op = in[0].shape;
  if (dims.size() != op.size()) {
    fail(
        "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; got "
        "broadcast_dimensions " +
        ints_str(dims) + " for operand ndim " + std::to_string(op.size()));
  }
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::size_t d = checked_axis(eqn, "broadcast_dimensions", dims[i], shape.size());
    if (i > 0 && dims[i] <= dims[i - 1]) {
      fail("broadcast_in_dim broadcast_dimensions must be strictly increasing; got " +
           ints_str(dims));
    }
    if (op[i] != 1 && op[i] != shape[d]) {
      fail(
          "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
          "corresponding dimensions in the target broadcast shape; got operand of shape " +
          dims_str(op) + ", target broadcast shape " + dims_str(shape) + ", broadcast_dimensions " +
          ints_str(dims));
    }
  }
  return {make_type(in[0].dtype, std::move(shape))};
}

Values broadcast_in_dim_eval(const Eqn& eqn, std::span<Value* const> in,
                             std::span<const bool> owned, PrimContext& ctx) {
  const Shape shape = param_shape(eqn, "shape", ctx);
  const std::vector<I64> dims = param_ints(eqn, "broadcast_dimensions");
  Value& x = *in[0];
  if (x.t.size() == shape_size(shape)) {  // only 1s added: the same elements in the same order
    Value out = pass_through(in[0], owned[0]);
    out.t.shape = shape;
    return one(std::move(out));
  }
  const std::vector<I64> xs = strides_of(x.t.shape);
  std::vector<I64> src(shape.size(), 0);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (x.t.shape[i] != 1) src[static_cast<std::size_t>(dims[i])] = xs[i];
  Value out(x.dtype, Tensor(shape));
  copy_strided(shape, x.t.data.data(), src, out.t.data.data(), strides_of(shape));
  return one(std::move(out));
}

// ---- reshape, squeeze, expand_dims: the same elements under another shape ----

Types reshape_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  if (eqn.params.is_object() && eqn.params.contains("dimensions") &&
      !eqn.params["dimensions"].is_null())
    fail("reshape with a 'dimensions' permutation is not supported");
  ValueType t = make_type(in[0].dtype, param_shape(eqn, "new_sizes", ctx));
  if (shape_size(t.shape) != shape_size(in[0].shape)) {
    fail("reshape total size must be unchanged, got new_sizes " + dims_str(t.shape) +
         " for shape " + dims_str(in[0].shape));
  }
  return {t};
}

Shape squeezed(const Eqn& eqn, const Shape& op) {
  const std::vector<std::size_t> axes = param_axis_list(eqn, "dimensions", op.size());
  Shape out;
  for (std::size_t i = 0; i < op.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      out.push_back(op[i]);
    } else if (op[i] != 1) {
      fail("cannot select an axis to squeeze out which has size not equal to one, got shape=" +
           dims_str(op) + " and dimensions=" + ints_str(param_ints(eqn, "dimensions")));
    }
  }
  return out;
}

Types squeeze_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  return {{in[0].dtype, squeezed(eqn, in[0].shape)}};
}

Shape expanded(const Eqn& eqn, const Shape& op) {
  const std::size_t rank = op.size() + param_ints(eqn, "dimensions").size();
  const std::vector<std::size_t> axes = param_axis_list(eqn, "dimensions", rank);
  Shape out;
  std::size_t next = 0;
  for (std::size_t i = 0; i < rank; ++i) {
    const bool added = std::find(axes.begin(), axes.end(), i) != axes.end();
    out.push_back(added ? 1 : op[next++]);
  }
  return out;
}

Types expand_dims_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  return {{in[0].dtype, expanded(eqn, in[0].shape)}};
}

Values relabel(Value* in, bool owned, Shape shape) {
  Value out = pass_through(in, owned);
  out.t.shape = std::move(shape);
  return one(std::move(out));
}

Values reshape_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                    PrimContext& ctx) {
  return relabel(in[0], owned[0], param_shape(eqn, "new_sizes", ctx));
}
Values squeeze_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                    PrimContext&) {
  return relabel(in[0], owned[0], squeezed(eqn, in[0]->t.shape));
}
Values expand_dims_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                        PrimContext&) {
  return relabel(in[0], owned[0], expanded(eqn, in[0]->t.shape));
}

// ---- transpose ----

std::vector<std::size_t> permutation(const Eqn& eqn, std::size_t rank) {
  const std::vector<std::size_t> perm = param_axis_list(eqn, "permutation", rank);
  if (perm.size() != rank) {
    fail("transpose permutation isn't a permutation of operand dimensions, got permutation " +
         ints_str(param_ints(eqn, "permutation")) + " for operand of rank " + std::to_string(rank));
  }
  return perm;
}

Types transpose_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  const std::vector<std::size_t> perm = permutation(eqn, in[0].shape.size());
  Shape out;
  for (std::size_t p : perm) out.push_back(in[0].shape[p]);
  return {{in[0].dtype, out}};
}

Values transpose_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                      PrimContext&) {
  const Value& x = *in[0];
  const std::vector<std::size_t> perm = permutation(eqn, x.t.rank());
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == i;
  if (identity) return one(pass_through(in[0], owned[0]));
  const std::vector<I64> xs = strides_of(x.t.shape);
  Shape shape;
  std::vector<I64> src;
  for (std::size_t p : perm) {
    shape.push_back(x.t.shape[p]);
    src.push_back(xs[p]);
  }
  Value out(x.dtype, Tensor(shape));
  copy_strided(shape, x.t.data.data(), src, out.t.data.data(), strides_of(shape));
  return one(std::move(out));
}

// ---- iota ----

Types iota_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 0);
  const DType dtype = param_dtype(eqn, "dtype");
  if (dtype == DType::kBool) fail("iota does not accept dtype bool");
  ValueType t = make_type(dtype, param_shape(eqn, "shape", ctx));
  const std::size_t d = checked_axis(eqn, "dimension", param_int(eqn, "dimension"), t.shape.size());
  if (t.shape[d] > static_cast<std::size_t>(kMaxInt))
    fail("iota of " + std::to_string(t.shape[d]) + " values: beyond 2^24");
  return {t};
}

Values iota_eval(const Eqn& eqn, std::span<Value* const>, std::span<const bool>, PrimContext& ctx) {
  const DType dtype = param_dtype(eqn, "dtype");
  const Shape shape = param_shape(eqn, "shape", ctx);
  const auto d = static_cast<std::size_t>(param_int(eqn, "dimension"));
  Value out(dtype, Tensor(shape));
  const std::vector<I64> st = strides_of(shape);
  const auto stride = static_cast<std::size_t>(st[d]);
  for (std::size_t i = 0; i < out.t.size(); ++i)
    out.t.data[i] = static_cast<float>((i / stride) % shape[d]);
  return one(std::move(out));
}

// ---- concatenate ----

Types concatenate_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1, true);
  const std::size_t d =
      checked_axis(eqn, "dimension", param_int(eqn, "dimension"), in[0].shape.size());
  Shape out = in[0].shape;
  out[d] = 0;
  for (const ValueType& t : in) {
    if (t.dtype != in[0].dtype) {
      fail(std::string("concatenate requires arguments to have the same dtypes, got ") +
           dtype_word(in[0].dtype) + ", " + dtype_word(t.dtype));
    }
    bool ok = t.shape.size() == out.size();
    for (std::size_t i = 0; ok && i < out.size(); ++i) ok = i == d || t.shape[i] == out[i];
    if (!ok) {
      fail("concatenate operands must have the same shape except on the dimension " +
           std::to_string(d) + ", got " + dims_str(in[0].shape) + " and " + dims_str(t.shape));
    }
    out[d] = static_cast<std::size_t>(
        checked_add(static_cast<I64>(out[d]), static_cast<I64>(t.shape[d]),
                    "concatenate: the size of dimension " + std::to_string(d)));
  }
  return {make_type(in[0].dtype, std::move(out))};
}

Values concatenate_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                        PrimContext&) {
  const auto d = static_cast<std::size_t>(param_int(eqn, "dimension"));
  Shape shape = in[0]->t.shape;
  shape[d] = 0;
  for (const Value* v : in) shape[d] += v->t.shape[d];
  Value out(in[0]->dtype, Tensor(shape));
  const std::vector<I64> os = strides_of(shape);
  I64 offset = 0;
  for (const Value* v : in) {
    copy_strided(v->t.shape, v->t.data.data(), strides_of(v->t.shape),
                 out.t.data.data() + offset * os[d], os);
    offset += static_cast<I64>(v->t.shape[d]);
  }
  return one(std::move(out));
}

// ---- split: concatenate's inverse (its transpose under jax.grad from JAX 0.4.36) ----

Types split_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  const std::size_t d = checked_axis(eqn, "axis", param_int(eqn, "axis"), in[0].shape.size());
  const Shape sizes = param_shape(eqn, "sizes", ctx);
  I64 total = 0;
  for (const std::size_t n : sizes)
    total = checked_add(total, static_cast<I64>(n), "split: the sum of 'sizes'");
  if (sizes.empty() || total != static_cast<I64>(in[0].shape[d])) {
    fail("split sizes must add up to the operand's dimension " + std::to_string(d) + " (" +
         std::to_string(in[0].shape[d]) + "), got sizes " + dims_str(sizes) + " for operand " +
         type_str(in[0]));
  }
  Types out;
  for (const std::size_t n : sizes) {
    Shape shape = in[0].shape;
    shape[d] = n;
    out.push_back(make_type(in[0].dtype, std::move(shape)));
  }
  return out;
}

Values split_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                  PrimContext& ctx) {
  const Value& x = *in[0];
  const auto d = static_cast<std::size_t>(param_int(eqn, "axis"));
  const Shape sizes = param_shape(eqn, "sizes", ctx);
  const std::vector<I64> xs = strides_of(x.t.shape);
  Values out;
  I64 offset = 0;
  for (const std::size_t n : sizes) {
    Shape shape = x.t.shape;
    shape[d] = n;
    Value part(x.dtype, Tensor(shape));
    copy_strided(shape, x.t.data.data() + offset * xs[d], xs, part.t.data.data(),
                 strides_of(shape));
    offset += static_cast<I64>(n);
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace

std::span<const Entry> shape_entries() {
  static const Entry kEntries[] = {
      {"broadcast_in_dim", {&broadcast_in_dim_infer, &broadcast_in_dim_eval}},
      {"reshape", {&reshape_infer, &reshape_eval}},
      {"squeeze", {&squeeze_infer, &squeeze_eval}},
      {"expand_dims", {&expand_dims_infer, &expand_dims_eval}},
      {"transpose", {&transpose_infer, &transpose_eval}},
      {"iota", {&iota_infer, &iota_eval}},
      {"concatenate", {&concatenate_infer, &concatenate_eval}},
      {"split", {&split_infer, &split_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
