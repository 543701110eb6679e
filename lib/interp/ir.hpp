// The program file in memory: what `jax.make_jaxpr` holds, read from a meshrun-program file
// (docs/program-format.md) and checked by reader.cpp. Nothing here evaluates anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "interp/dims.hpp"
#include "shard/mesh_shape.hpp"
#include "shard/partition_spec.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

// Every dtype is held as float32 (value.hpp). The ones after kBool (issue #49, dtypes) are those
// whose every value float32 holds exactly: bfloat16 and float16, int8, uint8, int16, uint16.
// kU32 (issue #49, jax.random): uint32, whose float32 slot holds its 32 bits (memcpy'd), not its
// value -- copies keep it exactly; the primitives that compute on it work on the bits
// (ops/uint32.cpp), every other refuses it before a run.
enum class DType : std::uint8_t { kF32, kI32, kBool, kBF16, kF16, kI8, kU8, kI16, kU16, kU32 };
// "f32", "i32", "bool", "bf16", ...: JAX's jaxpr names.
const char* dtype_name(DType t);
// nullopt-like: false when `name` is not one of them.
bool parse_dtype(const std::string& name, DType* out);

// One dtype, as one entry of a table (ir.cpp's kDTypes): everything the primitives need to know
// of it, so that no kernel switches on the dtype. A primitive computes exactly (or in float32
// where XLA:CPU does: it upcasts bf16 and f16 to f32 per op), then `fit` brings the result back.
enum class DKind : std::uint8_t { kFloat, kSigned, kUnsigned, kBool };
struct DTypeInfo {
  DType dtype;
  const char* name;  // "bf16": the jaxpr's
  const char* word;  // "bfloat16": numpy's, for messages
  int bits;
  DKind kind;
  // A result computed in float32 into the dtype: rounded to nearest even for bf16 and f16 (their
  // overflow to inf, NaN a quiet NaN, f16's subnormals), on the bits as XLA:CPU's convert; the
  // integer it holds wrapped modulo 2^bits for i8 ... u16; itself for f32 and i32; v != 0 for bool.
  float (*fit)(float v);
  // An integer result computed exactly (in int64) into the dtype: wrapped for i8 ... u16; i32's
  // range is checked where it is computed (int_result); v != 0 for bool.
  float (*wrap)(std::int64_t v);
};
const DTypeInfo& dtype_info(DType t);
// One of the dtypes after kBool (issue #49): the primitives that accept them are listed by
// narrow_dtype_support (primitives.hpp); every other equation on them is refused before a run.
inline bool is_narrow(DType t) { return t > DType::kBool; }
// uint32, held as its bits (DType::kU32): the float32 holding `u`'s bits, and back.
float u32_to_slot(std::uint32_t u);
std::uint32_t slot_to_u32(float slot);
// Whether v is a value of dtype t: for a float dtype, the float32 nearest v is one of its values
// (inf and NaN included); for an integer one, v is an integer the dtype holds (i32: |v| <= 2^24;
// u32: 0 <= v < 2^32, a literal's or a constant's value, held as its bits).
bool holds_value(DType t, double v);

// A value's type once the dimensions are bound.
struct ValueType {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const ValueType&) const = default;
};
// "f32[4,2]", "i32[]", "bool[3]" -- JAX's notation.
std::string type_str(const ValueType& t);

// A declared type: dims may be expressions.
struct Type {
  DType dtype = DType::kF32;
  std::vector<DimExpr> shape;
};

// An operand: a variable of the enclosing jaxpr, or a literal scalar.
struct Atom {
  int var = -1;  // >= 0: a variable's index in its Jaxpr
  double literal = 0;
  DType dtype = DType::kF32;
  bool is_literal() const { return var < 0; }
};

struct Jaxpr;

// The primitives whose equation holds a jaxpr the evaluator runs itself (their registry entries,
// primitives.hpp's holds_jaxpr): the param that holds it ("jaxpr" for jit, pjit and shard_map,
// "call_jaxpr" for custom_jvp_call and custom_vjp_call, whose primal it is), or nullptr.
const char* nested_jaxpr_param(const std::string& primitive);
// Whether param `key` of `primitive` holds a jaxpr (or, for cond's `branches`, a list of them).
bool holds_jaxpr_param(const std::string& primitive, const std::string& key);
// jit, pjit, custom_jvp/vjp calls, checkpoint, closed_call and call, which the evaluator inlines
// (not shard_map, nor scan, while and cond: the other holders of a jaxpr).
bool is_call(const std::string& primitive);

struct Eqn {
  std::string primitive;
  nlohmann::json params;  // as in the file, nested jaxprs replaced by null (they are in `subs`)
  // Nested jaxprs by param name ("jaxpr", "call_jaxpr").
  std::vector<std::pair<std::string, std::shared_ptr<const Jaxpr>>> subs;
  std::vector<Atom> in;
  std::vector<int> out;  // variables it defines
  std::string where;     // "exports[0].jaxpr.eqns[3]": for messages
  std::string source;    // JAX's source line, may be empty
  // Variables whose last use (in this jaxpr) is this equation: released after it runs.
  std::vector<int> last_use;
  // Issue #49: a bf16 result XLA:CPU leaves in float32 (kUnrounded: every use converts it
  // to f32, and XLA folds its f32 -> bf16 -> f32 convert pair), or one meshrun refuses
  // (kRefused); set by mark_narrow_uses (primitives.hpp).
  enum class NarrowUse : std::uint8_t { kRounded, kUnrounded, kRefused } narrow_use{};

  const Jaxpr* sub(const std::string& name) const;
  // Every nested jaxpr of param `name`, in order (cond's branches; one for any other).
  std::vector<const Jaxpr*> subs_of(const std::string& name) const;
  // "exports[0].jaxpr.eqns[3] (dot_general at prog.py:14)"
  std::string place() const;
};

struct Const {
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<float> data;  // i32 and bool held as floats (exact to 2^24)
};

struct Jaxpr {
  std::vector<Type> types;  // per variable index
  std::vector<int> invars, constvars;
  std::vector<Const> consts;  // per constvar
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;
  std::string where;  // "exports[0].jaxpr"
};

// An operand's or result's dtype and rank: a literal's own (rank 0), else its variable's.
inline DType dtype_of(const Jaxpr& jx, const Atom& a) {
  return a.is_literal() ? a.dtype : jx.types[static_cast<std::size_t>(a.var)].dtype;
}
inline std::size_t rank_of(const Jaxpr& jx, const Atom& a) {
  return a.is_literal() ? 0 : jx.types[static_cast<std::size_t>(a.var)].shape.size();
}

// Sets each equation's last_use: the variables it uses for the last time in `jx` (never an
// outvar, which lives to the end).
void mark_last_uses(Jaxpr& jx);

// The axis of the one-device mesh an export of no mesh (`"mesh": []`, a program with no
// shard_map) runs on.
inline constexpr const char* kNoMeshAxis = "device";

struct Export {
  MeshShape mesh;
  std::vector<std::string> dims;
  Jaxpr jaxpr;
  std::string where;  // "exports[0]"
};

struct ArgInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::string> shape;  // by dimension name, as the case reader checks
};

struct ProgramFile {
  std::string path;  // as given, for messages
  std::string name;
  std::string exercise;  // "" when the file names none
  std::vector<ArgInfo> inputs, outputs;
  std::vector<Export> exports;
};

}  // namespace meshrun::interp
