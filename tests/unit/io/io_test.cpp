// lib/io: number formatting, the result writer, the case reader's rejections (exact messages),
// hostile input (deep nesting, a ~50 MB case), and the comparison rule.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <sys/stat.h>
#include <unistd.h>

#include "io/case_reader.hpp"
#include "io/json_summary.hpp"
#include "io/json_text.hpp"
#include "io/compare.hpp"
#include "io/npy.hpp"
#include "io/number_format.hpp"
#include "io/result_writer.hpp"
#include "mesh/mesh.hpp"
#include "programs/program.hpp"
#include "support/errors.hpp"

using namespace meshrun;

namespace {

const std::string kSource = MESHRUN_SOURCE_DIR;

std::string fmt(float v, int precision = 6) { return format_number(v, {precision, false}); }
std::string exact(float v) { return format_number(v, {6, true}); }

// A temp file holding `text`, removed when the test ends.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text, const std::string& name = "case.json") {
    char dir[] = "/tmp/meshrun_io_test.XXXXXX";
    BOOST_REQUIRE(mkdtemp(dir) != nullptr);
    path = std::string(dir) + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() {
    std::remove(path.c_str());
    rmdir(path.substr(0, path.rfind('/')).c_str());
  }
};

const ProgramDef& dp() { return *find_program("dp-step"); }
const ProgramDef& tp() { return *find_program("tp-mlp"); }

// read_case on `text` must throw InputError with exactly "<file>: <message>".
void expect_rejected(const std::string& text, const std::string& message,
                     const ProgramDef* program = &dp(), int devices = 8) {
  TempFile f(text);
  try {
    read_case(f.path, program, devices);
    BOOST_ERROR("accepted, expected: " << message);
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == f.path + ": " + message);
  }
}

const std::string kDpInput = R"({"w":[[0.0]],"b":[0.0],"x":[[1],[2],[3],[4],[5],[6],[7],[8]],)"
                             R"("y":[[3],[5],[7],[9],[11],[13],[15],[17]],"lr":0.01})";

std::string dp_case(const std::string& input, const std::string& extra = "") {
  return R"({"problem":"dp-step","name":"t","input":)" + input + extra + "}";
}

// The dp-step case of kDpInput with its first `from` replaced by `to`.
std::string dp_case_with(const std::string& from, const std::string& to) {
  std::string s = kDpInput;
  s.replace(s.find(from), from.size(), to);
  return dp_case(s);
}

// A .npy file's bytes, written here byte by byte (not by the library): magic, version, header
// length (2 bytes for 1.0, 4 for 2.0 and 3.0), the header dict padded to 64 bytes, the data.
// With `skew`, the data starts that many bytes past the 64-byte boundary instead.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1,
                     std::size_t skew = 0) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != skew % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t b = 0; b < prefix - 8; ++b)
    out += static_cast<char>((header.size() >> (8 * b)) & 0xff);
  return out + header + data;
}

// Little-endian bytes of float32 or float64 values.
template <class T>
std::string le_bytes(std::initializer_list<T> values) {
  std::string out;
  for (const T v : values) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (std::size_t i = 0; i < sizeof(T); ++i)
      out += static_cast<char>(b[i]);  // host is little-endian
  }
  return out;
}

// A case file and .npy files beside it, in one temp directory.
struct NpyCase {
  std::string dir;
  explicit NpyCase(const std::vector<std::pair<std::string, std::string>>& files) {
    char d[] = "/tmp/meshrun_io_npy.XXXXXX";
    BOOST_REQUIRE(mkdtemp(d) != nullptr);
    dir = d;
    for (const auto& [name, bytes] : files) {
      std::filesystem::create_directories(std::filesystem::path(dir + "/" + name).parent_path());
      std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    }
  }
  ~NpyCase() { std::filesystem::remove_all(dir); }
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

const std::string kX = R"({'descr': '<f4', 'fortran_order': False, 'shape': (8, 1), })";
const std::string kXData = le_bytes<float>({1, 2, 3, 4, 5, 6, 7, 8});

// kDpInput with x from x.npy.
std::string npy_dp_case() {
  std::string s = dp_case(kDpInput);
  const std::string x = "[[1],[2],[3],[4],[5],[6],[7],[8]]";
  return s.replace(s.find(x), x.size(), R"({"npy":"x.npy"})");
}

// read_case on a case with x from a .npy holding `npy` must throw exactly "<case>: <message>",
// where {} in `message` stands for the .npy file's path.
void expect_npy_rejected(const std::string& npy, std::string message) {
  NpyCase c({{"case.json", npy_dp_case()}, {"x.npy", npy}});
  if (const auto at = message.find("{}"); at != std::string::npos)
    message.replace(at, 2, c.path("x.npy"));
  try {
    read_case(c.path("case.json"), &dp(), 8);
    BOOST_ERROR("accepted, expected: " << message);
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == c.path("case.json") + ": " + message);
  }
}

// A program of arrays of rank 3 and 4 (issue 48.4), as a program file declares them: x split
// along dimension 1 over 'data', z whole; outputs of rank 3, 4 and 0.
const ProgramDef& rank_n() {
  static const ProgramDef p = [] {
    ProgramDef d;
    d.name = "rank-n";
    d.axis = "data";
    d.mesh = {{"data", 2}};
    d.inputs = {{"x", {"A", "N", "C"}, P{None, "data"}}, {"z", {"A", "B", "C", "D"}, P{}}};
    d.outputs = {
        {"y", {"A", "N", "C"}, P{None, "data"}}, {"t", {"A", "B", "C", "D"}, P{}}, {"s", {}, P{}}};
    return d;
  }();
  return p;
}

const std::string kX3 = "[[[1,2],[3,4]],[[5,6],[7,8]]]";  // f32[2,2,2]
const std::string kZ4 = "[[[[1],[2]]],[[[3],[4]]]]";      // f32[2,1,2,1]

