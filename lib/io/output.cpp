#include "io/output.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <string>
#include <cstring>
#include <filesystem>

#include "io/file_set.hpp"
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
// stdout is redirected to a file, or that file's own name -- or the descriptor N of /dev/fd/N;
// -1 for none, -2 for a /dev/fd/N that is not open for writing. Such a file is written through
// a duplicate of the stream's descriptor, so at the stream's offset: opened anew it would get a
// second offset at 0 (and O_TRUNC would empty it) and the report would overwrite the stream's
// lines; replaced by rename, the stream would go on writing to a file no longer in the directory.
int standard_stream_of(const std::string& path) {
  // /dev/fd/N, /proc/self/fd/N: descriptor N itself, whatever it is, at its own offset (a
  // `3>>log` keeps its lines: opened anew, the name would give a second offset at 0).
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix)) continue;
    int n = -1;
    const char* digits = path.c_str() + prefix.size();
    const auto [end, ec] = std::from_chars(digits, path.c_str() + path.size(), n);
    if (ec == std::errc() && *end == '\0' && n > STDERR_FILENO) {
      // Not open, or open for reading only: refused when opened, as a write would fail later.
      const int flags = ::fcntl(n, F_GETFL);
      if (flags == -1 || (flags & O_ACCMODE) == O_RDONLY) return -2;
      return n;
    }
  }
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

namespace {

// open(2) of a file written in place, never blocking: a FIFO with no reader yet (ENXIO) is tried
// again every 10 ms until `wait` has passed. The descriptor is then made blocking again.
int open_in_place(const std::string& path, std::chrono::milliseconds wait, int* err,
                  bool* no_reader) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
    if (fd >= 0) {
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) make_blocking(fd);  // a FIFO, a device
      return fd;
    }
    *err = errno;
    struct stat st {};
    *no_reader = *err == ENXIO && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    if (!*no_reader || std::chrono::steady_clock::now() >= deadline) return -1;
    ::usleep(10000);
  }
}

}  // namespace

std::string wait_text(std::chrono::milliseconds wait) {
  const long ms = static_cast<long>(wait.count());
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

void make_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags != -1 && (flags & O_NONBLOCK) != 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

OutputFile::OutputFile(const std::string& path, const std::string& field, Mode mode,
                       std::chrono::milliseconds open_wait)
    : path_(path), field_(field), target_(path), mode_(default_mode()) {
  const auto refuse = [&](int err) {
    throw InputError(field, "cannot write " + path + ": " + std::strerror(err));
  };
  const int stream = standard_stream_of(path);
  if (stream == -2) refuse(EBADF);
  if (stream >= 0) {
    fd_ = ::fcntl(stream, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0) refuse(errno);
    return;
  }
  if (mode == Mode::kInPlace || written_in_place(path)) {
    int err = 0;
    bool no_reader = false;
    fd_ = open_in_place(path, open_wait, &err, &no_reader);
    if (fd_ < 0 && no_reader) {
      throw InputError(field, "cannot write " + path +
                                  ": no process opened the FIFO for reading within " +
                                  wait_text(open_wait) + " (--timeout)");
    }
    if (fd_ < 0) refuse(err);
    struct stat st {};
    truncate_first_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
    return;
  }
  open_atomic(refuse);
}

void OutputFile::open_atomic(const std::function<void(int)>& refuse) {
  atomic_ = true;
  // A symbolic link is kept: the file it points to is replaced (or created, for a dangling one).
  target_ = follow_links(path_);
  // A file it replaces keeps its permission bits, owner and group, as `>` into it would; one
  // that `>` could not write (no write permission for this user) is refused as `>` refuses it.
  if (struct stat st{}; ::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (::access(target_.c_str(), W_OK) != 0) refuse(errno);
    mode_ = st.st_mode & 07777;
    uid_ = st.st_uid;
    gid_ = st.st_gid;
  }
  const fs::path dir = fs::path(target_).parent_path();
  const std::string name = fs::path(target_).filename().string();
  if (name.empty()) throw InputError(field_, "cannot write " + path_ + ": not a file name");
  dir_ = (dir.empty() ? fs::path(".") : dir).string();
  // In a sticky directory (/tmp) only the file's or the directory's owner may replace it: found
  // now, not by the rename after the run.
  if (struct stat d{}, t{}; ::geteuid() != 0 && ::stat(dir_.c_str(), &d) == 0 &&
                            (d.st_mode & S_ISVTX) != 0 && ::stat(target_.c_str(), &t) == 0 &&
                            t.st_uid != ::geteuid() && d.st_uid != ::geteuid()) {
    throw InputError(field_, "cannot write " + path_ +
                                 ": another user's file in a sticky directory cannot be replaced");
  }
  temp_ = dir_ + "/." + name + ".meshrun-XXXXXX";
  // Nameless until commit: nothing to leave behind, whatever ends the run.
  fd_ = ::open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd_ >= 0) {
    nameless_ = true;
    return;
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    const int err = errno;
    temp_.clear();
    refuse(err);
  }
  // A file system without O_TMPFILE: a named temporary file, removed by a termination signal.
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();
    refuse(err);
  }
  guard_ = std::make_unique<TempName>(temp_);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty() && !nameless_) ::unlink(temp_.c_str());
}

void OutputFile::fail(int err) const {
  throw OutputError(field_ + ": cannot write " + path_ + ": " + std::strerror(err));
}

void OutputFile::write(std::string_view data) {
  MESHRUN_CHECK(fd_ >= 0, "OutputFile::write after commit");
  if (truncate_first_) {
    truncate_first_ = false;
    if (::ftruncate(fd_, 0) != 0) fail(errno);
  }
  if (const int err = write_whole(fd_, data); err != 0) fail(err);
}

int OutputFile::link_temp() {
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  const std::string stem = temp_.substr(0, temp_.size() - 6);
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  auto seed = static_cast<unsigned long>(
      std::chrono::steady_clock::now().time_since_epoch().count() ^ (::getpid() << 16));
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = stem;
    for (int i = 0; i < 6; ++i) {
      seed = seed * 6364136223846793005UL + 1442695040888963407UL;
      name += kChars[(seed >> 33) % (sizeof kChars - 1)];
    }
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      temp_ = name;
      nameless_ = false;
      guard_ = std::make_unique<TempName>(temp_);
      return 0;
    }
    if (errno != EEXIST) return errno;
  }
  return EEXIST;
}

void OutputFile::commit() {
  MESHRUN_CHECK(fd_ >= 0, "OutputFile::commit called twice");
  if (truncate_first_) write("");  // nothing written: still the whole (empty) text
  if (atomic_) {
    // Owner and group first (chown clears the set-id bits), then the mode; synced before the
    // rename: after a crash the target holds the old text or the new, whole.
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(errno);
    const bool owner = uid_ != static_cast<uid_t>(-1) && (st.st_uid != uid_ || st.st_gid != gid_);
    // Only root may give a file away; anyone else's replacement is theirs, as an editor's save
    // by rename is.
    if (owner && ::fchown(fd_, uid_, gid_) != 0 && ::geteuid() == 0) fail(errno);
    if (::fchmod(fd_, mode_) != 0 || ::fsync(fd_) != 0) fail(errno);
    if (nameless_) {
      if (const int err = link_temp(); err != 0) fail(err);
    }
  }
  const int fd = fd_;
  fd_ = -1;
  // POSIX leaves the descriptor's state unspecified after EINTR; Linux has closed it.
  if (::close(fd) != 0 && errno != EINTR) fail(errno);
  if (atomic_) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) fail(errno);
    temp_.clear();
    guard_.reset();
  }
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace meshrun
