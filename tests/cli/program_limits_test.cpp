// Issue #31: a program file is untrusted input -- read in time and memory linear in the file,
// within stated limits, out of memory as one line, and nothing of it reaching the terminal raw.
// The files too big to commit are written here; the small hostile ones are golden files in
// cases/invalid-programs/ (program_file_test). bench/program_reader/ measures the reader.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace {

using meshrun::testing::has;
using meshrun::testing::kSource;
using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::run_with;
using meshrun::testing::RunOptions;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

const std::string kValid = "cases/invalid-programs/valid/double.json";
const std::string kCase = "cases/invalid-programs/valid/double-case.json";

// The valid program with `unread` (n copies of `element`, comma-separated) under a key the
// reader never reads.
std::string with_unread(const std::string& path, const std::string& element, std::size_t n) {
  std::string text = slurp(kSource + "/" + kValid);
  std::string list = "\"unread\": [";
  list.reserve(list.size() + n * (element.size() + 1) + 4);
  for (std::size_t i = 0; i < n; ++i) {
    if (i) list += ',';
    list += element;
  }
  list += "], ";
  text.insert(1, list);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::size_t newlines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// 10^6 empty objects took nlohmann's callback parser minutes (it scanned the array at the end
// of each element: 50k/100k/200k objects 1.1/3.9/19.3 s). Read in linear time, the program runs
// (a quadratic reader is killed at kHang, 60 s).
BOOST_AUTO_TEST_CASE(a_million_empty_objects_in_an_unread_key_are_read_in_linear_time) {
  TempDir dir;
  const Result r = run({"run", with_unread(dir / "p.json", "{}", 1000000), kCase});
  BOOST_TEST(!r.killed);
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.starts_with("{\"y\":[2.0,4.0,"));
}

// Sanitizers reserve terabytes of address space and multiply the memory of a 2^25-value
// document: these two run in the plain builds.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// The values of the document are counted before each is allocated: one more than the limit
// (2^25 zeros, 67 MB of text) is refused by name, not held (it would take ~0.5 GB).
BOOST_AUTO_TEST_CASE(more_json_values_than_the_limit_are_refused_naming_it) {
  TempDir dir;
  // The valid program holds 85 values; with the array, 2^25 - 85 zeros make 2^25 + 1.
  const std::string path = with_unread(dir / "p.json", "0", (std::size_t{1} << 25) - 85);
  const Result r = run({"run", path, kCase});
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err == "meshrun: " + path +
                          ": more than 33554432 JSON values (the most a program file may hold)\n");
  BOOST_TEST(r.out == "");
}

// Memory running out while the document is built is one line naming the file, exit 2 -- not
// std::bad_alloc through a noexcept destructor (SIGABRT). 8 * 10^6 empty objects (24 MB) need
// ~0.7 GB; the process may have 512 MiB of address space.
BOOST_AUTO_TEST_CASE(running_out_of_memory_while_reading_is_one_line) {
  TempDir dir;
  const std::string path = with_unread(dir / "p.json", "{}", 8000000);
  RunOptions o;
  o.address_space_limit = 512L << 20;
  const Result r = run_with({"run", path, kCase}, o);
  BOOST_TEST(!r.killed);
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.starts_with("meshrun: " + path + ": out of memory after "), r.err);
  BOOST_TEST(has(r.err, " JSON values"), r.err);
  BOOST_TEST(newlines(r.err) == 1u, r.err);
  BOOST_TEST(r.out == "");
}
#endif

// Every byte < 0x20 but the newline ending a line, and 0x7f.
bool holds_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n') || u == 0x7f;
  });
}

// No byte of a program file reaches the terminal raw, in any subcommand that reads one: ESC in
// the program's name, an axis name, a param, a key, an equation's source (refused or escaped).
BOOST_AUTO_TEST_CASE(no_control_byte_of_a_program_file_reaches_the_terminal) {
  const std::string fake = "\x1b[2K\r\x1b[32mall cases PASS\x1b[0m";
  TempDir dir;
  std::vector<std::string> files;
  const auto variant = [&](const std::string& name, auto change) {
    nlohmann::json p = meshrun::testing::parse_json(slurp(kSource + "/" + kValid));
    change(p);
    const std::string path = dir / (name + ".json");
    std::ofstream(path) << p.dump();
    files.push_back(path);
  };
  const auto body = [](nlohmann::json& p) -> nlohmann::json& {
    return p["exports"][0]["jaxpr"]["eqns"][0]["params"]["jaxpr"];
  };
  variant("name", [&](nlohmann::json& p) { p["name"] = "double" + fake; });
  variant("axis", [&](nlohmann::json& p) {
    p["exports"][0]["mesh"][0][0] = "da" + fake;
    p["exports"][0]["jaxpr"]["eqns"][0]["params"]["mesh"][0][0] = "da" + fake;
  });
  variant("spec", [&](nlohmann::json& p) {
    p["exports"][0]["jaxpr"]["eqns"][0]["params"]["in_specs"] = {{"da" + fake}};
  });
  variant("dims", [&](nlohmann::json& p) { p["exports"][0]["dims"] = {"M" + fake}; });
  variant("key", [&](nlohmann::json& p) { body(p)["eqns"][0]["params"][fake] = 1; });
  variant("primitive", [&](nlohmann::json& p) { body(p)["eqns"][0]["primitive"] = fake; });
  // Accepted (a source is shown, not used) and shown escaped where an equation is named.
  variant("source", [&](nlohmann::json& p) { body(p)["eqns"][0]["source"] = "f.py:1" + fake; });
  variant("source-shape", [&](nlohmann::json& p) {
    body(p)["eqns"][0]["source"] = "f.py:1" + fake;
    body(p)["eqns"][0]["out"][0]["type"]["shape"] = {"2*M"};
  });
  const std::string cases = dir / "cases";
  std::filesystem::create_directory(cases);
  std::filesystem::copy_file(kSource + "/" + kCase, cases + "/double-case.json");
  for (const std::string& f : files) {
    const std::vector<std::vector<std::string>> commands = {
        {"run", f, kCase},
        {"run", f, kCase, "--trace"},
        {"run", f, kCase, "--show-sharding"},
        {"run", f, kCase, "--timings"},
        {"run", f, "cases/invalid-programs/valid/double-input.json"},
        {"check", "--program", f, cases},
    };
    for (const auto& args : commands) {
      const Result r = run(args);
      BOOST_TEST(!r.killed, f);
      BOOST_TEST(!holds_control(r.err), args[0] << " " << args.back() << " " << f << ": " << r.err);
      BOOST_TEST(!holds_control(r.out), args[0] << " " << args.back() << " " << f << ": " << r.out);
    }
  }
}

}  // namespace