std::string rank_n_case(const std::string& x, const std::string& z = kZ4,
                        const std::string& extra = "") {
  return R"({"problem":"rank-n","name":"t","input":{"x":)" + x + R"(,"z":)" + z + "}" + extra + "}";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(number_format)

BOOST_AUTO_TEST_CASE(documented_style) {
  BOOST_TEST(fmt(121.0f) == "121.0");
  BOOST_TEST(fmt(0.2f) == "0.2");
  BOOST_TEST(fmt(-0.057f) == "-0.057");
  BOOST_TEST(fmt(1.11f) == "1.11");
  BOOST_TEST(fmt(0.0f) == "0.0");
  BOOST_TEST(fmt(2.0f) == "2.0");
  BOOST_TEST(fmt(-1.291212f) == "-1.291212");
  BOOST_TEST(fmt(130499144.0f) == "130499144.0");
}

BOOST_AUTO_TEST_CASE(negative_zero_prints_as_zero) {
  BOOST_TEST(fmt(-0.0f) == "0.0");
  BOOST_TEST(fmt(-1e-9f) == "0.0");  // rounds to -0.0
  BOOST_TEST(exact(-0.0f) == "0.0");
}

BOOST_AUTO_TEST_CASE(rounds_like_jnp_round_in_float32) {
  // 0.0722875 has no float32; its nearest is 0.07228749990463..., which jnp.round(x, 6) (float32
  // arithmetic, ties to even) turns into 0.072288 -- as problems.md prints it.
  const float nearest = 0.0722875f;
  BOOST_TEST(static_cast<double>(nearest) < 0.0722875);
  BOOST_TEST(fmt(nearest) == "0.072288");
  BOOST_TEST(fmt(3.14159265f) == "3.141593");
  BOOST_TEST(fmt(0.30391252f) == "0.303913");
}

BOOST_AUTO_TEST_CASE(python_repr_exponent_form) {
  BOOST_TEST(fmt(1e-6f) == "1e-06");
  BOOST_TEST(fmt(1.5e-5f) == "1.5e-05");
  BOOST_TEST(fmt(0.0001f) == "0.0001");
  BOOST_TEST(fmt(4e-7f) == "0.0");
  BOOST_TEST(fmt(6e-7f) == "1e-06");
  // Large floats print their shortest float32 decimal, as --exact does (1e15f is not exactly
  // 1e15, but "1e15" is the shortest decimal that reads back as it).
  BOOST_TEST(fmt(1e15f) == "1000000000000000.0");
  BOOST_TEST(fmt(1e14f) == "100000000000000.0");
  BOOST_TEST(fmt(1e16f) == "1e+16");
  BOOST_TEST(fmt(123456.79f) == "123456.79");
  BOOST_TEST(exact(1e16f) == "1e+16");
  BOOST_TEST(exact(1e-7f) == "1e-07");
  BOOST_TEST(exact(std::numeric_limits<float>::max()) == "3.4028235e+38");
}

BOOST_AUTO_TEST_CASE(precision) {
  BOOST_TEST(fmt(3.14159f, 2) == "3.14");
  BOOST_TEST(fmt(3.14159f, 0) == "3.0");
  BOOST_TEST(fmt(2.5f, 0) == "3.0");  // ties away from zero, on the shortest decimal
  BOOST_TEST(fmt(-2.5f, 0) == "-3.0");
  BOOST_TEST(fmt(3.5f, 0) == "4.0");
  // The ties of the documented outputs: the shortest decimals 0.0722875 and 0.3039125 round up
  // although the floats' exact binary values lie just below them.
  BOOST_TEST(fmt(0.0722875f) == "0.072288");
  BOOST_TEST(fmt(0.3039125f) == "0.303913");
  BOOST_TEST(fmt(0.9999996f) == "1.0");  // the carry runs through the nines
  BOOST_TEST(fmt(-0.057f, 1) == "-0.1");
  BOOST_TEST(fmt(0.123456789f, 9) == "0.12345679");  // no digits beyond the float32's own
}

BOOST_AUTO_TEST_CASE(exact_is_shortest_float32) {
  BOOST_TEST(exact(0.1f) == "0.1");
  BOOST_TEST(exact(0.0722875f) == "0.0722875");
  BOOST_TEST(exact(16777216.0f) == "16777216.0");
  BOOST_TEST(exact(-3.5340006f) == "-3.5340006");
  BOOST_TEST(fmt(-3.5340006f) == "-3.534001");
}

// The rule written out once more, independently: printf finds the shortest decimal (the fewest
// significant digits that read back as the float), the decimal string is rounded half away from
// zero, and Python's repr lays it out. append_number has a shortcut that skips the shortest
// decimal when no tie is near; this checks it on random floats and on the floats next to every
// kind of tie, for several precisions.
std::string reference_format(float v, int precision) {
  if (v == 0) return "0.0";
  const float m = std::fabs(v);
  char buf[64];
  int sig = 1;
  for (; sig < 9; ++sig) {
    std::snprintf(buf, sizeof buf, "%.*e", sig - 1, static_cast<double>(m));
    if (std::strtof(buf, nullptr) == m) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", sig - 1, static_cast<double>(m));
  std::string digits;
  const char* p = buf;
  for (; *p != 'e'; ++p) {
    if (*p != '.') digits += *p;
  }
  int exponent = std::atoi(p + 1);
  const long keep = exponent + 1L + precision;
  if (keep < static_cast<long>(digits.size())) {
    if (keep < 0) return "0.0";
    const bool up = digits[static_cast<std::size_t>(keep)] >= '5';
    digits.resize(static_cast<std::size_t>(keep));
    if (up) {
      std::size_t i = digits.size();
      while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
      if (i == 0) {
        digits.insert(digits.begin(), '1');
        ++exponent;
      } else {
        ++digits[i - 1];
      }
    }
  }
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  if (digits.empty()) return "0.0";
  std::string out = v < 0 ? "-" : "";
  const int n = static_cast<int>(digits.size());
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (n > 1) {
      out += '.';
      out += digits.substr(1);
    }
    std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + buf;
  }
  if (exponent < 0)
    return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  if (n <= exponent + 1)
    return out + digits + std::string(static_cast<std::size_t>(exponent + 1 - n), '0') + ".0";
  const std::size_t whole = static_cast<std::size_t>(exponent) + 1;  // digits before the point
  return out + digits.substr(0, whole) + "." + digits.substr(whole);
}

BOOST_AUTO_TEST_CASE(rounding_matches_an_independent_reference) {
  std::mt19937 rng(7);
  int checked = 0;
  auto check = [&](float v, int precision) {
    if (!std::isfinite(v)) return;
    ++checked;
    const std::string got = fmt(v, precision);
    const std::string want = reference_format(v, precision);
    if (got != want)
      BOOST_ERROR(std::hexfloat << v << " precision " << precision << ": " << got
                                << " != " << want);
  };
  for (int i = 0; i < 40000; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    float v = 0;
    std::memcpy(&v, &bits, sizeof v);
    for (int precision : {0, 2, 6, 9, 13}) check(v, precision);
    check(
        std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f, static_cast<int>(rng() % 40) - 20),
        6);
  }
  // The floats around (k + 0.5) * 10^-p, the ties of the decimal rounding.
  for (int precision : {0, 1, 3, 6, 7, 12}) {
    for (int k = 0; k < 3000; ++k) {
      const double tie = (k * 7919 % 1000003 + 0.5) / std::pow(10.0, precision);
      std::uint32_t bits = 0;
      const float near = static_cast<float>(tie);
      std::memcpy(&bits, &near, sizeof bits);
      for (std::uint32_t d = 0; d < 5; ++d) {
        const std::uint32_t b = bits + d - 2;
        float v = 0;
        std::memcpy(&v, &b, sizeof v);
        check(v, precision);
        check(-v, precision);
      }
    }
  }
  BOOST_TEST(checked > 300000);
}

