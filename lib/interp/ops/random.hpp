// Issue #49, jax.random: the Threefry-2x32 hash of 20 rounds, as JAX computes it
// (jax/_src/random/threefry2x32.py, _threefry2x32_lowering) -- the primitive threefry2x32 and
// everything JAX's default PRNG (impl "fry") builds from it: random_seed, random_split,
// random_fold_in, random_bits (ops/random.cpp).
#pragma once

#include <array>
#include <cstdint>

namespace meshrun::interp {

// The two words of threefry2x32(key, (x0, x1)).
std::array<std::uint32_t, 2> threefry2x32(std::uint32_t k0, std::uint32_t k1, std::uint32_t x0,
                                          std::uint32_t x1);

}  // namespace meshrun::interp
