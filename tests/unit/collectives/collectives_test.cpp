// The in-process collective engine, through the Communicator interface (InProcessGroup driven by
// the test's own std::jthreads, so GroupOptions can force either data path) and through Device
// (Mesh::run). Every expected value is computed here, serially, from the same inputs: a left fold
// in rank order ((v0 + v1) + v2) + ... for the reductions, plain copies for gather and permute.
// Results are compared bit for bit. Assertions run on the main thread only (Boost.Test is not
// thread-safe): device threads record what they saw, or the first difference, and the main thread
// checks after the join.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "collectives/in_process.hpp"
#include "support/cpus.hpp"
#include "mesh/device.hpp"
#include "mesh/mesh.hpp"
#include "support/run_ranks.hpp"
#include "support/errors.hpp"

using namespace meshrun;

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#if defined(__SANITIZE_THREAD__)
constexpr int kScale = 10;  // loop counts are divided by this under TSan
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 4;
#else
constexpr int kScale = 1;
#endif

constexpr std::size_t kDefaultSwitchBytes = std::size_t{16} * 1024;  // GroupOptions' default
constexpr std::size_t kDefaultSwitch = kDefaultSwitchBytes / sizeof(float);  // 4096 floats
constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max() / 2;

// A float whose sums are not exact: full 24-bit mantissa, exponent spread over 2^-6..2^6, so the
// order of a fold changes its bits.
float rand_float(std::mt19937_64& g) {
  const float m = 1.0f + static_cast<float>(g() >> 40) / static_cast<float>(1ull << 24);
  const int e = static_cast<int>(g() % 13) - 6;
  const float v = std::ldexp(m, e);
  return (g() & 1) ? -v : v;
}

// A float that cannot be any sum the engine produces: marks output elements nobody wrote.
const float kSentinel = std::bit_cast<float>(0x7fc0deadu);

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
std::string hex(float f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(bits(f)));
  return buf;
}

// Index of the first element whose bits differ (or the shorter length if sizes differ), or npos.
std::size_t first_diff(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return std::min(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (bits(a[i]) != bits(b[i])) return i;
  return std::string::npos;
}

std::string describe_diff(std::span<const float> got, std::span<const float> want) {
  const std::size_t i = first_diff(got, want);
  if (i == std::string::npos) return {};
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  return "element " + std::to_string(i) + " of " + std::to_string(got.size()) + ": got " +
         std::to_string(got[i]) + " (" + hex(got[i]) + ") want " + std::to_string(want[i]) + " (" +
         hex(want[i]) + ")";
}

// The reference: out[i] = ((in[0][i] + in[1][i]) + in[2][i]) + ..., as plain scalar code.
std::vector<float> serial_fold(const std::vector<std::vector<float>>& in, std::size_t offset,
                               std::size_t count) {
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = in[0][offset + i];
    for (std::size_t r = 1; r < in.size(); ++r) acc += in[r][offset + i];
    out[i] = acc;
  }
  return out;
}

