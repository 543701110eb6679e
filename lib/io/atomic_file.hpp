// A file written whole or not at all (reports, blessed cases): the text goes to a temporary file
// in the same directory -- so rename(2) never crosses a file system -- which replaces the target
// only once every byte is written, synced and closed. A reader never sees half a report, and a
// failed write leaves the old file as it was.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace meshrun {

class AtomicFile {
 public:
  // Creates the temporary file now, so a bad directory fails before any work:
  // InputError(field, "cannot write PATH: <reason>"). A target that is a symbolic link is
  // resolved: the file it points to is replaced, the link kept.
  AtomicFile(const std::string& path, const std::string& field);
  // Removes the temporary file when commit() never succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // The permission bits the file gets (default: 0666 masked by the umask, as open(2) would).
  void set_mode(mode_t mode) { mode_ = mode; }
  // Writes `text`, syncs, closes and renames over the target; throws OutputError("PATH:
  // <reason>") on any failure (the target is then untouched). At most once.
  void commit(std::string_view text);

  const std::string& target() const { return target_; }

 private:
  std::string target_;
  std::string temp_;
  int fd_ = -1;
  mode_t mode_;
};

}  // namespace meshrun
