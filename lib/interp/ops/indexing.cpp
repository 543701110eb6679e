// Indexing with JAX's semantics: `gather` (x[i], jnp.take, take_along_axis, an embedding lookup
// W[ids]) and `scatter`, `scatter-add`, `scatter-sub`, `scatter-mul`, `scatter-min`,
// `scatter-max` (x.at[i].set / add / subtract / multiply / min / max, and gather's transpose
// under jax.grad), with XLA's dimension numbers in full (batching dims included), as JAX 0.10.2
// lowers them for the CPU:
//
//   gather   for each index vector (the indices' last axis, JAX's index_vector_dim), its slice
//            of the operand. Modes clip and promise_in_bounds: each start clamped into
//            [0, dim - slice size] (XLA's gather clamps). Mode fill: a slice any start of which
//            is outside that range is fill_value throughout (JAX's _gather_fill: NaN, int32's
//            -2^31 or true by default).
//   scatter  for each index vector in row-major order, one after another (XLA:CPU's
//            ScatterExpander loop, so a repeated index adds in index order: bit for bit), the
//            window of updates combined into the operand. Mode clip: starts clamped as for
//            gather (JAX's _clamp_scatter_indices). Modes fill and promise_in_bounds: a window
//            any start of which is outside the range is dropped whole (XLA's scatter).
//
// No index is ever used before it is checked: every read and write is inside the arrays
// whatever the indices hold. infer checks every param as JAX's shape rules do (the same
// wording), so a bad file is exit 2 before anything runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "interp/contract.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

using I64 = std::int64_t;

enum class Mode : std::uint8_t { kClip, kFill, kPromise };

Mode read_mode(const Eqn& eqn) {
  if (!eqn.params.is_object() || !eqn.params.contains("mode")) fail("param 'mode' missing");
  const nlohmann::json& m = eqn.params["mode"];
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    if (s == "clip") return Mode::kClip;
    if (s == "fill" || s == "drop") return Mode::kFill;
    if (s == "promise_in_bounds") return Mode::kPromise;
    // JAX's GatherScatterMode.ONE_HOT: a scatter lowers it as XLA's plain scatter (only clip
    // clamps first), which drops an out-of-bounds window, as promise_in_bounds; a gather of it
    // JAX 0.10.2 cannot lower (an assertion in _gather_lower), so neither is it run here.
    if (s == "one_hot" && eqn.primitive != "gather") return Mode::kPromise;
    if (s == "one_hot")
      fail(
          "gather with mode \"one_hot\": JAX 0.10.2 cannot lower it either (jnp.take_along_axis's "
          "one_hot mode is a one-hot matmul, which runs)");
  }
  fail(eqn.primitive +
       " param 'mode' must be \"clip\", \"fill\", \"promise_in_bounds\" or (a scatter) "
       "\"one_hot\", got " +
       m.dump().substr(0, 40));
}

// An optional list of axis numbers (the batching dims, absent in a hand-written file).
std::vector<I64> ints_or_empty(const Eqn& eqn, const char* key) {
  if (!eqn.params.is_object() || !eqn.params.contains(key) || eqn.params[key].is_null()) return {};
  return param_ints(eqn, key);
}

// JAX's checks of a list of dims (lax/slicing.py), with its wording.
void is_sorted(const Eqn& eqn, const std::vector<I64>& d, const char* name) {
  for (std::size_t i = 1; i < d.size(); ++i)
    if (d[i] < d[i - 1])
      fail(std::string(name) + " in " + eqn.primitive + " op must be sorted; got " + ints_str(d));
}
void no_duplicates(const Eqn& eqn, const std::vector<I64>& d, const char* name) {
  for (std::size_t i = 0; i < d.size(); ++i)
    for (std::size_t j = i + 1; j < d.size(); ++j)
      if (d[i] == d[j])
        fail(std::string(name) + " in " + eqn.primitive +
             " op must not repeat; got: " + ints_str(d) + ".");
}
void in_range(const Eqn& eqn, const std::vector<I64>& d, std::size_t rank, const char* name) {
  for (I64 v : d)
    if (v < 0 || static_cast<std::uint64_t>(v) >= rank)
      fail("Invalid " + std::string(name) + " set in " + eqn.primitive +
           " op; valid range is [0, " + std::to_string(rank) + "); got: " + std::to_string(v) +
           ".");
}
void disjoint(const Eqn& eqn, const std::vector<I64>& a, const std::vector<I64>& b, const char* na,
              const char* nb) {
  for (I64 x : a)
    if (std::find(b.begin(), b.end(), x) != b.end())
      fail(std::string(na) + " and " + nb + " in " + eqn.primitive +
           " op must be disjoint; got: " + ints_str(a) + " and " + ints_str(b) + ".");
}
bool has(const std::vector<I64>& d, std::size_t v) {
  return std::find(d.begin(), d.end(), static_cast<I64>(v)) != d.end();
}
std::vector<I64> dims_of(const Shape& s, const std::vector<I64>& which) {
  std::vector<I64> r;
  for (I64 w : which) r.push_back(static_cast<I64>(s[static_cast<std::size_t>(w)]));
  return r;
}

void check_indices_type(const Eqn& eqn, const ValueType& t) {
  if (t.dtype != DType::kI32)
    fail(eqn.primitive + " indices must be int32 (the integer dtype meshrun holds), got " +
         type_str(t));
  if (t.shape.empty())
    fail(eqn.primitive +
         " indices must have rank >= 1 (their last axis is the index vector), got " + type_str(t));
}

// An index as the float it is held in, as an int64 of the same value (NaN, which an int32 never
// is, as 0; magnitudes beyond 2^40 as 2^40: out of bounds of every array either way).
inline I64 index_value(float f) {
  if (!(f == f)) return 0;
  constexpr float kBig = 1099511627776.0f;  // 2^40
  return static_cast<I64>(std::clamp(f, -kBig, kBig));
}

// For every run of the last dimension of `shape` (row-major over the others): row(o . a, o . b)
// at the run's first index o.
template <class Row>
void for_rows(const std::vector<I64>& shape, const std::vector<I64>& a, const std::vector<I64>& b,
              Row row) {
  const std::size_t rank = shape.size();
  for (I64 d : shape)
    if (d == 0) return;
  if (rank <= 1) {
    row(I64{0}, I64{0});
    return;
  }
  std::vector<I64> idx(rank - 1, 0);
  I64 oa = 0, ob = 0;
  for (;;) {
    row(oa, ob);
    std::size_t k = rank - 1;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < shape[k]) {
        oa += a[k];
        ob += b[k];
        break;
      }
      oa -= a[k] * (idx[k] - 1);
      ob -= b[k] * (idx[k] - 1);
      idx[k] = 0;
    }
  }
}

