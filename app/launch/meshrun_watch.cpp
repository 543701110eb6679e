// meshrun-watch: the liveness watch of a job run by meshrun-mpirun (docs/hosts.md, issue 51). Two
// halves, one TCP connection per host, before and beside MPI (MPI stays the data's transport):
//
//   meshrun-watch serve DIR SECONDS
//     On the launcher's host (rank 0's). Listens on a TCP port (written to DIR/port), sends every
//     watch a heartbeat each half second and appends to DIR/events:
//       rank R N HOST MOMENT   a rank's start-up note (support/startup_point.hpp)
//       lost HOST              a watch silent for SECONDS, or gone without saying "bye"
//       daemon HOST SIGNAL     the daemon a watch ran was killed by SIGNAL (its watch said so)
//     Ends when its parent (the launcher) does, or on SIGTERM.
//
//   meshrun-watch watch ID SECONDS PORT ADDR[,ADDR...] CMD...
//     On every other host, as mpirun's launch agent (--mca orte_launch_agent): connects to the
//     server, runs CMD (orted) in a session of its own, and sends a heartbeat each half second.
//     When the server's heartbeat has not come for SECONDS (the launcher's host, or the link to
//     it, is gone), every process of that session -- orted and its ranks -- is killed and the
//     watch exits 3; when CMD ends, so do the leftovers of its session, and the watch with CMD's
//     code (killed by a signal: it tells the server "died SIGNAL" first). A server it cannot reach
//     within SECONDS: CMD is not run, exit 3. CMD's --daemonize is dropped (orted would leave the
//     session).
//
//   meshrun-watch map MPIRUN-WORDS...
//     For meshrun-mpirun: the host of each rank as mpirun will place them ("RANK HOST" a line,
//     support/rank_map.hpp), from the words it gives mpirun; exit 1 (nothing printed) when that
//     cannot be computed.
//
// No MPI: it must start where MPI has not (and may never).
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <csignal>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/end_with_parent.hpp"
#include "support/rank_map.hpp"
#include "support/startup_point.hpp"

extern char** environ;

namespace {

using meshrun::connect_numeric;
using meshrun::end_with_parent;

using Clock = std::chrono::steady_clock;
constexpr auto kBeat = std::chrono::milliseconds(500);

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

void append(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
}

bool send_all(int fd, const std::string& s) {
  std::size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;  // a full buffer: a late beat
    at += static_cast<std::size_t>(n);
  }
  return true;
}

// ---- serve ----

struct Peer {
  int fd = -1;
  std::string buf = "";
  Clock::time_point last = Clock::now();
  bool watch = false, bye = false;
  std::string host = "";
};

volatile sig_atomic_t g_stop = 0;
void on_term(int) { g_stop = 1; }

int serve(const std::string& dir, double secs) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int off = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {  // no IPv6 here: IPv4 alone
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      std::perror("meshrun-watch: bind");
      return 4;
    }
  }
  sockaddr_storage got{};
  socklen_t len = sizeof got;
  if (::listen(fd, 256) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len) != 0) {
    std::perror("meshrun-watch: listen");
    return 4;
  }
  const int port = got.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&got)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&got)->sin_port);
  {
    std::ofstream(dir + "/port.tmp") << port << '\n';
    std::rename((dir + "/port.tmp").c_str(), (dir + "/port").c_str());
  }
  const std::string events = dir + "/events";
  const char* id_env = std::getenv("MESHRUN_WATCH_ID");
  const std::string id = id_env ? id_env : "";
  std::signal(SIGTERM, on_term);
  std::signal(SIGPIPE, SIG_IGN);
  const pid_t parent = ::getppid();
  std::vector<Peer> peers;
  auto beat_at = Clock::now();
  while (!g_stop && ::getppid() == parent) {
    std::vector<pollfd> fds{{fd, POLLIN, 0}};
    for (const Peer& p : peers) fds.push_back({p.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    if (fds[0].revents & POLLIN) {
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c >= 0) peers.push_back(Peer{.fd = c});
    }
    for (std::size_t i = 0; i < peers.size(); ++i) {
      Peer& p = peers[i];
      bool closed = false;
      if (i + 1 < fds.size() && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
        char b[512];
        const ssize_t n = ::recv(p.fd, b, sizeof b, 0);
        if (n > 0) {
          p.buf.append(b, static_cast<std::size_t>(n));
          p.last = Clock::now();
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          closed = true;
        }
      }
      for (std::size_t nl; (nl = p.buf.find('\n')) != std::string::npos;) {
        const std::string line = p.buf.substr(0, nl);
        p.buf.erase(0, nl + 1);
        if (line.rfind("watch " + id + " ", 0) == 0) {
          p.watch = true;
          p.host = line.substr(7 + id.size());
        } else if (line.rfind("rank " + id + " ", 0) == 0) {
          append(events, "rank " + line.substr(6 + id.size()));
        } else if (line.rfind("died ", 0) == 0 && p.watch) {
          append(events, "daemon " + p.host + " " + line.substr(5));
        } else if (line == "bye") {
          p.bye = true;
        } else if (line != ".") {
          closed = true;  // not one of ours
        }
      }
      if (!closed && p.watch && seconds_since(p.last) > secs) closed = true;
      if (!closed && !p.watch && seconds_since(p.last) > secs) closed = true;  // a silent stranger
      if (closed) {
        if (p.watch && !p.bye) append(events, "lost " + p.host);
        ::close(p.fd);
        p.fd = -1;
      }
    }
    std::erase_if(peers, [](const Peer& p) { return p.fd < 0; });
    if (Clock::now() >= beat_at) {
      for (Peer& p : peers)
        if (p.watch) send_all(p.fd, ".\n");
      beat_at = Clock::now() + kBeat;
    }
  }
  return 0;
}

