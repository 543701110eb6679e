// The elementwise primitives: binary arithmetic with JAX's broadcasting, comparisons, unary math.
// Each op is a functor instantiated into its own contiguous loop (no per-element dispatch), and
// the output takes an owned operand's buffer when the shapes allow.
//
// float32 as XLA:CPU computes it: + - * / sqrt are IEEE (correctly rounded, as here). exp, log,
// log1p, expm1, tanh, logistic, erf, sin, cos, pow, cbrt, atan2 run on the C library in float;
// XLA:CPU uses its own polynomial approximations for several of them, so those results may differ
// from JAX's in the last bits. max/min are IEEE 754-2019 maximum/minimum, as JAX's: NaN propagates
// and -0 < +0. i32 and bool values are held as floats; integer ops run on their int64 values and
// refuse a result beyond 2^24.
#include <cmath>
#include <cstdint>
#include <limits>

#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

enum : unsigned { kF = 1, kI = 2, kB = 4, kNum = kF | kI, kAny = kF | kI | kB };

unsigned bit(DType t) {
  switch (t) {
    case DType::kF32:
      return kF;
    case DType::kI32:
      return kI;
    case DType::kBool:
      return kB;
  }
  return 0;
}

void check_dtype(const Eqn& eqn, DType t, unsigned allowed) {
  if ((bit(t) & allowed) == 0) {
    fail(eqn.primitive + " does not accept dtype " + dtype_word(t));
  }
}

