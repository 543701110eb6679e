// floor_barrier.cpp -- ../shared/peers/floor_threads.cpp with one std::barrier among its 8
// threads: the floor for a process whose 8 threads must all meet once, as the devices of
// `meshrun dp-step` meet in their pmean (on 2 cores, 4 threads per core must all be scheduled
// before any can go on). Used beside floor_threads in bench/README.md (issue 9, start-up row):
//
//   g++ -O2 -std=c++20 -static bench/floor_barrier.cpp -o /tmp/floor_barrier
//   hyperfine -N --warmup 30 --runs 300 /tmp/floor_barrier /tmp/meshrun-programs-table/floor_static
//   'build/release/meshrun dp-step cases/dp-step/example1.json'
#include <atomic>
#include <barrier>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

int main() {
  std::atomic<int> sum{0};
  std::barrier meet(8);
  {
    std::vector<std::jthread> devices;
    devices.reserve(8);
    for (int d = 0; d < 8; ++d) {
      devices.emplace_back([&sum, &meet, d] {
        auto block = std::make_unique<float[]>(64);
        block[0] = static_cast<float>(d);
        meet.arrive_and_wait();
        sum.fetch_add(static_cast<int>(block[0]) + 1);
      });
    }
  }
  std::printf("{\"sum\":%d}\n", sum.load());
  return 0;
}
