// `meshrun check --json FILE`: the verdicts as one JSON document, for scripts:
//   {"complete": true, "incomplete_reason": null, "passed": 16, "failed": 1,
//    "atol": 1e-05, "rtol": 1e-05, "suites": ["cases/dp-step", ...],
//    "cases": [{"case": "cases/dp-step/example1.json", "suite": "cases/dp-step",
//               "problem": "dp-step", "verdict": "PASS", "time": 0.0042, "detail": "...",
//               "differing_elements": 0, "elements": [], "shape_differences": [],
//               "structure": {"passed": [...], "failed": []}, "error": null}, ...]}
// got / expected are the float32 values (their shortest round-trip decimals); a NaN or infinity,
// which JSON cannot spell, is the string "nan", "+inf" or "-inf".
#include <cmath>

#include <nlohmann/json.hpp>

#include "io/check_report.hpp"
#include "io/number_format.hpp"

namespace meshrun {
namespace {

using Json = nlohmann::ordered_json;

Json float32(double v) {
  const std::string text =
      format_number(static_cast<float>(v), NumberFormat{.precision = 6, .exact = true});
  // Parsed back as a double it prints as the same shortest decimal, and reads back as this float32.
  return std::isfinite(v) ? Json(std::stod(text)) : Json(text);
}

Json case_json(const CaseReport& c, const CheckSummary& summary) {
  Json elements = Json::array(), shapes = Json::array();
  for (const Mismatch& m : c.mismatches) {
    if (!m.shape_note.empty()) {
      shapes.push_back({{"output", m.path}, {"difference", m.shape_note}});
    } else if (elements.size() < kMaxReportedElements) {
      elements.push_back({{"element", m.path},
                          {"got", float32(m.got)},
                          {"expected", float32(m.expected)},
                          {"allowed", m.allowed}});
    }
  }
  Json j;
  j["case"] = c.path;
  j["suite"] = summary.suites.at(c.suite);
  j["problem"] = c.problem.empty() ? Json(nullptr) : Json(c.problem);
  j["verdict"] = c.word;
  j["time"] = c.seconds;
  j["detail"] = c.detail;
  j["differing_elements"] = c.mismatches.size() - shapes.size();
  j["elements"] = elements;  // the first kMaxReportedElements of them
  j["shape_differences"] = shapes;
  j["structure"] = {{"passed", c.rules_passed}, {"failed", c.rules_failed}};
  j["error"] = c.error() ? Json(c.detail) : Json(nullptr);
  return j;
}

}  // namespace

std::string json_report(const std::vector<CaseReport>& cases, const CheckSummary& summary) {
  std::size_t passed = 0;
  Json list = Json::array();
  for (const CaseReport& c : cases) {
    passed += c.passed();
    list.push_back(case_json(c, summary));
  }
  Json j;
  j["complete"] = summary.incomplete.empty();
  j["incomplete_reason"] = summary.incomplete.empty() ? Json(nullptr) : Json(summary.incomplete);
  j["passed"] = passed;
  j["failed"] = cases.size() - passed;
  j["atol"] = summary.atol;
  j["rtol"] = summary.rtol;
  j["suites"] = summary.suites;
  j["cases"] = list;
  // File names need not be UTF-8; such bytes become U+FFFD rather than an invalid document.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace meshrun