// Only in messages: a result holding one is refused before it is written (verdicts_test).
BOOST_AUTO_TEST_CASE(non_finite_prints_its_name) {
  BOOST_TEST(fmt(std::numeric_limits<float>::quiet_NaN()) == "nan");
  BOOST_TEST(fmt(std::numeric_limits<float>::infinity()) == "+inf");
  BOOST_TEST(exact(-std::numeric_limits<float>::infinity()) == "-inf");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(result_writer)

BOOST_AUTO_TEST_CASE(documented_expected_values_print_as_documented) {
  // The expected dicts of the six examples, read from the case files and written back.
  const std::pair<const char*, const char*> examples[] = {
      {"dp-step/example1.json", R"({"w":[[1.11]],"b":[0.2],"loss":121.0})"},
      {"dp-step/example2.json", R"({"w":[[0.072288],[0.239088]],"b":[-0.057],"loss":0.303913})"},
      {"dp-step/example3.json",
       R"({"w":[[0.104475,0.8363],[-1.291212,-0.39135]],"b":[-0.195125,-0.22975],"loss":3.745738})"},
      {"tp-mlp/example1.json",
       R"({"out":[[2.39]],"hidden":[[0.55,0.0,0.35,0.6,1.15,0.7,0.0,0.0]]})"},
  };
  for (const auto& [file, text] : examples) {
    const Case c = read_case(kSource + "/cases/" + file, nullptr, 8);
    BOOST_REQUIRE(c.expected.has_value());
    BOOST_TEST(write_result(*find_program(c.problem), *c.expected, {}) == text);
  }
}

BOOST_AUTO_TEST_CASE(ranks_and_key_order) {
  const std::vector<Tensor> outputs = {Tensor({2, 2}, {1, 2, 3, 4}), Tensor({2}, {0.5f, -0.25f}),
                                       Tensor::scalar(7)};
  BOOST_TEST(write_result(dp(), outputs, {}) ==
             R"({"w":[[1.0,2.0],[3.0,4.0]],"b":[0.5,-0.25],"loss":7.0})");
}

// Outputs of rank 3 and 4 are nested lists too (a rank-3 array is a list of matrices), and a
// large one is cut into runs of rows as a matrix is: the bytes of one pass.
BOOST_AUTO_TEST_CASE(outputs_of_any_rank_are_nested_lists) {
  const std::vector<Tensor> outputs = {Tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                       Tensor({2, 1, 2, 1}, {1, 2, 3, 4}), Tensor::scalar(7)};
  BOOST_TEST(write_result(rank_n(), outputs, {}) ==
             R"({"y":[[[1.0,2.0],[3.0,4.0]],[[5.0,6.0],[7.0,8.0]]],)"
             R"("t":[[[[1.0],[2.0]]],[[[3.0],[4.0]]]],"s":7.0})");
  BOOST_TEST(tensor_json(outputs[0], {}) == "[[[1.0,2.0],[3.0,4.0]],[[5.0,6.0],[7.0,8.0]]]");
  BOOST_TEST(tensor_json(Tensor({1, 1, 1, 1, 1, 1, 1, 2}, {1, 2}), {}) ==
             "[[[[[[[[1.0,2.0]]]]]]]]");
  // 3 x 7 x 5003 and 5 x 3 x 7 x 11 elements: many threads, cuts inside and between matrices.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1000, 1000);
  std::vector<Tensor> big = {Tensor({3, 7, 5003}), Tensor({5, 3, 7, 11}), Tensor::scalar(1)};
  for (Tensor& t : big)
    for (float& v : t.data) v = value(rng);
  std::string one_pass = "{\"y\":" + tensor_json(big[0], {}) + ",\"t\":" + tensor_json(big[1], {}) +
                         ",\"s\":" + tensor_json(big[2], {}) + "}";
  BOOST_TEST(write_result(rank_n(), big, {}) == one_pass);
  // The same nesting as numbers written row by row into their lists.
  std::string nested = "[";
  for (std::size_t a = 0; a < 3; ++a) {
    nested += a ? ",[" : "[";
    for (std::size_t b = 0; b < 7; ++b) {
      nested += b ? ",[" : "[";
      for (std::size_t c = 0; c < 5003; ++c)
        nested += (c ? "," : "") + format_number(big[0].data[(a * 7 + b) * 5003 + c], {});
      nested += "]";
    }
    nested += "]";
  }
  BOOST_TEST((tensor_json(big[0], {}) == nested + "]"));
}

// A large result is formatted by several threads, in runs of rows: the bytes must be those of
// one pass, whatever the cut (wide rows, narrow rows, a long 1-D output, a scalar after them).
BOOST_AUTO_TEST_CASE(a_large_result_is_written_as_one_pass_would) {
  std::mt19937 rng(3);
  std::normal_distribution<float> value(0.0f, 3.0f);
  for (const auto& [rows, cols, bias] : {std::tuple{300, 301, 70001}, std::tuple{70000, 1, 3},
                                         std::tuple{1, 90000, 1}, std::tuple{257, 255, 65536}}) {
    Tensor w({static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)});
    for (float& v : w.data) v = value(rng);
    Tensor b({static_cast<std::size_t>(bias)});
    for (float& v : b.data) v = value(rng);
    const std::vector<Tensor> outputs = {w, b, Tensor::scalar(value(rng))};
    for (const NumberFormat format :
         {NumberFormat{}, NumberFormat{3, false}, NumberFormat{6, true}}) {
      std::string one_pass = "{\"w\":";
      one_pass += tensor_json(outputs[0], format);
      one_pass += ",\"b\":";
      one_pass += tensor_json(outputs[1], format);
      one_pass += ",\"loss\":";
      one_pass += tensor_json(outputs[2], format);
      one_pass += '}';
      BOOST_TEST((write_result(dp(), outputs, format) == one_pass),
                 rows << "x" << cols << ", " << bias);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(case_reader)

BOOST_AUTO_TEST_CASE(reads_a_case_and_a_bare_input) {
  TempFile full(
      dp_case(kDpInput, R"(,"description":"d","expected":{"w":[[1.11]],"b":[0.2],"loss":121})"));
  const Case c = read_case(full.path, nullptr, 8);
  BOOST_TEST(c.problem == "dp-step");
  BOOST_TEST(c.name == "t");
  BOOST_TEST(c.description == "d");
  BOOST_TEST(c.file == full.path);
  BOOST_REQUIRE(c.inputs.size() == 5u);
  BOOST_TEST(c.inputs[2].shape == (Shape{8, 1}));
  BOOST_TEST(c.inputs[4].shape == Shape{});
  BOOST_TEST(c.inputs[4].data[0] == 0.01f);
  BOOST_REQUIRE(c.expected.has_value());
  BOOST_TEST((*c.expected)[0].data[0] == 1.11f);

  TempFile bare(kDpInput);
  const Case b = read_case(bare.path, &dp(), 8);
  BOOST_TEST(b.problem == "dp-step");
  BOOST_TEST(!b.expected.has_value());
  BOOST_TEST(b.inputs[3].data[7] == 17.0f);
}

BOOST_AUTO_TEST_CASE(numbers_convert_like_jax) {
  // integers, exponent notation, double -> float32 rounding to nearest
  TempFile f(R"({"w":[[16777217]],"b":[1e-1],"x":[[1.5E+0],[2],[-3e0],[4],[5],[6],[7],[8]],)"
             R"("y":[[0.1],[2],[3],[4],[5],[6],[7],[3.4028235e38]],"lr":1})");
  const Case c = read_case(f.path, &dp(), 8);
  BOOST_TEST(c.inputs[0].data[0] == 16777216.0f);
  BOOST_TEST(c.inputs[1].data[0] == 0.1f);
  BOOST_TEST(c.inputs[2].data[0] == 1.5f);
  BOOST_TEST(c.inputs[2].data[2] == -3.0f);
  BOOST_TEST(c.inputs[3].data[7] == std::numeric_limits<float>::max());
  BOOST_TEST(c.inputs[4].data[0] == 1.0f);
}

BOOST_AUTO_TEST_CASE(rejects_file_level_problems) {
  expect_rejected("", "the file is empty");
  expect_rejected(" \n", "the file is empty");
  expect_rejected("[1,2]", "the top level must be a JSON object, got an array");
  expect_rejected("{\"a\":\n 1,}",
                  "invalid JSON at line 2, column 4 (byte 10): syntax error while "
                  "parsing object key - unexpected '}'; expected string literal");
  expect_rejected(
      dp_case(kDpInput, R"(,"note":1)"),
      R"(unknown key "note" (expected problem, name, description, mesh, input, expected))");
  expect_rejected(R"({"name":"t","input":{}})", R"(missing key "problem")");
  expect_rejected(R"({"problem":"dp-step","input":{}})", R"(missing key "name")");
  expect_rejected(R"({"problem":"dp-step","name":"t"})", R"(missing key "input")");
  expect_rejected(R"({"problem":1,"name":"t","input":{}})",
                  "problem: must be a string, got a number");
  expect_rejected(dp_case(kDpInput), R"(problem: the case is for "dp-step", not "tp-mlp")", &tp());
  expect_rejected(R"({"problem":"dp-stp","name":"t","input":{}})",
                  R"(problem: no program named "dp-stp" (known: dp-step, tp-mlp, mlp-train))",
                  nullptr);
  expect_rejected(kDpInput, R"(missing key "problem")", nullptr);  // bare input, no program
}

// The last of two equal keys used to win silently, so a second "loss" in `expected` could turn a
// FAIL into a PASS.
BOOST_AUTO_TEST_CASE(rejects_duplicate_keys) {
  expect_rejected(R"({"problem":"dp-step","name":"t","problem":"dp-step","input":{}})",
                  R"(duplicate key "problem")");
  expect_rejected(dp_case(R"({"w":[[1]],)" + kDpInput.substr(1)), R"(input: duplicate key "w")");
  expect_rejected(R"({"w":[[1]],)" + kDpInput.substr(1), R"(input: duplicate key "w")");  // bare
  expect_rejected(dp_case(kDpInput, R"(,"expected":{"w":[[1.11]],"b":[0.2],"loss":1,"loss":121})"),
                  R"(expected: duplicate key "loss")");
  expect_rejected(dp_case(kDpInput, R"(,"note":[0,{"a":1,"a":1}])"),
                  R"(note[1]: duplicate key "a")");
  // Reported before the keys are checked, and after the syntax.
  expect_rejected(R"({"zz":1,"zz":2})", R"(input: duplicate key "zz")");
  expect_rejected(R"({"a":1,"a":2,)",
                  "invalid JSON at line 1, column 14 (byte 14): syntax error "
                  "while parsing object key - unexpected end of input; expected "
                  "string literal");
}

// nlohmann's lexer takes a NUL byte for the end of the input; whatever follows the value is an
// error, a NUL included.
BOOST_AUTO_TEST_CASE(rejects_bytes_after_the_value) {
  const std::string text = dp_case(kDpInput);
  const std::string at = std::to_string(text.size() + 1);
  expect_rejected(text + std::string(1, '\0'), "invalid JSON at line 1, column " + at + " (byte " +
                                                   at +
                                                   "): unexpected NUL byte; expected end of input");
  expect_rejected(text + "\n" + std::string(1, '\0') + "}",
                  "invalid JSON at line 2, column 1 (byte " + std::to_string(text.size() + 2) +
                      "): unexpected NUL byte; expected end of input");
  expect_rejected(text + " x", "invalid JSON at line 1, column " + std::to_string(text.size() + 2) +
                                   " (byte " + std::to_string(text.size() + 2) +
                                   "): syntax error while parsing value - invalid literal");
  // Trailing whitespace is not a value.
  TempFile f(text + " \n\t\r\n");
  BOOST_TEST(read_case(f.path, &dp(), 8).name == "t");
}

// "mesh" is kept as written, axes in file order, for the multi-axis mesh; the reader only
// validates it.
BOOST_AUTO_TEST_CASE(reads_the_optional_mesh) {
  // JSON objects have no order: the axes come in the program's default mesh order (dp-step's
  // 'data'), the others after in file order.
  TempFile f(R"({"mesh":{"x":1,"model":4,"data":2},"problem":"dp-step","name":"t","input":)" +
             kDpInput + "}");
  const Case c = read_case(f.path, nullptr, 0);
  using Axes = std::vector<std::pair<std::string, int>>;
  BOOST_TEST((c.mesh == Axes{{"data", 2}, {"x", 1}, {"model", 4}}));
  TempFile none(dp_case(kDpInput));
  BOOST_TEST(read_case(none.path, nullptr, 8).mesh.empty());
  const auto with_mesh = [](const std::string& mesh) {
    return dp_case(kDpInput, R"(,"mesh":)" + mesh);
  };
  expect_rejected(with_mesh("4"), "mesh: must be an object of axis sizes, got a number");
  expect_rejected(with_mesh(R"({"data":-2})"),
                  "mesh.data: must be an integer from 1 to 1024, got -2");
  expect_rejected(with_mesh(R"({"data":2,"model":1e9})"),
                  "mesh.model: must be an integer from 1 to 1024, got 1e+09");
  expect_rejected(with_mesh(R"({"data":null})"),
                  "mesh.data: must be an integer from 1 to 1024, got null");
  expect_rejected(with_mesh(R"({"data":2,"data":2})"), R"(mesh: duplicate key "data")");
  // A bare input has no mesh: the key makes it a case, whose other keys are unknown.
  expect_rejected(
      R"({"mesh":{"data":8},)" + kDpInput.substr(1),
      R"(unknown key "b" (expected problem, name, description, mesh, input, expected))");
}

BOOST_AUTO_TEST_CASE(cannot_read) {
  try {
    read_case("/nonexistent/dir/case.json", &dp(), 8);
    BOOST_ERROR("accepted a missing file");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "/nonexistent/dir/case.json: cannot read: No such file or directory");
  }
}

BOOST_AUTO_TEST_CASE(rejects_keys_and_types) {
  expect_rejected(dp_case(R"({"w":[[0.0]]})"), R"(input: missing key "b")");
  expect_rejected(dp_case(R"({"W":[[0.0]]})"),
                  R"(input: unknown key "W" (expected w, b, x, y, lr))");
  expect_rejected(dp_case(R"([])"), "input: must be an object, got an array");
  expect_rejected(dp_case_with("[[1],[2],[3]", R"([[1],[2],["3"])"),
                  "input.x[2][0]: must be a number, got a string");
  expect_rejected(dp_case_with("[[1],[2],[3]", "[[1],[2],[true]"),
                  "input.x[2][0]: must be a number, got a boolean");
  expect_rejected(dp_case_with("[[1],[2],[3]", "[[1],[2],[null]"),
                  "input.x[2][0]: must be a number, got null");
  expect_rejected(dp_case_with("[[1],[2],[3]", "[[1],[2],[{}]"),
                  "input.x[2][0]: must be a number, got an object");
  expect_rejected(dp_case_with("[[1],[2],[3]", "[[1],[2],[[3]]"),
                  "input.x[2][0]: must be a number, got an array");
  expect_rejected(dp_case_with("[[1],[2],[3]", "[[1],[2],3"),
                  "input.x[2]: must be an array (a row), got a number");
  expect_rejected(dp_case_with("[[1],[2],[3]", "[[1],[2],[3,3]"),
                  "input.x[2]: has 2 columns but input.x[0] has 1");
  expect_rejected(dp_case_with("\"lr\":0.01", "\"lr\":[0.01]"),
                  "input.lr: must be a number, got an array");
  expect_rejected(dp_case_with("\"b\":[0.0]", "\"b\":0.0"),
                  "input.b: must be a 1-D array (K), got a number");
  expect_rejected(dp_case_with("\"b\":[0.0]", "\"b\":[[0.0]]"),
                  "input.b: must be a 1-D array (K), got a 2-D array");
  expect_rejected(dp_case_with("\"w\":[[0.0]]", "\"w\":\"0\""),
                  "input.w: must be a 2-D array (D, K), got a string");
  expect_rejected(dp_case_with("\"w\":[[0.0]]", "\"w\":[0.0]"),
                  "input.w: must be a 2-D array (D, K), got a 1-D array");
}

BOOST_AUTO_TEST_CASE(rejects_shapes) {
  expect_rejected(dp_case_with(",[17]]", "]"), "input.y: has 7 rows (N) but input.x has 8");
  expect_rejected(dp_case_with("\"b\":[0.0]", "\"b\":[0.0,1.0]"),
                  "input.b: has 2 elements (K) but input.w has 1 column");
  expect_rejected(dp_case_with("\"w\":[[0.0]]", "\"w\":[[0.0],[1.0]]"),
                  "input.x: has 1 column (D) but input.w has 2 rows");
  expect_rejected(dp_case_with("\"b\":[0.0]", "\"b\":[]"),
                  "input.b: has 0 elements (K); dimensions must be at least 1");
  expect_rejected(dp_case_with("\"w\":[[0.0]]", "\"w\":[[]]"),
                  "input.w: has 0 columns (K); dimensions must be at least 1");
  expect_rejected(dp_case_with("\"w\":[[0.0]]", "\"w\":[]"),
                  "input.w: has 0 rows (D); dimensions must be at least 1");
  expect_rejected(dp_case(kDpInput), "input.x: 8 rows are not divisible by 3 devices", &dp(), 3);
  expect_rejected(dp_case(kDpInput), "input.x: 8 rows are not divisible by 16 devices", &dp(), 16);
  expect_rejected(dp_case(kDpInput, R"(,"expected":{"w":[[1.0],[2.0]],"b":[0.2],"loss":1})"),
                  "expected.w: has 2 rows (D) but input.w has 1");
  expect_rejected(dp_case(kDpInput, R"(,"expected":{"w":[[1.0]],"b":[0.2]})"),
                  R"(expected: missing key "loss")");
  expect_rejected(dp_case(kDpInput, R"(,"expected":{"w":[[1.0]],"b":[0.2],"loss":1,"acc":1})"),
                  R"(expected: unknown key "acc" (expected w, b, loss))");
  // tp-mlp: H is split, so w1's columns must divide.
  expect_rejected(
      R"({"x":[[1.0]],"w1":[[1,2,3,4]],"b1":[1,2,3,4],"w2":[[1],[2],[3],[4]],"b2":[0]})",
      "input.w1: 4 columns are not divisible by 8 devices", &tp());
  expect_rejected(
      R"({"x":[[1.0,2.0]],"w1":[[1,2,3,4]],"b1":[1,2,3,4],"w2":[[1],[2],[3],[4]],"b2":[0]})",
      "input.w1: has 1 row (D) but input.x has 2 columns", &tp(), 4);
}

BOOST_AUTO_TEST_CASE(rejects_values) {
  expect_rejected(dp_case_with("[[1],[2]", "[[1e39],[2]"),
                  "input.x[0][0]: 1e+39 overflows float32");
  expect_rejected(dp_case_with("[[1],[2]", "[[-3.5e38],[2]"),
                  "input.x[0][0]: -3.5e+38 overflows float32");
  // Beyond double's range: found while parsing, and still named by its field.
  expect_rejected(dp_case_with("[[1],[2]", "[[1e400],[2]"),
                  "input.x[0][0]: 1e400 overflows float32");
  expect_rejected(dp_case_with("\"lr\":0.01", "\"lr\":-1" + std::string(400, '0')),
                  "input.lr: -100000000000000000000000000000000000000... overflows float32");
  expect_rejected(dp_case(kDpInput, R"(,"expected":{"w":[[1.11]],"b":[2e999],"loss":1})"),
                  "expected.b[0]: 2e999 overflows float32");
  expect_rejected(dp_case_with("[[1],[2]", "[[400000000000000000000000000000000000000000],[2]"),
                  "input.x[0][0]: 4e+41 overflows float32");
  expect_rejected(dp_case_with("\"lr\":0.01", "\"lr\":0"), "input.lr: must be a finite number > 0");
  expect_rejected(dp_case_with("\"lr\":0.01", "\"lr\":-0.01"),
                  "input.lr: must be a finite number > 0");
  expect_rejected(dp_case_with("\"lr\":0.01", "\"lr\":1e-50"),
                  "input.lr: must be a finite number > 0");
}

// The reader streams the file, but reports as if it had the whole document: keys in any order,
// errors in the program's order of inputs and, within an array, in document order.
BOOST_AUTO_TEST_CASE(errors_do_not_depend_on_the_order_of_keys) {
  const std::string reversed =
      R"({"expected":{"loss":121,"b":[0.2],"w":[[1.11]]},"input":{"lr":0.01,)"
      R"("y":[[3],[5],[7],[9],[11],[13],[15],[17]],"x":[[1],[2],[3],[4],[5],[6],[7],[8]],)"
      R"("b":[0.0],"w":[[0.0]]},"name":"t","problem":"dp-step"})";
  TempFile f(reversed);
  const Case c = read_case(f.path, nullptr, 8);
  BOOST_TEST(c.inputs[2].shape == (Shape{8, 1}));
  BOOST_TEST((*c.expected)[2].data[0] == 121.0f);
  // x (third input) is ragged, but w (first) has the wrong rank: w is reported.
  expect_rejected(R"({"x":[[1],[2,3]],"w":[1],"b":[0],"y":[[1]],"lr":1})",
                  "input.w: must be a 2-D array (D, K), got a 1-D array");
  // Unknown keys (in sorted order) before missing ones, before any value.
  expect_rejected(R"({"x":[[1],[2,3]],"zz":1,"aa":1})",
                  R"(input: unknown key "aa" (expected w, b, x, y, lr))");
  expect_rejected(
      R"({"problem":"dp-step","name":7,"input":{"w":[]},"comment":1})",
      R"(unknown key "comment" (expected problem, name, description, mesh, input, expected))");
  expect_rejected(R"({"input":{"w":[]},"name":7,"problem":"dp-step"})",
                  "name: must be a string, got a number");
  // Within a row: its length before its elements; rows in order.
  const auto x = [](const std::string& rows) {
    return R"({"w":[[1,2]],"b":[0,0],"y":[[1,1]],"lr":1,"x":)" + rows + "}";
  };
  expect_rejected(x(R"([[1],[2,"a"]])"), "input.x[1]: has 2 columns but input.x[0] has 1");
  expect_rejected(x(R"([[1],["a"],[2,3]])"), "input.x[1][0]: must be a number, got a string");
  expect_rejected(x(R"([[1],[1e39],["a"]])"), "input.x[1][0]: 1e+39 overflows float32");
  expect_rejected(x(R"([[1],{"a":1},[2,3]])"),
                  "input.x[1]: must be an array (a row), got an object");
  expect_rejected(x(R"([[[1]],[2]])"), "input.x: must be a 2-D array (N, D), got a 3-D array");
  expect_rejected(x(R"([[1],[[2]]])"), "input.x[1][0]: must be a number, got an array");
  expect_rejected(x(R"([[],[2]])"), "input.x: has 0 columns (D); dimensions must be at least 1");
  expect_rejected(x(R"([[[]]])"), "input.x: must be a 2-D array (N, D), got a 3-D array");
}

// Arrays of rank 3 and 4 (issue 48.4): read inline, their dims bound across inputs, and refused
// as a 2-D one is -- wrong rank (any rank, 40 too), ragged at any depth, an array where a number
// is due or the reverse, empty dimensions -- naming the first flaw in document order.
BOOST_AUTO_TEST_CASE(reads_and_rejects_arrays_of_any_rank) {
  {
    TempFile f(
        rank_n_case(kX3, kZ4, R"(,"expected":{"y":)" + kX3 + R"(,"t":)" + kZ4 + R"(,"s":1})"));
    const Case c = read_case(f.path, &rank_n(), 0);
    BOOST_TEST((c.inputs[0].shape == Shape{2, 2, 2}));
    BOOST_TEST((c.inputs[0].data == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
    BOOST_TEST((c.inputs[1].shape == Shape{2, 1, 2, 1}));
    BOOST_TEST((c.inputs[1].data == std::vector<float>{1, 2, 3, 4}));
    BOOST_TEST(((*c.expected)[1].shape == Shape{2, 1, 2, 1}));
  }
  const auto rejected = [](const std::string& x, const std::string& message,
                           const std::string& z = kZ4) {
    expect_rejected(rank_n_case(x, z), message, &rank_n(), 0);
  };
  std::string deep = "1";
  for (int i = 0; i < 40; ++i) deep = "[" + deep + "]";
  rejected(deep, "input.x: must be a 3-D array (A, N, C), got a 40-D array");
  rejected("[[1,2],[3,4]]", "input.x: must be a 3-D array (A, N, C), got a 2-D array");
  rejected("[[[[1]]]]", "input.x: must be a 3-D array (A, N, C), got a 4-D array");
  rejected("7", "input.x: must be a 3-D array (A, N, C), got a number");
  rejected("[[[1,2],[3,4]],[[5,6],[7]]]",
           "input.x[1][1]: has 1 entry along dimension 2 but input.x[0][0] has 2");
  rejected("[[[1,2],[3,4]],[[5,6]]]",
           "input.x[1]: has 1 entry along dimension 1 but input.x[0] has 2");
  rejected("[[[1,2],[3,4]],[[5,6],[7,8]],[[9,10],[11,12,13]]]",
           "input.x[2][1]: has 3 entries along dimension 2 but input.x[0][0] has 2");
  rejected("[[[1,2],[3,4]],5]", "input.x[1]: must be a 2-D array, got a number");
  rejected("[[[1,2],[3,4]],[[5,6],7]]", "input.x[1][1]: must be an array (a row), got a number");
  rejected("[[[1,2],[3,4]],[[5,6],[7,[8]]]]", "input.x[1][1][1]: must be a number, got an array");
  rejected("[[[1,2],[3,\"a\"]],[[5,6]]]", "input.x[0][1][1]: must be a number, got a string");
  rejected("[[[1,2],[3,1e39]],[[5,6],[7,8]]]", "input.x[0][1][1]: 1e+39 overflows float32");
  // Within an array, its own length before its elements' flaws; arrays in document order.
  rejected("[[[1,2],[3,4]],[[5,\"a\"],[7,8,9]]]",
           "input.x[1][0][1]: must be a number, got a string");
  rejected("[[[1,2],[3,4]],[[5,\"a\",6],[7,8]]]",
           "input.x[1][0]: has 3 entries along dimension 2 but input.x[0][0] has 2");
  rejected("[[[1,2],[3,4]],[[5,6,7],[8,9]],[[1,2]]]",
           "input.x[1][0]: has 3 entries along dimension 2 but input.x[0][0] has 2");
  rejected("[[[]]]", "input.x: has 0 entries along dimension 2 (C); dimensions must be at least 1");
  rejected("[[[]],[[]]]",
           "input.x: has 0 entries along dimension 2 (C); dimensions must be at least 1");
  rejected("[]", "input.x: has 0 entries along dimension 0 (A); dimensions must be at least 1");
  // Dims bound across inputs: A is x's 2 and z's 3.
  rejected(kX3, "input.z: has 3 entries along dimension 0 (A) but input.x has 2",
           "[[[[1],[2]]],[[[3],[4]]],[[[5],[6]]]]");
  rejected(kX3, "input.z: has 1 entry along dimension 2 (C) but input.x has 2",
           "[[[[1]]],[[[3]]]]");
  // x's dimension 1 is split over 'data' (2 devices).
  rejected("[[[1,2],[3,4],[5,6]],[[1,2],[3,4],[5,6]]]",
           "input.x: 3 entries along dimension 1 are not divisible by 2 devices");
}

// A rank-3 array from a .npy file: its shape and values as inline, a non-finite value named by
// its three indices, another rank refused as inline.
BOOST_AUTO_TEST_CASE(reads_npy_arrays_of_any_rank) {
  const std::string dict3 = R"({'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), })";
  std::string c = rank_n_case(R"({"npy":"x.npy"})");
  {
    NpyCase n(
        {{"case.json", c}, {"x.npy", npy_file(dict3, le_bytes<float>({1, 2, 3, 4, 5, 6, 7, 8}))}});
    const Case r = read_case(n.path("case.json"), &rank_n(), 0);
    BOOST_TEST((r.input_refs()[0].shape == Shape{2, 2, 2}));
    BOOST_TEST((std::vector<float>(r.input_refs()[0].data, r.input_refs()[0].data + 8) ==
                std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  }
  const auto npy_rejected = [&](const std::string& bytes, std::string message) {
    NpyCase n({{"case.json", c}, {"x.npy", bytes}});
    if (const auto at = message.find("{}"); at != std::string::npos)
      message.replace(at, 2, n.path("x.npy"));
    try {
      read_case(n.path("case.json"), &rank_n(), 0);
      BOOST_ERROR("accepted, expected: " << message);
    } catch (const InputError& e) {
      BOOST_TEST(std::string(e.what()) == n.path("case.json") + ": " + message);
    }
  };
  npy_rejected(npy_file(dict3, le_bytes<float>({1, 2, 3, 4, 5, NAN, 7, 8})),
               "input.x[1][0][1]: nan is not a finite number ({})");
  std::string shape40 = "(";
  for (int i = 0; i < 40; ++i) shape40 += "1, ";
  npy_rejected(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape40 + "), }",
                        le_bytes<float>({1})),
               "input.x: must be a 3-D array (A, N, C), got a 40-D array");
}

BOOST_AUTO_TEST_CASE(reads_npy_arrays) {
  // Format 1.0 float32, 2.0 float64 (rounded to float32), 3.0; keys in another order and double
  // quotes are read too.
  for (const auto& npy : {npy_file(kX, kXData),
                          npy_file(R"({'descr': '<f8', 'fortran_order': False, 'shape': (8, 1), })",
                                   le_bytes<double>({1, 2, 3, 4, 5, 6, 7, 8.1}), 2),
                          npy_file(R"({"shape": (8,1), "fortran_order": False, "descr": "<f4"})",
                                   le_bytes<float>({1, 2, 3, 4, 5, 6, 7, 8.1f}), 3)}) {
    NpyCase c({{"case.json", npy_dp_case()}, {"x.npy", npy}});
    const Case got = read_case(c.path("case.json"), nullptr, 8);
    BOOST_TEST(got.inputs[2].shape == (Shape{8, 1}));
    const TensorRef x = got.input_refs()[2];  // float32: in the mapping; float64: converted
    BOOST_TEST(x.data[0] == 1.0f);
    BOOST_TEST((x.data[7] == 8.0f || x.data[7] == 8.1f));
  }
  // PATH is relative to the case file's directory.
  std::string nested = npy_dp_case();
  nested.replace(nested.find("x.npy"), 5, "arrays/x.npy");
  NpyCase c({{"sub/case.json", nested}, {"sub/arrays/x.npy", npy_file(kX, kXData)}});
  BOOST_TEST(read_case(c.path("sub/case.json"), &dp(), 8).input_refs()[2].data[3] == 4.0f);
}

namespace {
// Whether a[0..n) and b[0..n) hold the same bits, value by value.
bool same_floats(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  return true;
}

// A .npy file of `values` (float32, shape (n, 1)) whose data starts `skew` bytes past the 64-byte
// boundary np.save aligns it to: skew 2 leaves it where no float may be loaded from.
std::string npy_column(const std::vector<float>& values, std::size_t skew = 0) {
  return npy_file(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) +
          ", 1), }",
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)), 1,
      skew);
}
}  // namespace

// Issue 9: a float32 .npy input is not copied. read_case leaves it in its mapping (the Tensor
// holds the shape only), every value still checked; each device's block is then cut from the
// mapping -- by the devices themselves for this 1 MiB array -- and the program's outputs are bit
// for bit those of the same arrays read into tensors. Misaligned data is copied.
BOOST_AUTO_TEST_CASE(float32_npy_inputs_stay_mapped) {
  const std::size_t n = kSplitOnDevicesBytes / sizeof(float) + 8;  // devices cut; 8 | n
  std::vector<float> x(n), y(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = u(rng);
    y[i] = 3.0f * x[i] + 0.5f + 0.01f * u(rng);
  }
  const std::string case_json = R"({"problem":"dp-step","name":"big","input":{"w":[[0.0]],)"
                                R"("b":[0.0],"x":{"npy":"x.npy"},"y":{"npy":"y.npy"},"lr":0.1}})";
  NpyCase c({{"case.json", case_json}, {"x.npy", npy_column(x)}, {"y.npy", npy_column(y)}});
  const Case got = read_case(c.path("case.json"), nullptr, 8);
  BOOST_REQUIRE_EQUAL(got.mapped.size(), got.inputs.size());
  for (const std::size_t i : {2u, 3u}) {
    BOOST_TEST(got.mapped[i].data != nullptr, "input " << i << " is mapped");
    BOOST_TEST(got.inputs[i].data.empty());
    BOOST_TEST(got.inputs[i].shape == (Shape{n, 1}));
  }
  BOOST_TEST(got.mapped[0].data == nullptr);  // inline JSON
  const std::vector<TensorRef> in = got.input_refs();
  BOOST_TEST(same_floats(in[2].data, x.data(), n));
  BOOST_TEST(same_floats(in[3].data, y.data(), n));
  BOOST_TEST(in[4].data[0] == 0.1f);

  // The same arrays read into tensors (read_npy copies): the same outputs, bit for bit.
  std::vector<Tensor> copied = got.inputs;
  copied[2] = read_npy(c.path("x.npy"), {"N", "D"}, "input.x");
  copied[3] = read_npy(c.path("y.npy"), {"N", "K"}, "input.y");
  BOOST_TEST(same_floats(copied[2].data.data(), x.data(), n));
  for (int devices : {1, 8}) {
    Mesh m1(devices, "data"), m2(devices, "data");
    const std::vector<Tensor> from_mapping = shard_map(m1, dp(), in);
    const std::vector<Tensor> from_tensors = shard_map(m2, dp(), copied);
    BOOST_REQUIRE_EQUAL(from_mapping.size(), from_tensors.size());
    for (std::size_t o = 0; o < from_mapping.size(); ++o)
      BOOST_TEST((from_mapping[o] == from_tensors[o]), "output " << o << " on " << devices);
  }

  // Every value of a mapped array is checked, as when it is copied: the index is named.
  std::vector<float> bad = x;
  bad[n - 3] = std::numeric_limits<float>::quiet_NaN();
  NpyCase b({{"case.json", case_json}, {"x.npy", npy_column(bad)}, {"y.npy", npy_column(y)}});
  try {
    (void)read_case(b.path("case.json"), nullptr, 8);
    BOOST_ERROR("a NaN in a mapped array was accepted");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == b.path("case.json") + ": input.x[" + std::to_string(n - 3) +
                                            "][0]: nan is not a finite number (" + b.path("x.npy") +
                                            ")");
  }

  // Copied instead: data that float loads cannot reach (skewed by 2 bytes).
  NpyCase s({{"case.json", case_json}, {"x.npy", npy_column(x, 2)}, {"y.npy", npy_column(y)}});
  const Case skewed = read_case(s.path("case.json"), nullptr, 8);
  BOOST_TEST(skewed.mapped[2].data == nullptr);
  BOOST_TEST(skewed.mapped[3].data != nullptr);
  BOOST_REQUIRE_EQUAL(skewed.inputs[2].data.size(), n);
  BOOST_TEST(same_floats(skewed.inputs[2].data.data(), x.data(), n));
  // A small array stays mapped too; its blocks are cut by the caller, from the mapping.
  const std::vector<float> few(x.begin(), x.begin() + 8), few_y(y.begin(), y.begin() + 8);
  NpyCase t({{"case.json", case_json}, {"x.npy", npy_column(few)}, {"y.npy", npy_column(few_y)}});
  const Case small = read_case(t.path("case.json"), nullptr, 8);
  BOOST_TEST(small.mapped[2].data != nullptr);
  BOOST_TEST(small.inputs[2].data.empty());
  BOOST_TEST(same_floats(small.input_refs()[2].data, few.data(), few.size()));
  std::vector<Tensor> small_copied = small.inputs;
  small_copied[2] = Tensor({8, 1}, few);
  small_copied[3] = Tensor({8, 1}, few_y);
  Mesh m1(8, "data"), m2(8, "data");
  const std::vector<Tensor> out_mapped = shard_map(m1, dp(), small.input_refs());
  const std::vector<Tensor> out_copied = shard_map(m2, dp(), small_copied);
  BOOST_TEST((out_mapped == out_copied));
}

BOOST_AUTO_TEST_CASE(rejects_bad_npy_files) {
  expect_npy_rejected("\x93NUMPY", "input.x: {}: not a .npy file (no \\x93NUMPY magic)");
  expect_npy_rejected(npy_file(kX, kXData).substr(0, 30), "input.x: {}: truncated header");
  expect_npy_rejected(npy_file(kX, kXData.substr(0, 31)),
                      "input.x: {}: truncated: 31 bytes of data for shape (8, 1) of <f4");
  expect_npy_rejected(
      npy_file(
          R"({'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), })",
          kXData),
      "input.x: {}: truncated: 32 bytes of data for shape (1099511627776, 1099511627776) of <f4");
  expect_npy_rejected(npy_file("{'descr': '<f4'}", kXData),
                      "input.x: {}: the header is not a numpy header dict");
  expect_npy_rejected(
      npy_file(R"({'descr': '>f2', 'fortran_order': False, 'shape': (8, 1), })", kXData),
      "input.x: {}: dtype '>f2' is not supported (little-endian float32 '<f4' or float64 '<f8'; "
      "float16 '<f2', bfloat16 '<V2', int8 '|i1', uint8 '|u1', int16 '<i2', uint16 '<u2')");
  expect_npy_rejected(
      npy_file(R"({'descr': '<f4', 'fortran_order': True, 'shape': (8, 1), })", kXData),
      "input.x: {}: Fortran order is not supported (save it in C order)");
  expect_npy_rejected(
      npy_file(R"({'descr': '<f4', 'fortran_order': False, 'shape': (8,), })", kXData),
      "input.x: must be a 2-D array (N, D), got a 1-D array");
  expect_npy_rejected(
      npy_file(R"({'descr': '<f4', 'fortran_order': False, 'shape': (8, 0), })", ""),
      "input.x: has 0 columns (D); dimensions must be at least 1");
  expect_npy_rejected(
      npy_file(R"({'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), })", kXData),
      "input.x: has 2 columns (D) but input.w has 1 row");
  expect_npy_rejected(
      npy_file(kX, le_bytes<float>({1, 2, 3, 4, 5, 6, 7, std::numeric_limits<float>::infinity()})),
      "input.x[7][0]: inf is not a finite number ({})");
  std::string v2 = npy_file(kX, kXData);
  v2[6] = 2;  // a 2.0 header length is 4 bytes: this one reads as far too long
  expect_npy_rejected(v2, "input.x: {}: truncated header");
  NpyCase c({{"case.json", npy_dp_case()}, {"x.npy/keep", ""}});
  try {
    read_case(c.path("case.json"), &dp(), 8);
    BOOST_ERROR("accepted a directory");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == c.path("case.json") + ": input.x: cannot read " +
                                            c.path("x.npy") + ": Is a directory");
  }
  NpyCase fifo({{"case.json", npy_dp_case()}});
  BOOST_REQUIRE(mkfifo(fifo.path("x.npy").c_str(), 0600) == 0);
  try {
    read_case(fifo.path("case.json"), &dp(), 8);  // must not wait for a writer
    BOOST_ERROR("accepted a FIFO");
  } catch (const InputError& e) {
    BOOST_TEST(std::string(e.what()) == fifo.path("case.json") + ": input.x: cannot read " +
                                            fifo.path("x.npy") + ": not a regular file");
  }
  // Only input arrays may come from files; {"npy": ...} anywhere else is the object it is.
  expect_rejected(dp_case(kDpInput, R"(,"expected":{"w":{"npy":"w.npy"},"b":[0.2],"loss":1})"),
                  "expected.w: must be a 2-D array (D, K), got an object");
  std::string lr = kDpInput;
  lr.replace(lr.find("0.01"), 4, R"({"npy":"lr.npy"})");
  expect_rejected(dp_case(lr), "input.lr: must be a number, got an object");
}

