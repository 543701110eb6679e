// A 2-D mesh (data=2, model=4: 8 devices, numbered row-major, device = data * 4 + model) over R
// ranks (R = 1, 2, 4, 8): every collective over every group -- 'model', 'data', (data,model),
// (model,data) -- against a serial fold written here from the row-major numbering, bit for bit;
// and failures in one group releasing devices that wait in another group, on another rank.
// The groups are MpiMesh's (mpi_mesh.hpp): in-process inside a rank, sub-communicators across.
#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mpi/fold_values.hpp"
#include "mesh/mpi/mpi_mesh.hpp"
#include "io/mpi/mpi_runner.hpp"
#include "support/run_ranks.hpp"
#include "support/errors.hpp"

using namespace meshrun;

namespace {

constexpr int kData = 2, kModel = 4, kDevices = kData * kModel;

struct MpiFixture {
  MpiFixture() { init_mpi_threads(nullptr, nullptr); }
  ~MpiFixture() { MPI_Finalize(); }
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

const MeshShape kMesh = {{"data", kData}, {"model", kModel}};

// The groups, by hand: the members of device d's group over `tuple`, in the group's rank order
// (row-major over the tuple's axes).
std::vector<int> group_of(const std::string& tuple, int d) {
  const int data = d / kModel, model = d % kModel;
  std::vector<int> m;
  if (tuple == "model") {
    for (int j = 0; j < kModel; ++j) m.push_back(data * kModel + j);
  } else if (tuple == "data") {
    for (int i = 0; i < kData; ++i) m.push_back(i * kModel + model);
  } else if (tuple == "(data,model)") {
    for (int i = 0; i < kDevices; ++i) m.push_back(i);
  } else {  // (model,data)
    for (int j = 0; j < kModel; ++j)
      for (int i = 0; i < kData; ++i) m.push_back(i * kModel + j);
  }
  return m;
}
const char* const kTuples[] = {"model", "data", "(data,model)", "(model,data)"};

using meshrun::testing::input;
using meshrun::testing::value;
// The left fold over `members` in order, element by element.
std::vector<float> serial_sum(const std::vector<int>& members, std::size_t count,
                              std::uint64_t salt) {
  std::vector<float> sum = input(members[0], count, salt);
  for (std::size_t g = 1; g < members.size(); ++g)
    for (std::size_t i = 0; i < count; ++i) sum[i] += value(members[g], i, salt);
  return sum;
}

struct Diffs {
  std::mutex mu;
  std::string first;
  int count = 0;
  void compare(const std::string& what, const std::vector<float>& got,
               const std::vector<float>& want) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (i < got.size() &&
          std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want[i]))
        continue;
      std::lock_guard lock(mu);
      if (count++ == 0) {
        char buf[128];
        std::snprintf(buf, sizeof buf, ": element %zu is %a, expected %a", i,
                      i < got.size() ? double(got[i]) : NAN, double(want[i]));
        first = what + buf;
      }
      return;
    }
  }
};

Communicator& comm_for(const std::vector<GroupMembership>& groups, const std::string& label) {
  for (const GroupMembership& g : groups)
    if (g.label == label) return *g.comm;
  throw std::logic_error("no group " + label);
}

// One thread per local device, body(device, its groups); returns each device's error message
// ("" where it returned; "aborted: ..." for a device released by an abort). A body that throws
// aborts the mesh, as mpi_shard_map does.
std::vector<std::string> run_devices(
    MpiMesh& mesh, const std::function<void(int, const std::vector<GroupMembership>&)>& body) {
  std::vector<std::string> errors(static_cast<std::size_t>(mesh.local_devices()));
  meshrun::testing::run_members(
      mesh.local_devices(),
      [&](int j) {
        const int d = mesh.first_device() + j;
        try {
          body(d, mesh.memberships(j));
        } catch (const AbortedError& e) {
          errors[static_cast<std::size_t>(j)] = std::string("aborted: ") + e.what();
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(j)] = e.what();
          mesh.abort("device " + std::to_string(d) + " failed: " + e.what());
        }
      },
      [](int, const std::exception_ptr&) {});
  return errors;
}

int world_size() {
  int r = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &r);
  return r;
}

MpiOptions options(std::chrono::milliseconds timeout) {
  MpiOptions o;
  o.timeout = timeout;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mesh2d)

