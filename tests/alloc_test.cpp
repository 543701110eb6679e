// "No heap allocation per call after warm-up": every collective on both engine paths, through the
// Communicator and through Device's in-place psum/pmean, is counted by a replaced global operator
// new (and malloc is not used by the engine). Warm-up calls may grow the staging buffers; the
// counted calls after them must allocate nothing.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "mesh/mesh.hpp"

namespace {
std::atomic<long> g_news{0};
}  // namespace

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace meshrun;

namespace {

// Runs `calls` rounds of every collective with `m` elements per device; returns the allocations
// counted during the last `calls - warmup` rounds (summed over all devices).
long allocations(int n, std::size_t m, int calls, int warmup) {
  Mesh mesh(n, "data");
  std::atomic<long> counted{0};
  mesh.run([&](Device& dev) {
    Communicator& c = dev.comm();
    std::vector<float> in(m, 1.0f), out(m), gathered(m * static_cast<std::size_t>(n)), scattered(m),
        perm_out(m);
    std::vector<float> big(m * static_cast<std::size_t>(n), 1.0f);
    std::vector<int> shift(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) shift[static_cast<std::size_t>(r)] = (r + n - 1) % n;
    long before = 0;
    for (int i = 0; i < calls; ++i) {
      if (i == warmup) before = g_news.load();
      c.all_reduce_sum(in, out);
      c.all_reduce_mean(in, out);
      c.all_gather(in, gathered);
      c.reduce_scatter_sum(big, scattered);
      c.permute(in, perm_out, shift);
      dev.psum_inplace(out, "data");
      dev.pmean_inplace(out, "data");
    }
    // Another device may still be allocating in its warm-up while this one counts: the total is
    // read after a final collective, when every device has passed its own warm-up.
    c.all_reduce_sum(in, out);
    if (dev.index() == 0) counted = g_news.load() - before;
  });
  return counted.load();
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_allocation_per_call_after_warm_up) {
  for (int n : {1, 2, 8}) {
    for (std::size_t m :
         {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 16}) {  // staged and direct
      BOOST_TEST(allocations(n, m, 60, 10) == 0, n << " devices, " << m << " elements");
    }
  }
}

// The counter works: a call that does allocate is seen.
BOOST_AUTO_TEST_CASE(the_counter_sees_allocations) {
  const long before = g_news.load();
  auto* v = new std::vector<float>(10);
  BOOST_TEST(g_news.load() - before >= 2);
  delete v;
}
