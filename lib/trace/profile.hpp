// Profile: when the run's phases and every device's collectives happened, on one steady clock --
// what --timings sums up and --profile draws as a timeline. Recorded by the runtime, like the
// Trace that points to it (Trace::profile); nothing is timed when that pointer is null.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"

namespace meshrun {

using ProfileClock = std::chrono::steady_clock;

// One collective as one device made it: from the call (before the --inject hook, so an injected
// stall shows as a collective that never arrived) to its return or throw.
struct CollectiveSpan {
  std::string op;         // psum, pmean, ...
  std::string group;      // "data", "(data,model)"
  std::uint64_t seq = 0;  // the group's sequence number, as the trace records it
  std::size_t bytes = 0;  // this device's operand
  ProfileClock::time_point start{}, end{};
  SyncMarks marks;      // arrived / all arrived; default (zero) where the engine did not mark
  bool failed = false;  // it threw (a timeout, an abort, an injected failure)
};

struct DeviceProfile {
  ProfileClock::time_point body_start{}, body_end{};
  std::vector<CollectiveSpan> collectives;  // in the order the device made them
};

// A phase of the main thread: read, split, run, assemble, write.
struct PhaseSpan {
  std::string name;
  ProfileClock::time_point start{}, end{};
};

struct Profile {
  ProfileClock::time_point origin = ProfileClock::now();  // time 0 of the timeline
  std::vector<PhaseSpan> phases;
  std::vector<DeviceProfile> devices;  // [device]; each device writes only its own
};

// Records [construction, destruction) as a phase of `profile` (nothing when it is null) -- also
// when the phase ends by an exception, which is when a timeline is wanted most.
class ProfilePhase {
 public:
  ProfilePhase(Profile* profile, const char* name)
      : profile_(profile),
        name_(name),
        start_(profile ? ProfileClock::now() : ProfileClock::time_point{}) {}
  ~ProfilePhase() {
    if (profile_) profile_->phases.push_back({name_, start_, ProfileClock::now()});
  }
  ProfilePhase(const ProfilePhase&) = delete;
  ProfilePhase& operator=(const ProfilePhase&) = delete;

 private:
  Profile* profile_;
  const char* name_;
  ProfileClock::time_point start_;
};

// The --timings sums, in seconds: main-thread phases by name, and on the devices the compute
// (body minus collectives) of the slowest device and that device's time in collectives.
struct TimingSums {
  double read_s = 0, shard_s = 0, run_s = 0, write_s = 0, total_s = 0;
  double compute_s = 0, collectives_s = 0;
};
TimingSums sum_timings(const Profile& profile);

}  // namespace meshrun
