// `meshrun check --junit FILE` and `--json FILE` (issue #12): the files are parsed here -- the
// JUnit XML by a small parser of this test, the JSON by nlohmann -- and their counts checked
// against the `N passed, M failed` line the same run printed.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_meshrun.hpp"
#include "support/json.hpp"

namespace fs = std::filesystem;

namespace {

using meshrun::testing::Result;
using meshrun::testing::run;
using meshrun::testing::run_with;
using meshrun::testing::RunOptions;
using meshrun::testing::slurp;
using meshrun::testing::TempDir;

using meshrun::testing::has;

// ---- a small XML reader: enough of XML 1.0 to check a JUnit file -------------------------------

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Element> children;
  std::string text;
  const Element* child(const std::string& n) const {
    for (const Element& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
  std::size_t count(const std::string& n) const {
    return static_cast<std::size_t>(std::count_if(children.begin(), children.end(),
                                                  [&](const Element& c) { return c.name == n; }));
  }
};

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const std::size_t semi = s.find(';', i);
    BOOST_REQUIRE(semi != std::string::npos);
    const std::string entity = s.substr(i + 1, semi - i - 1);
    static const std::map<std::string, char> known{
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    BOOST_REQUIRE_MESSAGE(known.count(entity), "unknown entity &" + entity + ";");
    out += known.at(entity);
    i = semi;
  }
  return out;
}

// Parses one element at `pos` (after the prolog); fails the test on anything malformed: an
// unclosed or mismatched tag, a raw '<' or '&' out of place, an attribute without quotes.
Element parse_element(const std::string& x, std::size_t& pos) {
  BOOST_REQUIRE(x.compare(pos, 1, "<") == 0);
  Element e;
  std::size_t i = pos + 1;
  while (i < x.size() && std::string(" />").find(x[i]) == std::string::npos) e.name += x[i++];
  for (;;) {
    while (i < x.size() && x[i] == ' ') ++i;
    BOOST_REQUIRE(i < x.size());
    if (x.compare(i, 2, "/>") == 0) {
      pos = i + 2;
      return e;
    }
    if (x[i] == '>') break;
    const std::size_t eq = x.find('=', i);
    BOOST_REQUIRE(eq != std::string::npos && x[eq + 1] == '"');
    const std::size_t close = x.find('"', eq + 2);
    BOOST_REQUIRE(close != std::string::npos);
    const std::string value = x.substr(eq + 2, close - eq - 2);
    BOOST_REQUIRE_MESSAGE(value.find('<') == std::string::npos, "raw < in attribute");
    BOOST_REQUIRE_MESSAGE(e.attrs.emplace(x.substr(i, eq - i), unescape(value)).second,
                          "duplicate attribute");
    i = close + 1;
  }
  ++i;
  for (;;) {
    BOOST_REQUIRE_MESSAGE(i < x.size(), "unclosed <" + e.name + ">");
    if (x.compare(i, 2, "</") == 0) {
      const std::string end = "</" + e.name + ">";
      BOOST_REQUIRE_MESSAGE(x.compare(i, end.size(), end) == 0,
                            "mismatched close of <" + e.name + ">");
      pos = i + end.size();
      return e;
    }
    if (x[i] == '<') {
      e.children.push_back(parse_element(x, i));
      continue;
    }
    const std::size_t next = x.find('<', i);
    e.text += unescape(x.substr(i, next - i));
    i = next;
  }
}

Element parse_xml(const std::string& x) {
  const std::string prolog = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  BOOST_REQUIRE(x.compare(0, prolog.size(), prolog) == 0);
  // XML 1.0 cannot carry these bytes at all, not even as &#1;.
  for (const char c : x) {
    const auto u = static_cast<unsigned char>(c);
    BOOST_REQUIRE_MESSAGE(!(u < 0x20 && c != '\n' && c != '\t' && c != '\r') && u != 0x7f,
                          "control byte in the XML");
  }
  // Nor the non-characters U+FFFE and U+FFFF (UTF-8 EF BF BE, EF BF BF; section 2.2).
  BOOST_REQUIRE_MESSAGE(
      x.find("\xEF\xBF\xBE") == std::string::npos && x.find("\xEF\xBF\xBF") == std::string::npos,
      "U+FFFE or U+FFFF in the XML");
  std::size_t pos = prolog.size();
  Element root = parse_element(x, pos);
  BOOST_TEST(x.substr(pos) == "\n");
  return root;
}

// ---- the cases used --------------------------------------------------------------------------

// example1 of dp-step with the documented result as expected, or a wrong w.
std::string dp_example1(const std::string& expected_w) {
  return R"({"problem":"dp-step","name":"example1","input":{"w":[[0.0]],"b":[0.0],)"
         R"("x":[[1.0],[2.0],[3.0],[4.0],[5.0],[6.0],[7.0],[8.0]],)"
         R"("y":[[3.0],[5.0],[7.0],[9.0],[11.0],[13.0],[15.0],[17.0]],"lr":0.01},)"
         R"("expected":{"w":[[)" +
         expected_w + R"(]],"b":[0.2],"loss":121.0}})";
}

// A directory with one passing case, one failing (w expected 9.5, the documented result is 1.11),
// one without expected (an ERROR) and one whose name holds control bytes and markup.
struct MixedDir {
  TempDir dir;
  std::string pass = dir.write("a-pass.json", dp_example1("1.11"));
  std::string fail = dir.write("b-fail.json", dp_example1("9.5"));
  std::string none = dir.write(
      "c-none.json",
      R"({"problem":"dp-step","name":"x","input":{"w":[[0.0]],"b":[0.0],"x":[[1.0],[2.0],[3.0],[4.0],[5.0],[6.0],[7.0],[8.0]],"y":[[1.0],[1.0],[1.0],[1.0],[1.0],[1.0],[1.0],[1.0]],"lr":0.1}})");
  // ... and U+FFFE, U+FFFF: valid UTF-8, yet no XML characters.
  std::string odd =
      dir.write("d-<odd>&\"\x01\x1b\xEF\xBF\xBE\xEF\xBF\xBF.json", dp_example1("1.11"));
};

// "N passed, M failed" from the last line of check's stdout.
std::pair<std::size_t, std::size_t> counts(const std::string& out) {
  const std::size_t start = out.rfind('\n', out.size() - 2) + 1;
  std::size_t passed = 0, failed = 0;
  BOOST_REQUIRE(std::sscanf(out.c_str() + start, "%zu passed, %zu failed", &passed, &failed) == 2);
  return {passed, failed};
}

std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".meshrun-") != std::string::npos)
      names.push_back(e.path());
  return names;
}

}  // namespace

