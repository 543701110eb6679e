// main() of every test executable, compiled once (meshrun_test_main) instead of in each test's
// translation unit through BOOST_TEST_MODULE: so no test defines a macro that Boost.Test's header
// reads, and all of them can share one precompiled header (tests/support/pch.hpp). The module is
// named after the executable, as BOOST_TEST_MODULE=<target> named it.
#include <boost/test/unit_test.hpp>
#include <string>

namespace {
bool name_the_module() {
  auto& suite = boost::unit_test::framework::master_test_suite();
  const std::string path = suite.argc > 0 ? suite.argv[0] : "meshrun_test";
  suite.p_name.value = path.substr(path.find_last_of('/') + 1);
  return true;
}
}  // namespace

int main(int argc, char* argv[]) {
  return boost::unit_test::unit_test_main(&name_the_module, argc, argv);
}