// For every index over `shape` (row-major): f(i . a, i . b).
template <class F>
void for_box(const std::vector<I64>& shape, const std::vector<I64>& a, const std::vector<I64>& b,
             F f) {
  if (shape.empty()) {
    f(I64{0}, I64{0});
    return;
  }
  const I64 n = shape.back(), sa = a.back(), sb = b.back();
  for_rows(shape, a, b, [&](I64 oa, I64 ob) {
    for (I64 k = 0; k < n; ++k) f(oa + k * sa, ob + k * sb);
  });
}

// The walk over the index vectors of `indices` (all axes but the last), in row-major order:
// calls f(n, coords) with n the vector's number (its row in the indices' data) and coords its
// coordinates; `strides[i]` advance an offset the caller tracks per coordinate (returned in
// `offset`).
template <class F>
void for_vectors(const Shape& indices, const std::vector<I64>& strides, F f) {
  const std::size_t q = indices.size() - 1;
  I64 count = 1;
  for (std::size_t i = 0; i < q; ++i) count *= static_cast<I64>(indices[i]);
  if (count == 0) return;
  std::vector<I64> coord(q, 0);
  I64 offset = 0;
  for (I64 n = 0; n < count; ++n) {
    f(n, coord, offset);
    for (std::size_t k = q; k-- > 0;) {
      if (++coord[k] < static_cast<I64>(indices[k])) {
        offset += strides[k];
        break;
      }
      offset -= strides[k] * (coord[k] - 1);
      coord[k] = 0;
    }
  }
}

// ---- gather ----

struct GatherSpec {
  std::vector<I64> offset_dims, collapsed, start_index_map, operand_batching, indices_batching;
  Shape slice;
  Mode mode = Mode::kFill;
  Shape out;
};

GatherSpec gather_spec(const Eqn& eqn, const ValueType& op, const ValueType& idx,
                       const PrimContext& ctx) {
  check_indices_type(eqn, idx);
  GatherSpec s;
  s.offset_dims = param_ints(eqn, "offset_dims");
  s.collapsed = param_ints(eqn, "collapsed_slice_dims");
  s.start_index_map = param_ints(eqn, "start_index_map");
  s.operand_batching = ints_or_empty(eqn, "operand_batching_dims");
  s.indices_batching = ints_or_empty(eqn, "start_indices_batching_dims");
  s.slice = param_shape(eqn, "slice_sizes", ctx);
  s.mode = read_mode(eqn);
  param_bool(eqn, "indices_are_sorted", false);  // hints: the value is the same either way
  param_bool(eqn, "unique_indices", false);
  const std::size_t rank = op.shape.size(), q = idx.shape.size();
  const std::size_t ivd = q - 1;  // JAX's index_vector_dim
  const std::size_t out_rank = s.offset_dims.size() + q - 1;

  is_sorted(eqn, s.offset_dims, "offset_dims");
  no_duplicates(eqn, s.offset_dims, "offset_dims");
  for (std::size_t i = 0; i < s.offset_dims.size(); ++i) {
    const I64 d = s.offset_dims[i];
    if (d < 0 || static_cast<std::uint64_t>(d) >= out_rank)
      fail("Offset dimension " + std::to_string(i) + " in gather op is out of bounds; got " +
           std::to_string(d) + ", but should have been in [0, " + std::to_string(out_rank) + ")");
  }
  if (s.start_index_map.size() != idx.shape[ivd])
    fail("Gather op has " + std::to_string(s.start_index_map.size()) +
         " elements in start_index_map and the bound of dimension index_vector_dim=" +
         std::to_string(ivd) + " of indices is " + std::to_string(idx.shape[ivd]) +
         ". These two numbers must be equal.");
  for (std::size_t i = 0; i < s.start_index_map.size(); ++i) {
    const I64 d = s.start_index_map[i];
    if (d < 0 || static_cast<std::uint64_t>(d) >= rank)
      fail("Invalid start_index_map; domain is [0, " + std::to_string(rank) +
           "), got: " + std::to_string(i) + "->" + std::to_string(d) + ".");
  }
  no_duplicates(eqn, s.start_index_map, "start_index_map");
  is_sorted(eqn, s.collapsed, "collapsed_slice_dims");
  in_range(eqn, s.collapsed, rank, "collapsed_slice_dims");
  no_duplicates(eqn, s.collapsed, "collapsed_slice_dims");
  no_duplicates(eqn, s.operand_batching, "operand_batching_dims");
  is_sorted(eqn, s.operand_batching, "operand_batching_dims");
  in_range(eqn, s.operand_batching, rank, "operand_batching_dims");
  disjoint(eqn, s.collapsed, s.operand_batching, "collapsed_slice_dims", "operand_batching_dims");
  disjoint(eqn, s.start_index_map, s.operand_batching, "start_index_map", "operand_batching_dims");
  no_duplicates(eqn, s.indices_batching, "start_indices_batching_dims");
  in_range(eqn, s.indices_batching, q, "start_indices_batching_dims");
  if (has(s.indices_batching, ivd))
    fail("Gather op cannot have the index vector dimension as a batching dimension; got " +
         ints_str(s.indices_batching) + ".");
  if (s.operand_batching.size() != s.indices_batching.size())
    fail(
        "Gather op requires equal numbers of operand_batching_dims and "
        "start_indices_batching_dims, got " +
        ints_str(s.operand_batching) + " and " + ints_str(s.indices_batching) + ".");
  if (dims_of(op.shape, s.operand_batching) != dims_of(idx.shape, s.indices_batching))
    fail(
        "Gather op requires operand batching dimensions and indices batching dimensions to have "
        "the same shape, got " +
        ints_str(dims_of(op.shape, s.operand_batching)) + " and " +
        ints_str(dims_of(idx.shape, s.indices_batching)) + ".");
  if (s.slice.size() != rank)
    fail(
        "Gather op must have one slice size for every input dimension; got: "
        "len(slice_sizes)=" +
        std::to_string(s.slice.size()) + ", input_shape.rank=" + std::to_string(rank));
  if (rank != s.offset_dims.size() + s.collapsed.size() + s.operand_batching.size())
    fail(
        "All components of the offset index in a gather op must either be a offset dimension "
        "or explicitly collapsed/batching; got len(slice_sizes)=" +
        std::to_string(rank) + ", output_slice_sizes=" + ints_str(s.offset_dims) +
        ", collapsed_slice_dims=" + ints_str(s.collapsed) +
        ", operand_batching_dims=" + ints_str(s.operand_batching) + ".");
  // JAX skips this check when the indices are empty; with index vectors of length 0 there are
  // still slices to take (i32[3, 0]), which XLA refuses: only no index vector at all skips it.
  const bool no_indices = shape_size(Shape(idx.shape.begin(), idx.shape.end() - 1)) == 0;
  for (std::size_t i = 0; i < rank; ++i)
    if (!no_indices && s.slice[i] > op.shape[i])
      fail("Slice size at index " + std::to_string(i) +
           " in gather op is out of range, must be within [0, " + std::to_string(op.shape[i]) +
           " + 1), got " + std::to_string(s.slice[i]) + ".");
  for (std::size_t i = 0; i < s.collapsed.size(); ++i) {
    const std::size_t b = s.slice[static_cast<std::size_t>(s.collapsed[i])];
    if (b != 1)
      fail("Gather op can only collapse slice dims with bound 1, but bound is " +
           std::to_string(b) + " for index " + std::to_string(s.collapsed[i]) + " at position " +
           std::to_string(i) + ".");
  }
  for (std::size_t i = 0; i < s.operand_batching.size(); ++i) {
    const std::size_t b = s.slice[static_cast<std::size_t>(s.operand_batching[i])];
    if (b > 1)
      fail("Gather op can only have operand batching dims with bound 0/1, but bound is " +
           std::to_string(b) + " for index " + std::to_string(s.operand_batching[i]) +
           " at position " + std::to_string(i) + ".");
  }
  // The output: offset dims take the slice sizes of the window dims, in order; the others the
  // indices' batch dims, in order.
  std::size_t next_idx = 0, next_win = 0;
  std::vector<std::size_t> win;
  for (std::size_t d = 0; d < rank; ++d)
    if (!has(s.collapsed, d) && !has(s.operand_batching, d)) win.push_back(d);
  for (std::size_t i = 0; i < out_rank; ++i) {
    if (has(s.offset_dims, i)) {
      s.out.push_back(s.slice[win[next_win++]]);
    } else {
      s.out.push_back(idx.shape[next_idx++]);
    }
  }
  s.out = make_type(op.dtype, s.out).shape;
  // A batching dim of slice size 0 keeps no element of the operand but drops none from the
  // output: XLA leaves such a gather unspecified; meshrun refuses it.
  if (shape_size(s.out) > 0)
    for (I64 b : s.operand_batching)
      if (s.slice[static_cast<std::size_t>(b)] == 0)
        fail("gather with slice size 0 on operand batching dimension " + std::to_string(b) +
             " and a non-empty output is not supported");
  return s;
}

