// The binary elementwise primitives: arithmetic with JAX's broadcasting, comparisons, logic ops
// (unary ones: unary.cpp). Each op is a functor instantiated into its own contiguous loop (no
// per-element dispatch), and the output takes an owned operand's buffer when the shapes allow.
//
// float32 as XLA:CPU computes it: + - * / are IEEE (correctly rounded, as here); pow, atan2 run on
// the C library in float, as XLA:CPU's, under its flush of subnormals (scalar_ops.hpp).
// max/min are IEEE 754-2019 maximum/minimum, as JAX's: NaN propagates and -0 < +0. i32 and bool
// values are held as floats; integer ops run on their int64 values and refuse a result beyond 2^24.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "interp/fused_kernels.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

std::int64_t to_i(float v) { return static_cast<std::int64_t>(v); }

// ---- binary ----

// Each: kDtypes, kCompare (-> bool), kInt (an integer path differs from the float one), f, i.
struct Add {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return f32::add(a, b); }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a + b; }
};
struct Sub {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return f32::sub(a, b); }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a - b; }
};
struct Mul {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return f32::mul(a, b); }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a * b; }
};
struct Div {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return f32::div(a, b); }
  // XLA: truncation toward zero; x / 0 is -1.
  static std::int64_t i(std::int64_t a, std::int64_t b) { return b == 0 ? -1 : a / b; }
};
// XLA:CPU divides by a divisor broadcast over the result (a scalar, a row, a column) as a multiply
// by its reciprocal (LLVM's `arcp`, the reciprocal hoisted out of the loop): JAX 0.10.2's x / 0.75
// and x / c for a runtime scalar c are x * (1 / c) on 10^5 elements, 33134 of them not x / c --
// dropout's x / keep_prob. An elementwise divisor of the result's shape is a true division.
inline float div_by_broadcast(float x, float y) { return f32::mul(x, f32::div(1.0f, y)); }
void fused_div(const FusedOp& op, const FusedSrc* in, float* o, std::size_t c) {
  if (!in[1].scalar) return fused_binary<Div>(op, in, o, c);
  fused_map2(in[0], in[1], o, c, [](float x, float y) { return div_by_broadcast(x, y); });
}