// psum, pmean, all_gather, psum_scatter and a ppermute (shift by one) in every group of every
// tuple: 0, 1, a prime, both sides of the gather/chain switch, and 1<<20 elements.
BOOST_AUTO_TEST_CASE(every_collective_in_every_group_matches_the_serial_fold) {
  BOOST_REQUIRE_MESSAGE(kDevices % world_size() == 0, "run with 1, 2, 4 or 8 ranks");
  MpiMesh mesh(kMesh, options(std::chrono::seconds(60)));
  Diffs diffs;
  const std::size_t counts[] = {0, 1, 1009, 4099, 1u << 20};
  const auto errors = run_devices(mesh, [&](int d, const std::vector<GroupMembership>& groups) {
    std::uint64_t salt = 0;
    for (std::size_t count : counts) {
      for (const char* tuple : kTuples) {
        const std::vector<int> members = group_of(tuple, d);
        const auto n = members.size();
        const int me =
            static_cast<int>(std::find(members.begin(), members.end(), d) - members.begin());
        Communicator& c = comm_for(groups, tuple);
        const std::string at = std::string(" on ") + tuple + ", count " + std::to_string(count) +
                               ", device " + std::to_string(d);
        if (c.rank() != me || c.size() != static_cast<int>(n))
          diffs.compare("group rank" + at, {float(c.rank())}, {float(me)});
        salt += 10;
        std::vector<float> out(count, NAN);
        c.all_reduce_sum(input(d, count, salt), out);
        diffs.compare("psum" + at, out, serial_sum(members, count, salt));
        std::vector<float> mean = serial_sum(members, count, salt + 1);
        for (float& v : mean) v /= static_cast<float>(n);
        std::fill(out.begin(), out.end(), NAN);
        c.all_reduce_mean(input(d, count, salt + 1), out);
        diffs.compare("pmean" + at, out, mean);
        const std::size_t block = count / n;  // the whole buffer is about `count`
        std::vector<float> all(block * n, NAN), gathered;
        for (int g : members) {
          const std::vector<float> v = input(g, block, salt + 2);
          gathered.insert(gathered.end(), v.begin(), v.end());
        }
        c.all_gather(input(d, block, salt + 2), all);
        diffs.compare("all_gather" + at, all, gathered);
        std::vector<float> part(block, NAN);
        c.reduce_scatter_sum(input(d, block * n, salt + 3), part);
        const std::vector<float> sum = serial_sum(members, block * n, salt + 3);
        diffs.compare("psum_scatter" + at, part,
                      std::vector<float>(sum.begin() + static_cast<long>(me * block),
                                         sum.begin() + static_cast<long>((me + 1) * block)));
        std::vector<int> shift(n);  // member g receives from member g - 1; member 0 gets zeros
        for (std::size_t g = 0; g < n; ++g) shift[g] = static_cast<int>(g) - 1;
        std::fill(out.begin(), out.end(), NAN);
        c.permute(input(d, count, salt + 4), out, shift);
        diffs.compare("ppermute" + at, out,
                      me == 0 ? std::vector<float>(count, 0.0f)
                              : input(members[static_cast<std::size_t>(me - 1)], count, salt + 4));
      }
    }
  });
  for (const std::string& e : errors) BOOST_TEST(e.empty(), e);
  BOOST_TEST(diffs.count == 0, diffs.first);
}

BOOST_AUTO_TEST_SUITE_END()

// ---------------------------------------------------------------- failures (one mpirun each)

namespace {

// Device 0 (rank 0) waits, outside any collective, until the mesh aborts (bounded by the test's
// ctest TIMEOUT), so devices 1-3 wait in their 'model' group for it; device 7 (on the last rank)
// fails or stalls in its own 'model' group. Devices 1-3 must be released by that other group's
// failure -- the timeout is long (60 s) in the failure case, so only the abort can free them
// within the ctest TIMEOUT (50 s).
// Returns each local device's error, then the mesh's abort reason.
std::vector<std::string> two_groups(std::chrono::milliseconds timeout, bool stall) {
  MpiMesh mesh(kMesh, options(timeout));
  std::vector<std::string> out =
      run_devices(mesh, [&](int d, const std::vector<GroupMembership>& groups) {
        Communicator& model = comm_for(groups, "model");
        std::vector<float> v(1000, 1.0f);
        model.all_reduce_sum(v, v);  // one collective that completes everywhere
        if (d == 0) {
          while (!mesh.aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          throw AbortedError("device 0 saw the abort");
        }
        if (d == 7) {
          if (!stall) throw std::runtime_error("injected failure");
          while (!mesh.aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          throw AbortedError("device 7 stalled until the abort");
        }
        model.all_reduce_sum(v, v);
      });
  out.push_back(mesh.reason());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mesh2d_failures)

BOOST_AUTO_TEST_CASE(a_failure_in_one_group_releases_devices_waiting_in_another) {
  const auto errors = two_groups(std::chrono::seconds(60), /*stall=*/false);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int k = kDevices / world_size();
  for (int j = 0; j < k; ++j) {
    const int d = k * rank + j;
    const std::string& e = errors[static_cast<std::size_t>(j)];
    BOOST_TEST_MESSAGE("device " << d << ": " << e);
    if (d >= 1 && d <= 3) BOOST_TEST(e.starts_with("aborted: "), "device " << d << ": " << e);
  }
  BOOST_TEST(errors.back() == "device 7 failed: injected failure", errors.back());
}

BOOST_AUTO_TEST_CASE(a_stall_in_one_group_releases_devices_waiting_in_another_at_the_timeout) {
  const auto errors = two_groups(std::chrono::milliseconds(1500), /*stall=*/true);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int k = kDevices / world_size();
  for (int j = 0; j < k; ++j) {
    const int d = k * rank + j;
    const std::string& e = errors[static_cast<std::size_t>(j)];
    BOOST_TEST_MESSAGE("device " << d << ": " << e);
    // Devices 4-6 time out waiting for device 7 while 1-3 wait for device 0, which waits for
    // the abort: 1-3 are released by the abort or by their own timeout, whichever comes first
    // (both at about 1.5 s), never left waiting.
    if (d >= 1 && d <= 6)
      BOOST_TEST(
          (e.starts_with("aborted: ") || e.find("timed out after 1500 ms") != std::string::npos),
          "device " << d << ": " << e);
  }
  BOOST_TEST(errors.back().find("timed out after 1500 ms") != std::string::npos, errors.back());
}

BOOST_AUTO_TEST_SUITE_END()