// ---- watch ----

// Every process whose session is `sid` gets `sig`; how many there were.
int signal_session(pid_t sid, int sig) {
  int found = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    // read(2), not a stream: a process that ends meanwhile fails the read with ESRCH, which
    // libstdc++'s filebuf throws.
    const int sf = ::open((std::string("/proc/") + e->d_name + "/stat").c_str(), O_RDONLY);
    if (sf < 0) continue;
    char raw[1024];
    const ssize_t got = ::read(sf, raw, sizeof raw - 1);
    ::close(sf);
    if (got <= 0) continue;
    const std::string stat(raw, static_cast<std::size_t>(got));
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0, session = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &session) !=
        4)
      continue;
    if (session != sid || state == 'Z') continue;
    ++found;
    ::kill(static_cast<pid_t>(pid), sig);
  }
  ::closedir(d);
  return found;
}

void kill_session(pid_t sid) {
  for (int i = 0; i < 50 && signal_session(sid, SIGKILL) > 0; ++i) ::usleep(20000);
}

// A connection to one of `addrs` (comma-separated numeric addresses), within `secs`; -1 if none.
int connect_any(const std::string& addrs, int port, double secs) {
  const auto start = Clock::now();
  while (seconds_since(start) < secs) {
    std::size_t from = 0;
    while (from <= addrs.size()) {
      std::size_t comma = addrs.find(',', from);
      if (comma == std::string::npos) comma = addrs.size();
      const std::string a = addrs.substr(from, comma - from);
      from = comma + 1;
      const int fd = connect_numeric(a, port, 1000);
      if (fd >= 0) return fd;
    }
    ::usleep(200000);
  }
  return -1;
}

int watch(const std::string& id, double secs, int port, const std::string& addrs, char** cmd) {
  std::signal(SIGPIPE, SIG_IGN);
  const std::string host = host_name();
  const int fd = connect_any(addrs, port, secs);
  if (fd < 0) {
    std::fprintf(stderr,
                 "meshrun-watch: %s: cannot reach the launcher's host (%s, port %d) within %g s: "
                 "the daemon was not started\n",
                 host.c_str(), addrs.c_str(), port, secs);
    return 3;
  }
  send_all(fd, "watch " + id + " " + host + "\n");
  const pid_t self = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) return 4;
  if (child == 0) {
    ::setsid();
    end_with_parent(self);  // orted ends with its watch, however the watch ends
    // orted stays in this session, a child of the watch: without its --daemonize (which mpirun's
    // rsh launch adds when it does not spawn a tree), which would leave it.
    std::vector<char*> words;
    for (char** w = cmd; *w != nullptr; ++w)
      if (std::strcmp(*w, "--daemonize") != 0) words.push_back(*w);
    words.push_back(nullptr);
    ::execvp(words[0], words.data());
    std::fprintf(stderr, "meshrun-watch: %s: cannot run %s: %s\n", host.c_str(), cmd[0],
                 std::strerror(errno));
    ::_exit(127);
  }
  auto last = Clock::now();
  auto beat_at = Clock::now();
  for (;;) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      // Killed (SIGKILL of orted): said, so that the launcher names this host whatever mpirun's
      // report of the teardown says (it may name only a rank elsewhere that lost its pipe).
      if (WIFSIGNALED(status)) send_all(fd, "died " + std::to_string(WTERMSIG(status)) + "\n");
      send_all(fd, "bye\n");
      kill_session(child);
      ::close(fd);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    pollfd p{fd, POLLIN, 0};
    bool lost = false;
    if (::poll(&p, 1, 100) == 1) {
      char b[256];
      const ssize_t n = ::recv(fd, b, sizeof b, MSG_DONTWAIT);
      if (n > 0) last = Clock::now();
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) lost = true;
    }
    if (lost || seconds_since(last) > secs) {
      kill_session(child);
      ::waitpid(child, &status, 0);
      std::fprintf(stderr,
                   "meshrun-watch: %s: the launcher's host stopped answering (%s): the job's "
                   "processes here were ended\n",
                   host.c_str(), lost ? "connection closed" : "no heartbeat");
      return 3;
    }
    if (Clock::now() >= beat_at) {
      send_all(fd, ".\n");
      beat_at = Clock::now() + kBeat;
    }
  }
}

// This host as a hostfile may name it: its hostname (and that up to the first dot), "localhost",
// and its addresses.
std::vector<std::string> local_names() {
  std::vector<std::string> names{host_name(), "localhost"};
  names.push_back(names[0].substr(0, names[0].find('.')));
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      char a[INET6_ADDRSTRLEN] = {};
      const int family = i->ifa_addr->sa_family;
      const void* raw =
          family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr)
          : family == AF_INET6
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr)
              : nullptr;
      if (raw != nullptr && ::inet_ntop(family, raw, a, sizeof a) != nullptr) names.emplace_back(a);
    }
    ::freeifaddrs(list);
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve" && argc == 4) return serve(argv[2], std::atof(argv[3]));
  if (mode == "map") {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    const auto hosts = meshrun::mpirun_rank_hosts({argv + 2, argv + argc}, env, local_names());
    if (!hosts) return 1;
    for (std::size_t r = 0; r < hosts->size(); ++r) std::printf("%zu %s\n", r, (*hosts)[r].c_str());
    return 0;
  }
  if (mode == "watch" && argc >= 7)
    return watch(argv[2], std::atof(argv[3]), std::atoi(argv[4]), argv[5], argv + 6);
  std::fprintf(stderr,
               "usage: meshrun-watch serve DIR SECONDS | watch ID SECONDS PORT ADDRS CMD... | map "
               "WORDS...\n");
  return 2;
}
