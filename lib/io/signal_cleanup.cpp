#include "io/signal_cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace meshrun {
namespace {

// A slot: kFree, kBusy while its owner fills it, kLive once the handler may read it.
enum : int { kFree = 0, kBusy = 1, kLive = 2 };

struct TempSlot {
  std::atomic<int> state{kFree};
  char path[4096];
};
struct MapSlot {
  std::atomic<int> state{kFree};
  std::uintptr_t begin = 0, end = 0;
  char message[1024];
};

constexpr int kTempSlots = 32;
constexpr int kMapSlots = 64;
// Made on first use and never freed (the handler may read them at any moment): 192 KiB a static
// array would have every run zero at start-up, 48 page faults (issue 9's start-up row).
struct Tables {
  TempSlot temp[kTempSlots];
  MapSlot maps[kMapSlots];
};
std::atomic<Tables*> tables{nullptr};

Tables& the_tables() {
  static Tables* const made = [] {
    auto* t = new Tables();
    tables.store(t, std::memory_order_release);
    return t;
  }();
  return *made;
}
std::atomic<int> input_error_code{2};

constexpr int kTerminating[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGXCPU};

void unlink_temp_files() {
  Tables* t = tables.load(std::memory_order_acquire);
  if (t == nullptr) return;
  for (TempSlot& s : t->temp) {
    if (s.state.load(std::memory_order_acquire) == kLive) ::unlink(s.path);
  }
}

// From a signal handler: write(2) only, no allocation (not support's write_stderr).
void write_stderr_from_handler(const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::atomic<bool> reporting{false};

void on_signal(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  unlink_temp_files();
  if (sig == SIGBUS && info != nullptr && info->si_code > 0) {
    const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
    Tables* t = tables.load(std::memory_order_acquire);
    for (int i = 0; t != nullptr && i < kMapSlots; ++i) {
      const MapSlot& s = t->maps[i];
      if (s.state.load(std::memory_order_acquire) == kLive && at >= s.begin && at < s.end) {
        // Several devices may fault at once: one says it and exits, the others wait for that.
        if (reporting.exchange(true)) {
          for (;;) ::pause();
        }
        write_stderr_from_handler("meshrun: ");
        write_stderr_from_handler(s.message);
        write_stderr_from_handler("\n");
        ::_exit(input_error_code.load(std::memory_order_relaxed));
      }
    }
  }
  // Die of the signal, as if no handler were there: the default action back, and the signal
  // raised here delivered as soon as this handler returns (a SIGBUS from a faulting access recurs
  // by itself when the access is retried; one sent with kill(2), si_code <= 0, is raised again).
  ::signal(sig, SIG_DFL);
  if (sig != SIGBUS || info == nullptr || info->si_code <= 0) ::raise(sig);
  errno = saved;
}

// Installs the handler wherever another one replaced it since (OpenMPI's MPI_Init installs its
// own for SIGBUS, a test framework its own around each test): checked at every registration,
// which is rare (a file replaced, an input mapped). A signal ignored at start (nohup, a shell's
// background job) stays ignored.
void install_handlers() {
  struct sigaction act {};
  act.sa_sigaction = on_signal;
  act.sa_flags = SA_SIGINFO | SA_RESTART;  // no SA_RESETHAND: faults may come in several threads
  sigemptyset(&act.sa_mask);
  const auto ensure = [&](int sig) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) return;
    if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == on_signal) return;
    if ((old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler == SIG_IGN) return;
    ::sigaction(sig, &act, nullptr);
  };
  for (const int sig : kTerminating) ensure(sig);
  ensure(SIGBUS);
}

template <typename Slot>
int claim(Slot* slots) {
  constexpr int N = std::is_same_v<Slot, TempSlot> ? kTempSlots : kMapSlots;
  for (int i = 0; i < N; ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kBusy, std::memory_order_acquire))
      return i;
  }
  return -1;  // all in use: this one goes unguarded (a best effort, as every cleanup is)
}

void copy_text(char* to, std::size_t capacity, const std::string& from) {
  const std::size_t n = std::min(from.size(), capacity - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

}  // namespace

TempName::TempName(const std::string& path) {
  if (path.size() >= sizeof(TempSlot::path)) return;
  install_handlers();
  TempSlot* slots = the_tables().temp;
  slot_ = claim(slots);
  if (slot_ < 0) return;
  copy_text(slots[slot_].path, sizeof(TempSlot::path), path);
  slots[slot_].state.store(kLive, std::memory_order_release);
}

TempName::~TempName() {
  if (slot_ >= 0) the_tables().temp[slot_].state.store(kFree, std::memory_order_release);
}

GuardedMapping::GuardedMapping(const void* begin, std::size_t size, const std::string& message) {
  install_handlers();
  MapSlot* slots = the_tables().maps;
  slot_ = claim(slots);
  if (slot_ < 0) return;
  MapSlot& s = slots[slot_];
  s.begin = reinterpret_cast<std::uintptr_t>(begin);
  s.end = s.begin + size;
  copy_text(s.message, sizeof(MapSlot::message), message);
  s.state.store(kLive, std::memory_order_release);
}

GuardedMapping::~GuardedMapping() {
  if (slot_ >= 0) the_tables().maps[slot_].state.store(kFree, std::memory_order_release);
}

void set_input_error_exit_code(int code) {
  input_error_code.store(code, std::memory_order_relaxed);
}

}  // namespace meshrun
