#include "io/mpi/mpi_engine.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "io/mpi/job_messages.hpp"
#include "support/errors.hpp"
#include "support/exit_code.hpp"

namespace meshrun {

namespace {
constexpr auto kKeepalive = std::chrono::seconds(5);
}  // namespace

Keepalive::Keepalive(MpiJob& job, Step step)
    : thread_([&job, step](std::stop_token stop) {
#if defined(__linux__)
        // Named for top -H and gdb (and the hosts' fault test's cue for rank 0's phase).
        pthread_setname_np(pthread_self(), step == Step::kStart ? "meshrun-eval" : "meshrun-after");
#endif
        const std::string alive = step == Step::kStart ? StartMessage{.alive = true}.encode()
                                                       : EndMessage{.alive = true}.encode();
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        while (true) {
          cv.wait_for(lock, stop, kKeepalive, [] { return false; });
          if (stop.stop_requested()) return;
          try {
            job.from_root(step, alive);
          } catch (...) {  // a peer gone: its own wait, or mpirun, reports it
            return;
          }
        }
      }) {
}

void Keepalive::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

RootEngine::RootEngine(MpiJob& job, const MeshShape& mesh, const MeshOptions& options, Trace& trace,
                       bool profiling)
    : job_(job), mesh_(mesh), options_(options), trace_(trace), profiling_(profiling) {
  trace_.calls = 0;  // a program's run: every shard_map call of it is recorded
  keepalive_.emplace(job_, Step::kStart);
}

std::vector<Tensor> RootEngine::shard_map(const ShardMapCall& call,
                                          const std::vector<TensorRef>& global) {
  keepalive_.reset();  // joined: {key} follows its last {alive}
  from_root(job_, StartMessage{.key = call.key});
  in_call_ = true;
  called_ = true;
  result_ = mpi_shard_map(job_, mesh_, call.body, call.in, call.out, global, options_, &trace_,
                          profiling_);
  in_call_ = false;
  keepalive_.emplace(job_, Step::kStart);  // what follows the call, up to the next or the end
  return std::move(result_.outputs);
}

void RootEngine::failed(int code) {
  keepalive_.reset();
  if (in_call_) return;
  from_root(job_, StartMessage{.code = code});
}

const MpiShardMapResult& RootEngine::ended() {
  keepalive_.reset();
  from_root(job_, StartMessage{});  // no key: no more calls
  if (!called_) {
    result_.entered.assign(static_cast<std::size_t>(mesh_devices(mesh_)), 0);
    result_.unfired = options_.injections;
  }
  keepalive_.emplace(job_, Step::kEnd);  // the grading
  return result_;
}

void run_share(MpiJob& job, const ProgramDef& program, const MeshShape& mesh,
               const MeshOptions& options, bool profiling) {
  while (true) {
    StartMessage start{.alive = true};
    while (start.alive) start = from_root(job, StartMessage{});
    if (start.code != 0) throw ExitWith(start.code);
    if (start.key.empty()) return;
    const ShardMapCall call = program.computation->call(program, start.key);
    mpi_shard_map(job, mesh, call.body, call.in, call.out, {}, options, nullptr, profiling);
  }
}

}  // namespace meshrun
