// `meshrun check --update PATH...`: blesses expected values, the snapshot-testing habit (insta,
// `jest -u`). Each case runs; where its result is outside the tolerance of its `expected` (or it
// has none), `expected` is rewritten from what meshrun computes now -- every float32 in its
// shortest round-trip form, so a following `check --atol 0 --rtol 0` passes -- and every other
// byte of the file is kept (io/expected_patch.hpp), only if the file still holds the bytes the run
// read. One line per case, then "N updated, U unchanged, R refused". A case that errors, breaks a
// structural rule or computes a NaN or infinity is refused (exit 1); an --inject that never fired,
// exit 2; a case that had to be written and was not (read-only, hard links, changed during the
// run, a failed write), exit 6 -- the worst decides (docs/files.md).
#include <cmath>

#include <CLI/Error.hpp>

#include "check/cases.hpp"
#include "exit_codes.hpp"
#include "io/compare.hpp"
#include "io/expected_patch.hpp"
#include "io/json_text.hpp"
#include "io/output.hpp"
#include "io/result_writer.hpp"
#include "progress.hpp"
#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun {
namespace {

struct Outcome {
  std::string word;  // UPDATED, UNCHANGED, REFUSED
  std::string detail;
};

std::size_t element_count(const std::vector<Tensor>& tensors) {
  std::size_t n = 0;
  for (const Tensor& t : tensors) n += t.size();
  return n;
}

// What blessing changes: "3 of 4 elements changed (2 beyond tolerance), largest change 0.5 at
// w[0][0] (1.5 -> 2.0)", the bits compared exactly.
std::string change_summary(const RanCase& ran, std::size_t beyond_tolerance) {
  const std::size_t total = element_count(ran.outputs);
  if (!ran.c.expected)
    return "expected written (" + std::to_string(total) + " elements, none before)";
  const auto changed = compare_outputs(*ran.program, ran.outputs, *ran.c.expected, 0, 0);
  std::string text = std::to_string(changed.size()) + " of " + std::to_string(total) +
                     " elements changed (" + std::to_string(beyond_tolerance) +
                     " beyond tolerance)";
  const Mismatch* largest = nullptr;
  for (const Mismatch& m : changed) {
    if (!m.shape_note.empty()) {
      text += "; " + m.path + ": " + m.shape_note;
    } else if (!largest ||
               std::fabs(m.got - m.expected) > std::fabs(largest->got - largest->expected)) {
      largest = &m;
    }
  }
  if (largest) {
    const NumberFormat exact{.precision = 6, .exact = true};
    text += ", largest change " +
            format_number(static_cast<float>(std::fabs(largest->got - largest->expected)), exact) +
            " at " + largest->path + " (" +
            format_number(static_cast<float>(largest->expected), exact) + " -> " +
            format_number(static_cast<float>(largest->got), exact) + ")";
  }
  return text;
}

// One case blessed. `not_written`: set when a result was due but the file could not take it
// (exit 6); `unfired`: an --inject never fired (exit 2).
Outcome bless(const Found& found, const RunFlags& flags, const ProgramDef* program,
              bool* not_written, bool* unfired) {
  if (!found.problem.empty()) return {"REFUSED", found.problem};
  try {
    const std::string ran_bytes = case_bytes(found.path, flags.max_input_bytes);
    const RanCase ran = run_case(found.path, flags, nullptr, program);
    if (!ran.unfired.empty()) {
      *unfired = true;
      return {"REFUSED", ran.unfired.front()};
    }
    if (const std::string why = bless_refusal(*ran.program, ran.outputs, ran.structure);
        !why.empty()) {
      return {"REFUSED", why};
    }
    std::size_t beyond = 0;
    if (ran.c.expected) {
      beyond = compare_outputs(*ran.program, ran.outputs, *ran.c.expected, flags.atol, flags.rtol)
                   .size();
      if (beyond == 0) return {"UNCHANGED", "numbers within tolerance"};
    }
    const std::string summary = change_summary(ran, beyond);
    std::string why;
    try {
      const std::string value =
          write_result(*ran.program, ran.outputs, NumberFormat{.precision = 6, .exact = true});
      why = rewrite_expected(found.path, ran_bytes, value, flags.max_input_bytes, ran.c.npy_files);
    } catch (const InputError& e) {  // OutputFile's open: the file cannot be replaced
      why = e.what();
    } catch (const OutputError& e) {
      why = e.what();
    }
    if (!why.empty()) {
      *not_written = true;
      return {"REFUSED", why};
    }
    return {"UPDATED", summary};
  } catch (const Error& e) {
    const std::string reason = case_error(e, found.path);
    if (reason.empty()) throw;
    return {"REFUSED", reason};
  }
}

}  // namespace

void run_update(const std::vector<std::string>& paths, const RunFlags& flags,
                const ProgramDef* program, const std::string& program_file) {
  const std::vector<Found> cases = collect_cases(paths);
  FileSet files;  // the lines on stdout must not go into a case (`>> case.json`)
  files.standard_output();
  if (!program_file.empty()) files.read("the program file", program_file);
  for (const Found& c : cases) files.read("a case file being blessed", c.path);
  std::size_t updated = 0, unchanged = 0, refused = 0;
  bool not_written = false, unfired = false;
  Progress progress("check --update", cases.size(), "cases");
  for (const Found& c : cases) {
    const Outcome o = bless(c, flags, program, &not_written, &unfired);
    progress.clear();  // stdout may be the same terminal
    write_stdout(o.word + " " + printable(c.path) + ": " + escape_controls(o.detail) + "\n");
    ++(o.word == "UPDATED" ? updated : o.word == "UNCHANGED" ? unchanged : refused);
    progress.update(updated + unchanged + refused, std::to_string(refused) + " refused");
  }
  progress.clear();
  write_stdout(std::to_string(updated) + " updated, " + std::to_string(unchanged) + " unchanged, " +
               std::to_string(refused) + " refused\n");
  // The worst outcome decides, as in the exit-code table: a file not written (6), an injection
  // that tested nothing (2), a refused case (1).
  if (not_written) throw ExitWith(kExitOutput);
  if (unfired) throw ExitWith(kExitUsage);
  if (refused > 0) throw ExitWith(kExitDiffers);
}

}  // namespace meshrun
