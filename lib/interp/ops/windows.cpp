// reduce_window (a jaxpr body of one add, mul, max, min, and, or; operand then init value),
// reduce_window_sum, reduce_window_max, reduce_window_min (params window_dimensions,
// window_strides, padding [[lo, hi], ...], base_dilation, window_dilation), and pooling's
// derivatives select_and_scatter_add (jax.grad of a max pool) and select_and_gather_add (its jvp),
// as JAX 0.10.2 computes them on CPU.
//
// A window reduction folds each window in row-major order from the init value, `acc = f(acc,
// x)`, skipping the positions that fall in the padding or between base-dilated elements (XLA's
// elemental emitter). A window that is one whole axis with padding n - 1 (or n) on one side --
// a cumulative sum written as a reduce_window -- is a scan to XLA:CPU: ops/scan.hpp.
//
// select_and_scatter_add(source, operand): JAX pads the operand on CPU with the select's
// identity (-inf for ge, +inf for le), then for each source element, in row-major order, selects
// in its window the first element and moves on to a later one when `select(selected, later)` is
// false (ge: ties keep the first), and adds the source element to the output there (nothing when
// the selection is padding). select_and_gather_add(tangents, operand): for each window the
// tangent where the operand is selected, by a reduction from (-inf, 0) that keeps its
// accumulator when `select(acc, x)`.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "interp/ops/scan.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

using I64 = std::int64_t;
constexpr I64 kMaxParam = I64{1} << 31;
constexpr I64 kMaxWindow = I64{1} << 24;  // a window side (each output's offsets are held)

enum class Fold { kAdd, kMul, kMax, kMin };

float apply(Fold f, float a, float b) {
  switch (f) {
    case Fold::kAdd:
      return a + b;
    case Fold::kMul:
      return a * b;
    case Fold::kMax:
      return max_ieee(a, b);
    case Fold::kMin:
      return min_ieee(a, b);
  }
  return a;
}

struct Window {
  std::vector<I64> size, dims, strides, lo, hi, base, dil, out;
  std::size_t rank() const { return size.size(); }
};

std::vector<I64> ints_param(const Eqn& eqn, const char* key, std::size_t rank, I64 fallback,
                            I64 min) {
  std::vector<I64> v;
  if (fallback >= 0 &&
      (!eqn.params.is_object() || !eqn.params.contains(key) || eqn.params.at(key).is_null())) {
    v.assign(rank, fallback);
    return v;
  }
  v = param_ints(eqn, key);
  if (v.size() != rank) {
    fail(eqn.primitive + " param '" + key + "': " + std::to_string(v.size()) +
         " entries for an operand of rank " + std::to_string(rank));
  }
  for (I64 x : v) {
    if (x < min || x > kMaxParam) {
      fail(eqn.primitive + " param '" + key + "': " + std::to_string(x) + " is outside " +
           std::to_string(min) + " to 2^31");
    }
  }
  return v;
}

