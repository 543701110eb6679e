// The case reader through the meshrun binary: inputs too large to read are refused before they
// are read whole, no error line quotes more than a short excerpt of the input, .npy inputs, and
// --save-npy.
#include <boost/test/unit_test.hpp>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

using namespace meshrun::testing;

// Example 1 with `from` replaced by `to`.
std::string example1_with(const std::string& from, const std::string& to) {
  std::string text = slurp(kSource + "/cases/dp-step/example1.json");
  const auto at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

void expect_error(const Result& r, const std::string& line) {
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.out == "");
  BOOST_TEST(r.err == "meshrun: " + line + "\n");
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_input_over_the_limit_is_refused) {
  TempDir dir;
  const std::string example = slurp(kSource + "/cases/dp-step/example1.json");
  const std::string file = dir.write("case.json", example);
  const std::string limit = std::to_string(example.size() - 1);
  const std::string message =
      "larger than the input limit of " + limit + " bytes (--max-input-bytes)";
  // A regular file by its size, stdin as it streams; `check` takes the flag too.
  expect_error(run({"dp-step", "--max-input-bytes", limit, file}), file + ": " + message);
  expect_error(run({"dp-step", "--max-input-bytes", limit, "-"}, file), "<stdin>: " + message);
  const Result c = run({"check", "--max-input-bytes", limit, file});
  BOOST_TEST(c.code == 1);
  BOOST_TEST(c.out.find("ERROR " + file + ": " + message + "\n") == 0u, c.out);
  // At the limit it is read.
  const Result ok = run({"dp-step", "--max-input-bytes", std::to_string(example.size()), file});
  BOOST_TEST(ok.code == 0, ok.err);
  expect_error(run({"dp-step", "--max-input-bytes", "0", file}),
               "--max-input-bytes: must be from 1 to 9223372036854775807, got '0'");
  expect_error(run({"dp-step", "--max-input-bytes", "-1", file}),
               "--max-input-bytes: must be from 1 to 9223372036854775807, got '-1'");
}

