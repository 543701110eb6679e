// Issue #49, jax.random inside a program: the primitive threefry2x32 and the key primitives of
// JAX's default PRNG implementation (impl "fry", Threefry-2x32), as JAX 0.10.2 computes them
// (jax/_src/random/threefry2x32.py, with jax_threefry_partitionable, its default):
//
//   threefry2x32 k0 k1 x0 x1 -> (y0, y1): the 20-round hash, elementwise (operands of one shape
//     or rank 0);
//   random_seed[impl=fry] s -> the key (0, s's 32 bits): s >> 32 is 0 for a 32-bit seed;
//   random_wrap[impl=fry], random_unwrap: the key's data as it is;
//   random_split[shape] k -> threefry2x32(k, (hi(i), lo(i))) for each row-major index i of shape,
//     as a key (y0, y1);
//   random_fold_in k m -> threefry2x32(k, (0, m)) as a key;
//   random_bits[bit_width, shape] k -> y0 ^ y1 of threefry2x32(k, (hi(i), lo(i))) (bit_width 32),
//     its low 8 or 16 bits as uint8 / uint16.
//
// A key array key<fry>[S] is a uint32[S, 2] (the exporter writes it so; ir.hpp's kU32 holds the
// bits): the key primitives read and write that trailing pair. Every other PRNG implementation
// (rbg, unsafe_rbg) and bit_width 64 are refused before a run.
#include "interp/ops/random.hpp"

#include <cstdint>
#include <string>

#include "interp/prim_util.hpp"

namespace meshrun::interp {

std::array<std::uint32_t, 2> threefry2x32(std::uint32_t k0, std::uint32_t k1, std::uint32_t x0,
                                          std::uint32_t x1) {
  constexpr std::uint32_t kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const std::uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (std::uint32_t i = 1; i <= 5; ++i) {
    for (const std::uint32_t r : kRot[(i - 1) % 2]) {
      x0 += x1;
      x1 = (x1 << r) | (x1 >> (32 - r));
      x1 ^= x0;
    }
    x0 += ks[i % 3];
    x1 += ks[(i + 1) % 3] + i;
  }
  return {x0, x1};
}

namespace prim {
namespace {

using U = std::uint32_t;
U bits(float s) { return slot_to_u32(s); }
float slot(U u) { return u32_to_slot(u); }

std::size_t count(const Shape& s) {
  std::size_t n = 1;
  for (std::size_t d : s) n *= d;
  return n;
}

void check_impl(const Eqn& eqn) {
  if (!eqn.params.is_object() || !eqn.params.contains("impl")) return;
  const nlohmann::json& impl = eqn.params["impl"];
  if (!impl.is_string() || impl.get<std::string>() != "fry") {
    fail(eqn.primitive + ": PRNG implementation " + impl.dump().substr(0, 40) +
         ": meshrun runs JAX's default, threefry (\"fry\"), only");
  }
}

// A key array: uint32 whose last dimension is 2; its batch shape (the key<fry>'s own).
Shape key_batch(const Eqn& eqn, const ValueType& t, const char* what) {
  if (t.dtype != DType::kU32 || t.shape.empty() || t.shape.back() != 2) {
    fail(eqn.primitive + ": " + what +
         " must be a key array (uint32 with a last dimension of 2), "
         "got " +
         type_str(t));
  }
  return Shape(t.shape.begin(), t.shape.end() - 1);
}

Shape with_pair(Shape s) {
  s.push_back(2);
  return s;
}

// ---- threefry2x32
Types threefry_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 4);
  Shape s;
  for (const ValueType& t : in) {
    if (t.dtype != DType::kU32)
      fail("Arguments to threefry2x32 must have uint32 type, got " +
           std::string(dtype_word(t.dtype)));
    if (t.shape.empty()) continue;
    if (!s.empty() && s != t.shape)
      fail("threefry2x32 requires arguments of the same shape, got " + dims_str(s) + ", " +
           dims_str(t.shape));
    s = t.shape;
  }
  return {make_type(DType::kU32, s), make_type(DType::kU32, s)};
}

Values threefry_eval(const Eqn&, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  Shape s;
  for (const Value* v : in)
    if (!v->t.shape.empty()) s = v->t.shape;
  Value y0(DType::kU32, Tensor(s)), y1(DType::kU32, Tensor(s));
  const std::size_t n = y0.t.size();
  const auto at = [&](int k, std::size_t i) {
    const Value& v = *in[static_cast<std::size_t>(k)];
    return bits(v.t.data[v.t.shape.empty() ? 0 : i]);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto y = threefry2x32(at(0, i), at(1, i), at(2, i), at(3, i));
    y0.t.data[i] = slot(y[0]);
    y1.t.data[i] = slot(y[1]);
  }
  Values out;
  out.push_back(std::move(y0));
  out.push_back(std::move(y1));
  return out;
}

// ---- random_seed: (0, the seed's 32 bits)
Types seed_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_impl(eqn);
  if (in[0].dtype != DType::kI32 && in[0].dtype != DType::kU32)
    fail(std::string("random_seed: a seed must be int32 or uint32, got ") +
         dtype_word(in[0].dtype));
  return {make_type(DType::kU32, with_pair(in[0].shape))};
}

Values seed_eval(const Eqn&, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& s = *in[0];
  Value out(DType::kU32, Tensor(with_pair(s.t.shape)));
  for (std::size_t i = 0; i < s.t.size(); ++i) {
    const float v = s.t.data[i];
    const U u = s.dtype == DType::kU32
                    ? bits(v)
                    : static_cast<U>(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
    out.t.data[2 * i] = slot(0);
    out.t.data[2 * i + 1] = slot(u);
  }
  return one(std::move(out));
}

// ---- random_wrap, random_unwrap: the key's data
Types wrap_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1);
  check_impl(eqn);
  key_batch(eqn, in[0], "its operand");
  return {in[0]};
}

