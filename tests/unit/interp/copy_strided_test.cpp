// copy_strided (lib/interp/prim_util.hpp), through which transpose, broadcast_in_dim, slices and
// the collectives' chunks move data, against an element-by-element copy written here.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "interp/prim_util.hpp"

using namespace meshrun;
using namespace meshrun::interp;

// copy_strided (transpose, broadcast_in_dim, slices and the collectives' chunks all move data
// through it) against a plain odometer written here: ranks 1-4, dimensions past its 16 x 16 tiles,
// permuted source strides (transposes), a reversed axis (negative stride), broadcast axes (stride
// 0), and a destination laid out permuted as well.
BOOST_AUTO_TEST_CASE(copy_strided_equals_an_element_by_element_copy) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> dim(0, 40), rank_of(1, 4), coin(0, 3);
  for (int trial = 0; trial < 300; ++trial) {
    const auto rank = static_cast<std::size_t>(rank_of(rng));
    Shape shape(rank);
    for (auto& d : shape) d = static_cast<std::size_t>(trial % 50 == 0 ? 0 : dim(rng) % 21 + 1);
    if (trial % 7 == 0) shape[rank - 1] = 37;  // past two tiles
    // The source: a dense array laid out in a random order of the axes, then per axis reversed
    // (start at its end, negative stride) or broadcast (stride 0) now and then.
    std::vector<std::size_t> order(rank);
    for (std::size_t i = 0; i < rank; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::int64_t> ss(rank), ds(rank);
    std::int64_t m = 1;
    for (std::size_t k = rank; k-- > 0;) {
      ss[order[k]] = m;
      m *= static_cast<std::int64_t>(shape[order[k]]);
    }
    std::vector<float> src(static_cast<std::size_t>(std::max<std::int64_t>(m, 1)));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) + 0.5f;
    std::int64_t base = 0;
    for (std::size_t a = 0; a < rank; ++a) {
      const int c = coin(rng);
      if (c == 0 && shape[a] > 0) {  // reversed
        base += ss[a] * static_cast<std::int64_t>(shape[a] - 1);
        ss[a] = -ss[a];
      } else if (c == 1) {
        ss[a] = 0;  // broadcast
      }
    }
    // The destination: row-major or permuted too.
    std::shuffle(order.begin(), order.end(), rng);
    if (coin(rng) < 2) std::sort(order.begin(), order.end());
    m = 1;
    for (std::size_t k = rank; k-- > 0;) {
      ds[order[k]] = m;
      m *= static_cast<std::int64_t>(shape[order[k]]);
    }
    const std::size_t n = shape_size(shape);
    std::vector<float> got(n, -1.0f), want(n, -1.0f);
    std::vector<std::size_t> idx(rank, 0);
    for (std::size_t e = 0; e < n; ++e) {
      std::int64_t so = base, dof = 0;
      for (std::size_t a = 0; a < rank; ++a) {
        so += ss[a] * static_cast<std::int64_t>(idx[a]);
        dof += ds[a] * static_cast<std::int64_t>(idx[a]);
      }
      want[static_cast<std::size_t>(dof)] = src[static_cast<std::size_t>(so)];
      for (std::size_t a = rank; a-- > 0;) {
        if (++idx[a] < shape[a]) break;
        idx[a] = 0;
      }
    }
    prim::copy_strided(shape, src.data() + base, ss, got.data(), ds);
    BOOST_TEST((got == want), "trial " << trial << " rank " << rank);
  }
}
