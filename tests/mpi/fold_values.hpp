// Inputs for the cross-rank collective tests: floats whose sums are not exact (full mantissa,
// exponents 2^-6..2^6), so the order of a fold changes its bits; a pure function of (device,
// element, salt), known on every rank without sending it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace meshrun::testing {

inline float value(int device, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (static_cast<std::uint64_t>(device) << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ salt;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  const float m = 1.0f + static_cast<float>(x >> 40) / static_cast<float>(1ull << 24);
  const float v = std::ldexp(m, static_cast<int>((x >> 8) % 13) - 6);
  return (x & 1) ? -v : v;
}

inline std::vector<float> input(int device, std::size_t count, std::uint64_t salt) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = value(device, i, salt);
  return v;
}

}  // namespace meshrun::testing
