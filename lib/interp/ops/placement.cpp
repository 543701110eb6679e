// The primitives JAX inserts for placement -- `reshard` (every jax.grad of a function holding a
// shard_map on JAX 0.10.2's default mesh), `device_put`, `sharding_constraint`
// (jax.lax.with_sharding_constraint), `mesh_cast`, `sharding_cast` -- and
// `optimization_barrier`, and `name` (jax.ad_checkpoint.checkpoint_name, a tag for remat
// policies): each of its results is its operand's value, whatever layout it asks for. meshrun
// holds a value outside a shard_map whole, so a change of layout there moves no element; the
// optional param `to` (the target sharding as the exporter printed it) is only shown.
// `debug_print` (jax.debug.print) has no result: meshrun runs it as nothing, printing nothing --
// its standard output is the program's result.
#include "interp/prim_util.hpp"

namespace meshrun::interp::prim {
namespace {

Types placement_infer(const Eqn& eqn, std::span<const ValueType> in, const PrimContext&) {
  expect_operands(eqn, in.size(), 1, true);
  return {in.begin(), in.end()};
}

Values placement_eval(const Eqn&, std::span<Value* const> in, std::span<const bool> owned,
                      PrimContext&) {
  Values out;
  for (std::size_t i = 0; i < in.size(); ++i) out.push_back(pass_through(in[i], owned[i]));
  return out;
}

Types debug_print_infer(const Eqn&, std::span<const ValueType>, const PrimContext&) { return {}; }
Values debug_print_eval(const Eqn&, std::span<Value* const>, std::span<const bool>, PrimContext&) {
  return {};
}

constexpr Primitive placement() {
  Primitive p{&placement_infer, &placement_eval};
  p.identity = true;
  return p;
}

}  // namespace

std::span<const Entry> placement_entries() {
  static const Entry kEntries[] = {
      {"reshard", placement()},
      {"device_put", placement()},
      {"sharding_constraint", placement()},
      {"mesh_cast", placement()},
      {"sharding_cast", placement()},
      {"optimization_barrier", placement()},
      {"name", placement()},
      {"debug_print", {&debug_print_infer, &debug_print_eval}},
  };
  return kEntries;
}

}  // namespace meshrun::interp::prim
