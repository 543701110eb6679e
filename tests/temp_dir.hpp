// A fresh directory under /tmp for one test, removed at its end, with a helper to write files.
#pragma once

#include <stdlib.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace meshrun::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/meshrun_test_dir.XXXXXX";
    BOOST_REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `text` to path/name and returns that path.
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace meshrun::testing
