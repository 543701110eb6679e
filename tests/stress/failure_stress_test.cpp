// Failure paths under load (issue #4, item 8): thousands of injected failures and stalls at random
// devices and sequence numbers in one process, each reported with the right error (type, device,
// op, sequence number), the mesh usable again after each failure, and every device thread gone
// at the end. Also: a stalled device costs (almost) no CPU while the others wait, and a mesh can
// be destroyed while a run is in progress on another thread.
//
// MESHRUN_STRESS_SEED and MESHRUN_STRESS_TRIALS override the seed and the number of trials; a
// failing trial is reported with both, so it can be replayed alone.
#include <sys/resource.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mesh/mesh.hpp"
#include "support/errors.hpp"

using namespace meshrun;
using namespace std::chrono_literals;

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define MESHRUN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MESHRUN_SANITIZED 1
#endif
#endif

#if defined(MESHRUN_SANITIZED)
constexpr int kDefaultTrials = 2'000;
constexpr auto kStallTimeout = 60ms;
#else
constexpr int kDefaultTrials = 10'000;
constexpr auto kStallTimeout = 25ms;
#endif
// Trials run on this many threads at once, each with its own meshes: a stall trial mostly waits
// for its timeout, so running several side by side keeps the whole test short.
constexpr int kDrivers = 8;
constexpr int kMaxDevices = 8;
constexpr int kMaxSteps = 6;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

int thread_count() {
  // The first thread a process creates may start helpers of its own (ThreadSanitizer's background
  // thread): create and join one first, so that the count measured before a test is its baseline.
  static const bool warmed = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)warmed;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ------------------------------------------------------------------ a random SPMD program

enum class Op { kPsum, kPmean, kAllGather, kPsumScatter, kPpermute };

struct Step {
  Op op;
  std::size_t m;  // elements per device (psum_scatter: of its output block)
};

// What Device::where() and the collective layer call the step: JAX's names.
const char* device_name(Op op) {
  switch (op) {
    case Op::kPsum:
      return "psum";
    case Op::kPmean:
      return "pmean";
    case Op::kAllGather:
      return "all_gather";
    case Op::kPsumScatter:
      return "psum_scatter";
    case Op::kPpermute:
      return "ppermute";
  }
  return "?";
}
// What a timeout report calls it: the same name (pmean is a collective of its own).
const char* collective_name(Op op) { return device_name(op); }

// Small integers, so every sum is exact and the expected values need no tolerance.
float value(int device, std::size_t step, std::size_t i) {
  return static_cast<float>(
             (device * 31 + static_cast<int>(step) * 7 + static_cast<int>(i % 1000)) % 17) -
         8.0f;
}

Tensor input_of(int device, std::size_t step, std::size_t len) {
  Tensor t(Shape{len});
  for (std::size_t i = 0; i < len; ++i) t.data[i] = value(device, step, i);
  return t;
}

// Runs steps [0, count) on `dev`; out[i] receives step i's result.
void body(Device& dev, const std::vector<Step>& steps, std::size_t count,
          std::vector<Tensor>& out) {
  const int n = dev.axis_size("data");
  for (std::size_t i = 0; i < count; ++i) {
    const Step& s = steps[i];
    const std::size_t len = s.op == Op::kPsumScatter ? s.m * static_cast<std::size_t>(n) : s.m;
    const Tensor x = input_of(dev.index(), i, len);
    switch (s.op) {
      case Op::kPsum:
        out[i] = dev.psum(x, "data");
        break;
      case Op::kPmean:
        out[i] = dev.pmean(x, "data");
        break;
      case Op::kAllGather:
        out[i] = dev.all_gather(x, "data");
        break;
      case Op::kPsumScatter:
        out[i] = dev.psum_scatter(x, "data");
        break;
      case Op::kPpermute: {
        std::vector<std::pair<int, int>> perm;
        perm.reserve(static_cast<std::size_t>(n));
        for (int d = 0; d < n; ++d) perm.emplace_back(d, (d + 1) % n);
        out[i] = dev.ppermute(x, "data", perm);
        break;
      }
    }
  }
}