// The fill of mode fill: the param, or JAX's default for the dtype (NaN, int32's minimum, true).
float fill_value(const Eqn& eqn, DType dtype) {
  const nlohmann::json* v = nullptr;
  if (eqn.params.is_object() && eqn.params.contains("fill_value") &&
      !eqn.params["fill_value"].is_null())
    v = &eqn.params["fill_value"];
  switch (dtype) {
    case DType::kF32:
      if (v == nullptr) return std::numeric_limits<float>::quiet_NaN();
      if (v->is_number()) return static_cast<float>(v->get<double>());
      if (v->is_string()) {
        const std::string s = v->get<std::string>();
        if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<float>::infinity();
        if (s == "-inf") return -std::numeric_limits<float>::infinity();
      }
      break;
    case DType::kI32:
      if (v == nullptr) return -2147483648.0f;
      if (v->is_number_integer()) {
        const double d = v->get<double>();
        if (d >= -2147483648.0 && d <= 2147483647.0) return static_cast<float>(d);
      }
      break;
    case DType::kBool:
      if (v == nullptr) return 1.0f;
      if (v->is_boolean()) return v->get<bool>() ? 1.0f : 0.0f;
      break;
    default: {
      // bf16 ... u16 (issue #49): JAX's _gather_fill -- NaN for bf16 and f16, the lowest value
      // of a signed dtype, the highest of an unsigned one; a given fill must be a value of it.
      const DTypeInfo& d = dtype_info(dtype);
      if (v == nullptr) {
        if (d.kind == DKind::kFloat) return std::numeric_limits<float>::quiet_NaN();
        return d.kind == DKind::kSigned ? -std::ldexp(1.0f, d.bits - 1)
                                        : std::ldexp(1.0f, d.bits) - 1.0f;
      }
      if (d.kind == DKind::kFloat && v->is_string()) {
        const std::string s = v->get<std::string>();
        if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<float>::infinity();
        if (s == "-inf") return -std::numeric_limits<float>::infinity();
      }
      if (v->is_number() && holds_value(dtype, v->get<double>()))
        return static_cast<float>(v->get<double>());
      break;
    }
  }
  fail("gather param 'fill_value' must be null or a " + std::string(dtype_word(dtype)) +
       " scalar (float32: a number, \"nan\", \"inf\" or \"-inf\"), got " + v->dump().substr(0, 40));
}

Types gather_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 2);
  const GatherSpec s = gather_spec(eqn, in[0], in[1], ctx);
  fill_value(eqn, in[0].dtype);
  return {{in[0].dtype, s.out}};
}

