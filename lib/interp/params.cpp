// The param_* helpers and the helpers shared by every primitive's source. A param is untrusted
// JSON: each read checks the kind and range and throws PrimitiveError naming the param.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "interp/prim_util.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {

using prim::fail;

namespace {

const nlohmann::json& param(const Eqn& eqn, const char* key) {
  if (!eqn.params.is_object()) fail("params must be an object");
  const auto it = eqn.params.find(key);
  if (it == eqn.params.end()) fail(std::string("param '") + key + "' missing");
  return *it;
}

std::string kind_of(const nlohmann::json& j) {
  if (j.is_number_float()) return "a float";
  if (j.is_number_integer()) return "an integer";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "a list";
  if (j.is_object()) return "an object";
  if (j.is_boolean()) return "a bool";
  return "null";
}

std::int64_t as_int(const nlohmann::json& j, const char* key) {
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(std::string("param '") + key + "' out of range");
    return static_cast<std::int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<std::int64_t>();
  fail(std::string("param '") + key + "' must be an integer, got " + kind_of(j));
}

}  // namespace

std::int64_t param_int(const Eqn& eqn, const char* key) { return as_int(param(eqn, key), key); }

std::vector<std::int64_t> param_ints(const Eqn& eqn, const char* key) {
  const nlohmann::json& j = param(eqn, key);
  if (!j.is_array()) fail(std::string("param '") + key + "' must be a list, got " + kind_of(j));
  std::vector<std::int64_t> v;
  v.reserve(j.size());
  for (const nlohmann::json& e : j) v.push_back(as_int(e, key));
  return v;
}