// Pins the calling thread to `cpu`; false if the system refused.
bool pin_this_thread(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

using meshrun::testing::run_ranks;
using meshrun::testing::run_ranks_collect;

GroupOptions with_switch(std::size_t staged_max_bytes) {
  GroupOptions o;
  o.staged_max_bytes = staged_max_bytes;
  o.timeout = std::chrono::seconds(60);
  return o;
}

// The three switch settings: the default (16 KiB), everything direct, everything staged.
const std::vector<std::pair<std::string, std::size_t>>& switch_settings() {
  static const std::vector<std::pair<std::string, std::size_t>> s{
      {"default", kDefaultSwitchBytes}, {"direct", 0}, {"staged", kHuge}};
  return s;
}

// Element counts, including primes on both sides of the default switch at 4096 floats.
const std::vector<std::size_t>& sweep_counts() {
  static const std::vector<std::size_t> c{0,    1,    2,    3,     7,     8,       9,    13,
                                          16,   17,   1000, 4091,  4093,  4095,    4096, 4097,
                                          4099, 4111, 8191, 12289, 65537, 1u << 20};
  return c;
}

// A pool of random floats; rank r's input of a sweep is a slice of it.
const std::vector<float>& pool() {
  static const std::vector<float> p = [] {
    std::mt19937_64 g(0x5eed1234);
    std::vector<float> v(std::size_t{16} * ((1u << 20) + 64));
    for (float& f : v) f = rand_float(g);
    return v;
  }();
  return p;
}

std::vector<std::vector<float>> make_inputs(int n, std::size_t count, std::size_t salt) {
  const auto& p = pool();
  const std::size_t stride = (1u << 20) + 64;
  std::vector<std::vector<float>> in(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const std::size_t off =
        static_cast<std::size_t>(r) * stride + (salt * 7 + static_cast<std::size_t>(r)) % 61;
    if (count > stride - off) {
      // Larger than one slice (gather/scatter inputs): wrap around the pool.
      in[r].resize(count);
      for (std::size_t i = 0; i < count; ++i) in[r][i] = p[(off + i * 3) % p.size()];
    } else {
      in[r].assign(p.begin() + static_cast<std::ptrdiff_t>(off),
                   p.begin() + static_cast<std::ptrdiff_t>(off + count));
    }
  }
  return in;
}

std::string join_failures(const std::vector<std::string>& fails) {
  std::string s;
  for (std::size_t r = 0; r < fails.size(); ++r)
    if (!fails[r].empty()) s += " [device " + std::to_string(r) + ": " + fails[r] + "]";
  return s;
}

// A cheap deterministic input for long runs: value of rank r, element i, at call c. Each device
// can compute every rank's value, so it can fold the reference itself.
const std::vector<float>& value_table() {
  static const std::vector<float> t = [] {
    std::mt19937_64 g(0xfeedbeef);
    std::vector<float> v(1u << 16);
    for (float& f : v) f = rand_float(g);
    return v;
  }();
  return t;
}
inline float val(std::uint64_t c, int r, std::size_t i) {
  const auto& t = value_table();
  return t[(c * 131 + static_cast<std::uint64_t>(r) * 7919 + i) & 0xffff];
}

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(psum_sweep)

// Sanity of the reference itself: with these inputs the fold order matters, so a wrong order
// would be caught.
BOOST_AUTO_TEST_CASE(inputs_make_fold_order_observable) {
  const auto in = make_inputs(8, 4096, 0);
  const auto left = serial_fold(in, 0, 4096);
  std::size_t differs = 0;
  for (std::size_t i = 0; i < 4096; ++i) {
    float right = in[7][i];
    for (int r = 6; r >= 0; --r) right += in[static_cast<std::size_t>(r)][i];
    differs += bits(right) != bits(left[i]);
  }
  BOOST_TEST(differs > 100u);
}

// psum over 1..16 members and every count, for each switch setting, in place and out of place:
// equal bit for bit to the serial left fold in rank order on every member.
BOOST_AUTO_TEST_CASE(psum_equals_serial_left_fold) {
  std::size_t cases = 0;
  for (int n = 1; n <= 16; ++n) {
    for (std::size_t count : sweep_counts()) {
      if (kSanitized && count > 65537 && n != 1 && n != 2 && n != 3 && n != 16) continue;
      const auto in = make_inputs(n, count, count);
      const auto want = serial_fold(in, 0, count);
      for (const auto& [sw_name, sw] : switch_settings()) {
        for (bool in_place : {false, true}) {
          InProcessGroup g(n, "data", with_switch(sw));
          std::vector<std::vector<float>> bufs = in;  // in-place: in == out
          std::vector<std::vector<float>> outs(static_cast<std::size_t>(n));
          if (!in_place)
            for (auto& o : outs) o.assign(count, kSentinel);
          run_ranks(g, [&](Communicator& c, int r) {
            auto& buf = bufs[static_cast<std::size_t>(r)];
            if (in_place) {
              c.all_reduce_sum(buf, buf);
            } else {
              c.all_reduce_sum(std::span<const float>(buf), outs[static_cast<std::size_t>(r)]);
            }
          });
          for (int r = 0; r < n; ++r) {
            const auto& got =
                in_place ? bufs[static_cast<std::size_t>(r)] : outs[static_cast<std::size_t>(r)];
            const std::string d = describe_diff(got, want);
            BOOST_TEST(d.empty(), "psum n=" << n << " count=" << count << " switch=" << sw_name
                                            << (in_place ? " in-place" : " out-of-place")
                                            << " device " << r << ": " << d);
            if (!in_place) {
              // Out of place: the input is left untouched.
              BOOST_TEST(first_diff(bufs[static_cast<std::size_t>(r)],
                                    in[static_cast<std::size_t>(r)]) == std::string::npos);
            }
          }
          ++cases;
        }
      }
    }
  }
  BOOST_TEST_MESSAGE("psum sweep: " << cases << " group runs");
}

// The seq() counter and member identity through the interface.
BOOST_AUTO_TEST_CASE(rank_size_and_seq) {
  for (int n : {1, 2, 5, 16}) {
    InProcessGroup g(n, "x", with_switch(kDefaultSwitchBytes));
    std::vector<int> ranks(static_cast<std::size_t>(n)), sizes(ranks.size());
    std::vector<std::uint64_t> seq_before(ranks.size()), seq_after(ranks.size());
    run_ranks(g, [&](Communicator& c, int r) {
      ranks[r] = c.rank();
      sizes[r] = c.size();
      seq_before[r] = c.seq();
      std::vector<float> v(5, 1.0f);
      c.all_reduce_sum(v, v);
      c.all_reduce_sum(v, v);
      std::vector<float> o(5 * static_cast<std::size_t>(n));
      c.all_gather(v, o);
      seq_after[r] = c.seq();
    });
    for (int r = 0; r < n; ++r) {
      BOOST_TEST(ranks[r] == r);
      BOOST_TEST(sizes[r] == n);
      BOOST_TEST(seq_before[r] == 0u);
      BOOST_TEST(seq_after[r] == 3u);
    }
  }
}

// The direct psum's lanes are the distinct CPUs its members published, in ascending order; a
// member's home lane is its CPU's position among them. So members that all run on one CPU (a
// group of a 2-D mesh whose devices are pinned alike) share one lane instead of leaving a lane
// that no member calls its own, and a mask such as {1, 3} gives lanes 0 and 1.
BOOST_AUTO_TEST_CASE(lanes_are_the_distinct_cpus_the_members_run_on) {
  auto layout = [](std::vector<int> cpus, int cpu, int max_lanes) {
    const LaneLayout l = lane_layout(cpus, cpu, max_lanes);
    return std::pair{l.lanes, l.home};
  };
  using P = std::pair<int, int>;
  BOOST_TEST((layout({1, 3, 1, 3, 1, 3, 1, 3}, 3, 2) == P{2, 1}));
  BOOST_TEST((layout({3, 1, 3, 1}, 1, 2) == P{2, 0}));
  BOOST_TEST((layout({0, 0, 0, 0}, 0, 2) == P{1, 0}));  // one CPU: one lane
  BOOST_TEST((layout({5}, 5, 1) == P{1, 0}));
  // More CPUs than lanes (the mask changed under the run): CPUs share lanes, modulo.
  BOOST_TEST((layout({0, 1, 2, 3}, 2, 2) == P{2, 0}));
  BOOST_TEST((layout({0, 1, 2, 3}, 3, 2) == P{2, 1}));
  // A CPU that could not be read (-1) is one more value.
  BOOST_TEST((layout({-1, 4, 4}, 4, 2) == P{2, 1}));
}

// A member whose CPU is taken away between the psum's sync point and its pieces (the host, or
// another process) stalls its lane; the member on the other CPU takes the lane over after a few
// tens of microseconds instead of waiting. Member 1 sleeps 600 ms there (GroupOptions::pause_for):
// member 0 must return long before, with the right sum, and member 1 after its sleep, with the
// same bits. Each member is pinned to its own CPU, so that each has a lane.
BOOST_AUTO_TEST_CASE(a_stalled_lane_is_taken_over) {
  if (usable_cpu_ids().size() < 2) {
    BOOST_TEST_MESSAGE("one usable CPU: the members cannot have a lane each; nothing to test");
    return;
  }
  const std::vector<int> cpus = usable_cpu_ids();
  GroupOptions o = with_switch(kDefaultSwitchBytes);
  o.pause_rank = 1;
  o.pause_for = std::chrono::milliseconds(600);
  const std::size_t count = 16384;  // 64 KiB a member: the blocked direct path, 4 pieces a lane
  const auto in = make_inputs(2, count, 7);
  const auto want = serial_fold(in, 0, count);
  for (int round = 0; round < 2; ++round) {
    InProcessGroup g(2, "data", o);
    std::vector<std::vector<float>> out(2, std::vector<float>(count, kSentinel));
    std::vector<double> ms(2, 0.0);
    std::vector<int> pinned(2, 0);
    std::string early;  // member 0's output as it returned, while member 1 still sleeps
    run_ranks(g, [&](InProcessCommunicator& c, int r) {
      pinned[static_cast<std::size_t>(r)] = pin_this_thread(cpus[static_cast<std::size_t>(r)]);
      const auto t0 = std::chrono::steady_clock::now();
      c.all_reduce_sum(in[static_cast<std::size_t>(r)], out[static_cast<std::size_t>(r)]);
      ms[static_cast<std::size_t>(r)] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r == 0) early = describe_diff(out[0], want);
    });
    BOOST_TEST_REQUIRE((pinned[0] && pinned[1]), "could not pin the members to two CPUs");
    BOOST_TEST(early == "");  // complete when member 0 returned, not filled in later by member 1
    BOOST_TEST(describe_diff(out[0], want) == "");
    BOOST_TEST(describe_diff(out[1], want) == "");
    BOOST_TEST(ms[0] < 300.0, "member 0 waited " << ms[0] << " ms for the stalled lane");
    BOOST_TEST(ms[1] >= 600.0);
  }
}

