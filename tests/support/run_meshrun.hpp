// Runs the built meshrun binary for the CLI tests: in the source directory (so case paths, and the
// messages naming them, are relative), stdin from a file, stdout and stderr captured, the exit
// code decoded. A run still going after kHang is killed and reported as hung, so a test never
// hangs with the program it tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace meshrun::testing {

inline const std::string kSource = MESHRUN_SOURCE_DIR;
inline const std::string kBinary = MESHRUN_BINARY;
inline constexpr auto kHang = std::chrono::seconds(60);

struct Result {
  int code = -1;
  std::string out, err;
  double seconds = 0;   // wall time of the process
  bool killed = false;  // still running after kHang
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The lines of `text`, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The names in `dir`, sorted: a temporary file left behind shows here.
inline std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A temp directory for the files a test writes, removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char dir[] = "/tmp/meshrun_test_files.XXXXXX";
    BOOST_REQUIRE(mkdtemp(dir) != nullptr);
    path = dir;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `text` to `name` inside the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name, std::ios::binary) << text;
    return path + "/" + name;
  }
  // The path of `name` inside the directory.
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// Where the child's stdout goes, for the tests of output that could not be written.
struct RunOptions {
  std::string stdin_path = "/dev/null";
  std::string stdout_path;          // "" captures it (Result::out); else this file, e.g. /dev/full
  bool stdout_append = false;       // stdout_path opened to append, as `>>` does (not emptied)
  std::string stderr_append;        // "" captures stderr (Result::err); else `2>> this file`
  bool stdout_closed = false;       // fd 1 closed, as `>&-` does
  bool stderr_closed = false;       // fd 2 closed, as `2>&-` does
  bool stdout_reader_gone = false;  // a pipe whose read end is already closed
  bool ignore_sigpipe = false;      // as `trap '' PIPE` does
  long file_size_limit = -1;        // RLIMIT_FSIZE in bytes, as `ulimit -f` does
  long address_space_limit = -1;    // RLIMIT_AS in bytes, as `ulimit -v` does
  long open_files_limit = -1;       // RLIMIT_NOFILE, as `ulimit -n` does
  // How long it may run before it is killed as hung (Result::killed).
  std::chrono::seconds hang = kHang;
  // What runs, with `args` after it: meshrun itself, or a launcher (mpirun) that starts it.
  std::vector<std::string> command{kBinary};
  // Run in the parent once the child started (it must return in bounded time): to act on the
  // running child, e.g. kill one of the processes it started.
  std::function<void(pid_t)> meanwhile;
};

inline Result run_with(const std::vector<std::string>& args, const RunOptions& o) {
  char dir[] = "/tmp/meshrun_test.XXXXXX";
  BOOST_REQUIRE(mkdtemp(dir) != nullptr);
  const std::string out_path = std::string(dir) + "/out", err_path = std::string(dir) + "/err";
  int gone[2] = {-1, -1};
  if (o.stdout_reader_gone) {
    BOOST_REQUIRE(pipe(gone) == 0);
    // The read end goes before the child exists: closed only after fork, a fast child could
    // write its whole output into the pipe while the parent still held it open (no EPIPE).
    close(gone[0]);
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in = open(o.stdin_path.c_str(), O_RDONLY);
    const std::string& target = o.stdout_path.empty() ? out_path : o.stdout_path;
    const int out =
        open(target.c_str(), O_WRONLY | O_CREAT | (o.stdout_append ? O_APPEND : O_TRUNC), 0600);
    const int err = o.stderr_append.empty()
                        ? open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600)
                        : open(o.stderr_append.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in < 0 || out < 0 || err < 0 || chdir(kSource.c_str()) != 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (o.stdout_reader_gone) {
      dup2(gone[1], 1);
      close(gone[1]);
    }
    if (o.stdout_closed) close(1);
    if (o.stderr_closed) close(2);
    if (o.ignore_sigpipe) signal(SIGPIPE, SIG_IGN);
    if (o.file_size_limit >= 0) {
      const rlimit limit{static_cast<rlim_t>(o.file_size_limit),
                         static_cast<rlim_t>(o.file_size_limit)};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
    if (o.open_files_limit >= 0) {
      const rlimit limit{static_cast<rlim_t>(o.open_files_limit),
                         static_cast<rlim_t>(o.open_files_limit)};
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    if (o.address_space_limit >= 0) {
      const rlimit limit{static_cast<rlim_t>(o.address_space_limit),
                         static_cast<rlim_t>(o.address_space_limit)};
      setrlimit(RLIMIT_AS, &limit);
    }
    std::vector<char*> argv;
    for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (o.stdout_reader_gone) close(gone[1]);
  if (o.meanwhile) o.meanwhile(pid);
  Result r;
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() - start > o.hang) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::filesystem::remove_all(dir);
  return r;
}

inline Result run(const std::vector<std::string>& args,
                  const std::string& stdin_path = "/dev/null") {
  RunOptions o;
  o.stdin_path = stdin_path;
  return run_with(args, o);
}

}  // namespace meshrun::testing
