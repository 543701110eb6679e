#include "io/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/errors.hpp"

namespace meshrun {

void write_all(int fd, std::string_view data, const std::string& name) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw OutputError(name + ": " + std::strerror(errno));
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void write_stdout(std::string_view data) { write_all(STDOUT_FILENO, data, "stdout"); }

void close_stdout() {
  // POSIX leaves the descriptor's state unspecified after EINTR; Linux has closed it: not retried.
  if (::close(STDOUT_FILENO) != 0 && errno != EINTR) {
    throw OutputError(std::string("stdout: ") + std::strerror(errno));
  }
}

OutputFile::OutputFile(const std::string& path, const std::string& field)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)), path_(path) {
  if (fd_ < 0) throw InputError(field, "cannot open " + path + ": " + std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) throw OutputError(path_ + ": " + std::strerror(errno));
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace meshrun