// A float32 file of several of read_npy's 4096-value runs: every bit pattern of a finite float
// comes through as stored (-0.0 and subnormals included), and a non-finite value deep in a later
// run is named by its own index, whether it is the run's first, last or a middle value.
BOOST_AUTO_TEST_CASE(reads_large_float32_npy_bit_for_bit_and_names_the_first_non_finite) {
  constexpr std::size_t kRows = 5000, kCols = 3;  // 15000 values: runs of 4096, the last short
  std::mt19937 rng(7);
  std::vector<std::uint32_t> bits(kRows * kCols);
  for (auto& b : bits) {
    do b = static_cast<std::uint32_t>(rng());
    while ((b & 0x7f800000u) == 0x7f800000u);  // finite only
  }
  bits[1] = 0x80000000u;  // -0.0
  bits[2] = 0x00000001u;  // the smallest subnormal
  const auto file_of = [&](const std::vector<std::uint32_t>& b) {
    std::string data(b.size() * 4, '\0');
    std::memcpy(data.data(), b.data(), data.size());  // this test runs little-endian (x86-64)
    return npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (5000, 3), }", data);
  };
  NpyCase ok({{"x.npy", file_of(bits)}});
  const Tensor t = read_npy(ok.path("x.npy"), {"N", "D"}, "input.x");
  BOOST_REQUIRE(t.shape == (Shape{kRows, kCols}));
  BOOST_TEST(std::memcmp(t.data.data(), bits.data(), bits.size() * 4) == 0);

  for (const std::size_t at :
       {std::size_t{4096}, std::size_t{8191}, std::size_t{9000}, std::size_t{14999}}) {
    std::vector<std::uint32_t> bad = bits;
    bad[at] = at % 2 ? 0x7fc00000u : 0xff800000u;        // nan, -inf
    if (at + 1 < bad.size()) bad[at + 1] = 0x7f800000u;  // a later +inf is not the one named
    NpyCase c({{"x.npy", file_of(bad)}});
    try {
      read_npy(c.path("x.npy"), {"N", "D"}, "input.x");
      BOOST_ERROR("accepted a non-finite value at " << at);
    } catch (const InputError& e) {
      const std::string want = "input.x[" + std::to_string(at / kCols) + "][" +
                               std::to_string(at % kCols) + "]: " + (at % 2 ? "nan" : "-inf") +
                               " is not a finite number (" + c.path("x.npy") + ")";
      BOOST_TEST(std::string(e.what()) == want);
    }
  }
}