Window window_of(const Eqn& eqn, const Shape& shape, bool dilations) {
  Window w;
  const std::size_t r = shape.size();
  for (std::size_t d : shape) w.size.push_back(static_cast<I64>(d));
  w.dims = ints_param(eqn, "window_dimensions", r, -1, 1);
  for (I64 d : w.dims) {
    if (d > kMaxWindow) {
      fail(eqn.primitive + " param 'window_dimensions': " + std::to_string(d) +
           " is beyond 2^24, the longest window side meshrun runs");
    }
  }
  w.strides = ints_param(eqn, "window_strides", r, -1, 1);
  w.base = ints_param(eqn, "base_dilation", r, dilations ? -1 : 1, 1);
  w.dil = ints_param(eqn, "window_dilation", r, dilations ? -1 : 1, 1);
  if (!eqn.params.is_object() || !eqn.params.contains("padding") ||
      !eqn.params.at("padding").is_array() || eqn.params.at("padding").size() != r) {
    fail(eqn.primitive + " param 'padding': a list of " + std::to_string(r) + " [lo, hi] pairs");
  }
  for (const nlohmann::json& p : eqn.params.at("padding")) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer()) {
      fail(eqn.primitive + " param 'padding': each entry a pair of integers [lo, hi]");
    }
    const I64 lo = p[0].get<I64>(), hi = p[1].get<I64>();
    if (lo < 0 || hi < 0 || lo > kMaxParam || hi > kMaxParam) {
      fail(eqn.primitive + " param 'padding': [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "] (each from 0 to 2^31; negative padding is not supported)");
    }
    w.lo.push_back(lo);
    w.hi.push_back(hi);
  }
  // Every term is below 2^31, so none of these overflows int64.
  for (std::size_t i = 0; i < r; ++i) {
    const I64 padded = (w.size[i] == 0 ? 0 : (w.size[i] - 1) * w.base[i] + 1) + w.lo[i] + w.hi[i];
    const I64 extent = (w.dims[i] - 1) * w.dil[i] + 1;
    w.out.push_back(padded >= extent ? (padded - extent) / w.strides[i] + 1 : 0);
  }
  return w;
}

Shape out_shape(const Window& w) {
  Shape s;
  for (I64 o : w.out) s.push_back(static_cast<std::size_t>(o));
  return s;
}

// The input index output index `o` and window index `k` of dimension `i` read, or -1 (padding,
// or between base-dilated elements).
I64 tap(const Window& w, std::size_t i, I64 o, I64 k) {
  const I64 pos = o * w.strides[i] + k * w.dil[i] - w.lo[i];
  if (w.base[i] == 1) return pos < 0 || pos >= w.size[i] ? -1 : pos;
  if (pos < 0 || pos % w.base[i] != 0 || pos / w.base[i] >= w.size[i]) return -1;
  return pos / w.base[i];
}

// For every output element in row-major order: begin(q), then step(input offset, or -1 for
// none) over its window in row-major order, then end(q). Each output's per-dimension offsets are
// worked out once (sum of the window's sides), the window's elements summed from them.
template <class Begin, class Step, class End>
void each_window(const Window& w, Begin begin, Step step, End end) {
  const std::size_t r = w.rank();
  std::size_t outs = 1;
  for (std::size_t i = 0; i < r; ++i) outs *= static_cast<std::size_t>(w.out[i]);
  if (outs == 0) return;
  if (r == 0) {  // a scalar: one window of its one element
    begin(0);
    step(0);
    end(0);
    return;
  }
  std::vector<I64> in_strides(r, 1);
  for (std::size_t i = r; i-- > 1;) in_strides[i - 1] = in_strides[i] * w.size[i];
  std::vector<std::vector<I64>> offs(r);
  for (std::size_t i = 0; i < r; ++i) offs[i].resize(static_cast<std::size_t>(w.dims[i]));
  std::vector<I64> o(r, 0), k(r, 0), base(r + 1, 0);
  const std::size_t last = r - 1;
  const std::vector<I64>& inner = offs[last];
  for (std::size_t q = 0; q < outs; ++q) {
    for (std::size_t i = 0; i < r; ++i) {
      for (I64 j = 0; j < w.dims[i]; ++j) {
        const I64 in = tap(w, i, o[i], j);
        offs[i][static_cast<std::size_t>(j)] = in < 0 ? -1 : in * in_strides[i];
      }
    }
    begin(q);
    std::fill(k.begin(), k.end(), 0);
    // base[i]: the offset of dimensions before i at the current k (-1: one is outside).
    for (std::size_t i = 0; i < last; ++i) {
      const I64 d = offs[i][0];
      base[i + 1] = base[i] < 0 || d < 0 ? -1 : base[i] + d;
    }
    for (;;) {
      const I64 b = base[last];
      for (I64 d : inner) step(b < 0 || d < 0 ? -1 : b + d);
      std::size_t i = last;
      while (i-- > 0) {
        if (++k[i] < w.dims[i]) break;
        k[i] = 0;
      }
      if (i == static_cast<std::size_t>(-1)) break;
      for (std::size_t j = i; j < last; ++j) {
        const I64 d = offs[j][static_cast<std::size_t>(k[j])];
        base[j + 1] = base[j] < 0 || d < 0 ? -1 : base[j] + d;
      }
    }
    end(q);
    for (std::size_t i = r; i-- > 0;) {
      if (++o[i] < w.out[i]) break;
      o[i] = 0;
    }
  }
}

