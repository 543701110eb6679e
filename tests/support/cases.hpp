// What the CLI tests that run cases share: the case files of a folder, the grading tolerance on
// printed results, and the six documented outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace meshrun::testing {

// The *.json files in kSource/`relative_dir`, sorted, as relative paths.
inline std::vector<std::string> json_files(const std::string& relative_dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/" + relative_dir)) {
    if (e.path().extension() == ".json") {
      files.push_back(relative_dir + "/" + e.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every number of `got` within the grading tolerance (plus the 6-decimal printing) of `expected`.
inline void expect_close(const nlohmann::json& got, const nlohmann::json& expected,
                         const std::string& path) {
  if (expected.is_number()) {
    BOOST_REQUIRE_MESSAGE(got.is_number(), path << " is not a number");
    const double e = expected.get<double>();
    BOOST_TEST(std::fabs(got.get<double>() - e) <= 1e-5 + 1e-5 * std::fabs(e) + 5e-7,
               path << ": " << got << " vs " << expected);
    return;
  }
  BOOST_REQUIRE_MESSAGE(got.is_array() && got.size() == expected.size(),
                        path << " differs in shape");
  for (std::size_t i = 0; i < got.size(); ++i) {
    expect_close(got[i], expected[i], path + "[" + std::to_string(i) + "]");
  }
}

// The result line of `r` holds the keys of `case_file`'s expected, in order, each within the
// tolerance.
inline void expect_output_matches_case(const Result& r, const std::string& case_file) {
  const nlohmann::json c = meshrun::testing::parse_json(slurp(kSource + "/" + case_file));
  BOOST_REQUIRE_MESSAGE(r.out.size() > 1 && r.out.back() == '\n', case_file << ": no output line");
  const nlohmann::json got = meshrun::testing::parse_json(r.out);
  std::vector<std::string> got_keys, expected_keys;
  for (const auto& item : got.items()) got_keys.push_back(item.key());
  for (const auto& item : c.at("expected").items()) expected_keys.push_back(item.key());
  BOOST_TEST(got_keys == expected_keys, case_file);
  for (const auto& item : c.at("expected").items()) {
    expect_close(got.at(item.key()), item.value(), case_file + ": " + item.key());
  }
}

// The six documented outputs, exactly as problems.md prints them (joined onto one line).
inline const std::pair<const char*, const char*> kDocumented[] = {
    {"cases/dp-step/example1.json", R"({"w":[[1.11]],"b":[0.2],"loss":121.0})"},
    {"cases/dp-step/example2.json",
     R"({"w":[[0.072288],[0.239088]],"b":[-0.057],"loss":0.303913})"},
    {"cases/dp-step/example3.json",
     R"({"w":[[0.104475,0.8363],[-1.291212,-0.39135]],"b":[-0.195125,-0.22975],"loss":3.745738})"},
    {"cases/tp-mlp/example1.json",
     R"({"out":[[2.39]],"hidden":[[0.55,0.0,0.35,0.6,1.15,0.7,0.0,0.0]]})"},
    {"cases/tp-mlp/example2.json",
     R"({"out":[[1.112,-1.032],[0.779,-0.32]],)"
     R"("hidden":[[1.51,0.0,0.0,0.5,0.0,1.6,0.08,0.0],[0.29,0.0,0.04,0.2,0.25,1.09,0.0,0.37]]})"},
    {"cases/tp-mlp/example3.json",
     R"({"out":[[-3.534,4.49],[-0.194,0.812],[-0.924,1.478]],)"
     R"("hidden":[[0.94,2.86,1.46,1.12,0.0,0.0,0.0,0.24,0.0,0.0,2.78,0.0,0.1,1.72,2.8,0.88],)"
     R"([0.0,0.0,0.15,0.21,1.57,0.74,0.7,0.0,0.89,0.35,0.39,0.0,0.0,0.16,0.0,0.25],)"
     R"([0.0,0.1,0.37,0.35,0.67,0.1,0.34,0.0,0.55,0.0,0.85,0.0,0.0,0.4,0.22,0.31]]})"},
};

}  // namespace meshrun::testing
