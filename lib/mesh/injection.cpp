#include "mesh/injection.hpp"

#include "collectives/futex.hpp"
#include "mesh/mesh_impl.hpp"

#include <charconv>

#include "support/errors.hpp"

namespace meshrun {

namespace {
template <class T>
bool parse_whole(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

Injection parse_injection(const std::string& text, const std::string& flag) {
  const auto colon = text.find(':'), at = text.find('@');
  Injection inj{Injection::Kind::kFail, 0, 0};
  const std::string kind = text.substr(0, colon);
  bool ok = colon != std::string::npos && at != std::string::npos && at > colon;
  if (ok) {
    if (kind == "fail") {
      inj.kind = Injection::Kind::kFail;
    } else if (kind == "stall") {
      inj.kind = Injection::Kind::kStall;
    } else if (kind == "internal") {
      inj.kind = Injection::Kind::kInternal;
    } else {
      ok = false;
    }
  }
  ok = ok && parse_whole(std::string_view(text).substr(colon + 1, at - colon - 1), inj.device) &&
       parse_whole(std::string_view(text).substr(at + 1), inj.at) && inj.device >= 0 && inj.at >= 1;
  if (!ok) {
    throw InputError(
        flag,
        "'" + text + "' is not fail:DEVICE@K, stall:DEVICE@K or internal:DEVICE@K (K from 1)");
  }
  return inj;
}

std::string injection_str(const Injection& inj) {
  const char* kind = inj.kind == Injection::Kind::kFail    ? "fail:"
                     : inj.kind == Injection::Kind::kStall ? "stall:"
                                                           : "internal:";
  return kind + std::to_string(inj.device) + "@" + std::to_string(inj.at);
}

std::string unfired_message(const Injection& inj, std::uint64_t entered) {
  return injection_str(inj) + " never fired: device " + std::to_string(inj.device) +
         " entered only " + std::to_string(entered) + " collective(s)";
}

// ---- the mesh side: a device reaching the collective an injection names -------------------------

void Mesh::Impl::inject(int index, CollectiveOp op, std::uint64_t count, const std::string& group,
                        std::uint64_t seq, const std::stop_token& stop) {
  for (std::size_t i = 0; i < options.injections.size(); ++i) {
    const Injection& inj = options.injections[i];
    if (inj.device != index || inj.at != count) continue;
    fired[i] = 1;
    const std::string spec = std::to_string(index) + "@" + std::to_string(count);
    const std::string at = collective_label(op, seq, group);
    if (inj.kind == Injection::Kind::kFail) {
      throw std::runtime_error("injected failure (--inject fail:" + spec + ")");
    }
    if (inj.kind == Injection::Kind::kInternal) {
      throw InternalError("internal error: injected at device " + std::to_string(index) + "'s " +
                          at + " (--inject internal:" + spec + ")");
    }
    // Stall: never arrive. Sleep in short slices until the mesh aborts (a peer timed out and
    // reported us) or is destroyed. Bounded: by the timeout plus a second while some device may
    // still wait for us (its own timeout report, naming us, should win), by the timeout alone
    // once every other device has stalled too or finished -- nobody else will report then (known
    // only when this process runs every device of the mesh).
    std::string& note = stalled_at[static_cast<std::size_t>(index - first)];
    note = at + " (--inject stall:" + spec + ")";
    stalling.fetch_add(1, std::memory_order_acq_rel);
    const auto start = std::chrono::steady_clock::now();
    auto released = [&] {
      return aborted.load(std::memory_order_acquire) || stop.stop_requested() ||
             stopping.load(std::memory_order_acquire);
    };
    for (;;) {
      const std::uint32_t seen = failures.load(std::memory_order_acquire);  // before the checks
      if (released()) break;
      const bool alone =
          local == size && stalling.load(std::memory_order_acquire) +
                                   static_cast<int>(done.load(std::memory_order_acquire)) ==
                               size;
      const auto limit =
          start + options.timeout + (alone ? std::chrono::milliseconds(0) : kStallGrace);
      const auto now = std::chrono::steady_clock::now();
      if (now >= limit) break;
      futex_wait_for(failures, seen, std::min<std::chrono::nanoseconds>(limit - now, kStallSlice));
    }
    stalling.fetch_sub(1, std::memory_order_acq_rel);
    const std::string what = "device " + std::to_string(index) + " stalled at " + note;
    if (released()) throw AbortedError(what);  // the peers' report (or ~Mesh) is the cause
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count();
    throw CollectiveError(what + " and never arrived; gave up after " + std::to_string(ms) + " ms");
  }
}

}  // namespace meshrun
