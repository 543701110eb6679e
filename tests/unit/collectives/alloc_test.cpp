// "No heap allocation per call after warm-up": every collective on both engine paths, through the
// Communicator and through Device's in-place psum/pmean, is counted by a replaced global operator
// new (and malloc is not used by the engine). Warm-up calls may grow the staging buffers; the
// counted calls after them must allocate nothing.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <thread>
#include <cstdlib>
#include <new>
#include <vector>

#include "mesh/mesh.hpp"

namespace {
std::atomic<long> g_news{0};
}  // namespace

namespace {
// Fault injection: when >= 0, this thread's allocation that many from now throws bad_alloc.
thread_local long t_fail_in = -1;
}  // namespace

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (t_fail_in >= 0 && t_fail_in-- == 0) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Out of line, so GCC does not see the pointers operator new returned reach free() (a false
// -Wmismatched-new-delete).
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }
void operator delete(void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }

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

// An allocation that fails in Mesh::run on the calling thread -- setting up the run, starting a
// device thread (its state), explaining an error -- fails that run or not, but never leaves the
// mesh hung: the run returns, the mesh runs again correctly, and ~Mesh returns. Every allocation
// of the run is failed in turn, with threads that end with each run (so every run starts them)
// and with parked ones. A hang is reported after 60 s, and the process ends rather than wait.
BOOST_AUTO_TEST_CASE(an_allocation_failure_in_run_never_hangs_the_mesh) {
  for (bool keep_threads : {false, true}) {
    std::promise<std::string> result;
    std::future<std::string> finished = result.get_future();
    std::thread trials([&result, keep_threads] {
      std::string problems;
      MeshOptions o;
      o.keep_threads = keep_threads;
      o.timeout = std::chrono::milliseconds(2000);
      auto sum_on_every_device = [](Mesh& mesh) {
        std::atomic<int> right{0};
        mesh.run([&](Device& dev) {
          std::vector<float> v(3, static_cast<float>(dev.index() + 1));
          dev.psum_inplace(v, "data");
          if (v[0] == 10.0f && v[2] == 10.0f) right.fetch_add(1);  // 1 + 2 + 3 + 4
        });
        return right.load() == mesh.size();
      };
      int failed_runs = 0;
      for (long k = 0; k < 200; ++k) {
        Mesh mesh(4, "data", o);
        if (!sum_on_every_device(mesh)) problems += "first run wrong; ";
        t_fail_in = k;
        try {
          (void)sum_on_every_device(mesh);
        } catch (...) {
          ++failed_runs;
        }
        t_fail_in = -1;
        if (!sum_on_every_device(mesh))
          problems += "run after failing allocation " + std::to_string(k) + " wrong; ";
      }
      if (failed_runs == 0) problems += "no injected failure ever reached a run; ";
      result.set_value(problems);
    });
    if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      std::fprintf(stderr,
                   "alloc_test: the mesh hung after a failed allocation (keep_threads=%d)\n",
                   keep_threads ? 1 : 0);
      std::_Exit(1);
    }
    trials.join();
    const std::string problems = finished.get();
    BOOST_TEST(problems.empty(), "keep_threads=" << keep_threads << ": " << problems);
  }
}
