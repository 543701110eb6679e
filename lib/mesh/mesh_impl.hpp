// The in-process mesh's state, shared by the files that implement it (not part of the API): the
// device threads and runs (mesh.cpp), --inject (injection.cpp) and the diagnosis of a failed run
// (failure_report.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "collectives/first_cause.hpp"
#include "mesh/group_provider.hpp"
#include "mesh/mesh.hpp"

namespace meshrun {

namespace mesh_detail {

constexpr auto kIdleSlice = std::chrono::milliseconds(100);
// A stalled device sleeps on `failures` in slices of at most this (a safety net: every abort
// it waits for bumps the word).
constexpr auto kStallSlice = std::chrono::milliseconds(50);
// How much longer than the timeout a stalled device waits while a peer may still be waiting for it.
constexpr auto kStallGrace = std::chrono::milliseconds(1000);

}  // namespace mesh_detail
using namespace mesh_detail;

struct Mesh::Impl {
  MeshShape shape;
  int size;   // devices on the mesh
  int first;  // the devices this process runs: first .. first + local - 1
  int local;
  std::string axis;   // the first axis' name
  std::string label;  // "'data'" or "('data', 'model')", for messages about the whole mesh
  MeshOptions options;

  // job_: bumped by run() (release, after body_ and group_ are set); device threads sleep on it.
  alignas(64) std::atomic<std::uint32_t> job{0};
  // done_: devices that finished the current job (acq_rel: publishes their errors to run()).
  alignas(64) std::atomic<std::uint32_t> done{0};
  // stopping: set once by ~Mesh (under state_mu); injected stalls and run() watch it.
  std::atomic<bool> stopping{false};
  // failures: bumped (release) by record() -- after the groups are aborted for a cause; after
  // `aborted` is set for a consequence, whose groups a cause aborts -- and by ~Mesh; the futex word
  // an injected stall sleeps on, so it wakes as soon as the mesh aborts and costs no CPU before.
  alignas(64) std::atomic<std::uint32_t> failures{0};
  // Which device's error run() rethrows (collectives/first_cause.hpp), by local index.
  FirstCause first_cause;

  // run() and ~Mesh agree through state_mu: at most one run at a time (a nested or concurrent
  // run is refused), and the destructor waits for a run in progress to return before it frees
  // anything. Not on the collective path: taken twice per run.
  std::mutex state_mu;
  std::condition_variable state_cv;
  bool running = false;  // guarded by state_mu

  // body: set by run() before it bumps job (release), cleared after every device is done; a
  // device woken with body == nullptr is being told to exit (see ~Mesh).
  std::atomic<const std::function<void(Device&)>*> body{nullptr};
  Trace* trace = nullptr;  // set with body by run()
  // The groups: made afresh by begin_run() for every run (an aborted group refuses every further
  // collective). Aborting the mesh aborts every group of every tuple, in every process.
  std::shared_ptr<GroupProvider> groups;
  // aborted: set (release) by record() and ~Mesh before they bump `failures`; injected stalls
  // watch it, since the group a stalled device was about to enter may not be the one that failed.
  std::atomic<bool> aborted{false};
  std::vector<std::exception_ptr> errors;
  // Per local device (all of these are indexed by index - first), written by its own thread during
  // a run and read by run() after it: the collective at which it began an injected stall ("" if it
  // did not), and how many collectives it entered.
  std::vector<std::string> stalled_at;
  std::vector<std::uint64_t> entered;
  // Per device, the collective it is in right now (CollectiveWhere; 0 outside any), stored by its
  // own thread; and, per device whose wait timed out, every device's value at that moment, read
  // before the mesh aborts the other groups (explain() follows the waits to their cause).
  std::unique_ptr<std::atomic<std::uint64_t>[]> in_collective;
  std::vector<std::vector<std::uint64_t>> waits_at_timeout;
  // Devices in an injected stall right now: when they and the finished devices are all there is,
  // nobody waits for the stalled ones to time out, so each stall ends at its own timeout.
  std::atomic<int> stalling{0};
  // Per injection: whether it fired during the last run (written by its device's thread only).
  std::vector<char> fired;
  std::vector<std::jthread> threads;  // last member: joined first, before the state above dies

  void device_loop(int index, const std::stop_token& stop);
  void run_job(int local_device, const std::stop_token& stop);
  // --inject at the device's `count`-th collective, which is `op` #seq in `group`.
  void inject(int index, CollectiveOp op, std::uint64_t count, const std::string& group,
              std::uint64_t seq, const std::stop_token& stop);
  void record(int local_device, std::exception_ptr error, bool consequence = false);
  // Aborts the groups everywhere with `reason`, and ends the injected stalls here.
  void abort_all(const std::string& reason);
  // The groups were aborted from another process: end the injected stalls here.
  void aborted_elsewhere();
  void start_missing_threads();
  std::exception_ptr explain(int failed) const;
};

}  // namespace meshrun