Values gather_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                   PrimContext& ctx) {
  const Value& op = *in[0];
  const Value& idx = *in[1];
  const GatherSpec s = gather_spec(eqn, op.type(), idx.type(), ctx);
  Value out(op.dtype, Tensor(s.out));
  if (out.t.data.empty()) return one(std::move(out));
  const std::vector<I64> os = strides_of(op.t.shape), rs = strides_of(s.out);
  const std::size_t rank = op.t.shape.size();
  // The window: the operand dims neither collapsed nor batching, in order, each written along
  // the offset dim of its rank among them.
  std::vector<I64> wshape, wsrc, wdst;
  for (std::size_t d = 0, j = 0; d < rank; ++d) {
    if (has(s.collapsed, d) || has(s.operand_batching, d)) continue;
    wshape.push_back(static_cast<I64>(s.slice[d]));
    wsrc.push_back(os[d]);
    wdst.push_back(rs[static_cast<std::size_t>(s.offset_dims[j++])]);
  }
  Shape wshape_u(wshape.begin(), wshape.end());
  const I64 wsize = static_cast<I64>(shape_size(wshape_u));
  if (wsize == 0) return one(std::move(out));
  // The output dims that are not offset dims: the indices' batch dims, in order.
  std::vector<I64> bstride;
  for (std::size_t i = 0; i < s.out.size(); ++i)
    if (!has(s.offset_dims, i)) bstride.push_back(rs[i]);
  const std::size_t k_len = s.start_index_map.size();
  std::vector<I64> hi(k_len), kstride(k_len);
  for (std::size_t k = 0; k < k_len; ++k) {
    const auto m = static_cast<std::size_t>(s.start_index_map[k]);
    hi[k] = static_cast<I64>(op.t.shape[m]) - static_cast<I64>(s.slice[m]);
    kstride[k] = os[m];
  }
  std::vector<I64> bat_coord, bat_stride;
  for (std::size_t i = 0; i < s.operand_batching.size(); ++i) {
    bat_coord.push_back(s.indices_batching[i]);
    bat_stride.push_back(os[static_cast<std::size_t>(s.operand_batching[i])]);
  }
  const float fill = s.mode == Mode::kFill ? fill_value(eqn, op.dtype) : 0.0f;
  bool filled_beyond = false;
  const float* x = op.t.data.data();
  const float* ix = idx.t.data.data();
  float* o = out.t.data.data();
  if (wsize == 1 && k_len == 1 && bat_coord.empty()) {
    // x[i], jnp.take, an index per element: output element n is index vector n's. A loop of
    // independent loads the CPU overlaps (the general walk below keeps few misses in flight).
    const auto count = static_cast<I64>(out.t.data.size());
    const I64 h = hi[0], st = kstride[0];
    if (s.mode == Mode::kFill) {
      for (I64 n = 0; n < count; ++n) {
        const I64 start = index_value(ix[n]);
        const bool inside = start >= 0 && start <= h;
        filled_beyond = filled_beyond || !inside;
        o[n] = inside ? x[start * st] : fill;
      }
    } else {
      for (I64 n = 0; n < count; ++n)
        o[n] = x[std::min(std::max(index_value(ix[n]), I64{0}), h) * st];
    }
  } else if (wsize == 1) {
    // One element a vector, with several starts or batching dims (take_along_axis): output
    // element n is still vector n's; the batch coordinates advance by an odometer.
    const auto count = static_cast<I64>(out.t.data.size());
    const Shape& ishape = idx.t.shape;
    const std::size_t q1 = ishape.size() - 1;
    std::vector<I64> coord(q1, 0);
    for (I64 n = 0; n < count; ++n) {
      I64 src = 0;
      bool inside = true;
      const float* v = ix + n * static_cast<I64>(k_len);
      for (std::size_t k = 0; k < k_len; ++k) {
        I64 start = index_value(v[k]);
        if (s.mode == Mode::kFill) {
          inside = inside && start >= 0 && start <= hi[k];
        } else {
          start = std::min(std::max(start, I64{0}), hi[k]);
        }
        src += start * kstride[k];
      }
      for (std::size_t i = 0; i < bat_coord.size(); ++i)
        src += coord[static_cast<std::size_t>(bat_coord[i])] * bat_stride[i];
      filled_beyond = filled_beyond || !inside;
      o[n] = inside ? x[src] : fill;
      for (std::size_t k = q1; k-- > 0;) {
        if (++coord[k] < static_cast<I64>(ishape[k])) break;
        coord[k] = 0;
      }
    }
  } else {
    const std::vector<I64> zero(wshape.size(), 0);
    for_vectors(idx.t.shape, bstride, [&](I64 n, const std::vector<I64>& coord, I64 dst) {
      I64 src = 0;
      bool inside = true;
      const float* v = ix + n * static_cast<I64>(k_len);
      for (std::size_t k = 0; k < k_len; ++k) {
        I64 start = index_value(v[k]);
        if (s.mode == Mode::kFill) {
          if (start < 0 || start > hi[k]) inside = false;
        } else {
          start = std::min(std::max(start, I64{0}), hi[k]);
        }
        src += start * kstride[k];
      }
      for (std::size_t i = 0; i < bat_coord.size(); ++i)
        src += coord[static_cast<std::size_t>(bat_coord[i])] * bat_stride[i];
      if (!inside) {
        filled_beyond = true;
        for_box(wshape, wdst, zero, [&](I64 d, I64) { o[dst + d] = fill; });
      } else if (wsize == 1) {
        o[dst] = x[src];
      } else {
        copy_strided(wshape_u, x + src, wsrc, o + dst, wdst);
      }
    });
  }
  if (filled_beyond && op.dtype == DType::kI32 &&
      (fill > static_cast<float>(kMaxInt) || fill < -static_cast<float>(kMaxInt)))
    fail("gather: an index out of bounds in mode fill gives the int32 fill value " +
         std::to_string(static_cast<I64>(fill)) + ", beyond 2^24, which meshrun holds exactly");
  return one(std::move(out));
}

// ---- scatter, scatter-add, scatter-sub, scatter-mul, scatter-min, scatter-max ----

enum class Combine : std::uint8_t { kSet, kAdd, kSub, kMul, kMin, kMax, kApply };

Combine combine_of(const Eqn& eqn) {
  const std::string& p = eqn.primitive;
  if (p == "scatter-add") return Combine::kAdd;
  if (p == "scatter-sub") return Combine::kSub;
  if (p == "scatter-mul") return Combine::kMul;
  if (p == "scatter-min") return Combine::kMin;
  if (p == "scatter-max") return Combine::kMax;
  if (p == "scatter-apply") return Combine::kApply;
  return Combine::kSet;
}

struct ScatterSpec {
  std::vector<I64> window_dims, inserted, to_operand, operand_batching, indices_batching;
  Mode mode = Mode::kFill;
};