// Every window element of every output, 5 ns each (bench/sort_bench: a 3x3 'SAME' window sum of
// 1000 x 1000 and 1 x 10^6 float32, 27 to 46 ns of thread CPU time an output) in dot_general flops
// (100 a nanosecond, cost.cpp).
constexpr std::uint64_t kWindowElementFlops = 500;
std::uint64_t window_cost(const Window& w) {
  std::uint64_t n = kWindowElementFlops;
  for (std::size_t i = 0; i < w.rank(); ++i) {
    for (I64 v : {w.out[i], w.dims[i]})
      if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(v), &n)) return UINT64_MAX;
  }
  return n;
}

// ---- reduce_window_{sum,max,min} and reduce_window ----

// The one axis of a scan-shaped window (the whole axis, padding n - 1 or n on one side, stride
// and dilations 1, every other window dimension 1 with nothing around it), or -1.
int scan_axis(const Window& w) {
  int axis = -1;
  for (std::size_t i = 0; i < w.rank(); ++i) {
    const bool trivial = w.dims[i] == 1 && w.strides[i] == 1 && w.lo[i] == 0 && w.hi[i] == 0 &&
                         w.base[i] == 1 && w.dil[i] == 1;
    if (trivial) continue;
    if (axis != -1) return -1;
    axis = static_cast<int>(i);
  }
  if (axis < 0) return -1;
  const auto a = static_cast<std::size_t>(axis);
  const I64 n = w.size[a];
  const bool fwd = (w.lo[a] == n - 1 || w.lo[a] == n) && w.hi[a] == 0;
  const bool rev = (w.hi[a] == n - 1 || w.hi[a] == n) && w.lo[a] == 0;
  if (w.strides[a] != 1 || w.dims[a] != n || (!fwd && !rev) || w.base[a] != 1 || w.dil[a] != 1 ||
      n <= static_cast<I64>(scan::kBase)) {
    return -1;
  }
  return axis;
}

template <class Op>
void scan_rows(const Window& w, std::size_t axis, const float* x, float* o) {
  const auto n = static_cast<std::size_t>(w.size[axis]);
  const bool fwd = w.hi[axis] == 0;
  const bool exclusive = (fwd ? w.lo[axis] : w.hi[axis]) == w.size[axis];
  const auto m = static_cast<std::size_t>(w.out[axis]);  // n, or n + 1 when exclusive
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(w.size[i]);
  for (std::size_t i = axis + 1; i < w.rank(); ++i) inner *= static_cast<std::size_t>(w.size[i]);
  std::vector<float> row(n), res(n);
  for (std::size_t a = 0; a < outer; ++a) {
    for (std::size_t c = 0; c < inner; ++c) {
      for (std::size_t k = 0; k < n; ++k) row[k] = x[(a * n + k) * inner + c];
      scan::inclusive_scan<Op>(row.data(), n, !fwd, res.data());
      float* d = o + a * m * inner + c;
      if (!exclusive) {
        for (std::size_t k = 0; k < n; ++k) d[k * inner] = res[k];
      } else if (fwd) {  // the rewrite's pad of one identity before
        d[0] = Op::kInit;
        for (std::size_t k = 0; k < n; ++k) d[(k + 1) * inner] = res[k];
      } else {
        for (std::size_t k = 0; k < n; ++k) d[k * inner] = res[k];
        d[n * inner] = Op::kInit;
      }
    }
  }
}

