#include "io/file_set.hpp"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "support/errors.hpp"

namespace meshrun {
namespace {

namespace fs = std::filesystem;

// realpath(3) of a directory that exists, else "".
std::string real_dir(const fs::path& dir) {
  const std::unique_ptr<char, decltype(&::free)> real(
      ::realpath(dir.empty() ? "." : dir.c_str(), nullptr), &::free);
  return real ? std::string(real.get()) : std::string();
}

}  // namespace

FileStamp stamp_of(const struct stat& st) {
  constexpr long long kNs = 1000000000LL;
  return {st.st_dev, st.st_ino, st.st_size,
          static_cast<long long>(st.st_mtim.tv_sec) * kNs + st.st_mtim.tv_nsec,
          static_cast<long long>(st.st_ctim.tv_sec) * kNs + st.st_ctim.tv_nsec};
}

FileStamp file_stamp(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? stamp_of(st) : FileStamp{};
}

std::string follow_links(const std::string& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own limit
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p.string();
}

FileId file_id(const std::string& path) {
  FileId id;
  if (struct stat st{}; ::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.device = S_ISCHR(st.st_mode);
    return id;
  }
  // Not there (yet): where open(O_CREAT) would create it. A dangling symbolic link creates its
  // target, so links are followed first.
  const fs::path p = follow_links(path);
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") return id;
  const std::string dir = real_dir(p.parent_path());
  if (!dir.empty()) {
    id.where = (dir == "/" ? "" : dir) + "/" + name;
  } else {
    // Its directory is not there either (--save-npy creates it): the existing part of the path
    // resolved, the rest -- which holds no link, having no entries -- spelled out.
    std::error_code ec;
    const fs::path absolute = fs::absolute(p, ec);
    if (!ec) id.where = fs::weakly_canonical(absolute, ec).string();
    if (ec) id.where.clear();
  }
  return id;
}

FileId stdin_id() {
  FileId id;
  if (struct stat st{}; ::fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  return id;
}

void FileSet::read(const std::string& role, const std::string& path) {
  read(role, path, file_id(path));
}

void FileSet::read(const std::string& role, const std::string& path, const FileId& id) {
  add({role, path, id, false});
}

void FileSet::write(const std::string& flag, const std::string& path) {
  add({flag, path, file_id(path), true});
}

void FileSet::standard_output() { stream(STDOUT_FILENO, "stdout"); }
void FileSet::standard_error() { stream(STDERR_FILENO, "stderr"); }

void FileSet::stream(int fd, const char* role) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  Entry e{role, role, FileId{true, st.st_dev, st.st_ino, ""}, true};
  e.stream = true;
  add(std::move(e));
}

void FileSet::add(Entry e) {
  const bool known = e.id.exists || !e.id.where.empty();
  for (const Entry& other : entries_) {
    if (!known || !(other.written || e.written) || !(other.id == e.id)) continue;
    if ((e.stream && other.written) || (other.stream && e.written)) continue;
    // Two outputs to one device (`-o /dev/null --profile /dev/null`) replace nothing of each other.
    if (e.written && other.written && e.id.device) continue;
    if (e.written) clash(e, other);
    clash(other, e);
  }
  entries_.push_back(std::move(e));
}

void FileSet::clash(const Entry& output, const Entry& other) {
  if (output.stream) {
    throw InputError(output.role,
                     "is " + other.path + ", " + other.role + "; refusing to write into it");
  }
  if (other.written) {
    throw InputError(output.role, output.path + " is also the " + other.role +
                                      " file; refusing to write both to it");
  }
  throw InputError(output.role, output.path + " is " + other.role + "; refusing to overwrite it");
}

}  // namespace meshrun