// The exact result device d must hold after step i; "" when it does, else what differs.
std::string check_result(const Step& s, std::size_t i, int d, int n, const Tensor& got) {
  std::vector<float> want;
  switch (s.op) {
    case Op::kPsum:
    case Op::kPmean:
      for (std::size_t j = 0; j < s.m; ++j) {
        float sum = 0.0f;
        for (int r = 0; r < n; ++r) sum += value(r, i, j);
        want.push_back(s.op == Op::kPmean ? sum / static_cast<float>(n) : sum);
      }
      break;
    case Op::kAllGather:
      for (int r = 0; r < n; ++r)
        for (std::size_t j = 0; j < s.m; ++j) want.push_back(value(r, i, j));
      break;
    case Op::kPsumScatter:
      for (std::size_t j = 0; j < s.m; ++j) {
        float sum = 0.0f;
        for (int r = 0; r < n; ++r) sum += value(r, i, static_cast<std::size_t>(d) * s.m + j);
        want.push_back(sum);
      }
      break;
    case Op::kPpermute:
      for (std::size_t j = 0; j < s.m; ++j) want.push_back(value((d + n - 1) % n, i, j));
      break;
  }
  if (got.data != want) {
    return std::string("wrong result of ") + device_name(s.op) + " #" + std::to_string(i + 1) +
           " on device " + std::to_string(d);
  }
  return "";
}

struct Trial {
  int n;
  std::vector<Step> steps;
  Injection inj;
};

// Trial `index` of the run with `seed`: independent of the other trials, so it can be replayed.
Trial make_trial(std::uint64_t seed, int index) {
  std::seed_seq seq{seed, static_cast<std::uint64_t>(index)};
  std::mt19937_64 rng(seq);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Trial t;
  t.n = pick(1, kMaxDevices);
  const int count = pick(1, kMaxSteps);
  for (int i = 0; i < count; ++i) {
    const Op op = static_cast<Op>(pick(0, 4));
    // One step in eight is large enough (> 16 KiB per device) for the direct path, whose buffers
    // belong to the bodies: a device leaving early there would free memory its peers still use.
    const std::size_t m = pick(0, 7) == 0 ? 5000 : static_cast<std::size_t>(pick(0, 40));
    t.steps.push_back({op, m});
  }
  t.inj.kind = pick(0, 1) == 0 ? Injection::Kind::kFail : Injection::Kind::kStall;
  t.inj.device = pick(0, t.n - 1);
  t.inj.at = static_cast<std::uint64_t>(pick(1, count));
  return t;
}

// "device(s) 1, 5 never arrived" -> {1, 5}
std::vector<int> missing_devices(const std::string& what) {
  std::vector<int> out;
  const auto a = what.find("device(s) "), b = what.find(" never arrived");
  if (a == std::string::npos || b == std::string::npos || b < a) return out;
  std::stringstream list(what.substr(a + 10, b - a - 10));
  std::string item;
  while (std::getline(list, item, ',')) out.push_back(std::stoi(item));
  return out;
}

enum class Verdict { kOk, kLate, kWrong };

struct Outcome {
  Verdict verdict = Verdict::kOk;
  std::string detail;
};

