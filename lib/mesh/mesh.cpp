#include "mesh/mesh.hpp"

#include <atomic>
#include <exception>
#include <thread>

#include "collectives/futex.hpp"
#include "collectives/in_process.hpp"
#include "support/errors.hpp"

namespace meshrun {

namespace {
constexpr auto kIdleSlice = std::chrono::milliseconds(100);
constexpr auto kStallSlice = std::chrono::milliseconds(1);
}  // namespace

struct Mesh::Impl {
  int size;
  std::string axis;
  MeshOptions options;

  // job_: bumped by run() (release, after body_ and group_ are set); device threads sleep on it.
  alignas(64) std::atomic<std::uint32_t> job{0};
  // done_: devices that finished the current job (acq_rel: publishes their errors to run()).
  alignas(64) std::atomic<std::uint32_t> done{0};
  std::atomic<bool> stopping{false};
  // first_error: the device whose error run() rethrows -- the first to fail, by time.
  std::atomic<int> first_error{-1};

  const std::function<void(Device&)>* body = nullptr;
  Trace* trace = nullptr;  // set with body by run()
  std::unique_ptr<InProcessGroup> group;
  std::vector<std::exception_ptr> errors;
  std::vector<std::jthread> threads;  // last member: joined first, before the state above dies

  void device_loop(int index, std::stop_token stop);
  void run_job(int index, const std::stop_token& stop);
  void inject(int index, CollectiveOp op, std::uint64_t seq, const std::stop_token& stop);
  void record(int index, std::exception_ptr error);
};

void Mesh::Impl::device_loop(int index, std::stop_token stop) {
  std::uint32_t seen = 0;
  for (;;) {
    std::uint32_t j = job.load(std::memory_order_acquire);
    while (j == seen) {
      if (stop.stop_requested() || stopping.load(std::memory_order_acquire)) return;
      futex_wait_for(job, seen, kIdleSlice);
      j = job.load(std::memory_order_acquire);
    }
    if (stopping.load(std::memory_order_acquire)) return;
    seen = j;
    run_job(index, stop);
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<std::uint32_t>(size))
      futex_wake_all(done);
  }
}

void Mesh::Impl::run_job(int index, const std::stop_token& stop) {
  Device device(index, axis, group->member(index),
                [this, &stop](int d, CollectiveOp op, std::uint64_t seq) { inject(d, op, seq, stop); },
                trace ? &trace->collectives[static_cast<std::size_t>(index)] : nullptr);
  try {
    (*body)(device);
  } catch (const CollectiveError&) {
    record(index, std::current_exception());
  } catch (const InternalError&) {
    record(index, std::current_exception());
  } catch (const std::exception& e) {
    record(index, std::make_exception_ptr(DeviceError(
                      index, "device " + std::to_string(index) + " failed " +
                                 (device.where().rfind("before", 0) == 0 ? "" : "at ") +
                                 device.where() + ": " + e.what())));
  } catch (...) {
    record(index, std::make_exception_ptr(DeviceError(
                      index, "device " + std::to_string(index) + " failed at " + device.where() +
                                 ": unknown exception")));
  }
}

void Mesh::Impl::record(int index, std::exception_ptr error) {
  errors[static_cast<std::size_t>(index)] = std::move(error);
  int none = -1;
  first_error.compare_exchange_strong(none, index, std::memory_order_acq_rel);
  group->abort();  // release every device waiting in a collective
}

void Mesh::Impl::inject(int index, CollectiveOp op, std::uint64_t seq, const std::stop_token& stop) {
  for (const Injection& inj : options.injections) {
    if (inj.device != index || inj.at != seq) continue;
    const std::string spec = std::to_string(index) + "@" + std::to_string(seq);
    if (inj.kind == Injection::Kind::kFail) {
      throw std::runtime_error("injected failure (--inject fail:" + spec + ")");
    }
    // Stall: never arrive. Sleep in short slices until the mesh aborts (a peer timed out) or is
    // destroyed; bounded by the timeout plus a second in case nobody is waiting for us.
    const auto limit = std::chrono::steady_clock::now() + options.timeout + std::chrono::seconds(1);
    while (!group->aborted() && !stop.stop_requested() && !stopping.load() &&
           std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(kStallSlice);
    }
    throw CollectiveError("device " + std::to_string(index) + " stalled at " + op_name(op) + " #" +
                          std::to_string(seq) + " on '" + axis + "' (--inject stall:" + spec + ")");
  }
}

Mesh::Mesh(int size, std::string axis, MeshOptions options) : impl_(std::make_unique<Impl>()) {
  if (size < 1) throw InputError("--devices", "must be at least 1, got " + std::to_string(size));
  impl_->size = size;
  impl_->axis = std::move(axis);
  impl_->options = std::move(options);
  for (const Injection& inj : impl_->options.injections) {
    if (inj.device >= size) {
      throw InputError("--inject", "device " + std::to_string(inj.device) + " does not exist on a mesh of " +
                                       std::to_string(size) + " devices");
    }
  }
  impl_->threads.reserve(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) {
    impl_->threads.emplace_back([impl = impl_.get(), i](std::stop_token st) { impl->device_loop(i, st); });
  }
}

Mesh::~Mesh() {
  impl_->stopping.store(true, std::memory_order_release);
  if (impl_->group) impl_->group->abort();
  for (auto& t : impl_->threads) t.request_stop();
  impl_->job.fetch_add(1, std::memory_order_release);
  futex_wake_all(impl_->job);
  impl_->threads.clear();  // joins
}

int Mesh::size() const { return impl_->size; }
const std::string& Mesh::axis() const { return impl_->axis; }

void Mesh::run(const std::function<void(Device&)>& body, Trace* trace) {
  Impl& m = *impl_;
  if (trace) trace->collectives.assign(static_cast<std::size_t>(m.size), {});
  m.trace = trace;
  GroupOptions go;
  go.timeout = m.options.timeout;
  m.group = std::make_unique<InProcessGroup>(m.size, m.axis, go);
  m.errors.assign(static_cast<std::size_t>(m.size), nullptr);
  m.first_error.store(-1, std::memory_order_relaxed);
  m.done.store(0, std::memory_order_relaxed);
  m.body = &body;
  m.job.fetch_add(1, std::memory_order_release);
  futex_wake_all(m.job);
  for (;;) {
    const std::uint32_t d = m.done.load(std::memory_order_acquire);
    if (d == static_cast<std::uint32_t>(m.size)) break;
    futex_wait_for(m.done, d, kIdleSlice);
  }
  m.body = nullptr;
  m.trace = nullptr;
  const int first = m.first_error.load(std::memory_order_acquire);
  if (first >= 0) std::rethrow_exception(m.errors[static_cast<std::size_t>(first)]);
}

}  // namespace meshrun
