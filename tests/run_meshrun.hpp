// Runs the built meshrun binary for the CLI tests: in the source directory (so case paths, and the
// messages naming them, are relative), stdin from a file, stdout and stderr captured, the exit
// code decoded. A run still going after kHang is killed and reported as hung, so a test never
// hangs with the program it tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
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
  double seconds = 0;  // wall time of the process
  bool killed = false;  // still running after kHang
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A temp directory, removed with everything in it when the test ends.
struct TempDir {
  std::string path;
  TempDir() {
    char dir[] = "/tmp/meshrun_test_dir.XXXXXX";
    BOOST_REQUIRE(mkdtemp(dir) != nullptr);
    path = dir;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `text` to path/name and returns that path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name, std::ios::binary) << text;
    return path + "/" + name;
  }
};

inline Result run(const std::vector<std::string>& args, const std::string& stdin_path = "/dev/null") {
  char dir[] = "/tmp/meshrun_test.XXXXXX";
  BOOST_REQUIRE(mkdtemp(dir) != nullptr);
  const std::string out_path = std::string(dir) + "/out", err_path = std::string(dir) + "/err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in = open(stdin_path.c_str(), O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0 || chdir(kSource.c_str()) != 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv{const_cast<char*>(kBinary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(kBinary.c_str(), argv.data());
    _exit(127);
  }
  Result r;
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() - start > kHang) {
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

}  // namespace meshrun::testing