bool param_bool(const Eqn& eqn, const char* key, bool fallback) {
  if (!eqn.params.is_object()) fail("params must be an object");
  const auto it = eqn.params.find(key);
  if (it == eqn.params.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    fail(std::string("param '") + key + "' must be a bool, got " + kind_of(*it));
  return it->get<bool>();
}

namespace {

std::int64_t dim_of(const nlohmann::json& e, const char* key, const PrimContext& ctx) {
  static const DimBindings kNone;
  const DimBindings& dims = ctx.dims ? *ctx.dims : kNone;
  if (e.is_string()) {
    try {
      return DimExpr::parse(e.get<std::string>(), key).eval(dims, key);
    } catch (const InputError& err) {
      fail(std::string("param ") + err.what());
    }
  }
  const std::int64_t v = as_int(e, key);
  if (v < 0 || v > (std::int64_t{1} << 40))
    fail(std::string("param '") + key + "' holds the size " + std::to_string(v));
  return v;
}

}  // namespace

Shape param_shape(const Eqn& eqn, const char* key, const PrimContext& ctx) {
  const nlohmann::json& j = param(eqn, key);
  if (!j.is_array()) fail(std::string("param '") + key + "' must be a list, got " + kind_of(j));
  Shape shape;
  shape.reserve(j.size());
  for (const nlohmann::json& e : j) shape.push_back(static_cast<std::size_t>(dim_of(e, key, ctx)));
  return shape;
}

namespace prim {
std::int64_t param_dim(const Eqn& eqn, const char* key, const PrimContext& ctx) {
  return dim_of(param(eqn, key), key, ctx);
}

std::int64_t index_of(const nlohmann::json& e, const char* key, const PrimContext& ctx) {
  if (e.is_string()) {
    static const DimBindings kNone;
    try {
      return DimExpr::parse(e.get<std::string>(), key)
          .eval_signed(ctx.dims ? *ctx.dims : kNone, key);
    } catch (const InputError& err) {
      fail(std::string("param ") + err.what());
    }
  }
  const std::int64_t v = as_int(e, key);
  if (v < -(std::int64_t{1} << 40) || v > (std::int64_t{1} << 40))
    fail(std::string("param '") + key + "' out of range");
  return v;
}
}  // namespace prim

std::vector<std::int64_t> param_indices(const Eqn& eqn, const char* key, const PrimContext& ctx) {
  const nlohmann::json& j = param(eqn, key);
  if (!j.is_array()) fail(std::string("param '") + key + "' must be a list, got " + kind_of(j));
  std::vector<std::int64_t> v;
  v.reserve(j.size());
  for (const nlohmann::json& e : j) v.push_back(prim::index_of(e, key, ctx));
  return v;
}

std::vector<std::string> param_axes(const Eqn& eqn, const char* key) {
  const nlohmann::json& j = param(eqn, key);
  if (!j.is_array()) fail(std::string("param '") + key + "' must be a list of axis names");
  std::vector<std::string> axes;
  for (const nlohmann::json& e : j) {
    if (!e.is_string()) fail(std::string("param '") + key + "' must be a list of axis names");
    axes.push_back(e.get<std::string>());
  }
  return axes;
}

DType param_dtype(const Eqn& eqn, const char* key) {
  const nlohmann::json& j = param(eqn, key);
  if (!j.is_string()) fail(std::string("param '") + key + "' must be a dtype name");
  DType t;
  const std::string name = j.get<std::string>();
  if (!parse_dtype(name, &t)) {
    fail(std::string("param '") + key + "': unknown dtype '" + name.substr(0, 32) + "'");
  }
  return t;
}

namespace prim {

void fail(const std::string& what) { throw PrimitiveError(what); }

std::string dims_str(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

ValueType make_type(DType dtype, Shape shape) {
  constexpr std::size_t kMaxElems = std::size_t{1} << 31;
  std::size_t n = 1;
  for (std::size_t d : shape) {
    if (d == 0) {
      n = 0;
      break;
    }
  }
  if (n != 0) {
    for (std::size_t d : shape) {
      if (d > kMaxElems || n * d > kMaxElems) {
        fail("an array of shape " + dims_str(shape) + " is above the limit of 2^31 elements");
      }
      n *= d;
    }
  }
  return {dtype, std::move(shape)};
}

void expect_operands(const Eqn& eqn, std::size_t got, std::size_t want, bool at_least) {
  if (at_least ? got >= want : got == want) return;
  fail(eqn.primitive + " takes " + (at_least ? "at least " : "") + std::to_string(want) +
       " operand" + (want == 1 ? "" : "s") + ", got " + std::to_string(got));
}

std::size_t checked_axis(const Eqn& eqn, const char* key, std::int64_t v, std::size_t rank) {
  if (v < 0 || static_cast<std::uint64_t>(v) >= rank) {
    fail(eqn.primitive + " param '" + key + "': axis " + std::to_string(v) +
         " is out of bounds for an array of rank " + std::to_string(rank));
  }
  return static_cast<std::size_t>(v);
}

std::vector<std::size_t> param_axis_list(const Eqn& eqn, const char* key, std::size_t rank) {
  std::vector<std::size_t> axes;
  std::vector<bool> seen(rank, false);
  for (std::int64_t v : param_ints(eqn, key)) {
    const std::size_t a = checked_axis(eqn, key, v, rank);
    if (seen[a])
      fail(eqn.primitive + " param '" + key + "' names axis " + std::to_string(a) + " twice");
    seen[a] = true;
    axes.push_back(a);
  }
  return axes;
}

float int_result(std::int64_t v, const Eqn& eqn) {
  if (v > kMaxInt || v < -kMaxInt) {
    fail(eqn.primitive + ": the integer result " + std::to_string(v) +
         " is beyond 2^24, which meshrun holds exactly");
  }
  return static_cast<float>(v);
}

float f32_to_i32(float v, const Eqn& eqn) {
  if (std::isnan(v)) return 0.0f;
  const float t = std::trunc(v);
  if (std::fabs(t) > static_cast<float>(kMaxInt)) {
    fail(eqn.primitive + ": " + std::to_string(t) +
         " as int32 is beyond 2^24, which meshrun holds exactly");
  }
  return t + 0.0f;  // -0 -> 0
}

void check_dtype(const Eqn& eqn, DType t, unsigned allowed) {
  if ((dtype_bit(t) & allowed) == 0)
    fail(eqn.primitive + " does not accept dtype " + dtype_word(t));
}

const char* dtype_word(DType t) { return dtype_info(t).word; }

Value output_for(Value* in, bool owned, DType dtype, const Shape& shape) {
  if (owned && in->t.data.size() == shape_size(shape)) {
    Value v(dtype, std::move(in->t));
    v.t.shape = shape;
    return v;
  }
  return Value(dtype, Tensor(shape));
}

Value pass_through(Value* in, bool owned) {
  if (owned) return std::move(*in);
  return *in;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    fail(what + " overflows int64 (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  return r;
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    fail(what + " overflows int64 (" + std::to_string(a) + " * " + std::to_string(b) + ")");
  return r;
}

std::vector<std::int64_t> strides_of(const Shape& shape) {
  std::vector<std::int64_t> s(shape.size());
  std::int64_t m = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    s[i] = m;
    if (i > 0 && __builtin_mul_overflow(m, static_cast<std::int64_t>(shape[i]), &m))
      fail("the strides of an array of shape " + dims_str(shape) + " overflow int64");
  }
  return s;
}

namespace {

// The last two dimensions of copy_strided: rows x cols elements. Rows of contiguous runs are
// copied whole; anything else (a transpose: one side's inner stride is not 1) by 16 x 16 tiles,
// so each cache line read or written serves 16 elements instead of one.
void copy_2d(std::size_t rows, std::size_t cols, const float* src, std::int64_t sr, std::int64_t sc,
             float* dst, std::int64_t dr, std::int64_t dc) {
  using I = std::int64_t;
  if (dc == 1 && (sc == 1 || sc == 0)) {
    for (std::size_t r = 0; r < rows; ++r) {
      const float* s = src + static_cast<I>(r) * sr;
      float* d = dst + static_cast<I>(r) * dr;
      if (sc == 1) {
        std::memcpy(d, s, cols * sizeof(float));
      } else {
        std::fill(d, d + cols, s[0]);
      }
    }
    return;
  }
  constexpr std::size_t kTile = 16;
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile)
    for (std::size_t c0 = 0; c0 < cols; c0 += kTile)
      for (std::size_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (std::size_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          dst[static_cast<I>(r) * dr + static_cast<I>(c) * dc] =
              src[static_cast<I>(r) * sr + static_cast<I>(c) * sc];
}

}  // namespace

void copy_strided(const Shape& shape, const float* src, std::span<const std::int64_t> src_strides,
                  float* dst, std::span<const std::int64_t> dst_strides) {
  const std::size_t rank = shape.size();
  if (shape_size(shape) == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  if (rank == 1) {
    copy_2d(1, shape[0], src, 0, src_strides[0], dst, 0, dst_strides[0]);
    return;
  }
  // The odometer runs over the dimensions before the last two; copy_2d does those.
  const std::size_t rows = shape[rank - 2], cols = shape[rank - 1];
  const std::int64_t sr = src_strides[rank - 2], sc = src_strides[rank - 1];
  const std::int64_t dr = dst_strides[rank - 2], dc = dst_strides[rank - 1];
  std::vector<std::size_t> idx(rank, 0);
  std::int64_t so = 0, dof = 0;
  for (;;) {
    copy_2d(rows, cols, src + so, sr, sc, dst + dof, dr, dc);
    // The next index over the outer dimensions.
    std::size_t k = rank - 2;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < shape[k]) {
        so += src_strides[k];
        dof += dst_strides[k];
        break;
      }
      so -= src_strides[k] * static_cast<std::int64_t>(idx[k] - 1);
      dof -= dst_strides[k] * static_cast<std::int64_t>(idx[k] - 1);
      idx[k] = 0;
    }
  }
}

}  // namespace prim
}  // namespace meshrun::interp
