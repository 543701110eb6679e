// Every file one command reads or writes, by identity, so that no output replaces an input or
// another output. A file that exists is known by its device and inode (so a hard link, a symbolic
// link, `./x`, `DIR/../x` and `LINK/..` all name it); one that does not yet exist by its resolved
// directory and its name (symbolic links of the directory followed as open(2) follows them, never
// normalised lexically first). Each entry carries its role -- the flag that names it (`--output`,
// `--save-npy`, `--junit`) or what reads it (`the case file`, `input.w`) -- for the message.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace meshrun {

// What a path names, as the file system resolves it now.
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string where;    // !exists: the resolved directory and the name; "" when it cannot be known
  bool device = false;  // a character device (/dev/null, a terminal): nothing to replace
  bool operator==(const FileId&) const = default;
};
FileId file_id(const std::string& path);
// What changes when a file is replaced or written: compared before and after a run (--update).
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  long long mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp stamp_of(const struct stat& st);
// The stamp of the file at `path` now (links followed); all zero when it cannot be stat'ed.
FileStamp file_stamp(const std::string& path);

// `path` with its symbolic links followed to the name they end at, which need not exist (a dangling
// link names the file open(O_CREAT) would create); `path` itself when it is no link.
std::string follow_links(const std::string& path);
// The file standard input is, when it is a regular file (a case given as `-`); !exists otherwise.
FileId stdin_id();

class FileSet {
 public:
  // A file read: throws InputError(the writer's flag) when an output added before is this file.
  void read(const std::string& role, const std::string& path);
  void read(const std::string& role, const std::string& path, const FileId& id);
  // A file written: throws InputError(`flag`) when a file added before (read or written) is it.
  void write(const std::string& flag, const std::string& path);
  // Standard output, when it is a regular file (`>> case.json`): refused as an input's
  // replacement is; another output may be it (written through its descriptor, io/output.hpp).
  void standard_output();
  // The same for standard error, when a flag writes more than error lines there (--trace,
  // --show-sharding, --timings).
  void standard_error();

 private:
  struct Entry {
    std::string role, path;
    FileId id;
    bool written;
    bool stream = false;  // standard output: clashes with reads only
  };
  [[noreturn]] static void clash(const Entry& output, const Entry& other);
  void stream(int fd, const char* role);
  void add(Entry e);
  std::vector<Entry> entries_;
};

}  // namespace meshrun