BOOST_AUTO_TEST_CASE(junit_counts_match_the_text_report) {
  TempDir out;
  const std::string junit = out / "report.xml";
  const Result r = run({"check", "--junit", junit, "cases/dp-step", "cases/tp-mlp"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.err.empty(), r.err);
  const auto [passed, failed] = counts(r.out);
  BOOST_TEST(passed == 19u);  // the 10 + 9 case files of cases/dp-step and cases/tp-mlp
  BOOST_TEST(failed == 0u);
  const Element root = parse_xml(slurp(junit));
  BOOST_TEST(root.name == "testsuites");
  BOOST_TEST(root.attrs.at("tests") == "19");
  BOOST_TEST(root.attrs.at("failures") == "0");
  BOOST_TEST(root.attrs.at("errors") == "0");
  BOOST_REQUIRE(root.count("testsuite") == 2u);  // one per PATH
  BOOST_TEST(root.children[0].attrs.at("name") == "cases/dp-step");
  BOOST_TEST(root.children[0].count("testcase") == 10u);
  BOOST_TEST(root.children[1].attrs.at("name") == "cases/tp-mlp");
  BOOST_TEST(root.children[1].count("testcase") == 9u);
  const Element& first = root.children[0].children[0];
  BOOST_TEST(first.attrs.at("classname") == "dp-step");
  BOOST_TEST(first.attrs.at("name") == "example1");
  BOOST_TEST(first.attrs.at("file") == "cases/dp-step/example1.json");
  BOOST_TEST(std::stod(first.attrs.at("time")) >= 0.0);
  BOOST_TEST(first.children.empty());  // passed: no <failure>, no <error>
  BOOST_TEST(leftovers(out.path).empty());
}

BOOST_AUTO_TEST_CASE(junit_and_json_hold_failures_errors_and_escaped_names) {
  MixedDir m;
  TempDir out;
  const std::string junit = out / "r.xml", json = out / "r.json";
  const Result r = run({"check", "--junit", junit, "--json", json, m.dir.path});
  BOOST_TEST(r.code == 1);
  const auto [passed, failed] = counts(r.out);
  BOOST_TEST(passed == 2u);
  BOOST_TEST(failed == 2u);

  const Element root = parse_xml(slurp(junit));
  BOOST_REQUIRE(root.count("testsuite") == 1u);
  const Element& suite = root.children[0];
  BOOST_TEST(suite.attrs.at("tests") == "4");
  BOOST_TEST(suite.attrs.at("failures") == "1");
  BOOST_TEST(suite.attrs.at("errors") == "1");
  std::size_t failures = 0, errors = 0, clean = 0;
  for (const Element& tc : suite.children) {
    failures += tc.count("failure");
    errors += tc.count("error");
    clean += tc.children.empty();
  }
  BOOST_TEST(failures == 1u);
  BOOST_TEST(errors == 1u);
  BOOST_TEST(clean == passed);
  BOOST_TEST(failures + errors == failed);
  const Element* failure = suite.children[1].child("failure");
  BOOST_REQUIRE(failure);
  BOOST_TEST(suite.children[1].attrs.at("name") == "b-fail");
  BOOST_TEST(failure->attrs.at("type") == "mismatch");
  BOOST_TEST(has(failure->text, "w[0][0]: got 1.11, expected 9.5, allowed"), failure->text);
  const Element* error = suite.children[2].child("error");
  BOOST_REQUIRE(error);
  BOOST_TEST(error->attrs.at("message") == "no \"expected\" to grade against");
  // The name with markup and control bytes: markup escaped, control bytes written as \xHH.
  BOOST_TEST(suite.children[3].attrs.at("name") == "d-<odd>&\"\\x01\\x1b\\uFFFE\\uFFFF");

  const auto j = meshrun::testing::parse_json(slurp(json));
  BOOST_TEST(j.at("complete") == true);
  BOOST_TEST(j.at("passed") == passed);
  BOOST_TEST(j.at("failed") == failed);
  BOOST_REQUIRE(j.at("cases").size() == 4u);
  const auto& f = j.at("cases")[1];
  BOOST_TEST(f.at("case") == m.fail);
  BOOST_TEST(f.at("problem") == "dp-step");
  BOOST_TEST(f.at("verdict") == "FAIL");
  BOOST_TEST(f.at("differing_elements") == 1);
  BOOST_TEST(f.at("elements")[0].at("element") == "w[0][0]");
  BOOST_TEST(static_cast<float>(f.at("elements")[0].at("got").get<double>()) == 1.11f);
  BOOST_TEST(f.at("elements")[0].at("expected").get<double>() == 9.5);
  BOOST_TEST(f.at("elements")[0].at("allowed").get<double>() > 0.0);
  BOOST_TEST(f.at("structure").at("passed").size() == 3u);  // dp-step's three rules
  BOOST_TEST(f.at("structure").at("failed").empty());
  BOOST_TEST(j.at("cases")[2].at("verdict") == "ERROR");
  BOOST_TEST(j.at("cases")[2].at("error") == "no \"expected\" to grade against");
  BOOST_TEST(j.at("cases")[3].at("case") == m.odd);  // JSON holds the name exactly
}

BOOST_AUTO_TEST_CASE(a_run_meshrun_ends_still_writes_what_was_graded_marked_incomplete) {
  TempDir out;
  const std::string junit = out / "r.xml", json = out / "r.json";
  RunOptions o;
  o.stdout_path = "/dev/full";  // the first report line cannot be written: exit 6
  const Result r = run_with({"check", "--junit", junit, "--json", json, "cases/dp-step"}, o);
  BOOST_TEST(r.code == 6);
  BOOST_TEST(r.err == "meshrun: stdout: No space left on device\n");
  const auto j = meshrun::testing::parse_json(slurp(json));
  BOOST_TEST(j.at("complete") == false);
  BOOST_TEST(j.at("incomplete_reason") == "run ended by meshrun: stdout: No space left on device");
  BOOST_TEST(j.at("cases").size() == 1u);  // graded, though its line never reached stdout
  const Element root = parse_xml(slurp(junit));
  const Element* props = root.children.at(0).child("properties");
  BOOST_REQUIRE(props);
  BOOST_TEST(props->children.at(0).attrs.at("name") == "meshrun.incomplete");

  // An internal error (exit 4) in the first case: nothing graded, the reason kept.
  const Result internal =
      run({"check", "--json", json, "--inject", "internal:1@1", "cases/dp-step"});
  BOOST_TEST(internal.code == 4);
  const auto k = meshrun::testing::parse_json(slurp(json));
  BOOST_TEST(k.at("complete") == false);
  BOOST_TEST(has(k.at("incomplete_reason").get<std::string>(), "internal error: injected"));
  BOOST_TEST(leftovers(out.path).empty());
}

BOOST_AUTO_TEST_CASE(a_report_path_that_cannot_be_written_fails_before_any_case_runs) {
  const Result r = run({"check", "--junit", "/nonexistent-dir/r.xml", "cases/dp-step"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.out.empty());
  BOOST_TEST(r.err ==
             "meshrun: --junit: cannot write /nonexistent-dir/r.xml: No such file or directory\n");
  // Never over a case being graded.
  TempDir dir;
  const std::string c = dir.write("c.json", dp_example1("1.11"));
  const Result same = run({"check", "--json", c, c});
  BOOST_TEST(same.code == 2);
  BOOST_TEST(slurp(c) == dp_example1("1.11"));
}