struct Rem {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return std::fmod(a, b); }
  // XLA: the sign of the dividend; x % 0 is x.
  static std::int64_t i(std::int64_t a, std::int64_t b) { return b == 0 ? a : a % b; }
};
// Floats only, as JAX's ("pow does not accept dtype int32").
struct Pow {
  static constexpr unsigned kDtypes = kF;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return f32::pow(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
struct Max {
  static constexpr unsigned kDtypes = kAny;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return f32::max(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
struct Min {
  static constexpr unsigned kDtypes = kAny;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return f32::min(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
struct Atan2 {
  static constexpr unsigned kDtypes = kF;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return f32::atan2(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
struct NextAfter {
  static constexpr unsigned kDtypes = kF;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return std::nextafter(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
// Bitwise on i32 (two's complement), logical on bool (0/1).
struct And {
  static constexpr unsigned kDtypes = kI | kB;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float, float) { return 0; }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a & b; }
};
struct Or {
  static constexpr unsigned kDtypes = kI | kB;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float, float) { return 0; }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a | b; }
};
struct Xor {
  static constexpr unsigned kDtypes = kI | kB;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float, float) { return 0; }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a ^ b; }
};
// Comparisons: exact on the floats that hold integers too.
#define MESHRUN_COMPARE(Name, expr)                                   \
  struct Name {                                                       \
    static constexpr unsigned kDtypes = kAny;                         \
    static constexpr bool kCompare = true, kInt = false;              \
    static float f(float a, float b) { return (expr) ? 1.0f : 0.0f; } \
    static std::int64_t i(std::int64_t, std::int64_t) { return 0; }   \
  };
MESHRUN_COMPARE(Eq, a == b)
MESHRUN_COMPARE(Ne, a != b)
MESHRUN_COMPARE(Lt, a < b)
MESHRUN_COMPARE(Le, a <= b)
MESHRUN_COMPARE(Gt, a > b)
MESHRUN_COMPARE(Ge, a >= b)
#undef MESHRUN_COMPARE

Shape broadcast_shapes(const Eqn& eqn, const Shape& a, const Shape& b) {
  if (a == b) return a;
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.size() == b.size()) {
    Shape out(a.size());
    bool ok = true;
    for (std::size_t i = 0; i < a.size() && ok; ++i) {
      if (a[i] == b[i] || b[i] == 1) {
        out[i] = a[i];
      } else if (a[i] == 1) {
        out[i] = b[i];
      } else {
        ok = false;
      }
    }
    if (ok) return out;
  }
  fail(eqn.primitive + " got incompatible shapes for broadcasting: " + dims_str(a) + ", " +
       dims_str(b));
}

template <class Op>
std::vector<ValueType> binary_infer(const Eqn& eqn, std::span<const ValueType> in,
                                    const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  if (in[0].dtype != in[1].dtype) {
    fail(eqn.primitive + " requires arguments to have the same dtypes, got " +
         dtype_word(in[0].dtype) + ", " + dtype_word(in[1].dtype));
  }
  check_dtype(eqn, in[0].dtype, Op::kDtypes);
  return {make_type(Op::kCompare ? DType::kBool : in[0].dtype,
                    broadcast_shapes(eqn, in[0].shape, in[1].shape))};
}

// out[i] = f(a[ia], b[ib]) over `out` with each operand broadcast by its strides (0 on a size-1
// dimension or everywhere for a scalar).
template <class F>
void broadcast_loop(const Shape& out, const Shape& as, const float* a, const Shape& bs,
                    const float* b, float* o, F f) {
  const std::size_t n = shape_size(out);
  if (as == out && bs == out) {
    for (std::size_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
    return;
  }
  if (as.empty() && bs == out) {
    const float s = a[0];
    for (std::size_t i = 0; i < n; ++i) o[i] = f(s, b[i]);
    return;
  }
  if (bs.empty() && as == out) {
    const float s = b[0];
    for (std::size_t i = 0; i < n; ++i) o[i] = f(a[i], s);
    return;
  }
  if (n == 0) return;
  const std::size_t rank = out.size();
  auto strides = [&](const Shape& s) {
    std::vector<std::int64_t> st(rank, 0);
    if (s.empty()) return st;
    std::int64_t m = 1;
    for (std::size_t i = rank; i-- > 0;) {
      st[i] = s[i] == 1 ? 0 : m;
      m *= static_cast<std::int64_t>(s[i]);
    }
    return st;
  };
  const std::vector<std::int64_t> sa = strides(as), sb = strides(bs);
  const std::size_t inner = out[rank - 1];
  const std::int64_t ia = sa[rank - 1], ib = sb[rank - 1];
  std::vector<std::size_t> idx(rank, 0);
  std::int64_t oa = 0, ob = 0;
  for (std::size_t base = 0; base < n; base += inner) {
    const float* pa = a + oa;
    const float* pb = b + ob;
    float* po = o + base;
    if (ia == 1 && ib == 1) {
      for (std::size_t j = 0; j < inner; ++j) po[j] = f(pa[j], pb[j]);
    } else if (ia == 1 && ib == 0) {
      for (std::size_t j = 0; j < inner; ++j) po[j] = f(pa[j], pb[0]);
    } else if (ia == 0 && ib == 1) {
      for (std::size_t j = 0; j < inner; ++j) po[j] = f(pa[0], pb[j]);
    } else {
      for (std::size_t j = 0; j < inner; ++j) po[j] = f(pa[0], pb[0]);
    }
    for (std::size_t k = rank - 1; k-- > 0;) {
      if (++idx[k] < out[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * static_cast<std::int64_t>(idx[k] - 1);
      ob -= sb[k] * static_cast<std::int64_t>(idx[k] - 1);
      idx[k] = 0;
    }
  }
}

template <class Op>
std::vector<Value> binary_eval(const Eqn& eqn, std::span<Value* const> in,
                               std::span<const bool> owned, PrimContext&) {
  const Value& a = *in[0];
  const Value& b = *in[1];
  const Shape shape = broadcast_shapes(eqn, a.t.shape, b.t.shape);
  const DType dtype = Op::kCompare ? DType::kBool : a.dtype;
  const bool integer = Op::kInt && !is_float(a.dtype);
  // The buffer: an owned operand of the output's shape (reading it while writing is safe: each
  // output element reads that operand at its own index only).
  float* o = nullptr;
  Tensor fresh;
  int reuse = -1;
  if (owned[0] && a.t.shape == shape) {
    reuse = 0;
  } else if (owned[1] && b.t.shape == shape) {
    reuse = 1;
  } else {
    fresh = Tensor(shape);
  }
  o = reuse < 0 ? fresh.data.data() : in[static_cast<std::size_t>(reuse)]->t.data.data();
  if (integer) {
    bool out_of_range = false;
    // i8 ... u16 wrap, as XLA's (issue #49); i32 is refused beyond 2^24.
    float (*wrap)(std::int64_t) = is_narrow(dtype) ? dtype_info(dtype).wrap : nullptr;
    broadcast_loop(shape, a.t.shape, a.t.data.data(), b.t.shape, b.t.data.data(), o,
                   [&](float x, float y) {
                     const std::int64_t r = Op::i(to_i(x), to_i(y));
                     if (wrap != nullptr) return wrap(r);
                     if (r > kMaxInt || r < -kMaxInt) out_of_range = true;
                     return static_cast<float>(r);
                   });
    if (out_of_range)
      fail(eqn.primitive + ": an integer result is beyond 2^24, which meshrun holds exactly");
  } else if (std::is_same_v<Op, Div> && dtype == DType::kF32 && b.t.shape != shape) {
    broadcast_loop(shape, a.t.shape, a.t.data.data(), b.t.shape, b.t.data.data(), o,
                   [](float x, float y) { return div_by_broadcast(x, y); });
  } else {
    broadcast_loop(shape, a.t.shape, a.t.data.data(), b.t.shape, b.t.data.data(), o,
                   [](float x, float y) { return Op::f(x, y); });
  }
  std::vector<Value> r;
  if (reuse < 0) {
    r.emplace_back(dtype, std::move(fresh));
  } else {
    r.emplace_back(dtype, std::move(in[static_cast<std::size_t>(reuse)]->t));
  }
  return r;
}

template <class Op>
constexpr Primitive binary() {
  return {&binary_infer<Op>, &binary_eval<Op>};
}

}  // namespace

std::span<const Entry> elementwise_entries() {
  static const Entry kEntries[] = {
      {"add", fusable(binary<Add>(), &fused_binary<Add>, 2)},
      {"add_any", fusable(binary<Add>(), &fused_binary<Add>, 2)},
      {"sub", fusable(binary<Sub>(), &fused_binary<Sub>, 2)},
      {"mul", fusable(binary<Mul>(), &fused_binary<Mul>, 2)},
      {"div", fusable(binary<Div>(), &fused_div, 2)},
      {"rem", binary<Rem>()},
      {"pow", fusable(binary<Pow>(), &fused_binary<Pow>, 2)},
      {"max", fusable(binary<Max>(), &fused_binary<Max>, 2)},
      {"min", fusable(binary<Min>(), &fused_binary<Min>, 2)},
      {"atan2", binary<Atan2>()},
      {"nextafter", binary<NextAfter>()},
      {"and", binary<And>()},
      {"or", binary<Or>()},
      {"xor", binary<Xor>()},
      {"eq", binary<Eq>()},
      {"ne", binary<Ne>()},
      {"lt", binary<Lt>()},
      {"le", binary<Le>()},
      {"gt", binary<Gt>()},
      {"ge", binary<Ge>()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