// What --save-npy writes, byte for byte against a .npy assembled here (np.save's format 1.0).
BOOST_AUTO_TEST_CASE(writes_npy_as_np_save_does) {
  const Tensor m({2, 3}, {1.5f, -2.0f, 0.1f, 3e38f, -0.0f, 7.0f});
  const std::string bytes = npy_bytes(m);
  BOOST_TEST(bytes == npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                               le_bytes<float>({1.5f, -2.0f, 0.1f, 3e38f, -0.0f, 7.0f})));
  BOOST_TEST((bytes.size() - 24) % 64 == 0u);  // the data starts 64-byte aligned
  BOOST_TEST(npy_bytes(Tensor({3}, {1, 2, 3})) ==
             npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                      le_bytes<float>({1, 2, 3})));
  BOOST_TEST(
      npy_bytes(Tensor::scalar(121)) ==
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", le_bytes<float>({121})));
}

BOOST_AUTO_TEST_CASE(deep_nesting_is_rejected_without_recursion) {
  const std::size_t depth = 100'000;
  expect_rejected(std::string(depth, '[') + std::string(depth, ']'),
                  "nesting deeper than 64 levels");
  std::string objects;
  for (std::size_t i = 0; i < depth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(depth, '}');
  expect_rejected(objects, "nesting deeper than 64 levels");
  expect_rejected(std::string(depth, '['), "nesting deeper than 64 levels");  // unterminated
  // The limit is exactly 64 containers.
  expect_rejected(std::string(64, '[') + std::string(64, ']'),
                  "the top level must be a JSON object, got an array");
  expect_rejected(std::string(65, '[') + std::string(65, ']'), "nesting deeper than 64 levels");
}

// A dp-step case of about 50 MB: x (N, 4) and y (N, 3) with N = 8 * 140,000.
std::string big_case(std::size_t rows, bool ragged_last) {
  std::string s = R"({"problem":"dp-step","name":"big","input":{"w":[[0.1,0.2,0.3],[0.4,0.5,0.6],)"
                  R"([0.7,0.8,0.9],[1.0,1.1,1.2]],"b":[0.0,0.0,0.0],"lr":0.01,"x":[)";
  s.reserve(rows * 80 + 200);
  for (std::size_t i = 0; i < rows; ++i) {
    s += i ? ",[" : "[";
    s += (ragged_last && i + 1 == rows) ? "0.5,0.25,-0.125" : "0.123456,-0.654321,0.5,0.25";
    s += "]";
  }
  s += "],\"y\":[";
  for (std::size_t i = 0; i < rows; ++i) s += i ? ",[1.5,-2.25,3e-3]" : "[1.5,-2.25,3e-3]";
  return s + "]}}";
}

BOOST_AUTO_TEST_CASE(a_50_mb_case_is_read_and_rejected) {
  const std::size_t rows = std::size_t{8} * 140'000;
  {
    TempFile f(big_case(rows, false));
    const Case c = read_case(f.path, nullptr, 8);
    BOOST_TEST(c.inputs[2].shape == (Shape{rows, 4}));
    BOOST_TEST(c.inputs[3].data.back() == 3e-3f);
  }
  expect_rejected(big_case(rows, true),
                  "input.x[" + std::to_string(rows - 1) + "]: has 3 columns but input.x[0] has 4");
}

// ---- The fast path for numbers (json_summary.cpp) against nlohmann's lexer alone ----

namespace {

bool is_case_key_for_test(const std::string& key) { return key == "problem" || key == "input"; }

// What parse_json_summary made of `text`: the summary printed with every float's bits, or the
// one-line error. Two ways of reading numbers agree when these strings do.
std::string outcome(const std::string& text, JsonNumbers numbers) {
  TempFile f(text);
  std::string out;
  std::function<void(const JsonSummary&)> show = [&](const JsonSummary& s) {
    out += "<" + s.key + " " + kind_name(s.kind) + " " + std::to_string(s.number) + " " + s.text +
           " rank=" + std::to_string(s.leading_rank) + " shape=";
    for (std::size_t n : s.shape) out += std::to_string(n) + ",";
    out += " data=";
    for (float v : s.data) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      out += std::to_string(bits) + ",";
    }
    if (s.flaw) {
      const ArrayFlaw& w = *s.flaw;
      out += " flaw=" + std::to_string(w.what) + "/";
      for (std::size_t i : w.at) out += std::to_string(i) + ",";
      out +=
          "/" + kind_name(w.kind) + "/" + std::to_string(w.value) + "/" + std::to_string(w.length);
    }
    for (const JsonSummary& m : s.members) show(m);
    out += ">";
  };
  try {
    JsonSource source(f.path, kDefaultMaxInputBytes);
    const JsonDocument doc = parse_json_summary(source, is_case_key_for_test, numbers);
    show(doc.root);
    if (doc.duplicate) out += " duplicate " + doc.duplicate->path + "." + doc.duplicate->key;
  } catch (const InputError& e) {
    out = std::string("error: ") + e.what();
  }
  return out;
}

void expect_same_either_way(const std::string& text) {
  const std::string fast = outcome(text, JsonNumbers::fast);
  const std::string parser = outcome(text, JsonNumbers::parser);
  BOOST_TEST(fast == parser,
             "for input of " << text.size() << " bytes starting " << text.substr(0, 80));
}

// A random number token: integers of any length, "-0", fractions, exponents that overflow or
// underflow double, long mantissas -- and now and then something that is not a JSON number.
std::string random_token(std::mt19937_64& rng, bool allow_bad) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  auto digits = [&](int n, bool lead_nonzero) {
    std::string d;
    for (int i = 0; i < n; ++i)
      d += static_cast<char>('0' + (i == 0 && lead_nonzero ? 1 + pick(9) : pick(10)));
    return d;
  };
  if (allow_bad && pick(40) == 0) {
    static const char* const bad[] = {"01",   "1.",    ".5",       "+1",   "1e",   "1e+",
                                      "-",    "NaN",   "Infinity", "true", "null", "\"1\"",
                                      "[1]",  "{}",    "",         "1.e5", "0x10", "- 1",
                                      "1..2", "1e5.5", "--1",      "[",    "]"};
    return bad[pick(static_cast<int>(std::size(bad)))];
  }
  std::string t = pick(3) == 0 ? "-" : "";
  switch (pick(7)) {
    case 0:
      return t + "0";
    case 1:
      return t + digits(1 + pick(25), true);  // beyond uint64 too
    case 2:
      return t + (pick(2) ? "0" : digits(1 + pick(4), true)) + "." + digits(1 + pick(8), false);
    case 3:
      return t + digits(1 + pick(3), true) + (pick(2) ? "e" : "E") +
             (pick(3) == 0 ? ""
              : pick(2)    ? "+"
                           : "-") +
             std::to_string(pick(420));
    case 4:
      return t + "0." + digits(30 + pick(30), false) + "e-" + std::to_string(pick(330));
    case 5:
      return t + "3.4028235" + digits(pick(4), false) + "e38";  // float32's edge
    default:
      return t + digits(1, true) + "." + digits(1 + pick(4), false);
  }
}

