// The failure paths of the mesh and the in-process engine: a body that throws, mismatched
// collectives (on the staged and the direct path), a device that never arrives, --inject
// failures and stalls, bad injection specs, bad mesh sizes; after each failure the same Mesh must
// run again correctly, and destroying it must join cleanly.
//
// Assertions run on the main thread only; device threads record what they saw.
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "collectives/in_process.hpp"
#include "mesh/device.hpp"
#include "mesh/injection.hpp"
#include "mesh/mesh.hpp"
#include "support/run_ranks.hpp"
#include "support/errors.hpp"

using namespace meshrun;

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kRepeats = 3;
#else
constexpr int kRepeats = 10;
#endif

constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max() / 2;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs `body` and returns the exception it threw (nullptr if none).
template <class F>
std::exception_ptr capture(F&& f) {
  try {
    f();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

// A successful psum on every device of `mesh`, checked against the serial sum: the mesh is usable.
void check_mesh_works(Mesh& mesh) {
  const int n = mesh.size();
  std::vector<std::vector<float>> got(static_cast<std::size_t>(n));
  std::vector<int> idx(static_cast<std::size_t>(n), -1);
  const std::size_t counts[] = {3, 5000};  // staged and direct
  for (std::size_t count : counts) {
    mesh.run([&](Device& dev) {
      const int d = dev.index();
      idx[d] = d;
      std::vector<float> v(count);
      for (std::size_t i = 0; i < count; ++i)
        v[i] = 0.25f * static_cast<float>(d + 1) + static_cast<float>(i);
      dev.psum_inplace(v, mesh.axis());
      got[d] = v;
    });
    for (int d = 0; d < n; ++d) {
      BOOST_TEST(idx[d] == d);
      BOOST_REQUIRE_EQUAL(got[d].size(), count);
      for (std::size_t i = 0; i < count; i += 997) {
        float want = 0.25f + static_cast<float>(i);
        for (int r = 1; r < n; ++r)
          want += 0.25f * static_cast<float>(r + 1) + static_cast<float>(i);
        BOOST_TEST(got[d][i] == want, "device " << d << " element " << i);
      }
    }
  }
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "<not a std::exception>";
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(device_errors)

// A body that throws after its second psum: DeviceError naming the device and the collective; the
// others, waiting in psum #3, are released (they see an abort, not a timeout).
BOOST_AUTO_TEST_CASE(throwing_body_is_a_device_error_and_releases_the_others) {
  for (int n : {2, 8, 16}) {
    MeshOptions opts;
    opts.timeout =
        std::chrono::milliseconds(60'000);  // a non-released device would time out, not abort
    Mesh mesh(n, "data", opts);
    const int bad = n == 2 ? 1 : 3;
    std::vector<std::string> seen(static_cast<std::size_t>(n));
    std::vector<int> reached_third(static_cast<std::size_t>(n));
    auto e = capture([&] {
      mesh.run([&](Device& dev) {
        std::vector<float> v(10, 1.0f);
        dev.psum_inplace(v, "data");
        dev.psum_inplace(v, "data");
        if (dev.index() == bad) throw std::runtime_error("boom");
        reached_third[dev.index()] = 1;
        try {
          dev.psum_inplace(v, "data");
        } catch (const std::exception& x) {
          seen[dev.index()] = x.what();
          throw;
        }
      });
    });
    BOOST_REQUIRE(e);
    try {
      std::rethrow_exception(e);
    } catch (const DeviceError& x) {
      BOOST_TEST(x.device() == bad);
      BOOST_TEST(std::string(x.what()) ==
                 "device " + std::to_string(bad) + " failed at psum #2 on 'data': boom");
    } catch (const std::exception& x) {
      BOOST_TEST(false, "expected DeviceError, got: " << x.what());
    }
    for (int d = 0; d < n; ++d) {
      if (d == bad) continue;
      BOOST_TEST(reached_third[d] == 1);
      BOOST_TEST(contains(seen[d], "psum #3 on 'data'"), "device " << d << ": " << seen[d]);
      BOOST_TEST(contains(seen[d], "aborted"), "device " << d << ": " << seen[d]);
    }
    check_mesh_works(mesh);
  }
}

BOOST_AUTO_TEST_CASE(throw_before_any_collective_and_inside_pmean_naming) {
  Mesh mesh(4, "data");
  auto e = capture([&] {
    mesh.run([&](Device& dev) {
      if (dev.index() == 2) throw std::runtime_error("early");
      std::vector<float> v(3, 1.0f);
      dev.psum_inplace(v, "data");
    });
  });
  BOOST_REQUIRE(e);
  try {
    std::rethrow_exception(e);
  } catch (const DeviceError& x) {
    BOOST_TEST(x.device() == 2);
    BOOST_TEST(std::string(x.what()) == "device 2 failed before its first collective: early");
  } catch (const std::exception& x) {
    BOOST_TEST(false, "expected DeviceError, got: " << x.what());
  }
  check_mesh_works(mesh);

  // A non-std exception is still a DeviceError.
  e = capture([&] {
    mesh.run([&](Device& dev) {
      std::vector<float> v(3, 1.0f);
      dev.pmean_inplace(v, "data");
      if (dev.index() == 0) throw 42;
    });
  });
  BOOST_REQUIRE(e);
  try {
    std::rethrow_exception(e);
  } catch (const DeviceError& x) {
    BOOST_TEST(x.device() == 0);
    // After pmean has returned, where() still names the last collective entered: pmean #1.
    BOOST_TEST(contains(x.what(), "device 0 failed at pmean #1 on 'data': unknown exception"),
               x.what());
  } catch (const std::exception& x) {
    BOOST_TEST(false, "expected DeviceError, got: " << x.what());
  }
  check_mesh_works(mesh);
}

// A device out of memory fails the run with the std::bad_alloc itself, which meshrun reports as
// "out of memory" (exit 4), not as a device's failure (exit 3); the mesh still works after it.
BOOST_AUTO_TEST_CASE(out_of_memory_on_a_device_stays_bad_alloc) {
  Mesh mesh(4, "data");
  auto e = capture([&] {
    mesh.run([&](Device& dev) {
      std::vector<float> v(3, 1.0f);
      dev.psum_inplace(v, "data");
      if (dev.index() == 1) throw std::bad_alloc();
    });
  });
  BOOST_REQUIRE(e);
  BOOST_CHECK_THROW(std::rethrow_exception(e), std::bad_alloc);
  check_mesh_works(mesh);
}

// An injected failure inside pmean names the pmean.
BOOST_AUTO_TEST_CASE(failure_inside_pmean_names_pmean) {
  MeshOptions o;
  o.injections = {parse_injection("fail:1@2")};
  Mesh mesh(4, "data", o);
  auto e = capture([&] {
    mesh.run([](Device& dev) {
      std::vector<float> v(3, 1.0f);
      dev.psum_inplace(v, "data");
      dev.pmean_inplace(v, "data");
    });
  });
  BOOST_REQUIRE(e);
  try {
    std::rethrow_exception(e);
  } catch (const DeviceError& x) {
    BOOST_TEST(x.device() == 1);
    BOOST_TEST(std::string(x.what()) ==
               "device 1 failed at pmean #2 on 'data': injected failure (--inject fail:1@2)");
  } catch (const std::exception& x) {
    BOOST_TEST(false, "expected DeviceError, got: " << x.what());
  }
}

// A wrong axis name inside a body is a DeviceError (wrapping the InputError) naming the device.
BOOST_AUTO_TEST_CASE(unknown_axis_in_body) {
  Mesh mesh(3, "data");
  auto e = capture([&] {
    mesh.run([&](Device& dev) {
      std::vector<float> v(3, 1.0f);
      dev.psum_inplace(v, dev.index() == 1 ? "model" : "data");
    });
  });
  BOOST_REQUIRE(e);
  const std::string m = message_of(e);
  BOOST_TEST(contains(m, "device 1 failed"), m);
  BOOST_TEST(contains(m, "unknown axis name 'model'"), m);
  check_mesh_works(mesh);
}

// An invalid ppermute table (two sources to one destination) is rejected before any data moves.
BOOST_AUTO_TEST_CASE(invalid_permutation_is_rejected) {
  Mesh mesh(4, "data");
  auto e = capture([&] {
    mesh.run([&](Device& dev) {
      Tensor x({2}, {1.0f, 2.0f});
      (void)dev.ppermute(x, "data", {{0, 1}, {2, 1}});
    });
  });
  BOOST_REQUIRE(e);
  BOOST_TEST(contains(message_of(e), "is not part of a permutation of 4 devices"), message_of(e));
  check_mesh_works(mesh);
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(mismatch)

namespace {

enum class Kind { kOp, kCount, kPermTable, kStagedVsDirect };

// Device `odd` calls something different at sequence number 2 (after one good psum). Returns the
// error of every member (through InProcessGroup, with no abort from the test: each member must
// detect the mismatch itself) and checks that no output was written.
void expect_mismatch_everywhere(int n, std::size_t switch_bytes, Kind kind, std::size_t count) {
  GroupOptions o;
  o.staged_max_bytes = switch_bytes;
  o.timeout = std::chrono::seconds(60);
  InProcessGroup g(n, "data", o);
  const int odd = n - 1;
  std::vector<int> untouched(static_cast<std::size_t>(n), 1);
  // The members run on their own threads (no abort from the test: each must detect the mismatch).
  const auto errors = meshrun::testing::run_ranks_collect(
      g,
      [&](Communicator& c, int r) {
        std::vector<float> out;
        const float sentinel = -12345.0f;
        // Whether or not the call throws, none of out may have been written.
        auto note_untouched = [&] {
          untouched[r] =
              std::all_of(out.begin(), out.end(), [&](float v) { return v == sentinel; });
        };
        try {
          std::vector<float> warm(4, 1.0f);
          c.all_reduce_sum(warm, warm);
          // The odd device's buffers are exactly as long as its own call says: if any member read
          // data with the wrong count, ASan would see it.
          std::size_t my_count = count;
          if (r == odd && kind == Kind::kCount) my_count = count + 1;
          if (r == odd && kind == Kind::kStagedVsDirect) my_count = 5;
          std::vector<float> in(my_count, static_cast<float>(r + 1));
          out.assign(my_count, sentinel);
          if (kind == Kind::kOp && r == odd) {
            std::vector<float> gathered(my_count * static_cast<std::size_t>(n), sentinel);
            c.all_gather(in, gathered);
          } else if (kind == Kind::kPermTable) {
            std::vector<int> src(static_cast<std::size_t>(n));
            for (int d = 0; d < n; ++d) src[d] = r == odd ? d : (d + 1) % n;  // identity vs shift
            c.permute(in, out, src);
          } else {
            c.all_reduce_sum(in, out);
          }
        } catch (...) {
          note_untouched();
          throw;
        }
        note_untouched();
      },
      /*abort_on_error=*/false);
  for (int r = 0; r < n; ++r) {
    BOOST_REQUIRE_MESSAGE(errors[r], "member " << r << " of " << n << " did not fail");
    try {
      std::rethrow_exception(errors[r]);
    } catch (const CollectiveError& x) {
      BOOST_TEST(contains(x.what(), "mismatched collectives on 'data'"),
                 "member " << r << ": " << x.what());
      BOOST_TEST(contains(x.what(), "#2"), x.what());
      BOOST_TEST(contains(x.what(), "device " + std::to_string(odd)), x.what());
    } catch (const std::exception& x) {
      BOOST_TEST(false, "member " << r << ": expected CollectiveError, got: " << x.what());
    }
    BOOST_TEST(untouched[r] == 1, "member " << r << " had its output written");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_member_detects_it_on_every_path) {
  for (int n : {2, 3, 8}) {
    for (std::size_t sw : {std::size_t{16} * 1024, std::size_t{0}, kHuge}) {
      for (std::size_t count : {std::size_t{7}, std::size_t{5000}}) {
        BOOST_TEST_CONTEXT("n=" << n << " switch=" << sw << " count=" << count) {
          expect_mismatch_everywhere(n, sw, Kind::kOp, count);
          expect_mismatch_everywhere(n, sw, Kind::kCount, count);
          expect_mismatch_everywhere(n, sw, Kind::kPermTable, count);
          expect_mismatch_everywhere(n, sw, Kind::kStagedVsDirect, count);
        }
      }
    }
  }
}

// pmax on one member where the others call psum (and pmin against pmax), same count: every
// member fails with the one-line CollectiveError naming both calls, on either path, and no output
// is written (the descriptors differ only in the op).
BOOST_AUTO_TEST_CASE(pmax_or_pmin_against_another_reduction_names_both) {
  struct Pair {
    CollectiveOp odd, others;
  };
  for (const Pair pair : {Pair{CollectiveOp::kAllReduceMax, CollectiveOp::kAllReduce},
                          Pair{CollectiveOp::kAllReduceMin, CollectiveOp::kAllReduceMax},
                          Pair{CollectiveOp::kAllReduce, CollectiveOp::kAllReduceMin}}) {
    for (int n : {2, 3, 8}) {
      for (std::size_t count : {std::size_t{7}, std::size_t{5000}}) {
        InProcessGroup g(n, "data");
        const int odd = n - 1;
        std::vector<int> untouched(static_cast<std::size_t>(n), 1);
        const auto errors = meshrun::testing::run_ranks_collect(
            g,
            [&](Communicator& c, int r) {
              std::vector<float> warm(4, 1.0f);
              c.all_reduce_sum(warm, warm);
              const std::vector<float> in(count, static_cast<float>(r));
              std::vector<float> out(count, -12345.0f);
              const CollectiveOp op = r == odd ? pair.odd : pair.others;
              try {
                if (op == CollectiveOp::kAllReduceMax) {
                  c.all_reduce_max(in, out);
                } else if (op == CollectiveOp::kAllReduceMin) {
                  c.all_reduce_min(in, out);
                } else {
                  c.all_reduce_sum(in, out);
                }
              } catch (...) {
                untouched[static_cast<std::size_t>(r)] =
                    std::all_of(out.begin(), out.end(), [](float v) { return v == -12345.0f; });
                throw;
              }
            },
            /*abort_on_error=*/false);
        const std::string others =
            std::string(op_name(pair.others)) + " #2 with " + std::to_string(count) + " elements";
        const std::string mine =
            std::string(op_name(pair.odd)) + " #2 with " + std::to_string(count) + " elements";
        for (int r = 0; r < n; ++r) {
          BOOST_TEST_CONTEXT(op_name(pair.odd) << " against " << op_name(pair.others) << " n=" << n
                                               << " count=" << count << " member " << r) {
            BOOST_REQUIRE(errors[static_cast<std::size_t>(r)]);
            const std::string m = message_of(errors[static_cast<std::size_t>(r)]);
            BOOST_TEST(contains(m, "mismatched collectives on 'data': device "), m);
            BOOST_TEST(contains(m, "device " + std::to_string(odd) + " called " + mine), m);
            BOOST_TEST(contains(m, others), m);
            BOOST_TEST(m.find('\n') == std::string::npos);
            BOOST_TEST(untouched[static_cast<std::size_t>(r)] == 1);
            BOOST_CHECK_THROW(std::rethrow_exception(errors[static_cast<std::size_t>(r)]),
                              CollectiveError);
          }
        }
      }
    }
  }
}

// Through the mesh: Mesh::run throws CollectiveError (not DeviceError), and the mesh runs again.
BOOST_AUTO_TEST_CASE(through_mesh_each_kind) {
  Mesh mesh(8, "data");
  struct Case {
    std::string name;
    std::function<void(Device&)> body;
    std::string expect;
  };
  const std::vector<Case> cases{
      {"op",
       [](Device& dev) {
         Tensor x({4, 2});
         if (dev.index() == 5)
           (void)dev.all_gather(x, "data");
         else
           (void)dev.psum(x, "data");
       },
       "all_gather #1"},
      {"count staged",
       [](Device& dev) { (void)dev.psum(Tensor({dev.index() == 2 ? 9u : 8u}), "data"); },
       "with 9 elements"},
      {"count direct",
       [](Device& dev) { (void)dev.psum(Tensor({dev.index() == 2 ? 9001u : 9000u}), "data"); },
       "with 9001 elements"},
      {"staged vs direct",
       [](Device& dev) { (void)dev.psum(Tensor({dev.index() == 7 ? 10u : 9000u}), "data"); },
       "with 10 elements"},
      {"pmax against psum",
       [](Device& dev) {
         if (dev.index() == 6)
           (void)dev.pmax(Tensor({3, 3}), "data");
         else
           (void)dev.psum(Tensor({3, 3}), "data");
       },
       "device 6 called pmax #1 with 9 elements"},
      {"pmin against psum, direct",
       [](Device& dev) {
         if (dev.index() == 0)
           (void)dev.pmin(Tensor({9000}), "data");
         else
           (void)dev.psum(Tensor({9000}), "data");
       },
       "device 0 called pmin #1 with 9000 elements, device 1 called psum #1 with 9000 elements"},
      {"ppermute table",
       [](Device& dev) {
         std::vector<std::pair<int, int>> perm;
         perm.reserve(8);
         for (int d = 0; d < 8; ++d) perm.emplace_back(d, (d + (dev.index() == 4 ? 2 : 1)) % 8);
         (void)dev.ppermute(Tensor({6000}), "data", perm);
       },
       "ppermute #1"},
  };
  for (const Case& c : cases) {
    auto e = capture([&] { mesh.run(c.body); });
    BOOST_REQUIRE_MESSAGE(e, c.name << ": no error");
    try {
      std::rethrow_exception(e);
    } catch (const CollectiveError& x) {
      BOOST_TEST(contains(x.what(), "mismatched collectives on 'data'"),
                 c.name << ": " << x.what());
      BOOST_TEST(contains(x.what(), c.expect), c.name << ": " << x.what());
    } catch (const std::exception& x) {
      BOOST_TEST(false, c.name << ": expected CollectiveError, got: " << x.what());
    }
    check_mesh_works(mesh);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(timeouts_and_injections)

namespace {
MeshOptions short_timeout(std::vector<Injection> inj = {}) {
  MeshOptions o;
  o.timeout = std::chrono::milliseconds(200);
  o.injections = std::move(inj);
  return o;
}

void expect_collective_error(const std::exception_ptr& e, const std::vector<std::string>& parts) {
  BOOST_REQUIRE(e);
  try {
    std::rethrow_exception(e);
  } catch (const CollectiveError& x) {
    for (const auto& p : parts)
      BOOST_TEST(contains(x.what(), p), "missing '" << p << "' in: " << x.what());
  } catch (const std::exception& x) {
    BOOST_TEST(false, "expected CollectiveError, got: " << x.what());
  }
}
}  // namespace

// A device that skips a call: the others time out and the error names the missing device(s).
// Repeated, because which waiter reports first is a race the message must not depend on.
// A device whose body returns while the others wait for it in a collective: they fail at once
// with the mismatched-collective error naming it (DEPARTURES in in_process.hpp), long before the
// timeout (60 s here); the mesh works again after. (A device that never arrives and never returns
// is inject_stall's timeout.)
BOOST_AUTO_TEST_CASE(a_skipped_call_is_a_mismatch_naming_the_device_that_left) {
  MeshOptions opts;
  opts.timeout = std::chrono::milliseconds(60'000);
  for (int rep = 0; rep < kRepeats; ++rep) {
    Mesh mesh(8, "data", opts);
    const auto t0 = std::chrono::steady_clock::now();
    auto e = capture([&] {
      mesh.run([](Device& dev) {
        std::vector<float> v(10, 1.0f);
        dev.psum_inplace(v, "data");
        if (dev.index() == 5) return;  // skips psum #2
        dev.psum_inplace(v, "data");
      });
    });
    expect_collective_error(e, {"mismatched collectives on 'data'",
                                "device 5 left its body without calling psum #2 on 'data'"});
    check_mesh_works(mesh);

    e = capture([&] {
      mesh.run([](Device& dev) {
        if (dev.index() == 2 || dev.index() == 6) return;
        std::vector<float> v(5000, 1.0f);  // direct path
        dev.psum_inplace(v, "data");
      });
    });
    expect_collective_error(
        e, {"mismatched collectives on 'data'", "left its body without calling psum #1 on 'data'"});
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_TEST(secs < 30.0, "the departures took " << secs << " s");
    check_mesh_works(mesh);
  }
}

// A device that never calls pmax (staged) or pmin (direct) and returns: the others fail at once
// naming the op and the device that left; the mesh works again after.
BOOST_AUTO_TEST_CASE(a_skipped_pmax_or_pmin_times_out_within_the_bound) {
  for (int rep = 0; rep < 2; ++rep) {
    Mesh mesh(8, "data", short_timeout());
    auto t0 = std::chrono::steady_clock::now();
    auto e = capture([&] {
      mesh.run([](Device& dev) {
        std::vector<float> v(10, 1.0f);
        dev.pmax_inplace(v, "data");
        if (dev.index() == 5) return;  // skips pmax #2
        dev.pmax_inplace(v, "data");
      });
    });
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_collective_error(e, {"device 5 left its body without calling pmax #2 on 'data'"});
    BOOST_TEST(secs < 5.0, "the pmax mismatch took " << secs << " s");
    check_mesh_works(mesh);

    t0 = std::chrono::steady_clock::now();
    e = capture([&] {
      mesh.run([](Device& dev) {
        if (dev.index() == 2 || dev.index() == 6) return;
        const Tensor x({5000});  // direct path
        (void)dev.pmin(x, "data");
      });
    });
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_collective_error(e, {"left its body without calling pmin #1 on 'data'"});
    BOOST_TEST(secs < 5.0, "the pmin mismatch took " << secs << " s");
    check_mesh_works(mesh);
  }
}

// A device that throws while the others wait in pmax: they are released by the abort long before
// the (60 s) timeout, each naming the pmax, and the run fails as the thrower's DeviceError.
BOOST_AUTO_TEST_CASE(an_abort_releases_devices_waiting_in_pmax) {
  for (std::size_t count : {std::size_t{10}, std::size_t{5000}}) {
    MeshOptions opts;
    opts.timeout = std::chrono::milliseconds(60'000);
    Mesh mesh(8, "data", opts);
    std::vector<std::string> seen(8);
    const auto t0 = std::chrono::steady_clock::now();
    auto e = capture([&] {
      mesh.run([&](Device& dev) {
        std::vector<float> v(count, 1.0f);
        dev.pmin_inplace(v, "data");
        if (dev.index() == 4) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw std::runtime_error("boom");
        }
        try {
          dev.pmax_inplace(v, "data");
        } catch (const std::exception& x) {
          seen[static_cast<std::size_t>(dev.index())] = x.what();
          throw;
        }
      });
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    BOOST_REQUIRE(e);
    BOOST_TEST(message_of(e) == "device 4 failed at pmin #1 on 'data': boom");
    BOOST_TEST(secs < 10.0, "released after " << secs << " s");
    for (int d = 0; d < 8; ++d) {
      if (d == 4) continue;
      BOOST_TEST(contains(seen[static_cast<std::size_t>(d)], "pmax #2 on 'data'"),
                 "device " << d << ": " << seen[static_cast<std::size_t>(d)]);
      BOOST_TEST(contains(seen[static_cast<std::size_t>(d)], "aborted"),
                 "device " << d << ": " << seen[static_cast<std::size_t>(d)]);
    }
    check_mesh_works(mesh);
  }
}

BOOST_AUTO_TEST_CASE(inject_fail) {
  Mesh mesh(8, "data", short_timeout({parse_injection("fail:3@2")}));
  for (int rep = 0; rep < 2; ++rep) {  // the injection fires on every run
    auto e = capture([&] {
      mesh.run([](Device& dev) {
        std::vector<float> v(10, 1.0f);
        for (int i = 0; i < 4; ++i) dev.psum_inplace(v, "data");
      });
    });
    BOOST_REQUIRE(e);
    try {
      std::rethrow_exception(e);
    } catch (const DeviceError& x) {
      BOOST_TEST(x.device() == 3);
      BOOST_TEST(std::string(x.what()) ==
                 "device 3 failed at psum #2 on 'data': injected failure (--inject fail:3@2)");
    } catch (const std::exception& x) {
      BOOST_TEST(false, "expected DeviceError, got: " << x.what());
    }
  }
  // A body with only one collective never reaches #2: the run succeeds.
  std::vector<float> got(8);
  mesh.run([&](Device& dev) {
    std::vector<float> v(1, 2.0f);
    dev.psum_inplace(v, "data");
    got[dev.index()] = v[0];
  });
  for (float g : got) BOOST_TEST(g == 16.0f);
}

BOOST_AUTO_TEST_CASE(inject_stall) {
  for (int rep = 0; rep < kRepeats; ++rep) {
    Mesh mesh(8, "data", short_timeout({parse_injection("stall:5@1")}));
    auto e = capture([&] {
      mesh.run([](Device& dev) {
        std::vector<float> v(10, 1.0f);
        dev.psum_inplace(v, "data");
      });
    });
    expect_collective_error(
        e, {"psum #1 on 'data'", "timed out after 200 ms", "device(s) 5 never arrived"});
  }  // destroying the mesh right after the failed run joins
}

BOOST_AUTO_TEST_CASE(parse_injection_accepts_and_rejects) {
  const Injection a = parse_injection("fail:3@2");
  BOOST_TEST((a.kind == Injection::Kind::kFail));
  BOOST_TEST(a.device == 3);
  BOOST_TEST(a.at == 2u);
  const Injection b = parse_injection("stall:0@1");
  BOOST_TEST((b.kind == Injection::Kind::kStall));
  BOOST_TEST(b.device == 0);
  BOOST_TEST(b.at == 1u);
  const Injection c = parse_injection("stall:15@123456");
  BOOST_TEST(c.device == 15);
  BOOST_TEST(c.at == 123456u);

  for (const std::string bad : {"",
                                "fail",
                                "fail:",
                                "fail:3",
                                "fail:3@",
                                "fail:@2",
                                "fail:3@0",
                                "fail:-1@2",
                                "fail:3@-1",
                                "boom:3@2",
                                "FAIL:3@2",
                                " fail:3@2",
                                "fail:3@2 ",
                                "fail:3@2x",
                                "fail:x@2",
                                "fail@3:2",
                                "stall:1@2@3",
                                "fail:+3@2",
                                "fail:3:2@1",
                                "fail:99999999999999999999@1",
                                "fail:1@99999999999999999999999"}) {
    BOOST_TEST_CONTEXT("spec '" << bad << "'") {
      try {
        (void)parse_injection(bad);
        BOOST_TEST(false, "accepted");
      } catch (const InputError& x) {
        BOOST_TEST(x.field() == "--inject");
        BOOST_TEST(contains(x.what(), "--inject: '" + bad + "' is not"), x.what());
      }
    }
  }
  try {
    (void)parse_injection("nope", "--fault");
    BOOST_TEST(false, "accepted");
  } catch (const InputError& x) {
    BOOST_TEST(x.field() == "--fault");
  }
}

BOOST_AUTO_TEST_CASE(injection_for_a_missing_device_is_an_input_error) {
  MeshOptions o;
  o.injections = {parse_injection("fail:8@1")};
  BOOST_CHECK_THROW(Mesh(8, "data", o), InputError);
  o.injections = {parse_injection("fail:7@1")};
  BOOST_CHECK_NO_THROW(Mesh(8, "data", o));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(lifecycle)

BOOST_AUTO_TEST_CASE(size_below_one_is_an_input_error) {
  for (int bad : {0, -1, std::numeric_limits<int>::min()}) {
    try {
      Mesh m(bad, "data");
      BOOST_TEST(false, "accepted size " << bad);
    } catch (const InputError& x) {
      BOOST_TEST(x.field() == "--devices");
      BOOST_TEST(contains(x.what(), "must be at least 1"), x.what());
    }
  }
  Mesh one(1, "data");
  check_mesh_works(one);
}

// Destroying a mesh right after a failure (or without ever running) joins all device threads,
// whether they park between runs or end with each run.
BOOST_AUTO_TEST_CASE(destroy_right_after_failures) {
  for (int rep = 0; rep < 2 * kRepeats; ++rep) {
    MeshOptions keep;
    keep.keep_threads = rep % 2 == 0;
    { Mesh m(8, "data", keep); }
    {
      Mesh m(8, "data", keep);
      auto e = capture([&] {
        m.run([](Device& dev) {
          if (dev.index() == 0) throw std::runtime_error("x");
          std::vector<float> v(3);
          dev.psum_inplace(v, "data");
        });
      });
      BOOST_TEST(static_cast<bool>(e));
    }
    {
      MeshOptions o = keep;
      o.timeout = std::chrono::milliseconds(100);
      Mesh m(4, "data", o);
      auto e = capture([&] {
        m.run([](Device& dev) {
          if (dev.index() == 1) return;
          std::vector<float> v(3);
          dev.psum_inplace(v, "data");
        });
      });
      BOOST_TEST(static_cast<bool>(e));
    }
  }
}

// Many runs on one mesh, alternating failures and successes of every kind; with device threads
// that park between runs and with threads that end with every run (each run starts new ones).
BOOST_AUTO_TEST_CASE(mesh_survives_alternating_failures) {
  for (bool keep_threads : {true, false}) {
    MeshOptions o;
    o.timeout = std::chrono::milliseconds(200);
    o.keep_threads = keep_threads;
    Mesh mesh(6, "data", o);
    for (int rep = 0; rep < kRepeats; ++rep) {
      BOOST_TEST(static_cast<bool>(capture([&] {
        mesh.run([](Device& dev) {
          if (dev.index() == 4) throw std::logic_error("bad");
          std::vector<float> v(9000);
          dev.psum_inplace(v, "data");
        });
      })));
      check_mesh_works(mesh);
      BOOST_TEST(static_cast<bool>(capture([&] {
        mesh.run([](Device& dev) { (void)dev.psum(Tensor({dev.index() == 0 ? 2u : 3u}), "data"); });
      })));
      check_mesh_works(mesh);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(device_threads)

namespace {
// The threads of this process, from /proc/self/task (-1 where it cannot be read).
int process_threads() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return ec ? -1 : n;
}

// The thread count once it has settled at `want` (it may take the ending threads a moment),
// polling for at most 10 s; the last count read otherwise.
int threads_settled_at(int want) {
  int n = process_threads();
  for (int i = 0; i < 1000 && n != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = process_threads();
  }
  return n;
}
}  // namespace

// MeshOptions::keep_threads: with it (the default) the device threads outlive a run, parked;
// without it they end as soon as the run is over, before the mesh is destroyed, and the next run
// starts new ones.
BOOST_AUTO_TEST_CASE(keep_threads_decides_whether_device_threads_outlive_a_run) {
  const int base = process_threads();
  if (base < 0) {
    BOOST_TEST_MESSAGE("no /proc/self/task here: skipped");
    return;
  }
  for (bool keep_threads : {true, false}) {
    MeshOptions o;
    o.keep_threads = keep_threads;
    Mesh mesh(8, "data", o);
    BOOST_TEST(threads_settled_at(base) == base, "threads start with the first run");
    for (int run = 0; run < 3; ++run) {
      check_mesh_works(mesh);  // two runs each
      const int want = keep_threads ? base + 8 : base;
      BOOST_TEST(threads_settled_at(want) == want,
                 "keep_threads=" << keep_threads << " after run " << run);
    }
  }
  BOOST_TEST(threads_settled_at(base) == base, "every mesh joined its threads");
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(waiting)

namespace {
double thread_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

// A device waiting for a late peer parks instead of spinning: over a 500 ms wait it uses a small
// fraction of that in CPU time. This bounds CPU time, not elapsed time (a loaded machine gives a
// parked thread less CPU, never more), so it is not a timed assertion.
BOOST_AUTO_TEST_CASE(waiting_does_not_burn_cpu) {
  for (int n : {2, 8}) {  // 2: spin-then-park (threads <= cores); 8: yield-then-park
    Mesh mesh(n, "data");
    std::vector<double> cpu(static_cast<std::size_t>(n));
    mesh.run([&](Device& dev) {
      std::vector<float> v(4, 1.0f);
      if (dev.index() == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const double before = thread_cpu_seconds();
      dev.psum_inplace(v, "data");
      cpu[dev.index()] = thread_cpu_seconds() - before;
    });
    for (int d = 0; d < n - 1; ++d)
      BOOST_TEST(cpu[d] < 0.15,
                 "n=" << n << " device " << d << " used " << cpu[d] << " s of CPU waiting");
  }
}

BOOST_AUTO_TEST_SUITE_END()
