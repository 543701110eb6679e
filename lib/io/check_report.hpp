// What `meshrun check` found, case by case, and the machine-readable reports built from it:
// JUnit XML (--junit FILE) for CI dashboards, JSON (--json FILE) for scripts. The text report on
// stdout, the JUnit file and the JSON file are three views of the same CaseReports.
#pragma once

#include <string>
#include <vector>

#include "io/compare.hpp"

namespace meshrun {

struct CaseReport {
  std::string path;                       // the case file as found
  std::size_t suite = 0;                  // index of the PATH argument it was found under
  std::string problem;                    // "" when the case could not be read
  std::string word;                       // PASS, FAIL, ERROR
  std::string detail;                     // the text line after "path: " (unescaped)
  double seconds = 0;                     // reading, running and grading it
  std::vector<Mismatch> mismatches;       // every differing element (FAIL)
  std::vector<std::string> rules_passed;  // structural rules that held
  std::vector<std::string> rules_failed;  // and those that broke (FAIL)
  bool unfired = false;                   // ERROR: an --inject never fired (the command: exit 2)
  bool passed() const { return word == "PASS"; }
  bool error() const { return word == "ERROR"; }
};

// Everything a report needs besides the cases: the PATH arguments (one suite each), the
// tolerances, and -- when meshrun itself ended the run (exit 4 or 6) -- why the report holds only
// the cases graded so far ("" for a complete run).
struct CheckSummary {
  std::vector<std::string> suites;
  double atol = 0, rtol = 0;
  std::string incomplete;
};

// Differing elements listed per case in a report; the counts are always whole.
constexpr std::size_t kMaxReportedElements = 1000;

std::string junit_report(const std::vector<CaseReport>& cases, const CheckSummary& summary);
std::string json_report(const std::vector<CaseReport>& cases, const CheckSummary& summary);

}  // namespace meshrun