std::string random_ws(std::mt19937_64& rng) {
  static const char ws[] = {' ', '\n', '\t', '\r'};
  std::string s;
  while (rng() % 3 == 0) s += ws[rng() % 4];
  return s;
}

// A case whose input.x is a rows x cols array of random tokens and separators; with `hostile`,
// now and then a separator is dropped, doubled or trailing, a row is ragged or nested deeper.
std::string random_case(std::mt19937_64& rng, std::size_t rows, std::size_t cols, bool hostile) {
  auto rare = [&] { return hostile && rng() % 60 == 0; };
  std::string s = "{\"problem\":\"dp-step\",\"input\":{\"x\":[" + random_ws(rng);
  for (std::size_t i = 0; i < rows; ++i) {
    if (i > 0) s += rare() ? "" : ",";
    s += random_ws(rng) + (rare() ? "[[" : "[") + random_ws(rng);
    const std::size_t n = rare() ? cols + 1 : cols;
    for (std::size_t j = 0; j < n; ++j) {
      if (j > 0) s += rare() ? ",," : rare() ? "" : ",";
      s += random_ws(rng) + random_token(rng, hostile) + random_ws(rng);
    }
    s += rare() ? ",]" : "]";
  }
  s += "],\"lr\":" + random_token(rng, false) + "}}";
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fast_numbers_read_what_the_parser_reads) {
  std::mt19937_64 rng(20261130);
  // Small documents: every kind of token and flaw near the start of an array.
  for (int i = 0; i < 1500; ++i) {
    expect_same_either_way(random_case(rng, 1 + rng() % 4, 1 + rng() % 5, i % 2 == 1));
  }
  // Large ones: the source's 64 KiB buffer refills under the fast path, tokens and whitespace
  // runs cut at its edge, errors far into the file (offsets and line numbers must still agree).
  for (int i = 0; i < 12; ++i) {
    expect_same_either_way(random_case(rng, 3000 + rng() % 3000, 1 + rng() % 40, i % 3 == 2));
  }
  // One error at the very end of a 1 MB file of numbers on many lines.
  std::string big = random_case(rng, 20000, 8, false);
  big.insert(big.begin() + static_cast<std::ptrdiff_t>(big.rfind(']')), 'x');  // "...]x]," in x
  expect_same_either_way(big);
}

