// A value the interpreter holds: a dtype and a dense row-major array. Every dtype is stored as
// float32 (i32 and bool exactly, up to 2^24 in magnitude: the reader and the primitives refuse
// larger integers), so the collectives and kernels of lib/tensor take it as it is.
#pragma once

#include <utility>

#include "interp/ir.hpp"
#include "tensor/tensor.hpp"

namespace meshrun::interp {

struct Value {
  DType dtype = DType::kF32;
  Tensor t;
  // An int32 held as its 32 bits in the slot (a uint32's layout), not as its value: a
  // bitcast_convert_type result beyond 2^24 (int32_bits.hpp); only the primitives listed there
  // take it.
  bool bits32 = false;

  Value() = default;
  Value(DType d, Tensor tensor) : dtype(d), t(std::move(tensor)) {}
  ValueType type() const { return {dtype, t.shape}; }
};

}  // namespace meshrun::interp