// The lanes change from call to call within one group when the members move between CPUs: all on
// one CPU (one lane), then split both ways (two lanes), with direct psums of fewer pieces than
// lanes up to several pieces a lane. The lanes' counters carry on from call to call, so every
// member must cut every call alike; each result is checked against the serial fold.
BOOST_AUTO_TEST_CASE(lanes_that_change_between_calls_keep_their_counters_in_step) {
  const std::vector<int> cpus = usable_cpu_ids();
  const int n = 3;
  const std::vector<std::size_t> counts{1, 17, 1000, 1024, 1025, 4096, 5000, 16384, 40000};
  InProcessGroup g(n, "data", with_switch(0));  // every size direct
  std::vector<std::string> bad(n);
  std::vector<int> pinned(n, 1);
  run_ranks(g, [&](InProcessCommunicator& c, int r) {
    for (std::size_t i = 0; i < 3 * counts.size(); ++i) {
      const std::size_t pattern = i % 3;  // 0: all on one CPU; 1 and 2: split, both ways
      const int cpu =
          cpus.empty() ? -1
          : pattern == 0
              ? cpus[0]
              : cpus[static_cast<std::size_t>(r + static_cast<int>(pattern)) % cpus.size()];
      if (cpu >= 0 && !pin_this_thread(cpu)) pinned[static_cast<std::size_t>(r)] = 0;
      const std::size_t count = counts[i / 3];
      const auto in = make_inputs(n, count, 11 + i);
      std::vector<float> out(count, kSentinel);
      c.all_reduce_sum(in[static_cast<std::size_t>(r)], out);
      const std::string d = describe_diff(out, serial_fold(in, 0, count));
      if (!d.empty() && bad[static_cast<std::size_t>(r)].empty())
        bad[static_cast<std::size_t>(r)] = "call " + std::to_string(i) + ": " + d;
    }
  });
  for (int r = 0; r < n; ++r) {
    BOOST_TEST(bad[static_cast<std::size_t>(r)] == "", "member " << r);
    BOOST_TEST(pinned[static_cast<std::size_t>(r)] == 1, "member " << r << " could not be pinned");
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(max_min)

namespace {

// communicator.hpp's rule for pmax and pmin, as plain scalar code: from -inf (+inf),
// acc = std::max(acc, v_r) (std::min) for r = 0..n-1.
std::vector<float> serial_max_min(const std::vector<std::vector<float>>& in, std::size_t count,
                                  bool max) {
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = max ? -INFINITY : INFINITY;
    for (const auto& v : in) acc = max ? std::max(acc, v[i]) : std::min(acc, v[i]);
    out[i] = acc;
  }
  return out;
}

// make_inputs with about a third of the elements replaced by NaN (both signs), -0.0, +0.0,
// +-inf or a value that another member holds too, so that the fold's order shows in the bits.
std::vector<std::vector<float>> edge_inputs(int n, std::size_t count, std::size_t salt) {
  auto in = make_inputs(n, count, salt);
  const float specials[] = {NAN, -NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1.5f};
  std::mt19937_64 g(salt * 31 + static_cast<std::size_t>(n));
  for (auto& v : in)
    for (float& x : v)
      if (g() % 3 == 0) x = specials[g() % 7];
  return in;
}

}  // namespace

// pmax and pmin over 1..16 members, every size, each switch setting, in place and out of place:
// bit for bit the fold from -inf / +inf in rank order on every member (NaNs never win, a group of
// NaNs gives -inf / +inf, and of -0.0 and +0.0 the lowest rank's stays), as JAX gives on CPU.
BOOST_AUTO_TEST_CASE(pmax_pmin_equal_the_serial_fold_from_infinity) {
  std::size_t cases = 0;
  for (int n : {1, 2, 3, 5, 8, 16}) {
    for (std::size_t count : sweep_counts()) {
      if (count > 65537 && n != 3 && n != 8) continue;
      if (kSanitized && count > 12289 && n > 3) continue;
      for (bool max : {true, false}) {
        const auto in = edge_inputs(n, count, count + (max ? 0 : 1));
        const auto want = serial_max_min(in, count, max);
        for (const auto& [sw_name, sw] : switch_settings()) {
          for (bool in_place : {false, true}) {
            InProcessGroup g(n, "data", with_switch(sw));
            std::vector<std::vector<float>> bufs = in;
            std::vector<std::vector<float>> outs(
                static_cast<std::size_t>(n), std::vector<float>(in_place ? 0 : count, kSentinel));
            run_ranks(g, [&](Communicator& c, int r) {
              auto& buf = bufs[static_cast<std::size_t>(r)];
              std::span<float> out = in_place ? std::span<float>(buf)
                                              : std::span<float>(outs[static_cast<std::size_t>(r)]);
              if (max) {
                c.all_reduce_max(buf, out);
              } else {
                c.all_reduce_min(buf, out);
              }
            });
            for (int r = 0; r < n; ++r) {
              const auto& got =
                  in_place ? bufs[static_cast<std::size_t>(r)] : outs[static_cast<std::size_t>(r)];
              const std::string d = describe_diff(got, want);
              BOOST_TEST(d.empty(), (max ? "pmax" : "pmin")
                                        << " n=" << n << " count=" << count << " switch=" << sw_name
                                        << (in_place ? " in-place" : "") << " device " << r << ": "
                                        << d);
            }
            ++cases;
          }
        }
      }
    }
  }
  BOOST_TEST_MESSAGE("pmax/pmin sweep: " << cases << " group runs");
}

// The bits JAX 0.10.2 gave on CPU for jax.lax.pmax / pmin over 8 devices (XLA's in-process
// collectives fold with std::max from -inf): a NaN is passed over, all NaN is -inf (+inf), and
// of -0.0 and +0.0 the lowest-ranked device's wins -- where lax.max(-0.0, 0.0) is +0.0 and
// lax.max(NaN, x) NaN. On the staged and the direct path (8 and 5000 elements, all alike).
BOOST_AUTO_TEST_CASE(pmax_pmin_nan_and_signed_zero_are_jaxs) {
  const float nan = NAN;
  struct Case {
    std::vector<float> per_device;
    float pmax, pmin;
  };
  const std::vector<Case> cases{
      {{-0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, -0.0f, -0.0f},
      {{0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f}, 0.0f, 0.0f},
      {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -0.0f}, 0.0f, 0.0f},
      {{1, 2, 3, nan, 5, 6, 7, 8}, 8.0f, 1.0f},
      {{nan, 2, 3, 4, 5, 6, 7, 8}, 8.0f, 2.0f},
      {{1, 2, 3, 4, 5, 6, 7, nan}, 7.0f, 1.0f},
      {{nan, nan, nan, nan, nan, nan, nan, nan}, -INFINITY, INFINITY},
  };
  for (const Case& c : cases) {
    for (std::size_t count : {std::size_t{8}, std::size_t{5000}}) {
      InProcessGroup g(8, "data", with_switch(kDefaultSwitchBytes));
      std::vector<std::vector<float>> mx(8), mn(8);
      run_ranks(g, [&](Communicator& comm, int r) {
        const std::vector<float> in(count, c.per_device[static_cast<std::size_t>(r)]);
        mx[static_cast<std::size_t>(r)].assign(count, kSentinel);
        mn[static_cast<std::size_t>(r)].assign(count, kSentinel);
        comm.all_reduce_max(in, mx[static_cast<std::size_t>(r)]);
        comm.all_reduce_min(in, mn[static_cast<std::size_t>(r)]);
      });
      for (int r = 0; r < 8; ++r) {
        BOOST_TEST(describe_diff(mx[static_cast<std::size_t>(r)],
                                 std::vector<float>(count, c.pmax)) == "");
        BOOST_TEST(describe_diff(mn[static_cast<std::size_t>(r)],
                                 std::vector<float>(count, c.pmin)) == "");
      }
    }
  }
}

// psum, pmax and pmin interleaved on one group, the sizes crossing the switch: each call's fold
// is its own (a member never folds one call's inputs with another's rule) and the lanes'
// counters of the direct path carry on from psum to pmax alike.
BOOST_AUTO_TEST_CASE(pmax_pmin_between_psums_keep_their_own_fold) {
  const int n = 5;
  InProcessGroup g(n, "data", with_switch(kDefaultSwitchBytes));
  std::vector<std::string> bad(n);
  const std::vector<std::size_t> counts{3, 4097, 1000, 20000, 4096, 9};
  run_ranks(g, [&](Communicator& c, int r) {
    for (std::size_t k = 0; k < 3 * counts.size(); ++k) {
      const std::size_t count = counts[k / 3];
      // psum's inputs without NaNs: which NaN a sum of two returns is the compiler's choice.
      const auto in = k % 3 == 0 ? make_inputs(n, count, 500 + k) : edge_inputs(n, count, 500 + k);
      std::vector<float> out(count, kSentinel), want;
      switch (k % 3) {
        case 0:
          c.all_reduce_sum(in[static_cast<std::size_t>(r)], out);
          want = serial_fold(in, 0, count);
          break;
        case 1:
          c.all_reduce_max(in[static_cast<std::size_t>(r)], out);
          want = serial_max_min(in, count, true);
          break;
        default:
          c.all_reduce_min(in[static_cast<std::size_t>(r)], out);
          want = serial_max_min(in, count, false);
      }
      const std::string d = describe_diff(out, want);
      if (!d.empty() && bad[static_cast<std::size_t>(r)].empty())
        bad[static_cast<std::size_t>(r)] = "call " + std::to_string(k + 1) + ": " + d;
    }
  });
  for (int r = 0; r < n; ++r)
    BOOST_TEST(bad[static_cast<std::size_t>(r)] == "",
               "member " << r << ": " << bad[static_cast<std::size_t>(r)]);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(other_collectives)

// all_gather: out = in_0 ++ in_1 ++ ... on every member, both paths.
BOOST_AUTO_TEST_CASE(all_gather_concatenates_in_rank_order) {
  for (int n = 1; n <= 16; ++n) {
    for (std::size_t m : sweep_counts()) {
      if (m > 65537) continue;
      if (kSanitized && m > 12289 && n > 4) continue;
      const auto in = make_inputs(n, m, m + 1);
      std::vector<float> want;
      for (const auto& v : in) want.insert(want.end(), v.begin(), v.end());
      for (const auto& [sw_name, sw] : switch_settings()) {
        InProcessGroup g(n, "data", with_switch(sw));
        std::vector<std::vector<float>> outs(
            static_cast<std::size_t>(n),
            std::vector<float>(m * static_cast<std::size_t>(n), kSentinel));
        run_ranks(g, [&](Communicator& c, int r) { c.all_gather(in[r], outs[r]); });
        for (int r = 0; r < n; ++r) {
          const std::string d = describe_diff(outs[r], want);
          BOOST_TEST(d.empty(), "all_gather n=" << n << " m=" << m << " switch=" << sw_name
                                                << " device " << r << ": " << d);
        }
      }
    }
  }
}

// psum_scatter: member r gets block r of the rank-order fold.
BOOST_AUTO_TEST_CASE(psum_scatter_gives_own_block_of_the_fold) {
  for (int n = 1; n <= 16; ++n) {
    for (std::size_t m : sweep_counts()) {
      if (m > 65537) continue;
      if (kSanitized && m > 12289 && n > 4) continue;
      const std::size_t total = m * static_cast<std::size_t>(n);
      const auto in = make_inputs(n, total, m + 2);
      const auto sum = serial_fold(in, 0, total);
      for (const auto& [sw_name, sw] : switch_settings()) {
        InProcessGroup g(n, "data", with_switch(sw));
        std::vector<std::vector<float>> outs(static_cast<std::size_t>(n),
                                             std::vector<float>(m, kSentinel));
        run_ranks(g, [&](Communicator& c, int r) { c.reduce_scatter_sum(in[r], outs[r]); });
        for (int r = 0; r < n; ++r) {
          std::span<const float> want(sum.data() + static_cast<std::size_t>(r) * m, m);
          const std::string d = describe_diff(outs[r], want);
          BOOST_TEST(d.empty(), "psum_scatter n=" << n << " m=" << m << " switch=" << sw_name
                                                  << " device " << r << ": " << d);
        }
      }
    }
  }
}

namespace {
// Source tables (source_of[dst] = src or -1) for n members: shifts, reversal, identity, swaps,
// partial and empty permutations.
std::vector<std::pair<std::string, std::vector<int>>> permutation_tables(int n,
                                                                         std::mt19937_64& g) {
  std::vector<std::pair<std::string, std::vector<int>>> t;
  auto table = [&](auto f) {
    std::vector<int> s(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) s[d] = f(d);
    return s;
  };
  t.emplace_back("identity", table([](int d) { return d; }));
  t.emplace_back("shift+1", table([n](int d) { return (d - 1 + n) % n; }));
  t.emplace_back("shift-1", table([n](int d) { return (d + 1) % n; }));
  t.emplace_back("shift+3", table([n](int d) { return ((d - 3) % n + n) % n; }));
  t.emplace_back("reverse", table([n](int d) { return n - 1 - d; }));
  t.emplace_back("empty", table([](int) { return -1; }));
  t.emplace_back("only 0->last", table([n](int d) { return d == n - 1 ? 0 : -1; }));
  // Partial shift: device d sends to d+1 except the last (no wrap-around): device 0 gets zeros.
  t.emplace_back("open chain", table([](int d) { return d == 0 ? -1 : d - 1; }));
  // A random partial permutation.
  std::vector<int> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), g);
  std::vector<int> partial(static_cast<std::size_t>(n), -1);
  for (int d = 0; d < n; ++d)
    if (g() % 3 != 0) partial[perm[d]] = d;  // src d -> dst perm[d], two thirds of the pairs
  t.emplace_back("random partial", partial);
  return t;
}
}  // namespace

