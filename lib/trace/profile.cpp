#include "trace/profile.hpp"

#include <algorithm>

namespace meshrun {

namespace {
double seconds(ProfileClock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

TimingSums sum_timings(const Profile& profile) {
  TimingSums t;
  ProfileClock::time_point last = profile.origin;
  for (const PhaseSpan& p : profile.phases) {
    const double s = seconds(p.end - p.start);
    if (p.name == "read") t.read_s += s;
    if (p.name == "split" || p.name == "assemble") t.shard_s += s;
    if (p.name == "run") t.run_s += s;
    if (p.name == "write") t.write_s += s;
    last = std::max(last, p.end);
  }
  t.total_s = seconds(last - profile.origin);
  // The slowest device by its own work: its body with the time inside collectives (waiting for
  // the others and moving data) taken out.
  for (const DeviceProfile& d : profile.devices) {
    double in_collectives = 0;
    for (const CollectiveSpan& c : d.collectives) in_collectives += seconds(c.end - c.start);
    const double compute = seconds(d.body_end - d.body_start) - in_collectives;
    if (compute > t.compute_s) {
      t.compute_s = compute;
      t.collectives_s = in_collectives;
    }
  }
  return t;
}

}  // namespace meshrun
