// `meshrun check --junit FILE`: the subset of JUnit XML that GitLab, Jenkins and GitHub's test
// reporters read -- one <testsuite> per PATH argument, one <testcase> per case with its time, a
// <failure> holding the differing elements and broken rules, an <error> for a case that could not
// run. Every name and message is escaped: control bytes (which XML 1.0 cannot carry at all) and
// bytes that are not UTF-8 are written as \xHH, as the text report writes them, and U+FFFE and
// U+FFFF (UTF-8, yet no XML characters either) as \uFFFE and \uFFFF.
#include <cstdio>

#include "io/check_report.hpp"
#include "support/printable.hpp"

namespace meshrun {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (no overlongs, surrogates or code points
// past U+10FFFF), or 0 when the byte there does not start one.
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else
    return 0;
  if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

// `raw` as XML character data or an attribute value.
std::string xml(const std::string& raw) {
  const std::string s = escape_controls(raw);
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += hex;
      ++i;
      continue;
    }
    if (n == 3 && s.compare(i, 2, "\xEF\xBF") == 0 &&
        (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE) {
      // U+FFFE and U+FFFF: valid UTF-8, but not XML characters (XML 1.0, section 2.2).
      out += s[i + 2] == '\xBE' ? "\\uFFFE" : "\\uFFFF";
    } else if (n > 1) {
      out.append(s, i, n);
    } else {
      switch (s[i]) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          out += s[i];
      }
    }
    i += n;
  }
  return out;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", s);
  return text;
}

// The test's name within its suite: the path below the PATH argument, without ".json"
// ("example1", "sub/case"), or the file's own name when the PATH was the file.
std::string test_name(const std::string& path, const std::string& suite) {
  std::string name = path;
  if (path.size() > suite.size() && path.compare(0, suite.size(), suite) == 0 &&
      (suite.ends_with('/') || path[suite.size()] == '/')) {
    name = path.substr(suite.size() + (suite.ends_with('/') ? 0 : 1));
  } else if (const auto slash = path.rfind('/'); slash != std::string::npos) {
    name = path.substr(slash + 1);
  }
  if (name.ends_with(".json")) name.resize(name.size() - 5);
  return name;
}

// The body of a <failure>: each differing element, then each broken rule, one per line.
std::string failure_body(const CaseReport& c) {
  std::string body;
  for (std::size_t i = 0; i < c.mismatches.size() && i < kMaxReportedElements; ++i) {
    body += xml(describe(c.mismatches[i])) + "\n";
  }
  if (c.mismatches.size() > kMaxReportedElements) {
    body += "... and " + std::to_string(c.mismatches.size() - kMaxReportedElements) + " more\n";
  }
  for (const std::string& rule : c.rules_failed) body += "structure: " + xml(rule) + "\n";
  return body;
}

std::string testcase(const CaseReport& c, const std::string& suite) {
  std::string x = "    <testcase classname=\"" +
                  xml(c.problem.empty() ? "meshrun.check" : c.problem) + "\" name=\"" +
                  xml(test_name(c.path, suite)) + "\" file=\"" + xml(c.path) + "\" time=\"" +
                  seconds(c.seconds) + "\"";
  if (c.passed()) return x + "/>\n";
  x += ">\n";
  if (c.error()) {
    x += "      <error type=\"error\" message=\"" + xml(c.detail) + "\"/>\n";
  } else {
    x += "      <failure type=\"" + std::string(c.mismatches.empty() ? "structure" : "mismatch") +
         "\" message=\"" + xml(c.detail) + "\">" + failure_body(c) + "</failure>\n";
  }
  return x + "    </testcase>\n";
}

}  // namespace

std::string junit_report(const std::vector<CaseReport>& cases, const CheckSummary& summary) {
  std::string suites;
  std::size_t total = 0, failures = 0, errors = 0;
  double time = 0;
  for (std::size_t s = 0; s < summary.suites.size(); ++s) {
    std::string body;
    std::size_t tests = 0, failed = 0, errored = 0;
    double suite_time = 0;
    for (const CaseReport& c : cases) {
      if (c.suite != s) continue;
      ++tests;
      failed += !c.passed() && !c.error();
      errored += c.error();
      suite_time += c.seconds;
      body += testcase(c, summary.suites[s]);
    }
    // A run meshrun itself ended holds only the cases graded so far; say so where a reader of
    // the file looks, in each suite's properties.
    const std::string properties =
        summary.incomplete.empty()
            ? ""
            : "    <properties>\n      <property name=\"meshrun.incomplete\" value=\"" +
                  xml(summary.incomplete) + "\"/>\n    </properties>\n";
    suites += "  <testsuite name=\"" + xml(summary.suites[s]) + "\" tests=\"" +
              std::to_string(tests) + "\" failures=\"" + std::to_string(failed) + "\" errors=\"" +
              std::to_string(errored) + "\" skipped=\"0\" time=\"" + seconds(suite_time) + "\">\n" +
              properties + body + "  </testsuite>\n";
    total += tests;
    failures += failed;
    errors += errored;
    time += suite_time;
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"meshrun check\" tests=\"" +
         std::to_string(total) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"" +
         std::to_string(errors) + "\" time=\"" + seconds(time) + "\">\n" + suites +
         "</testsuites>\n";
}

}  // namespace meshrun
