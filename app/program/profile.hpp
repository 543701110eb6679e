// --timings and --profile FILE for a program run: one Profile, recorded alongside the trace
// (Trace::profile), summed into the --timings line and drawn into the --profile timeline.
// Neither flag: no Profile, and the run times nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "io/output.hpp"
#include "trace/profile.hpp"
#include "trace/trace.hpp"

namespace meshrun {

// --repeat N with --timings: the median compute and collectives of runs 2..N.
struct WarmSteps {
  int repeat = 1;
  double compute_s = 0, collectives_s = 0;
};

class RunProfile {
 public:
  // Opens --profile's file up front, as --trace does (a bad directory, or the case file itself, is
  // exit 2 before any work). `file` "" and `timings` false: off.
  RunProfile(const std::string& file, bool timings, std::chrono::milliseconds open_wait);
  // A run that ended by an error save() did not see (after the mesh ran: an --inject that never
  // fired, a NaN in the result) still leaves its timeline, best effort. One refused before the
  // mesh ran (a bad case, a file clash) leaves the file as it was.
  ~RunProfile();
  RunProfile(const RunProfile&) = delete;
  RunProfile& operator=(const RunProfile&) = delete;

  // Where the run records: `trace` gets the Profile (when on); null when off.
  Profile* attach(Trace& trace);
  // The mesh is about to run: from here on, an error still leaves the timeline.
  void mesh_started() { started_ = true; }
  // Writes the --profile file, whole or not at all (exit 6 when it cannot); `failure` is the error
  // that ended the run, "" for none. At most once; nothing without --profile.
  void save(const std::string& failure);
  // --repeat N: the --timings line's compute and collectives become these medians of the warm
  // runs (2..N), and it says how many runs there were.
  void set_warm(const WarmSteps& warm) { warm_ = warm; }
  // The --timings line on stderr, when asked for.
  void print_timings(std::uint64_t flops, std::uint64_t input_bytes) const;

 private:
  bool timings_;
  std::unique_ptr<OutputFile> file_;
  std::unique_ptr<Profile> profile_;
  const Trace* trace_ = nullptr;
  bool started_ = false;
  std::optional<WarmSteps> warm_;
};

}  // namespace meshrun
