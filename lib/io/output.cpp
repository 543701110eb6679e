#include "io/output.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "support/errors.hpp"

namespace meshrun {

namespace {

// Writes all of `data` to `fd`, partial writes and EINTR retried: 0, or the errno that stopped it.
int write_whole(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

namespace fs = std::filesystem;

// The permission bits a plain open(O_CREAT, 0666) would give: mkstemp creates 0600 files.
mode_t default_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// The standard stream (stdout or stderr) whose regular file `path` names -- /dev/stdout when
// stdout is redirected to a file, or that file's own name -- or -1. Such a file is written through
// a duplicate of the stream's descriptor, so at the stream's offset: opened anew it would get a
// second offset at 0 (and O_TRUNC would empty it) and the report would overwrite the stream's
// lines; replaced by rename, the stream would go on writing to a file no longer in the directory.
int standard_stream_of(const std::string& path) {
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0 || !S_ISREG(target.st_mode)) return -1;
  for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino)
      return fd;
  }
  return -1;
}

// True when `path` is written where it is, never replaced: something that exists and is not a
// regular file (stat follows links), or a name of an open descriptor (/dev/stdout, /dev/fd/N,
// /proc/PID/fd/N): the file behind it is somebody's open file, not one to replace.
bool written_in_place(const std::string& path) {
  if (path == "/dev/stdout" || path == "/dev/stderr" || path.starts_with("/dev/fd/") ||
      (path.starts_with("/proc/") && path.find("/fd/") != std::string::npos))
    return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

}  // namespace

void write_all(int fd, std::string_view data, const std::string& name) {
  if (const int err = write_whole(fd, data); err != 0)
    throw OutputError(name + ": " + std::strerror(err));
}

void write_stdout(std::string_view data) { write_all(STDOUT_FILENO, data, "stdout"); }

void close_stdout() {
  // POSIX leaves the descriptor's state unspecified after EINTR; Linux has closed it: not retried.
  if (::close(STDOUT_FILENO) != 0 && errno != EINTR) {
    throw OutputError(std::string("stdout: ") + std::strerror(errno));
  }
}

OutputFile::OutputFile(const std::string& path, const std::string& field, Mode mode)
    : path_(path), field_(field), target_(path), mode_(default_mode()) {
  const auto refuse = [&](int err) {
    throw InputError(field, "cannot write " + path + ": " + std::strerror(err));
  };
  if (const int stream = standard_stream_of(path); stream >= 0) {
    fd_ = ::fcntl(stream, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0) refuse(errno);
    return;
  }
  if (mode == Mode::kInPlace || written_in_place(path)) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) refuse(errno);
    return;
  }
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path real = fs::weakly_canonical(path, ec);
    if (!ec) target_ = real.string();
  }
  // A file it replaces keeps its permission bits, as `>` into it would.
  if (struct stat st{}; ::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    mode_ = st.st_mode & 07777;
  }
  const fs::path dir = fs::path(target_).parent_path();
  const std::string name = fs::path(target_).filename().string();
  if (name.empty()) throw InputError(field, "cannot write " + path + ": not a file name");
  temp_ = (dir.empty() ? fs::path(".") : dir).string() + "/." + name + ".meshrun-XXXXXX";
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();
    refuse(err);
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void OutputFile::fail(int err) const {
  throw OutputError(field_ + ": cannot write " + path_ + ": " + std::strerror(err));
}

void OutputFile::write(std::string_view data) {
  MESHRUN_CHECK(fd_ >= 0, "OutputFile::write after commit");
  if (const int err = write_whole(fd_, data); err != 0) fail(err);
}

void OutputFile::commit() {
  MESHRUN_CHECK(fd_ >= 0, "OutputFile::commit called twice");
  const bool atomic = !temp_.empty();
  // Synced before the rename: after a crash the target holds the old text or the new, whole.
  if (atomic && (::fchmod(fd_, mode_) != 0 || ::fsync(fd_) != 0)) fail(errno);
  const int fd = fd_;
  fd_ = -1;
  // POSIX leaves the descriptor's state unspecified after EINTR; Linux has closed it.
  if (::close(fd) != 0 && errno != EINTR) fail(errno);
  if (atomic) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) fail(errno);
    temp_.clear();
  }
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace meshrun