// Runs one trial: the full program must fail with exactly the injected error; for a failure
// injection, the same mesh must then run the steps before the injection point correctly.
Outcome run_trial(const Trial& t, std::chrono::milliseconds stall_timeout) {
  const bool stall = t.inj.kind == Injection::Kind::kStall;
  const std::size_t k = t.inj.at;
  const Step& at = t.steps[k - 1];
  const std::string d = std::to_string(t.inj.device);
  MeshOptions options;
  options.timeout = stall ? stall_timeout : std::chrono::milliseconds(10'000);
  options.injections = {t.inj};
  Mesh mesh(t.n, "data", options);
  std::vector<std::vector<Tensor>> out(static_cast<std::size_t>(t.n),
                                       std::vector<Tensor>(t.steps.size()));
  auto run = [&](std::size_t count) {
    mesh.run([&](Device& dev) {
      body(dev, t.steps, count, out[static_cast<std::size_t>(dev.index())]);
    });
  };

  std::string what;
  try {
    run(t.steps.size());
    return {Verdict::kWrong, "no error at all"};
  } catch (const AbortedError& e) {
    return {Verdict::kWrong, std::string("a consequence was reported, not the cause: ") + e.what()};
  } catch (const DeviceError& e) {
    what = e.what();
    const std::string want =
        "device " + d + " failed at " + device_name(at.op) + " #" + std::to_string(k) +
        " on 'data': injected failure (--inject fail:" + d + "@" + std::to_string(k) + ")";
    if (stall || e.device() != t.inj.device || what != want) {
      return {Verdict::kWrong, "DeviceError '" + what + "', expected '" + want + "'"};
    }
  } catch (const CollectiveError& e) {
    what = e.what();
    if (!stall) return {Verdict::kWrong, "CollectiveError '" + what + "' for an injected failure"};
    const std::string op_seq = std::string(collective_name(at.op)) + " #" + std::to_string(k);
    if (t.n == 1) {  // nobody waits for a lone device: its own stall ends the run
      if (!contains(what, "device 0 stalled at " + op_seq + " on 'data' (--inject stall:0@" +
                              std::to_string(k) + ") and never arrived")) {
        return {Verdict::kWrong, "'" + what + "'"};
      }
    } else {
      const std::vector<int> missing = missing_devices(what);
      bool named = false, valid = !missing.empty();
      for (int m : missing) {
        named = named || m == t.inj.device;
        valid = valid && m >= 0 && m < t.n;
      }
      if (contains(what, "timed out") && valid && !named) {
        // Another device missed an earlier deadline: a scheduling delay on a loaded machine (the
        // caller retries with a longer timeout) -- unless it is this very collective.
        return {contains(what, op_seq + " on") ? Verdict::kWrong : Verdict::kLate, what};
      }
      if (!contains(what, op_seq + " on 'data': timed out after ") || !named || !valid) {
        return {contains(what, "timed out") ? Verdict::kLate : Verdict::kWrong, "'" + what + "'"};
      }
      if (missing.size() != 1) return {Verdict::kLate, what};  // also a slow peer: retry
    }
  } catch (const std::exception& e) {
    return {Verdict::kWrong, std::string("unexpected exception: ") + e.what()};
  }

  if (!stall) {
    // The same mesh, right after the failure: the steps before the injection point run cleanly.
    try {
      run(k - 1);
    } catch (const std::exception& e) {
      return {Verdict::kWrong,
              std::string("the mesh is not usable after the failure: ") + e.what()};
    }
    for (std::size_t i = 0; i + 1 < k; ++i)
      for (int dev = 0; dev < t.n; ++dev) {
        const std::string bad =
            check_result(t.steps[i], i, dev, t.n, out[static_cast<std::size_t>(dev)][i]);
        if (!bad.empty()) return {Verdict::kWrong, bad};
      }
  }
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(ten_thousand_injected_failures_and_stalls) {
  const int trials = env_int("MESHRUN_STRESS_TRIALS", kDefaultTrials);
  const auto seed = static_cast<std::uint64_t>(env_int("MESHRUN_STRESS_SEED", 20261129));
  const int threads_before = thread_count();
  BOOST_TEST_REQUIRE(threads_before > 0);

  std::atomic<int> next{0}, fails{0}, stalls{0}, retried{0};
  std::mutex mu;
  std::vector<std::string> problems;  // Boost.Test's macros are for the main thread only
  auto driver = [&] {
    for (int i = next.fetch_add(1); i < trials; i = next.fetch_add(1)) {
      const Trial t = make_trial(seed, i);
      (t.inj.kind == Injection::Kind::kFail ? fails : stalls).fetch_add(1);
      Outcome o = run_trial(t, kStallTimeout);
      if (o.verdict == Verdict::kLate) {
        // A peer was descheduled past the short timeout: legitimately reported, but not the
        // injected stall. Replay the trial with a timeout long enough to rule scheduling out.
        retried.fetch_add(1);
        o = run_trial(t, kStallTimeout * 20);
      }
      if (o.verdict != Verdict::kOk) {
        std::lock_guard lock(mu);
        problems.push_back(
            "trial " + std::to_string(i) + " (MESHRUN_STRESS_SEED=" + std::to_string(seed) + ", " +
            std::to_string(t.n) + " devices, " +
            (t.inj.kind == Injection::Kind::kFail ? "fail:" : "stall:") +
            std::to_string(t.inj.device) + "@" + std::to_string(t.inj.at) + "): " + o.detail);
      }
    }
  };
  {
    std::vector<std::jthread> drivers;
    drivers.reserve(kDrivers);
    for (int i = 0; i < kDrivers; ++i) drivers.emplace_back(driver);
  }

  BOOST_TEST_MESSAGE(trials << " trials: " << fails << " injected failures, " << stalls
                            << " injected stalls, " << retried << " stall trials replayed");
  BOOST_TEST(fails.load() + stalls.load() == trials);
  for (std::size_t i = 0; i < problems.size() && i < 20; ++i) BOOST_ERROR(problems[i]);
  BOOST_TEST(problems.size() == 0u);
  // Replays are for the odd scheduling hiccup, not a way of hiding a wrong report.
  BOOST_TEST(retried.load() <= std::max(5, stalls.load() / 50));
  // Every mesh destroyed, every device thread joined.
  BOOST_TEST(thread_count() == threads_before);
}

// Item 2: "with one device stalled for 2 s the process uses well under 0.4 s of CPU". A resource
// bound, not a timing assertion: the seven waiters park on a futex, the stalled device sleeps.
BOOST_AUTO_TEST_CASE(a_two_second_stall_costs_little_cpu) {
  MeshOptions options;
  options.timeout = 2s;
  options.injections = {parse_injection("stall:5@1")};
  Mesh mesh(8, "data", options);
  const double cpu_before = cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  std::string what;
  try {
    mesh.run([](Device& dev) { (void)dev.psum(Tensor(Shape{16}), "data"); });
  } catch (const CollectiveError& e) {
    what = e.what();
  }
  const double cpu = cpu_seconds() - cpu_before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  BOOST_TEST_MESSAGE("2 s stall on 8 devices: " << cpu << " s CPU in " << wall << " s");
  BOOST_TEST(
      contains(what, "psum #1 on 'data': timed out after 2000 ms; device(s) 5 never arrived"),
      what);
  BOOST_TEST(cpu < 0.3);
  BOOST_TEST(wall < 30.0);  // catches a hang only
}

// Item 5: a mesh destroyed while a run is in progress on another thread -- one device stalled,
// the others waiting in a collective -- cancels the run, the run's caller gets a clear error, the
// destructor returns long before the 60 s timeout would have, and no thread is left behind.
BOOST_AUTO_TEST_CASE(destroying_a_mesh_mid_run_cancels_the_run_and_joins) {
  const int threads_before = thread_count();
  for (int rep = 0; rep < 20; ++rep) {
    MeshOptions options;
    options.timeout = 60s;
    options.injections = {parse_injection("stall:2@2")};
    auto mesh = std::make_unique<Mesh>(4, "data", options);
    std::atomic<int> entered{0};
    std::string what = "no error";
    std::jthread caller([&] {
      try {
        mesh->run([&](Device& dev) {
          (void)dev.psum(Tensor(Shape{rep % 2 ? 8u : 8000u}), "data");
          entered.fetch_add(1);
          (void)dev.psum(Tensor(Shape{rep % 2 ? 8u : 8000u}), "data");  // device 2 stalls here
        });
      } catch (const std::exception& e) {
        what = e.what();
      }
    });
    while (entered.load() < 4) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(rep % 5));
    const auto t0 = std::chrono::steady_clock::now();
    mesh.reset();  // returns once the run has returned and the threads are joined
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    caller.join();
    BOOST_TEST(took < 30.0);  // catches a hang only (the timeout is 60 s)
    BOOST_TEST(what == "mesh on 'data': the run was cancelled because the mesh was destroyed");
  }
  BOOST_TEST(thread_count() == threads_before);
}

// A run started from inside a body would wait for itself: it is refused with a clear error.
BOOST_AUTO_TEST_CASE(a_nested_run_is_refused) {
  Mesh mesh(2, "data");
  std::string what;
  try {
    mesh.run([&](Device& dev) {
      if (dev.index() == 0) mesh.run([](Device&) {});
    });
  } catch (const std::exception& e) {
    what = e.what();
  }
  BOOST_TEST(contains(what, "Mesh::run called while a run is in progress"), what);
  BOOST_CHECK_NO_THROW(mesh.run([](Device& dev) { (void)dev.psum(Tensor(Shape{4}), "data"); }));
}