// The fold of reduce_window's body (param `jaxpr`, read as the file gives it): one equation add,
// mul, max, min, and or or whose operands are the body's two invars and whose result its outvar.
Fold body_fold(const Eqn& eqn, DType t) {
  const char* kWant =
      "reduce_window's body (param 'jaxpr') must be one add, mul, max, min, and or or of its two "
      "scalar operands (meshrun does not run other bodies)";
  using J = nlohmann::json;
  const J none;
  const auto at = [&](const J& j, const char* k) -> const J& {
    return j.is_object() && j.contains(k) ? j.at(k) : none;
  };
  const J& j = at(eqn.params, "jaxpr");
  const J &invars = at(j, "invars"), &eqns = at(j, "eqns"), &outvars = at(j, "outvars");
  if (!invars.is_array() || invars.size() != 2 || !eqns.is_array() || eqns.size() != 1 ||
      !outvars.is_array() || outvars.size() != 1 ||
      (at(j, "constvars").is_array() && !at(j, "constvars").empty())) {
    fail(kWant);
  }
  const J& e = eqns[0];
  const J &ins = at(e, "in"), &outs = at(e, "out");
  if (!ins.is_array() || ins.size() != 2 || !outs.is_array() || outs.size() != 1) fail(kWant);
  const J &a = at(ins[0], "var"), &b = at(ins[1], "var"), &x = at(invars[0], "id"),
          &y = at(invars[1], "id"), &r = at(outs[0], "id"), &ov = at(outvars[0], "var");
  for (const J* v : {&a, &b, &x, &y, &r, &ov})
    if (!v->is_number_integer()) fail(kWant);
  if (!((a == x && b == y) || (a == y && b == x)) || x == y || ov != r) fail(kWant);
  const J& prim = at(e, "primitive");
  const std::string p = prim.is_string() ? prim.get<std::string>() : "";
  if (p == "add" && t != DType::kBool) return Fold::kAdd;
  if (p == "mul" && t != DType::kBool) return Fold::kMul;
  if (p == "max" || (p == "or" && t == DType::kBool)) return Fold::kMax;
  if (p == "min" || (p == "and" && t == DType::kBool)) return Fold::kMin;
  fail(std::string(kWant) + ", got " + (p.empty() ? "none" : p) + " on " + dtype_word(t));
}

Types rw_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  const bool generic = eqn.primitive == "reduce_window";
  expect_operands(eqn, in.size(), generic ? 2 : 1);
  const DType t = in[0].dtype;
  if (generic) {
    if (!in[1].shape.empty() || in[1].dtype != t) {
      fail(
          "reduce_window: the init value (operand 1) must be a scalar of the operand's dtype, "
          "got " +
          type_str(in[1]));
    }
    const Fold f = body_fold(eqn, t);
    if (is_narrow(t) && (f == Fold::kAdd || f == Fold::kMul)) {
      fail(std::string("meshrun does not run reduce_window of ") +
           (f == Fold::kAdd ? "add" : "mul") + " on " + dtype_word(t) +
           " (XLA:CPU's rounding of each step not verified; max and min run)");
    }
  } else {
    check_dtype(eqn, t, eqn.primitive == "reduce_window_sum" ? kNum : kAny);
  }
  return {make_type(t, out_shape(window_of(eqn, in[0].shape, true)))};
}

std::uint64_t rw_flops(const Eqn& eqn, std::span<const ValueType> ops, std::span<const ValueType>) {
  return window_cost(window_of(eqn, ops[0].shape, true));
}

template <class Op>
bool try_scan(const Window& w, Fold f, Fold want, const float* x, float* o) {
  if (f != want) return false;
  const int axis = scan_axis(w);
  if (axis < 0) return false;
  scan_rows<Op>(w, static_cast<std::size_t>(axis), x, o);
  return true;
}

