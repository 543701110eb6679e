#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/output.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

namespace fs = std::filesystem;

// The permission bits a plain open(O_CREAT, 0666) would give: mkstemp creates 0600 files.
mode_t default_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path, const std::string& field)
    : target_(path), mode_(default_mode()) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path real = fs::weakly_canonical(path, ec);
    if (!ec) target_ = real.string();
  }
  const fs::path dir = fs::path(target_).parent_path();
  const std::string name = fs::path(target_).filename().string();
  if (name.empty()) throw InputError(field, "cannot write " + path + ": not a file name");
  temp_ = (dir.empty() ? fs::path(".") : dir).string() + "/." + name + ".meshrun-XXXXXX";
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();
    throw InputError(field, "cannot write " + path + ": " + std::strerror(err));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::commit(std::string_view text) {
  MESHRUN_CHECK(fd_ >= 0, "AtomicFile::commit called twice");
  const auto fail = [this] { throw OutputError(target_ + ": " + std::strerror(errno)); };
  write_all(fd_, text, target_);
  if (::fchmod(fd_, mode_) != 0) fail();
  // Synced before the rename: after a crash the target holds the old text or the new, whole.
  if (::fsync(fd_) != 0) fail();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) fail();
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail();
  temp_.clear();
}

}  // namespace meshrun