BOOST_AUTO_TEST_CASE(an_endless_input_fails_at_once) {
  // /dev/zero is not a regular file (no size) and never ends: its first byte is the error.
  expect_error(run({"dp-step", "/dev/zero"}),
               "/dev/zero: invalid JSON at line 1, column 1 (byte 1): unexpected NUL byte");
  // Whitespace streams without being kept, up to the limit.
  TempDir dir;
  const std::string spaces = dir.write("spaces.json", std::string(100'000, ' '));
  expect_error(run({"dp-step", "--max-input-bytes", "70000", "-"}, spaces),
               "<stdin>: larger than the input limit of 70000 bytes (--max-input-bytes)");
}

BOOST_AUTO_TEST_CASE(long_values_are_quoted_short) {
  TempDir dir;
  const std::string forty(40, 'k');
  const std::string key = dir.write(
      "key.json", example1_with("\"lr\":", "\"" + std::string(1'000'000, 'k') + "\":1,\"lr\":"));
  expect_error(run({"dp-step", key}),
               key + ": input: unknown key \"" + forty + "...\" (expected w, b, x, y, lr)");
  const std::string problem = dir.write(
      "problem.json", example1_with("\"dp-step\"", "\"" + std::string(100'000, 'p') + "\""));
  expect_error(run({"dp-step", problem}), problem + ": problem: the case is for \"" +
                                              std::string(40, 'p') + "...\", not \"dp-step\"");
  // A multi-byte UTF-8 character is never cut in half: 39 ASCII bytes, then "é" (2 bytes).
  const std::string utf8 =
      dir.write("utf8.json",
                example1_with("\"lr\":", "\"" + std::string(39, 'a') + "\xc3\xa9tc\":1,\"lr\":"));
  expect_error(run({"dp-step", utf8}), utf8 + ": input: unknown key \"" + std::string(39, 'a') +
                                           "...\" (expected w, b, x, y, lr)");
  const std::string dup =
      dir.write("dup.json", example1_with("\"lr\":", "\"" + std::string(50, 'd') + "\":1,\"" +
                                                         std::string(50, 'd') + "\":1,\"lr\":"));
  expect_error(run({"dp-step", dup}),
               dup + ": input: duplicate key \"" + std::string(40, 'd') + "...\"");
}

// cases/npy: documented examples with arrays in .npy files beside the case (float32 and float64,
// .npy formats 1.0 to 3.0): the same outputs as the inline examples, graded PASS by `check`.
BOOST_AUTO_TEST_CASE(npy_cases_run_like_their_inline_examples) {
  const Result dp = run({"dp-step", "cases/npy/dp-step-example1.json"});
  BOOST_TEST(dp.code == 0, dp.err);
  BOOST_TEST(dp.out == "{\"w\":[[1.11]],\"b\":[0.2],\"loss\":121.0}\n");
  const Result tp = run({"tp-mlp", "--devices", "4", "cases/npy/tp-mlp-example2.json"});
  BOOST_TEST(tp.code == 0, tp.err);
  BOOST_TEST(tp.out == run({"tp-mlp", "--devices", "4", "cases/tp-mlp/example2.json"}).out);
  const Result check = run({"check", "cases/npy"});
  BOOST_TEST(check.code == 0, check.out << check.err);
  BOOST_TEST(check.out.find("2 passed, 0 failed\n") != std::string::npos, check.out);
}

// --save-npy DIR: each output as DIR/KEY.npy, float32 with the bits printed by --exact.
BOOST_AUTO_TEST_CASE(save_npy_writes_each_output) {
  TempDir dir;
  const std::string out = dir.path + "/new/outputs";  // created
  const Result r = run({"dp-step", "--exact", "--save-npy", out, "cases/dp-step/example3.json"});
  BOOST_TEST(r.code == 0, r.err);
  const nlohmann::json printed = meshrun::testing::parse_json(r.out);
  const auto npy = [](const std::string& shape, const std::vector<float>& values) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
    dict += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(dict.size() & 0xff);
    bytes += static_cast<char>(dict.size() >> 8);
    bytes += dict;
    for (const float v : values)
      bytes.append(reinterpret_cast<const char*>(&v), 4);  // little-endian host
    return bytes;
  };
  const auto f = [&](const nlohmann::json& v) { return static_cast<float>(v.get<double>()); };
  const nlohmann::json& w = printed["w"];
  BOOST_TEST(slurp(out + "/w.npy") ==
             npy("(2, 2)", {f(w[0][0]), f(w[0][1]), f(w[1][0]), f(w[1][1])}));
  BOOST_TEST(slurp(out + "/b.npy") == npy("(2,)", {f(printed["b"][0]), f(printed["b"][1])}));
  BOOST_TEST(slurp(out + "/loss.npy") == npy("()", {f(printed["loss"])}));
}

BOOST_AUTO_TEST_CASE(save_npy_write_errors_are_one_line) {
  TempDir dir;
  // A full disk shows only when the file is flushed.
  fs::create_directories(dir.path + "/full");
  fs::create_symlink("/dev/full", dir.path + "/full/w.npy");
  Result r = run({"dp-step", "--save-npy", dir.path + "/full", "cases/dp-step/example1.json"});
  BOOST_TEST(r.code != 0);
  BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  BOOST_TEST(r.err.find("--save-npy: cannot write " + dir.path +
                        "/full/w.npy: No space left on device\n") != std::string::npos,
             r.err);
  r = run({"dp-step", "--save-npy", "/dev/null/x", "cases/dp-step/example1.json"});
  BOOST_TEST(r.code != 0);
  BOOST_TEST(
      r.err.find("--save-npy: cannot create /dev/null/x: Not a directory\n") != std::string::npos,
      r.err);
}
