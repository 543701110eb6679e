// A 2x4 mesh under injected failures in one group: a device that throws, or never arrives, at a
// collective in its 'model' group must release the devices waiting in every other group (its
// 'data' group, the other 'model' group, the whole-mesh tuple) -- the run ends with the cause
// named, nothing hangs, and the same mesh then runs clean with the right sums. Message sizes cross
// the engine's staged/direct threshold. Meant for ThreadSanitizer too (make tsan runs it).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "mesh/injection.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

using namespace meshrun;

namespace {

const MeshShape k2x4{{"data", 2}, {"model", 4}};
constexpr int kCollectivesPerRound = 3;

// Rounds of psum over 'model', pmean over 'data', psum over ('data', 'model'); checks the sums
// (every device holds the value 1 + its index: the sums are exact integers).
void body(Device& dev, int rounds, std::vector<std::string>& errors) {
  const int d = dev.index(), j = d % 4, i = d / 4;
  for (int r = 0; r < rounds; ++r) {
    const std::size_t elems = r % 2 ? 5000 : 3;  // 20 KB: direct path; 12 B: staged
    std::vector<float> buf(elems, static_cast<float>(d + 1));
    dev.psum_inplace(buf, "model");  // (4i+1) + ... + (4i+4)
    const float model_sum = static_cast<float>(16 * i + 10);
    if (buf[0] != model_sum) errors[static_cast<std::size_t>(d)] += "model; ";
    dev.pmean_inplace(buf, "data");  // the mean of 10 and 26
    if (buf[elems - 1] != 18.0f) errors[static_cast<std::size_t>(d)] += "data; ";
    std::vector<float> one(elems, static_cast<float>(j));
    dev.psum_inplace(one, {"data", "model"});  // 2 * (0 + 1 + 2 + 3)
    if (one[0] != 12.0f) errors[static_cast<std::size_t>(d)] += "tuple; ";
  }
}

void check_clean_run(Mesh& mesh) {
  std::vector<std::string> errors(8);
  mesh.run([&](Device& dev) { body(dev, 4, errors); });
  for (int d = 0; d < 8; ++d)
    BOOST_TEST(errors[static_cast<std::size_t>(d)].empty(),
               "device " << d << ": " << errors[static_cast<std::size_t>(d)]);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_failure_in_one_model_group_releases_every_group) {
  for (int at = 1; at <= 3 * kCollectivesPerRound; ++at) {
    for (int device : {1, 5, 6}) {
      MeshOptions o;
      o.timeout = std::chrono::seconds(30);  // a hang would show as a timeout, not a pass
      o.injections = {parse_injection("fail:" + std::to_string(device) + "@" + std::to_string(at))};
      Mesh mesh(k2x4, o);
      std::vector<std::string> errors(8);
      try {
        mesh.run([&](Device& dev) { body(dev, 4, errors); });
        BOOST_TEST(false, "the injected failure was not reported");
      } catch (const DeviceError& e) {
        BOOST_TEST(e.device() == device);
        BOOST_TEST(
            contains(e.what(), "injected failure (--inject fail:" + std::to_string(device) + "@"),
            e.what());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_mesh_runs_clean_after_failures_in_a_group) {
  MeshOptions o;
  o.timeout = std::chrono::seconds(30);
  o.injections = {parse_injection("fail:6@4")};
  Mesh failing(k2x4, o);
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<std::string> errors(8);
    BOOST_CHECK_THROW(failing.run([&](Device& dev) { body(dev, 4, errors); }), DeviceError);
  }
  Mesh mesh(k2x4);
  for (int rep = 0; rep < 20; ++rep) check_clean_run(mesh);
}

// Device 6 never arrives at its 4th collective (psum #2 over 'model' in group {4,5,6,7}). Nothing
// hangs: the first group to time out aborts the mesh and every other group is released. Which
// group times out first is a race -- {4,5,7} waiting for 6, a 'data' group where device 0-3 waits
// for 4, 5 or 7, themselves still waiting for 6, or the 'data' group {2, 6} waiting for 6 -- but
// the report is not: the 'model' psum, where 6 stalled.
BOOST_AUTO_TEST_CASE(a_stall_in_one_group_times_out_and_releases_every_group) {
  for (int rep = 0; rep < 3; ++rep) {
    MeshOptions o;
    o.timeout = std::chrono::milliseconds(200);
    o.injections = {parse_injection("stall:6@4")};
    Mesh mesh(k2x4, o);
    std::vector<std::string> errors(8);
    try {
      mesh.run([&](Device& dev) { body(dev, 4, errors); });
      BOOST_TEST(false, "the stall was not reported");
    } catch (const CollectiveError& e) {
      BOOST_TEST(std::string(e.what()) ==
                     "psum #2 on 'model': timed out after 200 ms; device(s) 6 never arrived "
                     "(6 stalled by --inject)",
                 e.what());
    }
  }
}

// Back-to-back collectives in every group: catches epoch reuse across groups.
BOOST_AUTO_TEST_CASE(thousands_of_collectives_in_all_groups) {
  Mesh mesh(k2x4);
  std::vector<std::string> errors(8);
  mesh.run([&](Device& dev) { body(dev, 1500, errors); });
  for (int d = 0; d < 8; ++d) BOOST_TEST(errors[static_cast<std::size_t>(d)].empty());
}