BOOST_AUTO_TEST_CASE(fast_numbers_values_and_positions) {
  // Independent of both readers: the values strtod gives (rounded to float32), "-0" as the
  // integer 0, and an error's line and column counted in the text itself.
  std::string text =
      "{\"problem\":\"dp-step\",\"input\":{\"x\":[[-0, -0.0, 1e-400, 16777217,\n"
      "  0.1, 3.4028235e38, 123456789012345678901234567890]]}}";
  TempFile f(text);
  JsonSource source(f.path, kDefaultMaxInputBytes);
  const JsonDocument doc = parse_json_summary(source, is_case_key_for_test);
  const std::vector<float>& x = doc.root.members.at(1).members.at(0).data;
  BOOST_REQUIRE(x.size() == 7u);
  BOOST_TEST(!std::signbit(x[0]));
  BOOST_TEST(std::signbit(x[1]));
  BOOST_TEST(x[2] == 0.0f);
  BOOST_TEST(x[3] == 16777216.0f);
  BOOST_TEST(x[4] == static_cast<float>(std::strtod("0.1", nullptr)));
  BOOST_TEST(x[5] == std::numeric_limits<float>::max());
  BOOST_TEST(x[6] == static_cast<float>(1.2345678901234568e29));

  std::string rows;
  for (int i = 0; i < 5000; ++i) rows += "[1.5, 2.25],\n";
  const std::string bad = "{\"problem\":\"dp-step\",\"input\":{\"x\":[" + rows + "[1.5, 2.25 3]]}}";
  const std::size_t byte = bad.rfind('3') + 1;  // 1-based
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(bad.begin(), bad.end(), '\n'));
  const std::size_t column = byte - bad.rfind('\n') - 1;
  expect_rejected(bad, "invalid JSON at line " + std::to_string(line) + ", column " +
                           std::to_string(column) + " (byte " + std::to_string(byte) +
                           "): syntax error while parsing array - unexpected number literal; "
                           "expected ']'");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(compare)