float fmax_ieee(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float fmin_ieee(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

std::int64_t to_i(float v) { return static_cast<std::int64_t>(v); }

// ---- binary ----

// Each: kDtypes, kCompare (-> bool), kInt (an integer path differs from the float one), f, i.
struct Add {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return a + b; }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a + b; }
};
struct Sub {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return a - b; }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a - b; }
};
struct Mul {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return a * b; }
  static std::int64_t i(std::int64_t a, std::int64_t b) { return a * b; }
};
struct Div {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return a / b; }
  // XLA: truncation toward zero; x / 0 is -1.
  static std::int64_t i(std::int64_t a, std::int64_t b) { return b == 0 ? -1 : a / b; }
};
struct Rem {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return std::fmod(a, b); }
  // XLA: the sign of the dividend; x % 0 is x.
  static std::int64_t i(std::int64_t a, std::int64_t b) { return b == 0 ? a : a % b; }
};
struct Pow {
  static constexpr unsigned kDtypes = kNum;
  static constexpr bool kCompare = false, kInt = true;
  static float f(float a, float b) { return std::pow(a, b); }
  static std::int64_t i(std::int64_t a, std::int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
    std::int64_t r = 1;
    for (std::int64_t k = 0; k < b; ++k) {
      r *= a;
      if (r > kMaxInt || r < -kMaxInt) return r;  // refused by the caller
    }
    return r;
  }
};
struct Max {
  static constexpr unsigned kDtypes = kAny;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return fmax_ieee(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
struct Min {
  static constexpr unsigned kDtypes = kAny;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return fmin_ieee(a, b); }
  static std::int64_t i(std::int64_t, std::int64_t) { return 0; }
};
struct Atan2 {
  static constexpr unsigned kDtypes = kF;
  static constexpr bool kCompare = false, kInt = false;
  static float f(float a, float b) { return std::atan2(a, b); }
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
  const bool integer = Op::kInt && a.dtype != DType::kF32;
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
    broadcast_loop(shape, a.t.shape, a.t.data.data(), b.t.shape, b.t.data.data(), o,
                   [&](float x, float y) {
                     const std::int64_t r = Op::i(to_i(x), to_i(y));
                     if (r > kMaxInt || r < -kMaxInt) out_of_range = true;
                     return static_cast<float>(r);
                   });
    if (out_of_range)
      fail(eqn.primitive + ": an integer result is beyond 2^24, which meshrun holds exactly");
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

// ---- unary ----

enum class UOut { kSame, kBool };

template <class Op>
std::vector<ValueType> unary_infer(const Eqn& eqn, std::span<const ValueType> in,
                                   const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_dtype(eqn, in[0].dtype, Op::kDtypes);
  return {make_type(Op::kOut == UOut::kBool ? DType::kBool : in[0].dtype, in[0].shape)};
}

template <class Op>
std::vector<Value> unary_eval(const Eqn& eqn, std::span<Value* const> in,
                              std::span<const bool> owned, PrimContext&) {
  const Value& a = *in[0];
  const DType dtype = Op::kOut == UOut::kBool ? DType::kBool : a.dtype;
  const std::size_t n = a.t.size();
  const float* x = a.t.data.data();
  Value out = owned[0] ? Value(dtype, std::move(in[0]->t)) : Value(dtype, Tensor(a.t.shape));
  float* o = out.t.data.data();
  // (moved when owned: a vector's move keeps its storage, so x and o are then the same array)
  if (Op::kInt && a.dtype != DType::kF32) {
    for (std::size_t i = 0; i < n; ++i) o[i] = int_result(Op::i(to_i(x[i])), eqn);
  } else {
    for (std::size_t i = 0; i < n; ++i) o[i] = Op::f(x[i]);
  }
  std::vector<Value> r;
  r.push_back(std::move(out));
  return r;
}

#define MESHRUN_UNARY(Name, dtypes, out, int_path, fexpr, iexpr)             \
  struct Name {                                                              \
    static constexpr unsigned kDtypes = dtypes;                              \
    static constexpr UOut kOut = out;                                        \
    static constexpr bool kInt = int_path;                                   \
    static float f([[maybe_unused]] float a) { return fexpr; }               \
    static std::int64_t i([[maybe_unused]] std::int64_t a) { return iexpr; } \
  };
MESHRUN_UNARY(Neg, kNum, UOut::kSame, true, -a, -a)
MESHRUN_UNARY(Abs, kNum, UOut::kSame, true, std::fabs(a), a < 0 ? -a : a)
MESHRUN_UNARY(Sign, kNum, UOut::kSame, false,
              std::isnan(a) ? a
              : a > 0       ? 1.0f
              : a < 0       ? -1.0f
                            : a,
              0)
MESHRUN_UNARY(Exp, kF, UOut::kSame, false, std::exp(a), 0)
MESHRUN_UNARY(Exp2, kF, UOut::kSame, false, std::exp2(a), 0)
MESHRUN_UNARY(Log, kF, UOut::kSame, false, std::log(a), 0)
MESHRUN_UNARY(Log1p, kF, UOut::kSame, false, std::log1p(a), 0)
MESHRUN_UNARY(Expm1, kF, UOut::kSame, false, std::expm1(a), 0)
MESHRUN_UNARY(Tanh, kF, UOut::kSame, false, std::tanh(a), 0)
// XLA expands logistic to 1 / (1 + exp(-x)).
MESHRUN_UNARY(Logistic, kF, UOut::kSame, false, 1.0f / (1.0f + std::exp(-a)), 0)
MESHRUN_UNARY(Erf, kF, UOut::kSame, false, std::erf(a), 0)
MESHRUN_UNARY(Sqrt, kF, UOut::kSame, false, std::sqrt(a), 0)
MESHRUN_UNARY(Rsqrt, kF, UOut::kSame, false, 1.0f / std::sqrt(a), 0)
MESHRUN_UNARY(Cbrt, kF, UOut::kSame, false, std::cbrt(a), 0)
MESHRUN_UNARY(Square, kNum, UOut::kSame, true, a* a, a* a)
MESHRUN_UNARY(Sin, kF, UOut::kSame, false, std::sin(a), 0)
MESHRUN_UNARY(Cos, kF, UOut::kSame, false, std::cos(a), 0)
MESHRUN_UNARY(Floor, kF, UOut::kSame, false, std::floor(a), 0)
MESHRUN_UNARY(Ceil, kF, UOut::kSame, false, std::ceil(a), 0)
MESHRUN_UNARY(IsFinite, kF, UOut::kBool, false, std::isfinite(a) ? 1.0f : 0.0f, 0)
// not: logical on bool, bitwise (~a = -a - 1) on i32.
MESHRUN_UNARY(Not, kI | kB, UOut::kSame, true, 0, 0)
#undef MESHRUN_UNARY

// not needs the dtype: bool 1 - a, i32 ~a.
std::vector<Value> not_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                            PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  const bool logical = out.dtype == DType::kBool;
  for (float& v : out.t.data) v = logical ? 1.0f - v : int_result(-to_i(v) - 1, eqn);
  std::vector<Value> r;
  r.push_back(std::move(out));
  return r;
}

// XLA's ErfInv for float32 (Giles' single-precision approximation), unfused; erf_inv(+-1) is
// +-inf, as JAX 0.10.2 gives.
float erf_inv(float x) {
  static constexpr float kLt5[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                    -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                    -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kGe5[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                    0.00943887047f,   1.00167406f,     2.83297682f};
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  float w = -std::log1p(-x * x);
  const bool lt = w < 5.0f;
  const float* c = lt ? kLt5 : kGe5;
  w = lt ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = c[i] + p * w;
  return p * x;
}
struct ErfInv {
  static constexpr unsigned kDtypes = kF;
  static constexpr UOut kOut = UOut::kSame;
  static constexpr bool kInt = false;
  static float f(float a) { return erf_inv(a); }
  static std::int64_t i(std::int64_t) { return 0; }
};

struct AnyType {
  static constexpr unsigned kDtypes = kAny;
  static constexpr UOut kOut = UOut::kSame;
};

std::vector<Value> identity_eval(const Eqn&, std::span<Value* const> in,
                                 std::span<const bool> owned, PrimContext&) {
  std::vector<Value> r;
  r.push_back(pass_through(in[0], owned[0]));
  return r;
}

template <class Op>
constexpr Primitive binary() {
  return {&binary_infer<Op>, &binary_eval<Op>};
}
template <class Op>
constexpr Primitive unary() {
  return {&unary_infer<Op>, &unary_eval<Op>};
}

}  // namespace

std::span<const Entry> elementwise_entries() {
  static const Entry kEntries[] = {
      {"add", binary<Add>()},
      {"add_any", binary<Add>()},
      {"sub", binary<Sub>()},
      {"mul", binary<Mul>()},
      {"div", binary<Div>()},
      {"rem", binary<Rem>()},
      {"pow", binary<Pow>()},
      {"max", binary<Max>()},
      {"min", binary<Min>()},
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
      {"neg", unary<Neg>()},
      {"abs", unary<Abs>()},
      {"sign", unary<Sign>()},
      {"exp", unary<Exp>()},
      {"exp2", unary<Exp2>()},
      {"log", unary<Log>()},
      {"log1p", unary<Log1p>()},
      {"expm1", unary<Expm1>()},
      {"tanh", unary<Tanh>()},
      {"logistic", unary<Logistic>()},
      {"erf", unary<Erf>()},
      {"erf_inv", unary<ErfInv>()},
      {"sqrt", unary<Sqrt>()},
      {"rsqrt", unary<Rsqrt>()},
      {"cbrt", unary<Cbrt>()},
      {"square", unary<Square>()},
      {"sin", unary<Sin>()},
      {"cos", unary<Cos>()},
      {"floor", unary<Floor>()},
      {"ceil", unary<Ceil>()},
      {"is_finite", unary<IsFinite>()},
      {"not", {&unary_infer<Not>, &not_eval}},
      {"stop_gradient", {&unary_infer<AnyType>, &identity_eval}},
      {"copy", {&unary_infer<AnyType>, &identity_eval}},
      {"copy_p", {&unary_infer<AnyType>, &identity_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
