// What --profile and --timings write. The profile is Chrome's Trace Event Format (the JSON that
// jax.profiler and PyTorch's profiler produce; ui.perfetto.dev and chrome://tracing open it):
// complete events ("ph": "X", ts and dur in microseconds from the run's start), one track per
// device thread named by its mesh coordinates, the main thread's phases on track 0.
#pragma once

#include <cstdint>
#include <string>

#include "trace/profile.hpp"
#include "trace/trace.hpp"

namespace meshrun {

// The Trace Event JSON of a run. `failure`, when not empty, is the error that ended it: an
// instant event at the end, and "failure" in otherData.
std::string trace_event_json(const Trace& trace, const Profile& profile,
                             const std::string& failure);

// The --timings line (no newline): {"read_s", "shard_s", "compute_s", "collectives_s", "write_s",
// "total_s", "flops", "gflops", "read_MBps"}, then "repeat" when the program ran more than once.
std::string timings_json(const TimingSums& t, std::uint64_t flops, std::uint64_t input_bytes,
                         int repeat = 1);

// "device 3 (data=0, model=3)": a device's track name.
std::string device_track_name(const MeshShape& mesh, int device);

}  // namespace meshrun