BOOST_AUTO_TEST_CASE(paths_and_tolerance_rule) {
  const std::vector<Tensor> expected = {Tensor({2, 2}, {1, 2, 3, 4}), Tensor({2}, {2, -2}),
                                        Tensor::scalar(10)};
  // atol 0.5, rtol 0.25: allowed = 0.5 + 0.25*|e|.
  std::vector<Tensor> got = expected;
  got[0](1, 0) = 3 + 1.25f;     // allowed 1.25: exactly on the bound passes
  got[0](0, 1) = 2 + 1.0001f;   // allowed 1.0: fails
  got[1].data[1] = -2 - 1.0f;   // allowed 1.0: passes
  got[2].data[0] = 10 - 3.01f;  // allowed 3.0: fails
  const auto m = compare_outputs(dp(), got, expected, 0.5, 0.25);
  BOOST_REQUIRE(m.size() == 2u);
  BOOST_TEST(m[0].path == "w[0][1]");
  BOOST_TEST(m[0].allowed == 1.0);
  BOOST_TEST(m[0].expected == 2.0);
  BOOST_TEST(m[0].got == static_cast<double>(2 + 1.0001f));
  BOOST_TEST(m[1].path == "loss");
  BOOST_TEST(describe(m[1]) == "loss: got 6.99, expected 10.0, allowed 3");
  BOOST_TEST(compare_outputs(dp(), expected, expected, 0, 0).empty());
}

BOOST_AUTO_TEST_CASE(paths_of_any_rank) {
  const std::vector<Tensor> expected = {Tensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                        Tensor({2, 1, 2, 1}, {1, 2, 3, 4}), Tensor::scalar(3)};
  std::vector<Tensor> got = expected;
  got[0].data[6] = 0;  // y[1][1][0]
  got[1].data[3] = 0;  // t[1][0][1][0]
  const auto m = compare_outputs(rank_n(), got, expected, 0, 0);
  BOOST_REQUIRE(m.size() == 2u);
  BOOST_TEST(m[0].path == "y[1][1][0]");
  BOOST_TEST(m[1].path == "t[1][0][1][0]");
  got[1].data[3] = NAN;
  BOOST_TEST(find_non_finite(rank_n(), got) ==
             "output t[1][0][1][0] is nan (1 of 13 element is not finite)");
}

BOOST_AUTO_TEST_CASE(nan_and_shape_differences_fail) {
  const std::vector<Tensor> expected = {Tensor({1, 1}, {1}), Tensor({1}, {2}), Tensor::scalar(3)};
  std::vector<Tensor> got = expected;
  got[1].data[0] = std::numeric_limits<float>::quiet_NaN();
  got[0] = Tensor({2, 1}, {1, 1});
  const auto m = compare_outputs(dp(), got, expected, 1e9, 1e9);
  BOOST_REQUIRE(m.size() == 2u);
  BOOST_TEST(m[0].path == "w");
  BOOST_TEST(describe(m[0]) == "w: shape f32[2,1], expected f32[1,1]");
  BOOST_TEST(m[1].path == "b[0]");
  BOOST_TEST(describe(m[1]) == "b[0]: got nan, expected 2.0, allowed 3e+09");
}

BOOST_AUTO_TEST_SUITE_END()
