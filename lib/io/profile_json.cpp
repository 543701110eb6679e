#include "io/profile_json.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "collectives/communicator.hpp"

namespace meshrun {

namespace {

using json = nlohmann::ordered_json;  // keys in the order written, as a reader expects them
using TimePoint = ProfileClock::time_point;

constexpr int kPid = 1;
constexpr int kMainTid = 0;  // devices are tracks 1..n (device d on d + 1)

// Microseconds, from whole nanoseconds (prints 129.11, not 129.10999999999999).
double micros(ProfileClock::duration d) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) /
         1000.0;
}

class Events {
 public:
  explicit Events(TimePoint origin) : origin_(origin) {}
  void span(int tid, const std::string& name, const char* cat, TimePoint start, TimePoint end,
            json args = json::object()) {
    events_.push_back({{"name", name},
                       {"cat", cat},
                       {"ph", "X"},
                       {"pid", kPid},
                       {"tid", tid},
                       {"ts", micros(start - origin_)},
                       {"dur", micros(std::max(end, start) - start)},
                       {"args", std::move(args)}});
  }
  void meta(int tid, const char* what, json args) {
    events_.push_back(
        {{"name", what}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", std::move(args)}});
  }
  void instant(int tid, const std::string& name, TimePoint at, json args) {
    events_.push_back({{"name", name},
                       {"ph", "i"},
                       {"s", "g"},
                       {"pid", kPid},
                       {"tid", tid},
                       {"ts", micros(at - origin_)},
                       {"args", std::move(args)}});
  }
  json take() { return std::move(events_); }

 private:
  TimePoint origin_;
  json events_ = json::array();
};

// A device's track: its body, the compute between its collectives, each collective with its wait
// (arrived .. the last member arrived) and its transfer (then .. return) where the engine marked
// them.
void device_track(Events& ev, int tid, const DeviceProfile& d) {
  ev.span(tid, "body", "device", d.body_start, d.body_end);
  TimePoint cursor = d.body_start;
  for (const CollectiveSpan& c : d.collectives) {
    if (c.start > cursor) ev.span(tid, "compute", "compute", cursor, c.start);
    json args = {{"op", c.op}, {"group", c.group}, {"seq", c.seq}, {"bytes", c.bytes}};
    const bool arrived = c.marks.arrived != TimePoint{};
    const bool all_arrived = c.marks.complete != TimePoint{};
    // Known when the engine marked the arrival; a failed call it never marked never arrived.
    if (arrived || c.failed) args["arrived"] = arrived;
    if (c.failed) args["failed"] = true;
    ev.span(tid, collective_label(c.op, c.seq) + " '" + c.group + "'", "collective", c.start, c.end,
            std::move(args));
    if (arrived)
      ev.span(tid, "wait", "wait", c.marks.arrived, all_arrived ? c.marks.complete : c.end);
    if (all_arrived) ev.span(tid, "transfer", "transfer", c.marks.complete, c.end);
    cursor = c.end;
    if (c.failed) return;  // the rest of the body is the error on its way out, not compute
  }
  if (d.body_end > cursor) ev.span(tid, "compute", "compute", cursor, d.body_end);
}

}  // namespace

std::string device_track_name(const MeshShape& mesh, int device) {
  const std::vector<int> coords = mesh_coords(mesh, device);
  std::string name = "device " + std::to_string(device) + " (";
  for (std::size_t a = 0; a < mesh.size(); ++a)
    name += (a ? ", " : "") + mesh[a].first + "=" + std::to_string(coords[a]);
  return name + ")";
}

std::string trace_event_json(const Trace& trace, const Profile& profile,
                             const std::string& failure) {
  Events ev(profile.origin);
  ev.meta(kMainTid, "process_name", {{"name", "meshrun " + trace.program}});
  ev.meta(kMainTid, "thread_name", {{"name", "main"}});
  ev.meta(kMainTid, "thread_sort_index", {{"sort_index", kMainTid}});
  TimePoint last = profile.origin;
  for (const PhaseSpan& p : profile.phases) {
    ev.span(kMainTid, p.name, "phase", p.start, p.end);
    last = std::max(last, p.end);
  }
  for (std::size_t d = 0; d < profile.devices.size(); ++d) {
    const int tid = static_cast<int>(d) + 1;
    ev.meta(tid, "thread_name", {{"name", device_track_name(trace.mesh, static_cast<int>(d))}});
    ev.meta(tid, "thread_sort_index", {{"sort_index", tid}});
    device_track(ev, tid, profile.devices[d]);
    last = std::max(last, profile.devices[d].body_end);
  }
  json other = {{"program", trace.program}, {"mesh", mesh_str(trace.mesh)}};
  if (!failure.empty()) {
    ev.instant(kMainTid, "failed", last, {{"error", failure}});
    other["failure"] = failure;
  }
  const json doc = {{"traceEvents", ev.take()}, {"displayTimeUnit", "ms"}, {"otherData", other}};
  // Invalid UTF-8 (a file name in an error) is replaced, never a reason to lose the timeline.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string timings_json(const TimingSums& t, std::uint64_t flops, std::uint64_t input_bytes,
                         int repeat) {
  auto per_second = [](double amount, double seconds) {
    return seconds > 0 ? amount / seconds : 0.0;
  };
  json j = {{"read_s", t.read_s},
            {"shard_s", t.shard_s},
            {"compute_s", t.compute_s},
            {"collectives_s", t.collectives_s},
            {"write_s", t.write_s},
            {"total_s", t.total_s},
            {"flops", flops},
            {"gflops", per_second(static_cast<double>(flops), t.compute_s) / 1e9},
            {"read_MBps", per_second(static_cast<double>(input_bytes), t.read_s) / 1e6}};
  if (repeat > 1) j["repeat"] = repeat;
  return j.dump();
}

}  // namespace meshrun