ScatterSpec scatter_spec(const Eqn& eqn, const ValueType& op, const ValueType& idx,
                         const ValueType& up) {
  check_indices_type(eqn, idx);
  const Combine c = combine_of(eqn);
  check_dtype(eqn, op.dtype,
              c == Combine::kAdd || c == Combine::kSub || c == Combine::kMul ? kNum : kAny);
  if (up.dtype != op.dtype)
    fail(eqn.primitive + " requires arguments to have the same dtypes, got " +
         dtype_word(op.dtype) + ", " + dtype_word(up.dtype) + ".");
  ScatterSpec s;
  s.window_dims = param_ints(eqn, "update_window_dims");
  s.inserted = param_ints(eqn, "inserted_window_dims");
  s.to_operand = param_ints(eqn, "scatter_dims_to_operand_dims");
  s.operand_batching = ints_or_empty(eqn, "operand_batching_dims");
  s.indices_batching = ints_or_empty(eqn, "scatter_indices_batching_dims");
  s.mode = read_mode(eqn);
  param_bool(eqn, "indices_are_sorted", false);
  param_bool(eqn, "unique_indices", false);
  const std::size_t rank = op.shape.size(), q = idx.shape.size(), urank = up.shape.size();
  const std::size_t ivd = q - 1;
  if (urank != q - 1 + s.window_dims.size())
    fail("Updates tensor must be of rank " + std::to_string(q - 1 + s.window_dims.size()) +
         "; got " + std::to_string(urank) + ".");
  is_sorted(eqn, s.window_dims, "update_window_dims");
  no_duplicates(eqn, s.window_dims, "update_window_dims");
  in_range(eqn, s.window_dims, urank, "update_window_dims");
  is_sorted(eqn, s.inserted, "inserted_window_dims");
  no_duplicates(eqn, s.inserted, "inserted_window_dims");
  in_range(eqn, s.inserted, rank, "inserted_window_dims");
  is_sorted(eqn, s.operand_batching, "operand_batching_dims");
  no_duplicates(eqn, s.operand_batching, "operand_batching_dims");
  in_range(eqn, s.operand_batching, rank, "operand_batching_dims");
  disjoint(eqn, s.inserted, s.operand_batching, "inserted_window_dims", "operand_batching_dims");
  disjoint(eqn, s.to_operand, s.operand_batching, "scatter_dims_to_operand_dims",
           "operand_batching_dims");
  no_duplicates(eqn, s.indices_batching, "scatter_indices_batching_dims");
  in_range(eqn, s.indices_batching, q, "scatter_indices_batching_dims");
  if (has(s.indices_batching, ivd))
    fail("Scatter op cannot have the index vector dimension as a batching dimension; got " +
         ints_str(s.indices_batching) + ".");
  if (s.operand_batching.size() != s.indices_batching.size())
    fail(
        "Scatter op requires equal numbers of operand_batching_dims and "
        "scatter_indices_batching_dims, got " +
        ints_str(s.operand_batching) + " and " + ints_str(s.indices_batching) + ".");
  if (dims_of(op.shape, s.operand_batching) != dims_of(idx.shape, s.indices_batching))
    fail(
        "Scatter op requires operand batching dimensions and indices batching dimensions to "
        "have the same shape, got " +
        ints_str(dims_of(op.shape, s.operand_batching)) + " and " +
        ints_str(dims_of(idx.shape, s.indices_batching)) + ".");
  // The updates dims that are not window dims, in order, are the indices' dims but the last.
  std::vector<std::size_t> uscatter;
  for (std::size_t d = 0; d < urank; ++d)
    if (!has(s.window_dims, d)) uscatter.push_back(d);
  std::vector<I64> ubatch;
  for (I64 b : s.indices_batching)
    ubatch.push_back(static_cast<I64>(uscatter[static_cast<std::size_t>(b)]));
  if (dims_of(op.shape, s.operand_batching) != dims_of(up.shape, ubatch))
    fail(
        "Scatter op requires operand batching dimensions and updates batching dimensions to "
        "have the same shape, got " +
        ints_str(dims_of(op.shape, s.operand_batching)) + " and " +
        ints_str(dims_of(up.shape, ubatch)) + ".");
  const std::size_t window = s.window_dims.size() + s.inserted.size() + s.operand_batching.size();
  if (window != rank)
    fail("Scatter op has window of size " + std::to_string(window) +
         "; doesn't match operand of rank " + std::to_string(rank) + ".");
  if (s.to_operand.size() != idx.shape[ivd])
    fail("Scatter op has " + std::to_string(s.to_operand.size()) +
         " elements in scatter_dims_to_operand_dims and the bound of dimension "
         "index_vector_dim=" +
         std::to_string(ivd) + " of indices is " + std::to_string(idx.shape[ivd]) +
         ". These two numbers must be equal");
  for (std::size_t i = 0; i < s.to_operand.size(); ++i) {
    const I64 d = s.to_operand[i];
    if (d < 0 || static_cast<std::uint64_t>(d) >= rank)
      fail("Invalid scatter_dims_to_operand_dims mapping; domain is [0, " + std::to_string(rank) +
           "), got: " + std::to_string(i) + "->" + std::to_string(d) + ".");
  }
  no_duplicates(eqn, s.to_operand, "scatter_dims_to_operand_dims");
  std::vector<std::size_t> max_window;
  for (std::size_t d = 0; d < rank; ++d)
    if (!has(s.inserted, d) && !has(s.operand_batching, d)) max_window.push_back(op.shape[d]);
  for (std::size_t i = 0; i < s.window_dims.size(); ++i) {
    const auto u = static_cast<std::size_t>(s.window_dims[i]);
    if (max_window[i] < up.shape[u])
      fail(
          "Bounds of the window dimensions of updates must not exceed the bounds of the "
          "corresponding dimensions of operand. For dimension " +
          std::to_string(u) + ", updates bound is " + std::to_string(up.shape[u]) +
          ", operand bound is " + std::to_string(max_window[i]) + ".");
  }
  for (std::size_t i = 0; i < uscatter.size(); ++i) {
    if (up.shape[uscatter[i]] != idx.shape[i])
      fail(
          "Bounds of the scatter dimensions of updates must be the same as the bounds of the "
          "corresponding dimensions of scatter indices. For scatter dimension " +
          std::to_string(uscatter[i]) + ", updates bound is " +
          std::to_string(up.shape[uscatter[i]]) + ", indices bound is " +
          std::to_string(idx.shape[i]) + ".");
  }
  return s;
}

Types scatter_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 3);
  scatter_spec(eqn, in[0], in[1], in[2]);
  return {in[0]};
}

// acc <- f(acc, u) for the combine `C` on dtype's values; `over` notes an int32 result beyond
// 2^24 (JAX's int32 wraps there; meshrun refuses it after the loop, as the elementwise ops do).
template <Combine C>
inline float combine(float acc, float u, bool integer, bool& over) {
  if constexpr (C == Combine::kSet) {
    return u;
  } else if constexpr (C == Combine::kMin) {
    return min_ieee(acc, u);
  } else if constexpr (C == Combine::kMax) {
    return max_ieee(acc, u);
  } else {
    if (integer) {
      const double a = acc, b = u;
      const double r = C == Combine::kAdd ? a + b : C == Combine::kSub ? a - b : a * b;
      if (r > static_cast<double>(kMaxInt) || r < -static_cast<double>(kMaxInt)) over = true;
      return static_cast<float>(r);
    }
    return C == Combine::kAdd ? acc + u : C == Combine::kSub ? acc - u : acc * u;
  }
}

