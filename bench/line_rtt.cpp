// line_rtt: how long one cache line takes to go from one CPU to another and back, in ns -- two
// threads pinned to the first two CPUs of this process's mask pass a counter back and forth
// 200000 times. On the 2-vCPU KVM AMD EPYC of bench/README.md it reads about 110 ns or about
// 440 ns, depending on where the host placed the two vCPUs at that moment; the in-process
// all-reduce's small sizes move with it (issue #32.4), so issue32_rows.sh prints it beside
// every round.
//
//   ./line_rtt        prints one number (ns); exit 2 with fewer than two usable CPUs
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {
alignas(64) std::atomic<int> ping{0};
alignas(64) std::atomic<int> pong{0};

bool pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}
}  // namespace

int main() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return 2;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::fprintf(stderr, "line_rtt: needs two usable CPUs\n");
    return 2;
  }
  constexpr int kTrips = 200000;
  std::jthread other([&] {
    if (!pin(cpus[1])) return;
    for (int i = 1; i <= kTrips; ++i) {
      while (ping.load(std::memory_order_acquire) != i) {
      }
      pong.store(i, std::memory_order_release);
    }
  });
  if (!pin(cpus[0])) return 2;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= kTrips; ++i) {
    ping.store(i, std::memory_order_release);
    while (pong.load(std::memory_order_acquire) != i) {
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("%.0f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / kTrips);
  return 0;
}