Values rw_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& x = *in[0];
  const DType t = x.dtype;
  const Window w = window_of(eqn, x.t.shape, true);
  Fold f = Fold::kAdd;
  float init = 0.0f;
  if (eqn.primitive == "reduce_window") {
    f = body_fold(eqn, t);
    init = in[1]->t.data[0];
  } else if (eqn.primitive == "reduce_window_max") {
    f = Fold::kMax;
    init = t == DType::kBool ? 0.0f : -std::numeric_limits<float>::infinity();
  } else if (eqn.primitive == "reduce_window_min") {
    f = Fold::kMin;
    init = t == DType::kBool ? 1.0f : std::numeric_limits<float>::infinity();
  }
  Value out(t, Tensor(out_shape(w)));
  const float* p = x.t.data.data();
  float* o = out.t.data.data();
  const bool standard_init =
      (f == Fold::kAdd && init == 0.0f && !std::signbit(init)) || (f == Fold::kMul && init == 1.0f);
  if (t == DType::kF32 && standard_init &&
      (try_scan<scan::SumOp>(w, f, Fold::kAdd, p, o) ||
       try_scan<scan::ProdOp>(w, f, Fold::kMul, p, o))) {
    return one(std::move(out));
  }
  const bool exact_int = t == DType::kI32 && (f == Fold::kAdd || f == Fold::kMul);
  // int32 sums and products exactly, refused beyond 2^24 (meshrun holds integers so).
  I64 iacc = 0;
  float acc = init;
  each_window(
      w,
      [&](std::size_t) {
        iacc = static_cast<I64>(init);
        acc = init;
      },
      [&](I64 off) {
        if (off < 0) return;
        if (exact_int) {
          const auto v = static_cast<I64>(p[off]);
          iacc = f == Fold::kAdd ? iacc + v : iacc * v;
          int_result(iacc, eqn);
        } else {
          acc = apply(f, acc, p[off]);
        }
      },
      [&](std::size_t q) { o[q] = exact_int ? int_result(iacc, eqn) : acc; });
  if (is_narrow(t) && !is_float(t)) {
    // i8 ... u16: a window of padding only is the dtype's lowest (max) or highest (min), JAX's
    // identity, as reduce_max's (reductions.cpp)
    const DTypeInfo& d = dtype_info(t);
    const float lo = d.kind == DKind::kSigned ? -std::ldexp(1.0f, d.bits - 1) : 0.0f;
    const float hi =
        d.kind == DKind::kSigned ? std::ldexp(1.0f, d.bits - 1) - 1 : std::ldexp(1.0f, d.bits) - 1;
    for (float& v : out.t.data)
      if (std::isinf(v)) v = v < 0 ? lo : hi;
  }
  if (t == DType::kI32) {
    for (float v : out.t.data) {
      if (!std::isfinite(v)) {
        fail(eqn.primitive + " of a window with no element: JAX's int32 identity " +
             (v < 0 ? "-2147483648" : "2147483647") +
             " is beyond 2^24, which meshrun holds exactly");
      }
    }
  }
  return one(std::move(out));
}

// ---- select_and_scatter_add, select_and_gather_add ----

bool select_ge(const Eqn& eqn) {
  if (!eqn.params.is_object() || !eqn.params.contains("select_prim") ||
      !eqn.params.at("select_prim").is_string()) {
    fail(eqn.primitive + " param 'select_prim' missing (ge or le)");
  }
  const std::string s = eqn.params.at("select_prim").get<std::string>();
  if (s != "ge" && s != "le")
    fail(eqn.primitive + " param 'select_prim': " + s + " (JAX uses ge or le)");
  return s == "ge";
}

bool select(bool ge, float a, float b) { return ge ? a >= b : a <= b; }