// The scatter's walk, each element the window covers combined as comb(acc, u, over) computes.
template <Combine C, class Comb>
Values scatter_run(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                   Comb comb) {
  const ScatterSpec s = scatter_spec(eqn, in[0]->type(), in[1]->type(), in[2]->type());
  const Value& idx = *in[1];
  const Value& up = *in[2];
  Value out = (in[0] == in[1] || in[0] == in[2]) ? *in[0] : pass_through(in[0], owned[0]);
  if (out.t.data.empty() || up.t.data.empty()) return one(std::move(out));
  const Shape& oshape = out.t.shape;
  const std::size_t rank = oshape.size(), urank = up.t.shape.size();
  const std::vector<I64> os = strides_of(oshape), us = strides_of(up.t.shape);
  // The window: the operand dims neither inserted nor batching, in order, each read from the
  // updates along the window dim of its rank among them; size 1 along the others.
  std::vector<I64> wshape, wdst, wsrc, wsize(rank, 1);
  for (std::size_t d = 0, j = 0; d < rank; ++d) {
    if (has(s.inserted, d) || has(s.operand_batching, d)) continue;
    const auto u = static_cast<std::size_t>(s.window_dims[j++]);
    wshape.push_back(static_cast<I64>(up.t.shape[u]));
    wsize[d] = wshape.back();
    wdst.push_back(os[d]);
    wsrc.push_back(us[u]);
  }
  std::vector<I64> bstride;  // the updates' scatter dims, in order
  for (std::size_t d = 0; d < urank; ++d)
    if (!has(s.window_dims, d)) bstride.push_back(us[d]);
  const std::size_t k_len = s.to_operand.size();
  std::vector<I64> hi(k_len), kstride(k_len);
  for (std::size_t k = 0; k < k_len; ++k) {
    const auto m = static_cast<std::size_t>(s.to_operand[k]);
    hi[k] = static_cast<I64>(oshape[m]) - wsize[m];
    kstride[k] = os[m];
  }
  std::vector<I64> bat_coord, bat_stride;
  for (std::size_t i = 0; i < s.operand_batching.size(); ++i) {
    bat_coord.push_back(s.indices_batching[i]);
    bat_stride.push_back(os[static_cast<std::size_t>(s.operand_batching[i])]);
  }
  Shape wshape_u(wshape.begin(), wshape.end());
  const bool scalar_window = shape_size(wshape_u) == 1;
  const bool integer = out.dtype == DType::kI32;
  bool over = false;
  float* o = out.t.data.data();
  const float* u = up.t.data.data();
  const float* ix = idx.t.data.data();
  if (scalar_window && k_len == 1 && bat_coord.empty()) {
    // x.at[i].add(v) on single elements: update n is index vector n's.
    const I64 count = static_cast<I64>(up.t.data.size()), h = hi[0], st = kstride[0];
    for (I64 n = 0; n < count; ++n) {
      I64 start = index_value(ix[n]);
      if (s.mode == Mode::kClip) start = std::min(std::max(start, I64{0}), h);
      if (start < 0 || start > h) continue;
      o[start * st] = comb(o[start * st], u[n], over);
    }
    if (over)
      fail(eqn.primitive + ": an integer result is beyond 2^24, which meshrun holds exactly");
    return one(std::move(out));
  }
  for_vectors(idx.t.shape, bstride, [&](I64 n, const std::vector<I64>& coord, I64 src) {
    I64 dst = 0;
    const float* v = ix + n * static_cast<I64>(k_len);
    for (std::size_t k = 0; k < k_len; ++k) {
      I64 start = index_value(v[k]);
      if (s.mode == Mode::kClip) start = std::min(std::max(start, I64{0}), hi[k]);
      if (start < 0 || start > hi[k]) return;  // the whole window is dropped
      dst += start * kstride[k];
    }
    for (std::size_t i = 0; i < bat_coord.size(); ++i)
      dst += coord[static_cast<std::size_t>(bat_coord[i])] * bat_stride[i];
    if (scalar_window) {
      o[dst] = comb(o[dst], u[src], over);
    } else if constexpr (C == Combine::kSet) {
      copy_strided(wshape_u, u + src, wsrc, o + dst, wdst);
    } else if (C != Combine::kApply && !integer && wdst.back() == 1 && wsrc.back() == 1) {
      // float rows contiguous on both sides (an embedding's gradient): a loop the compiler
      // vectorizes, the same operation on each element
      const I64 len = wshape.back();
      for_rows(wshape, wdst, wsrc, [&](I64 a, I64 b) {
        float* row = o + dst + a;
        const float* add = u + src + b;
        bool unused = false;
        for (I64 k = 0; k < len; ++k) row[k] = comb(row[k], add[k], unused);
      });
    } else {
      for_box(wshape, wdst, wsrc,
              [&](I64 a, I64 b) { o[dst + a] = comb(o[dst + a], u[src + b], over); });
    }
  });
  if (over) fail(eqn.primitive + ": an integer result is beyond 2^24, which meshrun holds exactly");
  return one(std::move(out));
}

template <Combine C>
Values scatter_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                    PrimContext&) {
  const DType dt = in[0]->dtype;
  if constexpr (C == Combine::kAdd || C == Combine::kSub || C == Combine::kMul) {
    if (is_narrow(dt)) {
      // Issue #49: bf16 and f16 as XLA:CPU's scatter, whose combiner is the f32 op converted to
      // the dtype after each update (a repeated index rounds at each add, in index order); i8 ...
      // u16 exact (a product of two 16-bit values fits a double) and wrapped after each.
      const DTypeInfo& d = dtype_info(dt);
      if (d.kind == DKind::kFloat) {
        float (*fit)(float) = d.fit;
        return scatter_run<C>(eqn, in, owned, [fit](float acc, float u, bool& over) {
          return fit(combine<C>(acc, u, false, over));
        });
      }
      float (*wrap)(I64) = d.wrap;
      return scatter_run<C>(eqn, in, owned, [wrap](float acc, float u, bool&) {
        const double a = acc, b = u;
        const double r = C == Combine::kAdd ? a + b : C == Combine::kSub ? a - b : a * b;
        return wrap(static_cast<I64>(r));
      });
    }
  }
  const bool integer = dt == DType::kI32;
  return scatter_run<C>(eqn, in, owned, [integer](float acc, float u, bool& over) {
    return combine<C>(acc, u, integer, over);
  });
}

// ---- scatter-apply: x.at[i].apply(f), lax.scatter_apply ----
// JAX's scatter whose update_jaxpr is f (a body on two scalars: the operand's element and the
// update's, which x.at[i].apply ignores). XLA:CPU's scatter loop calls the body once for each
// element an index vector selects, in the walk's order: a repeated index applies f once per
// occurrence. The body is read as the file gives it (param `update_jaxpr`), its calls (jit,
// custom_jvp_call: jax.nn.relu is one) inlined as XLA inlines them, and run element by element
// with meshrun's own primitives (their registry entries, so the bits are theirs) and XLA's FMA
// contraction of a product into an add or sub (contract.hpp: XLA:CPU compiles the body so too).
// Every value in it must be a scalar: a body that is not elementwise over its scalar invars, or
// holds a collective, control flow or a constant array, is refused before anything runs.

using Json = nlohmann::json;

struct ApplyBody {
  Jaxpr jx;                              // flat: calls inlined; every type a scalar
  std::vector<const Primitive*> prims;   // per equation
  std::vector<std::vector<Value>> lits;  // per equation, per operand: a literal's value
  ContractionPlan plan;
  Atom out;
  Value out_lit;
};

constexpr int kMaxBodyDepth = 8;
constexpr std::size_t kMaxBodyVars = 4096;
constexpr std::size_t kMaxBodyOperands = 256;

[[noreturn]] void body_fail(const std::string& where, const std::string& what) {
  fail("scatter-apply: its update_jaxpr" + where + ": " + what +
       " (meshrun runs a body elementwise over its scalar invars)");
}

const Json& body_at(const Json& j, const char* k) {
  static const Json kNone;
  return j.is_object() && j.contains(k) ? j.at(k) : kNone;
}

Value scalar_of(DType t, float v) {
  Value r(t, Tensor(Shape{}));
  r.t.data[0] = v;
  return r;
}

// A variable's declared type {"dtype": ..., "shape": []}: a scalar's.
DType body_type(const Json& v, const std::string& where) {
  const Json& t = body_at(v, "type");
  DType d = DType::kF32;
  if (!body_at(t, "dtype").is_string() || !parse_dtype(body_at(t, "dtype").get<std::string>(), &d))
    body_fail(where, "a variable without a dtype");
  const Json& s = body_at(t, "shape");
  if (!s.is_array() || !s.empty())
    body_fail(where, "a variable of shape " + s.dump().substr(0, 40) + ", not a scalar");
  return d;
}

DType atom_dtype(const ApplyBody& b, const Atom& a) { return dtype_of(b.jx, a); }

