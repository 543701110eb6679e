#include "program/profile.hpp"

#include <exception>

#include "io/profile_json.hpp"
#include "support/exit_code.hpp"

namespace meshrun {

RunProfile::RunProfile(const std::string& file, bool timings, std::chrono::milliseconds open_wait)
    : timings_(timings) {
  if (!file.empty()) {
    file_ = std::make_unique<OutputFile>(file, "--profile", OutputFile::Mode::kAtomic, open_wait);
  }
  if (file_ || timings_) profile_ = std::make_unique<Profile>();
}

RunProfile::~RunProfile() {
  if (!file_ || !started_ || std::uncaught_exceptions() == 0) return;
  try {
    save("the run ended with an error after the devices finished (see stderr)");
  } catch (...) {  // the error already on its way out is the one to report
  }
}

Profile* RunProfile::attach(Trace& trace) {
  trace_ = &trace;
  trace.profile = profile_.get();
  return profile_.get();
}

void RunProfile::save(const std::string& failure) {
  if (!file_ || trace_ == nullptr) return;
  const std::unique_ptr<OutputFile> file = std::move(file_);  // once, even if the commit throws
  file->commit(trace_event_json(*trace_, *profile_, failure));
}

void RunProfile::print_timings(std::uint64_t flops, std::uint64_t input_bytes) const {
  if (!timings_) return;
  TimingSums t = sum_timings(*profile_);
  int repeat = 1;
  if (warm_) {
    t.compute_s = warm_->compute_s;
    t.collectives_s = warm_->collectives_s;
    repeat = warm_->repeat;
  }
  write_stderr_report(timings_json(t, flops, input_bytes, repeat) + "\n", "--timings");
}

}  // namespace meshrun