Values wrap_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                 PrimContext&) {
  return one(pass_through(in[0], owned[0]));
}

// For each row-major index i < n of the counter shape: threefry2x32(key, (i >> 32, i)).
template <typename Out>
void counters(U k0, U k1, std::size_t n, Out out) {
  for (std::size_t i = 0; i < n; ++i) {
    const auto y = threefry2x32(k0, k1, static_cast<U>(static_cast<std::uint64_t>(i) >> 32),
                                static_cast<U>(i));
    out(i, y);
  }
}

// ---- random_split[shape]
Types split_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  Shape s = key_batch(eqn, in[0], "its operand");
  for (std::size_t d : param_shape(eqn, "shape", ctx)) s.push_back(d);
  return {make_type(DType::kU32, with_pair(s))};
}

Values split_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                  PrimContext& ctx) {
  const Value& k = *in[0];
  const std::size_t n = count(param_shape(eqn, "shape", ctx)), keys = k.t.size() / 2;
  Shape s(k.t.shape.begin(), k.t.shape.end() - 1);
  for (std::size_t d : param_shape(eqn, "shape", ctx)) s.push_back(d);
  Value out(DType::kU32, Tensor(with_pair(s)));
  for (std::size_t j = 0; j < keys; ++j) {
    float* o = out.t.data.data() + 2 * n * j;
    counters(bits(k.t.data[2 * j]), bits(k.t.data[2 * j + 1]), n,
             [&](std::size_t i, std::array<U, 2> y) {
               o[2 * i] = slot(y[0]);
               o[2 * i + 1] = slot(y[1]);
             });
  }
  return one(std::move(out));
}

// ---- random_fold_in k m: the key threefry2x32(k, (0, m))
Types fold_in_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 2);
  const Shape keys = key_batch(eqn, in[0], "its first operand");
  if (in[1].dtype != DType::kU32)
    fail(std::string("random_fold_in: the data must be uint32, got ") + dtype_word(in[1].dtype));
  if (!in[1].shape.empty() && !keys.empty() && in[1].shape != keys)
    fail("random_fold_in: keys of shape " + dims_str(keys) + " and data of shape " +
         dims_str(in[1].shape));
  return {make_type(DType::kU32, with_pair(keys.empty() ? in[1].shape : keys))};
}

Values fold_in_eval(const Eqn&, std::span<Value* const> in, std::span<const bool>, PrimContext&) {
  const Value& k = *in[0];
  const Value& m = *in[1];
  const bool one_key = k.t.shape.size() == 1, one_msg = m.t.shape.empty();
  Value out(DType::kU32,
            Tensor(with_pair(one_key ? m.t.shape : Shape(k.t.shape.begin(), k.t.shape.end() - 1))));
  const std::size_t n = out.t.size() / 2;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = one_key ? 0 : i;
    const auto y = threefry2x32(bits(k.t.data[2 * j]), bits(k.t.data[2 * j + 1]), 0,
                                bits(m.t.data[one_msg ? 0 : i]));
    out.t.data[2 * i] = slot(y[0]);
    out.t.data[2 * i + 1] = slot(y[1]);
  }
  return one(std::move(out));
}

// ---- random_bits[bit_width, shape]
DType bits_dtype(const Eqn& eqn) {
  const std::int64_t w = param_int(eqn, "bit_width");
  if (w == 32) return DType::kU32;
  if (w == 16) return DType::kU16;
  if (w == 8) return DType::kU8;
  fail("random_bits of bit_width " + std::to_string(w) + ": meshrun draws 8, 16 and 32 bits");
}

Types bits_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext& ctx) {
  expect_operands(eqn, in.size(), 1);
  Shape s = key_batch(eqn, in[0], "its operand");
  for (std::size_t d : param_shape(eqn, "shape", ctx)) s.push_back(d);
  return {make_type(bits_dtype(eqn), s)};
}

Values bits_eval(const Eqn& eqn, std::span<Value* const> in, std::span<const bool>,
                 PrimContext& ctx) {
  const Value& k = *in[0];
  const DType t = bits_dtype(eqn);
  const Shape shape = param_shape(eqn, "shape", ctx);
  const std::size_t n = count(shape), keys = k.t.size() / 2;
  Shape s(k.t.shape.begin(), k.t.shape.end() - 1);
  s.insert(s.end(), shape.begin(), shape.end());
  Value out(t, Tensor(s));
  for (std::size_t j = 0; j < keys; ++j) {
    float* o = out.t.data.data() + n * j;
    counters(bits(k.t.data[2 * j]), bits(k.t.data[2 * j + 1]), n,
             [&](std::size_t i, std::array<U, 2> y) {
               const U b = y[0] ^ y[1];
               // uint8 and uint16 hold their value (ir.hpp); uint32 its bits
               o[i] = t == DType::kU32   ? slot(b)
                      : t == DType::kU16 ? static_cast<float>(b & 0xffffu)
                                         : static_cast<float>(b & 0xffu);
             });
  }
  return one(std::move(out));
}

}  // namespace

std::span<const Entry> random_entries() {
  static const Entry kEntries[] = {
      {"threefry2x32", {&threefry_infer, &threefry_eval}},
      {"random_seed", {&seed_infer, &seed_eval}},
      {"random_wrap", {&wrap_infer, &wrap_eval}},
      {"random_unwrap", {&wrap_infer, &wrap_eval}},
      {"random_split", {&split_infer, &split_eval}},
      {"random_fold_in", {&fold_in_infer, &fold_in_eval}},
      {"random_bits", {&bits_infer, &bits_eval}},
  };
  return kEntries;
}

}  // namespace prim
}  // namespace meshrun::interp