// Appends jaxpr `j`'s equations to b.jx, its invars bound to `args` (nullptr: the top level, whose
// invars become b.jx's); returns its outvars.
std::vector<Atom> inline_body(ApplyBody& b, const Json& j, const std::vector<Atom>* args,
                              const std::string& where, int depth, const PrimContext& ctx) {
  if (depth > kMaxBodyDepth) body_fail(where, "calls nested too deep");
  if (!j.is_object()) body_fail(where, "not a jaxpr");
  std::map<std::int64_t, Atom> vars;
  const auto new_var = [&](DType d, const std::string& at) {
    if (b.jx.types.size() >= kMaxBodyVars) body_fail(at, "too many variables");
    Type t;
    t.dtype = d;
    b.jx.types.push_back(t);
    Atom a;
    a.var = static_cast<int>(b.jx.types.size()) - 1;
    a.dtype = d;
    return a;
  };
  const auto bind = [&](const Json& v, const Atom& a, const std::string& at) {
    const Json& id = body_at(v, "id");
    if (!id.is_number_integer()) body_fail(at, "a variable without an integer id");
    if (vars.contains(id.get<std::int64_t>())) body_fail(at, "a variable defined twice");
    vars[id.get<std::int64_t>()] = a;
  };
  const auto operand = [&](const Json& a, const std::string& at) {
    if (a.is_object() && a.contains("var")) {
      const Json& id = body_at(a, "var");
      if (!id.is_number_integer() || !vars.contains(id.get<std::int64_t>()))
        body_fail(at, "a variable used before it is defined");
      return vars.at(id.get<std::int64_t>());
    }
    Atom lit;
    if (!body_at(a, "lit").is_number() || !body_at(a, "dtype").is_string() ||
        !parse_dtype(body_at(a, "dtype").get<std::string>(), &lit.dtype))
      body_fail(at, "an operand that is neither a variable nor a scalar literal");
    lit.literal = body_at(a, "lit").get<double>();
    if (lit.dtype != DType::kF32 && !(std::fabs(lit.literal) <= static_cast<double>(kMaxInt)))
      body_fail(at, "an integer literal beyond 2^24");
    return lit;
  };
  const Json &invars = body_at(j, "invars"), &eqns = body_at(j, "eqns"),
             &outvars = body_at(j, "outvars"), &constvars = body_at(j, "constvars");
  if (!invars.is_array() || !eqns.is_array() || !outvars.is_array())
    body_fail(where, "not a jaxpr");
  if (constvars.is_array() && !constvars.empty())
    body_fail(where, "closes over values (constvars)");
  if (args != nullptr && args->size() != invars.size())
    body_fail(where, "operands and invars differ in number");
  for (std::size_t i = 0; i < invars.size(); ++i) {
    const std::string at = where + ".invars[" + std::to_string(i) + "]";
    const DType d = body_type(invars[i], at);
    Atom a;
    if (args == nullptr) {
      a = new_var(d, at);
      b.jx.invars.push_back(a.var);
    } else {
      a = (*args)[i];
      if (atom_dtype(b, a) != d) body_fail(at, "an operand's dtype is not its invar's");
    }
    bind(invars[i], a, at);
  }
  for (std::size_t k = 0; k < eqns.size(); ++k) {
    const Json& e = eqns[k];
    const std::string at = where + ".eqns[" + std::to_string(k) + "]";
    const Json &prim = body_at(e, "primitive"), &ins = body_at(e, "in"), &outs = body_at(e, "out");
    if (!prim.is_string() || !ins.is_array() || !outs.is_array()) body_fail(at, "not an equation");
    if (ins.size() > kMaxBodyOperands) body_fail(at, "an equation of too many operands");
    const std::string p = prim.get<std::string>();
    Eqn q;
    q.primitive = p;
    q.params = body_at(e, "params").is_object() ? body_at(e, "params") : Json::object();
    q.where = at;
    std::vector<ValueType> types;
    std::vector<Value> lits;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const Atom a = operand(ins[i], at + ".in[" + std::to_string(i) + "]");
      q.in.push_back(a);
      types.push_back({atom_dtype(b, a), {}});
      lits.push_back(a.is_literal() ? scalar_of(a.dtype, static_cast<float>(a.literal)) : Value());
    }
    if (is_call(p)) {  // inlined: its results are its jaxpr's outvars
      const std::vector<Atom> res =
          inline_body(b, body_at(q.params, nested_jaxpr_param(p)), &q.in,
                      at + " (" + p + ").params." + nested_jaxpr_param(p), depth + 1, ctx);
      if (res.size() != outs.size()) body_fail(at, p + ": results and outvars differ in number");
      for (std::size_t i = 0; i < outs.size(); ++i) {
        const std::string o = at + ".out[" + std::to_string(i) + "]";
        if (body_type(outs[i], o) != atom_dtype(b, res[i]))
          body_fail(o, p + ": a result's dtype is not its outvar's");
        bind(outs[i], res[i], o);
      }
      continue;
    }
    const Primitive* pr = find_primitive(p);
    if (pr == nullptr || pr->infer == nullptr || pr->eval == nullptr ||
        pr->holds_jaxpr != nullptr || pr->collective)
      body_fail(at, "primitive '" + p + "'");
    std::vector<ValueType> got;
    try {
      got = pr->infer(q, types, ctx);
    } catch (const PrimitiveError& err) {
      body_fail(at, p + ": " + err.what());
    }
    if (got.size() != outs.size()) body_fail(at, p + ": results and outvars differ in number");
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const std::string o = at + ".out[" + std::to_string(i) + "]";
      if (!got[i].shape.empty()) body_fail(o, p + " gives " + type_str(got[i]) + ", not a scalar");
      const DType d = body_type(outs[i], o);
      if (d != got[i].dtype)
        body_fail(o, p + " gives " + type_str(got[i]) + ", declared " + dtype_name(d));
      const Atom a = new_var(d, o);
      q.out.push_back(a.var);
      bind(outs[i], a, o);
    }
    b.jx.eqns.push_back(std::move(q));
    b.prims.push_back(pr);
    b.lits.push_back(std::move(lits));
  }
  std::vector<Atom> res;
  for (std::size_t i = 0; i < outvars.size(); ++i)
    res.push_back(operand(outvars[i], where + ".outvars[" + std::to_string(i) + "]"));
  return res;
}

