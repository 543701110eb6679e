// An engine that implements only some collectives: the others report, cleanly and as one line,
// that this engine does not implement them (UnimplementedError, exit 2), through a Device and
// through Mesh::run -- so a new collective can be added to one engine before the others.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "mesh/device.hpp"
#include "mesh/group_provider.hpp"
#include "mesh/mesh.hpp"
#include "support/errors.hpp"

using namespace meshrun;

namespace {

// One member, and only psum.
class SumOnly final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::uint64_t seq() const override { return seq_; }
  const char* engine() const override { return "sum-only"; }
  void all_reduce_sum(std::span<const float> in, std::span<float> out) override {
    ++seq_;
    std::copy(in.begin(), in.end(), out.begin());
  }

 private:
  std::uint64_t seq_ = 0;
};

// A one-device mesh on axis 'data' whose group is a SumOnly.
class SumOnlyGroups final : public GroupProvider {
 public:
  int first_device() const override { return 0; }
  int local_devices() const override { return 1; }
  void begin_run(const GroupOptions&, std::function<void()>) override { comm_ = SumOnly(); }
  std::vector<GroupMembership> memberships(int) override { return {{{"data"}, "data", &comm_}}; }
  void abort(const std::string&) override {}

 private:
  SumOnly comm_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_op_the_engine_lacks_is_unimplemented_error_naming_engine_and_op) {
  SumOnly comm;
  Device device(0, {{"data", 1}}, {{{"data"}, "data", &comm}});
  const Tensor x({2}, {1.0f, 2.0f});
  BOOST_TEST(device.psum(x, "data").data == x.data);  // the one it implements
  const auto refused = [&](auto call, const std::string& message) {
    try {
      call();
      BOOST_ERROR("no error for " + message);
    } catch (const UnimplementedError& e) {
      BOOST_TEST(e.what() == message);
      BOOST_TEST(dynamic_cast<const InputError*>(&e) != nullptr);  // exit 2 (support/exit_code.cpp)
    }
  };
  refused([&] { device.pmean(x, "data"); }, "sum-only does not implement pmean");
  refused([&] { device.all_gather(x, "data"); }, "sum-only does not implement all_gather");
  refused([&] { device.psum_scatter(x, "data"); }, "sum-only does not implement psum_scatter");
  refused([&] { device.ppermute(x, "data", {{0, 0}}); }, "sum-only does not implement ppermute");
  refused([&] { device.pmax(x, "data"); }, "sum-only does not implement pmax");
  refused([&] { device.pmin(x, "data"); }, "sum-only does not implement pmin");
  BOOST_TEST(comm.seq() == 1u);  // a refused call is not counted
}

BOOST_AUTO_TEST_CASE(mesh_run_reports_the_unimplemented_op_as_one_line) {
  MeshOptions options;
  options.groups = std::make_shared<SumOnlyGroups>();
  Mesh mesh(1, "data", options);
  try {
    mesh.run([](Device& d) {
      const Tensor x({2}, {1.0f, 2.0f});
      d.psum(x, "data");
      d.all_gather(x, "data");
    });
    BOOST_ERROR("the run did not fail");
  } catch (const UnimplementedError& e) {
    const std::string what = e.what();
    BOOST_TEST(
        what ==
        "device 0 failed at all_gather #2 on 'data': sum-only does not implement all_gather");
    BOOST_TEST(what.find('\n') == std::string::npos);
  }
  // The mesh runs again, and what the engine implements works.
  mesh.run([](Device& d) { d.psum(Tensor({1}, {3.0f}), "data"); });
}