Types sas_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  select_ge(eqn);
  check_dtype(eqn, in[1].dtype, kF);
  check_dtype(eqn, in[0].dtype, kF);
  const Window w = window_of(eqn, in[1].shape, false);
  if (out_shape(w) != in[0].shape) {
    fail("select_and_scatter_add: the source is " + dims_str(in[0].shape) +
         ", the operand's windows " + dims_str(out_shape(w)) + " (one source element a window)");
  }
  return {make_type(in[0].dtype, in[1].shape)};
}

std::uint64_t sas_flops(const Eqn& eqn, std::span<const ValueType> ops,
                        std::span<const ValueType>) {
  return window_cost(window_of(eqn, ops[1].shape, false));
}

Values sas_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& src = *in[0];
  const Value& x = *in[1];
  const bool ge = select_ge(eqn);
  const Window w = window_of(eqn, x.t.shape, false);
  const float pad =
      ge ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  // Padding positions are candidates (JAX pads the operand with the identity on CPU): the window
  // over the operand padded, where -1 marks such a position; the taps' -1 are exactly those.
  Value out(src.dtype, Tensor(x.t.shape));
  const float* p = x.t.data.data();
  float* o = out.t.data.data();
  I64 sel = -2;  // -2: none yet; -1: a padding position
  float best = 0.0f;
  each_window(
      w, [&](std::size_t) { sel = -2; },
      [&](I64 off) {
        const float v = off >= 0 ? p[off] : pad;
        if (sel == -2 || !select(ge, best, v)) {
          sel = off;
          best = v;
        }
      },
      [&](std::size_t q) {
        if (sel >= 0) o[sel] += src.t.data[q];
      });
  return one(std::move(out));
}

Types sag_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  select_ge(eqn);
  check_dtype(eqn, in[0].dtype, kF);
  check_dtype(eqn, in[1].dtype, kF);
  if (in[0].shape != in[1].shape) {
    fail("select_and_gather_add: tangents " + dims_str(in[0].shape) + " and operand " +
         dims_str(in[1].shape) + " differ in shape");
  }
  return {make_type(in[0].dtype, out_shape(window_of(eqn, in[1].shape, true)))};
}

Values sag_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& tan = *in[0];
  const Value& x = *in[1];
  const bool ge = select_ge(eqn);
  const Window w = window_of(eqn, x.t.shape, true);
  Value out(tan.dtype, Tensor(out_shape(w)));
  const float* p = x.t.data.data();
  const float* tp = tan.t.data.data();
  const float worst =
      ge ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  float k = worst, v = 0.0f;
  each_window(
      w,
      [&](std::size_t) {
        k = worst;
        v = 0.0f;
      },
      [&](I64 off) {
        if (off >= 0 && !select(ge, k, p[off])) {
          k = p[off];
          v = tp[off];
        }
      },
      [&](std::size_t q) { out.t.data[q] = v; });
  return one(std::move(out));
}

std::uint64_t sag_flops(const Eqn& eqn, std::span<const ValueType> ops,
                        std::span<const ValueType>) {
  return window_cost(window_of(eqn, ops[1].shape, true));
}

constexpr Primitive rw() {
  Primitive p{&rw_infer, &rw_eval};
  p.flops = &rw_flops;
  return p;
}

}  // namespace

std::span<const Entry> window_entries() {
  static const Entry kEntries[] = {
      {"reduce_window", rw()},
      {"reduce_window_sum", rw()},
      {"reduce_window_max", rw()},
      {"reduce_window_min", rw()},
      {"select_and_scatter_add",
       {&sas_infer, &sas_eval, nullptr, 0, nullptr, false, nullptr, false,
        Primitive::Control::kNone, nullptr, false, false, false, &sas_flops}},
      {"select_and_gather_add",
       {&sag_infer, &sag_eval, nullptr, 0, nullptr, false, nullptr, false,
        Primitive::Control::kNone, nullptr, false, false, false, &sag_flops}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