// The body of `eqn`, checked on the operand's and the updates' dtypes.
std::unique_ptr<ApplyBody> apply_body(const Eqn& eqn, DType op, DType up,
                                      const PrimContext& outer) {
  PrimContext ctx;  // no mesh: a collective in the body is refused as outside a shard_map
  ctx.dims = outer.dims;
  ctx.file = outer.file;
  const Json& j = body_at(eqn.params, "update_jaxpr");
  const Json& invars = body_at(j, "invars");
  if (j.is_object() &&
      (!invars.is_array() || invars.size() != 2 || body_type(invars[0], ".invars[0]") != op ||
       body_type(invars[1], ".invars[1]") != up)) {
    body_fail("", std::string("its invars must be two scalars of the operand's and the updates' "
                              "dtype, ") +
                      dtype_word(op) + " and " + dtype_word(up));
  }
  auto b = std::make_unique<ApplyBody>();
  const std::vector<Atom> res = inline_body(*b, j, nullptr, "", 0, ctx);
  if (res.size() != 1 || atom_dtype(*b, res[0]) != op)
    body_fail(".outvars", std::string("one result of the operand's dtype, ") + dtype_word(op));
  b->out = res[0];
  if (b->out.is_literal()) b->out_lit = scalar_of(op, static_cast<float>(b->out.literal));
  b->plan = plan_contractions(b->jx);
  return b;
}

// The body's result on the scalars acc (the operand's element) and u (the update's); `env` holds
// its variables, reused from call to call.
float run_body(const ApplyBody& b, float acc, float u, std::vector<Value>& env, PrimContext& ctx) {
  env[static_cast<std::size_t>(b.jx.invars[0])].t.data[0] = acc;
  env[static_cast<std::size_t>(b.jx.invars[1])].t.data[0] = u;
  std::vector<Value*> ptrs;
  const auto val = [&](std::size_t e, std::size_t i) -> Value* {
    const Atom& a = b.jx.eqns[e].in[i];
    return a.is_literal() ? const_cast<Value*>(&b.lits[e][i])
                          : &env[static_cast<std::size_t>(a.var)];
  };
  for (std::size_t e = 0; e < b.jx.eqns.size(); ++e) {
    if (b.plan.absorbed[e]) continue;
    const Eqn& q = b.jx.eqns[e];
    const Contraction& c = b.plan.at[e];
    if (c.mul >= 0) {  // add / sub absorbing a product: one FMA, as XLA:CPU's code
      const auto m = static_cast<std::size_t>(c.mul);
      env[static_cast<std::size_t>(q.out[0])] =
          fused_multiply_add(val(e, static_cast<std::size_t>(c.addend)), false, *val(m, 0),
                             *val(m, 1), c.negate_product, c.negate_addend);
      continue;
    }
    ptrs.clear();
    for (std::size_t i = 0; i < q.in.size(); ++i) ptrs.push_back(val(e, i));
    static constexpr bool kNotOwned[kMaxBodyOperands] = {};
    std::vector<Value> r =
        b.prims[e]->eval(q, ptrs, std::span<const bool>(kNotOwned, ptrs.size()), ctx);
    for (std::size_t i = 0; i < q.out.size(); ++i)
      env[static_cast<std::size_t>(q.out[i])] = std::move(r[i]);
  }
  return b.out.is_literal() ? b.out_lit.t.data[0]
                            : env[static_cast<std::size_t>(b.out.var)].t.data[0];
}

Types scatter_apply_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 3);
  scatter_spec(eqn, in[0], in[1], in[2]);
  apply_body(eqn, in[0].dtype, in[2].dtype, ctx);
  return {in[0]};
}

Values scatter_apply_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                          PrimContext& outer) {
  const auto body = apply_body(eqn, in[0]->dtype, in[2]->dtype, outer);
  PrimContext ctx;
  ctx.dims = outer.dims;
  ctx.file = outer.file;
  std::vector<Value> env(body->jx.types.size());
  env[static_cast<std::size_t>(body->jx.invars[0])] = scalar_of(in[0]->dtype, 0);
  env[static_cast<std::size_t>(body->jx.invars[1])] = scalar_of(in[2]->dtype, 0);
  return scatter_run<Combine::kApply>(
      eqn, in, owned, [&](float acc, float u, bool&) { return run_body(*body, acc, u, env, ctx); });
}

// The compute budget's count (cost.hpp): one flop for each element written, as every other
// primitive that moves more than it computes, plus each index vector's own work -- reading and
// bounding its starts, setting up its window -- which the general walk (batching dims, windows,
// several starts) does in 4.6-8.7 ns a vector on the 2-core EPYC under load 10
// (build/release/indexing_bench, gather-batched: bench/README.md), the scalar paths in 1-3 ns:
// 2000 flops (20 ns at the budget's 100 flops a ns) bounds either.
inline constexpr std::uint64_t kVectorFlops = 2000;

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
std::uint64_t vectors(const ValueType& indices) {
  std::uint64_t n = 1;
  for (std::size_t i = 0; i + 1 < indices.shape.size(); ++i) n = sat_mul(n, indices.shape[i]);
  return n;
}

std::uint64_t gather_flops(const Eqn&, std::span<const ValueType> ops,
                           std::span<const ValueType> outs) {
  return sat_add(shape_size(outs[0].shape), sat_mul(vectors(ops[1]), kVectorFlops));
}

std::uint64_t scatter_flops(const Eqn&, std::span<const ValueType> ops,
                            std::span<const ValueType> outs) {
  // The operand's copy (when it is not the last use), the updates combined, the vectors.
  return sat_add(sat_add(shape_size(outs[0].shape), shape_size(ops[2].shape)),
                 sat_mul(vectors(ops[1]), kVectorFlops));
}

constexpr Primitive gather_prim() {
  Primitive p{&gather_infer, &gather_eval};
  p.flops = &gather_flops;
  return p;
}

// scatter-apply: the scatter's, and each element's run of the body -- a registry call per equation
// on scalars (~100 ns each): 10^4 flops at the budget's 100 a ns.
inline constexpr std::uint64_t kBodyStepFlops = 10000;

std::uint64_t scatter_apply_flops(const Eqn& eqn, std::span<const ValueType> ops,
                                  std::span<const ValueType> outs) {
  const Json& e = body_at(body_at(eqn.params, "update_jaxpr"), "eqns");
  const std::uint64_t steps = e.is_array() ? e.size() + 1 : 1;
  return sat_add(scatter_flops(eqn, ops, outs),
                 sat_mul(shape_size(ops[2].shape), sat_mul(steps, kBodyStepFlops)));
}

constexpr Primitive scatter_apply_prim() {
  Primitive p{&scatter_apply_infer, &scatter_apply_eval};
  p.flops = &scatter_apply_flops;
  return p;
}

template <Combine C>
constexpr Primitive scatter_prim() {
  Primitive p{&scatter_infer, &scatter_eval<C>};
  p.flops = &scatter_flops;
  return p;
}

}  // namespace

std::span<const Entry> indexing_entries() {
  static const Entry kEntries[] = {
      {"gather", gather_prim()},
      {"scatter", scatter_prim<Combine::kSet>()},
      {"scatter-add", scatter_prim<Combine::kAdd>()},
      {"scatter-sub", scatter_prim<Combine::kSub>()},
      {"scatter-mul", scatter_prim<Combine::kMul>()},
      {"scatter-min", scatter_prim<Combine::kMin>()},
      {"scatter-max", scatter_prim<Combine::kMax>()},
      {"scatter-apply", scatter_apply_prim()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
