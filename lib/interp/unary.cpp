// The unary elementwise primitives: math functions, neg/abs/sign, floor/ceil, is_finite, not, and
// the identities (stop_gradient, copy). Each op is a functor instantiated into one contiguous
// loop; the output takes the operand's buffer when it is owned.
//
// float32 as XLA:CPU computes it: sqrt is IEEE (correctly rounded, as here); exp, exp2, log,
// log1p, expm1, tanh, logistic, erf and erfc are XLA:CPU's own approximations or JAX's expansions
// (scalar_ops.hpp: JAX's bits); sin, cos and cbrt the C library's, which XLA:CPU calls too; rsqrt
// (1 / sqrt, where XLA uses the CPU's estimate) may differ from JAX's in the last bits. i32 ops
// run on the integer values and refuse a result beyond 2^24.
#include <cmath>
#include <cstdint>
#include <limits>

#include "interp/fused_kernels.hpp"
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {

namespace {

std::int64_t to_i(float v) { return static_cast<std::int64_t>(v); }

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
  if (Op::kInt && !is_float(a.dtype)) {
    for (std::size_t i = 0; i < n; ++i) o[i] = int_fit(a.dtype, Op::i(to_i(x[i])), eqn);
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
MESHRUN_UNARY(Neg, kNum, UOut::kSame, true, f32::neg(a), -a)
MESHRUN_UNARY(Abs, kNum, UOut::kSame, true, f32::abs(a), a < 0 ? -a : a)
MESHRUN_UNARY(Sign, kNum, UOut::kSame, false, f32::sign(a), 0)
MESHRUN_UNARY(Exp, kF, UOut::kSame, false, f32::exp(a), 0)
MESHRUN_UNARY(Exp2, kF, UOut::kSame, false, f32::exp2(a), 0)
MESHRUN_UNARY(Log, kF, UOut::kSame, false, f32::log(a), 0)
MESHRUN_UNARY(Log1p, kF, UOut::kSame, false, f32::log1p(a), 0)
MESHRUN_UNARY(Expm1, kF, UOut::kSame, false, f32::expm1(a), 0)
MESHRUN_UNARY(Tanh, kF, UOut::kSame, false, f32::tanh(a), 0)
// logistic: 1 / (1 + exp(-x)), as XLA expands it (scalar_ops.hpp).
MESHRUN_UNARY(Logistic, kF, UOut::kSame, false, f32::logistic(a), 0)
MESHRUN_UNARY(Erf, kF, UOut::kSame, false, f32::erf(a), 0)
// jax.nn.gelu(approximate=False) is x * erfc(-x / sqrt(2)) / 2 (JAX 0.10.2).
MESHRUN_UNARY(Erfc, kF, UOut::kSame, false, f32::erfc(a), 0)
MESHRUN_UNARY(Sqrt, kF, UOut::kSame, false, f32::sqrt(a), 0)
MESHRUN_UNARY(Rsqrt, kF, UOut::kSame, false, f32::rsqrt(a), 0)
MESHRUN_UNARY(Cbrt, kF, UOut::kSame, false, f32::cbrt(a), 0)
MESHRUN_UNARY(Square, kNum, UOut::kSame, true, f32::square(a), a* a)
MESHRUN_UNARY(Sin, kF, UOut::kSame, false, std::sin(a), 0)
MESHRUN_UNARY(Cos, kF, UOut::kSame, false, std::cos(a), 0)
MESHRUN_UNARY(Floor, kF, UOut::kSame, false, std::floor(a), 0)
MESHRUN_UNARY(Ceil, kF, UOut::kSame, false, std::ceil(a), 0)
MESHRUN_UNARY(IsFinite, kF, UOut::kBool, false, std::isfinite(a) ? 1.0f : 0.0f, 0)
// not: logical on bool, bitwise (~a = -a - 1) on i32.
MESHRUN_UNARY(Not, kI | kB, UOut::kSame, true, 0, 0)
#undef MESHRUN_UNARY

// logistic of bf16 and f16: XLA expands it before it upcasts, so each of its ops is one of the
// dtype -- exp(-x), + 1, 1 / -- converted from f32 after each (JAX 0.10.2: bf16 logistic(1.0078125)
// is 0.73046875, where the rounded f32 logistic is 0.734375). float32: unary<Logistic>.
std::vector<Value> logistic_eval(const Eqn& eqn, std::span<Value* const> in,
                                 std::span<const bool> owned, PrimContext& ctx) {
  if (!is_narrow(in[0]->dtype)) return unary_eval<Logistic>(eqn, in, owned, ctx);
  Value out = pass_through(in[0], owned[0]);
  float (*fit)(float) = dtype_info(out.dtype).fit;
  for (float& v : out.t.data) v = fit(f32::div(1.0f, fit(f32::add(fit(f32::exp(-v)), 1.0f))));
  std::vector<Value> r;
  r.push_back(std::move(out));
  return r;
}

// not needs the dtype: bool 1 - a, i32 ~a.
std::vector<Value> not_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool> owned,
                            PrimContext&) {
  Value out = pass_through(in[0], owned[0]);
  const bool logical = out.dtype == DType::kBool;
  for (float& v : out.t.data) v = logical ? 1.0f - v : int_fit(out.dtype, -to_i(v) - 1, eqn);
  std::vector<Value> r;
  r.push_back(std::move(out));
  return r;
}

// XLA's ErfInv for float32 (Giles' single-precision approximation); erf_inv(+-1) is +-inf, as JAX
// 0.10.2 gives. As XLA:CPU's code computes it: its own log1p (scalar_ops.hpp) and the polynomial's
// multiply-adds contracted into FMAs -- JAX's bits on 200007 inputs in (-1, 1) (jax.random's
// normal draws), where the C library's log1p and unfused multiply-adds differed on 4.9% of them.
float erf_inv(float x) {
  static constexpr float kLt5[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                    -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                    -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kGe5[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                    0.00943887047f,   1.00167406f,     2.83297682f};
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  float w = -f32::log1p(-x * x);
  const bool lt = w < 5.0f;
  const float* c = lt ? kLt5 : kGe5;
  w = lt ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = std::fma(p, w, c[i]);
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
constexpr Primitive unary() {
  return {&unary_infer<Op>, &unary_eval<Op>};
}

// Its result is its operand (JAX's identities between elementwise equations).
constexpr Primitive identity() {
  Primitive p{&unary_infer<AnyType>, &identity_eval};
  p.identity = true;
  return p;
}

// Issue #49: XLA expands exp2 to exp(x * ln 2) before it upcasts bf16 and f16, so the product
// (and ln 2) are rounded to the dtype before exp (whose result the evaluator rounds, as every
// op's: ops/narrow_dtypes.cpp). JAX 0.10.2's bits on 2 x 10^4 values of each.
std::vector<Value> exp2_eval(const Eqn& eqn, std::span<Value* const> in,
                             std::span<const bool> owned, PrimContext& ctx) {
  if (!is_narrow(in[0]->dtype)) return unary_eval<Exp2>(eqn, in, owned, ctx);
  float (*fit)(float) = dtype_info(in[0]->dtype).fit;
  const float ln2 = fit(0.693147182f);
  Value out = pass_through(in[0], owned[0]);
  for (float& v : out.t.data) v = f32::exp(fit(ftz(v * ln2)));
  return one(std::move(out));
}

// Issue #49: bf16's expm1 is XLA:CPU's f32 expm1 rounded once (ops/narrow_dtypes.cpp); f16's is
// neither that nor exp - 1 (JAX 0.10.2, 2 x 10^4 values), so it is refused before a run.
std::vector<ValueType> expm1_infer(const Eqn& eqn, std::span<const ValueType> in,
                                   const PrimContext& ctx) {
  if (in.size() == 1 && in[0].dtype == DType::kF16)
    fail(
        "meshrun does not run expm1 on float16: XLA:CPU's f16 expm1 is not its f32 one rounded "
        "(docs/program-format.md, Dtypes)");
  return unary_infer<Expm1>(eqn, in, ctx);
}

}  // namespace

std::span<const Entry> unary_entries() {
  static const Entry kEntries[] = {
      {"neg", fusable(unary<Neg>(), &fused_unary<Neg>, 1)},
      {"abs", fusable(unary<Abs>(), &fused_unary<Abs>, 1)},
      {"sign", fusable(unary<Sign>(), &fused_unary<Sign>, 1)},
      {"exp", fusable(unary<Exp>(), &fused_unary<Exp>, 1)},
      {"exp2", fusable({&unary_infer<Exp2>, &exp2_eval}, &fused_unary<Exp2>, 1)},
      {"log", fusable(unary<Log>(), &fused_unary<Log>, 1)},
      {"log1p", fusable(unary<Log1p>(), &fused_unary<Log1p>, 1)},
      {"expm1", fusable({&expm1_infer, &unary_eval<Expm1>}, &fused_unary<Expm1>, 1)},
      {"tanh", fusable(unary<Tanh>(), &fused_unary<Tanh>, 1)},
      {"logistic", fusable({&unary_infer<Logistic>, &logistic_eval}, &fused_unary<Logistic>, 1)},
      {"erf", fusable(unary<Erf>(), &fused_unary<Erf>, 1)},
      {"erfc", fusable(unary<Erfc>(), &fused_unary<Erfc>, 1)},
      {"erf_inv", unary<ErfInv>()},
      {"sqrt", fusable(unary<Sqrt>(), &fused_unary<Sqrt>, 1)},
      {"rsqrt", fusable(unary<Rsqrt>(), &fused_unary<Rsqrt>, 1)},
      {"cbrt", unary<Cbrt>()},
      {"square", fusable(unary<Square>(), &fused_unary<Square>, 1)},
      {"sin", unary<Sin>()},
      {"cos", unary<Cos>()},
      {"floor", unary<Floor>()},
      {"ceil", unary<Ceil>()},
      {"is_finite", unary<IsFinite>()},
      {"not", {&unary_infer<Not>, &not_eval}},
      {"stop_gradient", identity()},
      {"copy", identity()},
      {"copy_p", identity()},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