// ppermute through the interface: out = in_{source_of[rank]}, zeros where nobody sends.
BOOST_AUTO_TEST_CASE(permute_moves_blocks_and_zeroes_receivers_of_nothing) {
  std::mt19937_64 g(77);
  for (int n = 1; n <= 16; ++n) {
    for (std::size_t m : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096},
                          std::size_t{4097}, std::size_t{12289}}) {
      const auto in = make_inputs(n, m, m + 3);
      for (const auto& table : permutation_tables(n, g)) {
        // Named references, not a structured binding: clang 14 lets no lambda capture one.
        const auto& tname = table.first;
        const auto& src = table.second;
        for (const auto& [sw_name, sw] : switch_settings()) {
          InProcessGroup grp(n, "data", with_switch(sw));
          std::vector<std::vector<float>> outs(static_cast<std::size_t>(n),
                                               std::vector<float>(m, kSentinel));
          run_ranks(grp, [&](Communicator& c, int r) { c.permute(in[r], outs[r], src); });
          for (int r = 0; r < n; ++r) {
            const std::vector<float> want = src[r] < 0 ? std::vector<float>(m, 0.0f) : in[src[r]];
            const std::string d = describe_diff(outs[r], want);
            BOOST_TEST(d.empty(), "ppermute " << tname << " n=" << n << " m=" << m << " switch="
                                              << sw_name << " device " << r << ": " << d);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(through_device)

// Each device records what it got; the main thread compares with serial references.
BOOST_AUTO_TEST_CASE(device_collectives_match_serial_references) {
  for (int n = 1; n <= 16; ++n) {
    Mesh mesh(n, "data");
    const std::size_t rows = 3, cols = 5;
    const auto in =
        make_inputs(n, static_cast<std::size_t>(n) * rows * cols, static_cast<std::size_t>(n));
    const std::size_t blk = rows * cols;
    std::vector<int> index(static_cast<std::size_t>(n)), size(index.size());
    std::vector<int> bad_axis_threw(index.size());
    std::vector<Tensor> psum_out(index.size()), pmean_out(index.size()), gather_out(index.size()),
        scatter_out(index.size()), shift_out(index.size()), rev_out(index.size()),
        partial_out(index.size());
    // Shift by one, reversal, and a partial permutation (even devices send to the next one).
    std::vector<std::pair<int, int>> shift, rev, partial;
    for (int d = 0; d < n; ++d) {
      shift.emplace_back(d, (d + 1) % n);
      rev.emplace_back(d, n - 1 - d);
      if (d % 2 == 0 && d + 1 < n) partial.emplace_back(d, d + 1);
    }
    mesh.run([&](Device& dev) {
      const int d = dev.index();
      index[d] = dev.axis_index("data");
      size[d] = dev.axis_size("data");
      try {
        (void)dev.axis_index("model");
      } catch (const InputError&) {
        bad_axis_threw[d] = 1;
      }
      // x: this device's (rows, cols) block; big: its (n*rows, cols) array for psum_scatter.
      Tensor x({rows, cols},
               std::vector<float>(in[d].begin(), in[d].begin() + static_cast<std::ptrdiff_t>(blk)));
      Tensor big({static_cast<std::size_t>(n) * rows, cols}, in[d]);
      psum_out[d] = dev.psum(x, "data");
      pmean_out[d] = dev.pmean(x, "data");
      gather_out[d] = dev.all_gather(x, "data");
      scatter_out[d] = dev.psum_scatter(big, "data");
      shift_out[d] = dev.ppermute(x, "data", shift);
      rev_out[d] = dev.ppermute(x, "data", rev);
      partial_out[d] = dev.ppermute(x, "data", partial);
    });
    const auto sum = serial_fold(in, 0, blk);
    std::vector<float> mean = sum;
    for (float& v : mean) v /= static_cast<float>(n);
    std::vector<float> gathered;
    for (int r = 0; r < n; ++r)
      gathered.insert(gathered.end(), in[r].begin(),
                      in[r].begin() + static_cast<std::ptrdiff_t>(blk));
    const auto big_sum = serial_fold(in, 0, static_cast<std::size_t>(n) * blk);
    for (int d = 0; d < n; ++d) {
      BOOST_TEST(index[d] == d);
      BOOST_TEST(size[d] == n);
      BOOST_TEST(bad_axis_threw[d] == 1);
      BOOST_TEST((psum_out[d].shape == Shape{rows, cols}));
      BOOST_TEST(describe_diff(psum_out[d].data, sum).empty(), "psum n=" << n << " d=" << d);
      BOOST_TEST(describe_diff(pmean_out[d].data, mean).empty(), "pmean n=" << n << " d=" << d);
      BOOST_TEST((gather_out[d].shape == Shape{static_cast<std::size_t>(n) * rows, cols}));
      BOOST_TEST(describe_diff(gather_out[d].data, gathered).empty(),
                 "all_gather n=" << n << " d=" << d);
      BOOST_TEST((scatter_out[d].shape == Shape{rows, cols}));
      BOOST_TEST(describe_diff(scatter_out[d].data,
                               std::span<const float>(
                                   big_sum.data() + static_cast<std::size_t>(d) * blk, blk))
                     .empty(),
                 "psum_scatter n=" << n << " d=" << d);
      auto block = [&](int r) {
        return std::vector<float>(in[r].begin(), in[r].begin() + static_cast<std::ptrdiff_t>(blk));
      };
      BOOST_TEST(describe_diff(shift_out[d].data, block((d - 1 + n) % n)).empty(),
                 "shift n=" << n << " d=" << d);
      BOOST_TEST(describe_diff(rev_out[d].data, block(n - 1 - d)).empty(),
                 "reverse n=" << n << " d=" << d);
      const bool receives = d % 2 == 1;  // odd devices receive from d-1 (which always exists)
      BOOST_TEST(describe_diff(partial_out[d].data,
                               receives ? block(d - 1) : std::vector<float>(blk, 0.0f))
                     .empty(),
                 "partial n=" << n << " d=" << d);
    }
  }
}

// pmean is psum then a division by n (not a multiplication by 1/n: for n = 3, 5, 7, ... the two
// differ in the last bit for some values).
BOOST_AUTO_TEST_CASE(pmean_divides_the_fold) {
  for (int n : {3, 5, 6, 7, 11, 13}) {
    Mesh mesh(n, "data");
    const std::size_t count = 4100;  // direct path
    const auto in = make_inputs(n, count, 999);
    std::vector<std::vector<float>> got(static_cast<std::size_t>(n));
    mesh.run([&](Device& dev) {
      std::vector<float> buf = in[dev.index()];
      dev.pmean_inplace(buf, "data");
      got[dev.index()] = std::move(buf);
    });
    auto want = serial_fold(in, 0, count);
    for (float& v : want) v /= static_cast<float>(n);
    for (int d = 0; d < n; ++d)
      BOOST_TEST(describe_diff(got[d], want).empty(),
                 "pmean n=" << n << " d=" << d << ": " << describe_diff(got[d], want));
  }
}

// 10,000 back-to-back collectives in one run, sizes and ops changing every call, every result
// checked on every device (catches epoch and frame-parity reuse bugs).
BOOST_AUTO_TEST_CASE(ten_thousand_back_to_back) {
  const int calls = 10'000 / (kScale > 1 ? 2 : 1);
  for (int n : {8, 3, 2}) {
    Mesh mesh(n, "data");
    std::vector<std::string> fails(static_cast<std::size_t>(n));
    std::vector<int> done(static_cast<std::size_t>(n));
    mesh.run([&](Device& dev) {
      const int d = dev.index();
      std::mt19937_64 shared(1234 + static_cast<unsigned>(n));  // same sequence on every device
      std::vector<float> buf, want, out;
      for (int c = 0; c < calls; ++c) {
        const std::uint64_t kind = shared() % 10;
        std::size_t m;
        if (kind < 4)
          m = shared() % 17;
        else if (kind < 7)
          m = 17 + shared() % 300;
        else if (kind < 9)
          m = kDefaultSwitch - 6 + shared() % 12;  // 4090..4101: crosses the switch
        else
          m = 300 + shared() % 1200;
        const std::uint64_t op = shared() % 5;
        std::string fail;
        if (op <= 1) {  // psum in place
          buf.resize(m);
          for (std::size_t i = 0; i < m; ++i) buf[i] = val(c, d, i);
          if (op == 0)
            dev.psum_inplace(buf, "data");
          else
            buf = dev.psum(Tensor({m}, buf), "data").data;
          want.resize(m);
          for (std::size_t i = 0; i < m; ++i) {
            float a = val(c, 0, i);
            for (int r = 1; r < n; ++r) a += val(c, r, i);
            want[i] = a;
          }
          fail = describe_diff(buf, want);
        } else if (op == 2) {  // all_gather of m/4+1 rows... of (k, 1)
          const std::size_t k = m / 2;
          Tensor x({k, 1});
          for (std::size_t i = 0; i < k; ++i) x.data[i] = val(c, d, i);
          const Tensor y = dev.all_gather(x, "data");
          want.clear();
          for (int r = 0; r < n; ++r)
            for (std::size_t i = 0; i < k; ++i) want.push_back(val(c, r, i));
          fail = describe_diff(y.data, want);
        } else if (op == 3) {  // psum_scatter of (n*k, 1)
          const std::size_t k = m / static_cast<std::size_t>(n) + 1,
                            total = k * static_cast<std::size_t>(n);
          Tensor x({total, 1});
          for (std::size_t i = 0; i < total; ++i) x.data[i] = val(c, d, i);
          const Tensor y = dev.psum_scatter(x, "data");
          want.resize(k);
          for (std::size_t i = 0; i < k; ++i) {
            const std::size_t gi = static_cast<std::size_t>(d) * k + i;
            float a = val(c, 0, gi);
            for (int r = 1; r < n; ++r) a += val(c, r, gi);
            want[i] = a;
          }
          fail = describe_diff(y.data, want);
        } else {  // ppermute by a shift that changes every call
          const int s = static_cast<int>(shared() % static_cast<std::uint64_t>(n));
          std::vector<std::pair<int, int>> perm;
          perm.reserve(static_cast<std::size_t>(n));
          for (int r = 0; r < n; ++r) perm.emplace_back(r, (r + s) % n);
          Tensor x({m});
          for (std::size_t i = 0; i < m; ++i) x.data[i] = val(c, d, i);
          const Tensor y = dev.ppermute(x, "data", perm);
          const int from = ((d - s) % n + n) % n;
          want.resize(m);
          for (std::size_t i = 0; i < m; ++i) want[i] = val(c, from, i);
          fail = describe_diff(y.data, want);
        }
        if (!fail.empty() && fails[d].empty())
          fails[d] = "call " + std::to_string(c) + " op " + std::to_string(op) + " m " +
                     std::to_string(m) + ": " + fail;
        ++done[d];
      }
    });
    BOOST_TEST(join_failures(fails).empty(), "n=" << n << join_failures(fails));
    for (int d = 0; d < n; ++d) BOOST_TEST(done[d] == calls);
  }
}

// The same inputs 1,000 times (1,000 runs of the mesh): identical bits every time, equal to the
// serial fold, on the staged and on the direct path.
BOOST_AUTO_TEST_CASE(bitwise_determinism_over_repeated_runs) {
  const int runs = kSanitized ? 200 : 1000;
  const int n = 8;
  Mesh mesh(n, "data");
  const auto small = make_inputs(n, 1000, 1);  // staged
  const auto large = make_inputs(n, 5003, 2);  // direct
  const auto want_small = serial_fold(small, 0, 1000);
  const auto want_large = serial_fold(large, 0, 5003);
  std::vector<std::vector<float>> got_small(n), got_large(n);
  int wrong = 0;
  std::string first;
  for (int run = 0; run < runs; ++run) {
    mesh.run([&](Device& dev) {
      const int d = dev.index();
      got_small[d] = dev.psum(Tensor({1000}, small[d]), "data").data;
      got_large[d] = large[d];
      dev.psum_inplace(got_large[d], "data");
    });
    for (int d = 0; d < n; ++d) {
      const std::string a = describe_diff(got_small[d], want_small),
                        b = describe_diff(got_large[d], want_large);
      if (!a.empty() || !b.empty()) {
        if (wrong++ == 0)
          first =
              "run " + std::to_string(run) + " device " + std::to_string(d) + ": " + a + " " + b;
      }
    }
  }
  BOOST_TEST(wrong == 0, wrong << " wrong results; first: " << first);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(stress)

namespace {

// Per-device random delays: mostly none, sometimes a yield, a busy loop or a short sleep.
void random_delay(std::mt19937_64& g) {
  const std::uint64_t k = g() % 100;
  if (k < 85) return;
  if (k < 93) {
    std::this_thread::yield();
  } else if (k < 98) {
    volatile std::uint64_t sink = 0;
    const std::uint64_t spins = g() % 3000;
    for (std::uint64_t i = 0; i < spins; ++i) sink = sink + i;
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(1 + g() % 50));
  }
}

// `calls` random collectives on n members with random delays; every result checked on every
// member. Sizes: 0 and 1 one call in ten each, [0, small_max] seven in ten, [big_lo, max_m] one in
// ten; the switch is at `switch_bytes`.
std::string stress_run(int n, int calls, std::size_t switch_bytes, std::size_t small_max,
                       std::size_t big_lo, std::size_t max_m, std::uint64_t seed) {
  InProcessGroup g(n, "data", with_switch(switch_bytes));
  std::vector<std::string> fails(static_cast<std::size_t>(n));
  std::vector<int> done(static_cast<std::size_t>(n));
  run_ranks(g, [&](Communicator& comm, int d) {
    std::mt19937_64 shared(seed);                                     // the same calls everywhere
    std::mt19937_64 mine(seed * 1000003 + static_cast<unsigned>(d));  // this device's delays
    std::vector<float> in, out, want;
    std::vector<int> src(static_cast<std::size_t>(n));
    for (int c = 0; c < calls; ++c) {
      const std::uint64_t pick = shared() % 10;
      std::size_t m = pick == 0   ? 0
                      : pick == 1 ? 1
                      : pick < 9  ? shared() % (small_max + 1)
                                  : big_lo + shared() % (max_m - big_lo + 1);
      const std::uint64_t op = shared() % 5;
      random_delay(mine);
      std::string fail;
      const std::size_t N = static_cast<std::size_t>(n);
      if (op <= 1) {  // psum, out of place (0) or in place (1)
        in.resize(m);
        for (std::size_t i = 0; i < m; ++i) in[i] = val(c, d, i);
        if (op == 0) {
          out.assign(m, kSentinel);
          comm.all_reduce_sum(in, out);
        } else {
          comm.all_reduce_sum(in, in);
          out = in;
        }
        want.resize(m);
        for (std::size_t i = 0; i < m; ++i) {
          float a = val(c, 0, i);
          for (int r = 1; r < n; ++r) a += val(c, r, i);
          want[i] = a;
        }
      } else if (op == 2) {  // all_gather
        m /= N;
        in.resize(m);
        for (std::size_t i = 0; i < m; ++i) in[i] = val(c, d, i);
        out.assign(m * N, kSentinel);
        comm.all_gather(in, out);
        want.clear();
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < m; ++i) want.push_back(val(c, r, i));
      } else if (op == 3) {  // psum_scatter
        m /= N;
        in.resize(m * N);
        for (std::size_t i = 0; i < m * N; ++i) in[i] = val(c, d, i);
        out.assign(m, kSentinel);
        comm.reduce_scatter_sum(in, out);
        want.resize(m);
        for (std::size_t i = 0; i < m; ++i) {
          const std::size_t gi = static_cast<std::size_t>(d) * m + i;
          float a = val(c, 0, gi);
          for (int r = 1; r < n; ++r) a += val(c, r, gi);
          want[i] = a;
        }
      } else {  // permute with a random partial table (same on every member)
        std::vector<int> perm(N);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), shared);
        std::fill(src.begin(), src.end(), -1);
        for (int s = 0; s < n; ++s)
          if (shared() % 4 != 0) src[perm[s]] = s;
        in.resize(m);
        for (std::size_t i = 0; i < m; ++i) in[i] = val(c, d, i);
        out.assign(m, kSentinel);
        comm.permute(in, out, src);
        want.assign(m, 0.0f);
        if (src[d] >= 0)
          for (std::size_t i = 0; i < m; ++i) want[i] = val(c, src[d], i);
      }
      if (mine() % 8 == 0) random_delay(mine);  // sometimes late to leave, too
      fail = describe_diff(out, want);
      if (!fail.empty() && fails[d].empty())
        fails[d] = "call " + std::to_string(c) + " op " + std::to_string(op) + " m " +
                   std::to_string(m) + ": " + fail;
      ++done[d];
    }
  });
  for (int d = 0; d < n; ++d)
    if (done[d] != calls && fails[d].empty())
      fails[d] = "only " + std::to_string(done[d]) + " calls done";
  return join_failures(fails);
}

}  // namespace

// >= 100,000 collectives in release (fewer under sanitizers): oversubscribed (8 and 16 members on
// 2 cores: yield and park) and not (2 members: spin), with the switch at its default and at 256
// bytes so that small random sizes cross it constantly.
BOOST_AUTO_TEST_CASE(random_sizes_random_delays) {
  struct Config {
    int n, calls;
    std::size_t switch_bytes, small_max, big_lo, max_m;
  };
  const std::vector<Config> configs{
      {8, 30'000, kDefaultSwitchBytes, 300, 3990, 4200},  // crosses the default: 4096 floats
      {8, 25'000, 256, 100, 40, 200},                     // switch at 64 floats
      {2, 25'000, 256, 100, 40, 200},                     // not oversubscribed: the spinning waiter
      {5, 15'000, 256, 100, 40, 200},
      {16, 5'000, 256, 100, 40, 200},
  };
  int total = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const int calls = c.calls / kScale;
    const std::string fails =
        stress_run(c.n, calls, c.switch_bytes, c.small_max, c.big_lo, c.max_m, 42 + i);
    BOOST_TEST(fails.empty(), "stress n=" << c.n << " switch=" << c.switch_bytes << fails);
    total += calls;
  }
  BOOST_TEST_MESSAGE("stress: " << total << " collectives");
  if (!kSanitized) BOOST_TEST(total >= 100'000);
}

BOOST_AUTO_TEST_SUITE_END()

// FirstCause: the lowest-numbered device among the causes, whatever order they were noted in;
// consequences only when there is no cause, the lowest of them too; -1 when nothing failed.
BOOST_AUTO_TEST_CASE(first_cause_is_the_lowest_numbered_cause) {
  FirstCause f;
  f.reset();
  BOOST_TEST(f.first() == -1);
  BOOST_TEST(!f.any_cause());
  f.note(6, /*consequence=*/true);
  f.note(4, /*consequence=*/true);
  BOOST_TEST(f.first() == 4);
  f.note(5, false);
  f.note(2, false);
  f.note(3, false);
  f.note(0, /*consequence=*/true);
  BOOST_TEST(f.first() == 2);
  BOOST_TEST(f.any_cause());
  // From eight threads at once, in any order: still the lowest.
  for (int round = 0; round < 20; ++round) {
    f.reset();
    {
      std::vector<std::jthread> threads;
      for (int d = 7; d >= 1; --d) threads.emplace_back([&f, d] { f.note(d, d % 2 == 0); });
    }
    BOOST_TEST(f.first() == 1);
  }
}
