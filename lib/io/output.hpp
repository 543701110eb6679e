// Checked output. A result is the product, so every byte meshrun promises -- the result dict on
// stdout, `check`'s report, every file of OutputFile below -- goes out through write(2) with
// partial writes and EINTR retried, and is closed with its error checked. Any failure (ENOSPC on a
// full disk, EBADF on a closed stdout, EPIPE when SIGPIPE is ignored and the reader left, EFBIG
// past RLIMIT_FSIZE) is an OutputError naming the stream and the OS's reason -- exit 6, never a
// silent success.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "io/signal_cleanup.hpp"

namespace meshrun {

// Writes all of `data` to `fd`; throws OutputError("<name>: <strerror>") on failure.
void write_all(int fd, std::string_view data, const std::string& name);

// The result stream. write_stdout is write_all(1, ..., "stdout"); close_stdout closes fd 1 and
// reports a deferred error (a file system may report ENOSPC or EIO only at close).
void write_stdout(std::string_view data);
void close_stdout();

// A file meshrun writes: --trace, --profile, --junit/--json, --save-npy, a case --update rewrites,
// the files `bench programs` generates. One writer, two ways:
//   kInPlace -- the file is written where it is, as the run goes (--trace: what is written before
//               a failure stays). It is opened (created if missing) up front but emptied only by
//               the first write, so a run refused before it starts leaves the file as it was.
//   kAtomic  -- whole or not at all (reports, blessed cases, profiles, arrays): the text goes to a
//               temporary file beside the target -- so rename(2) never crosses a file system --
//               which replaces the target at commit(), once every byte is written, synced and
//               closed. The temporary file has no name until then (O_TMPFILE; where the file
//               system has none, a `.NAME.meshrun-XXXXXX` that a termination signal removes,
//               io/signal_cleanup.hpp): a reader never sees half a file, a failure, a signal or
//               a kill leaves the old file as it was and no temporary file behind. The new file
//               keeps the replaced one's permission bits, owner and group (as `>` into it would);
//               a hard link to the old file keeps the old text. A target that is a symbolic link
//               is resolved (the file it points to is replaced, the link kept); one that exists
//               and is not a regular file (/dev/full, a FIFO, a terminal) has nothing to replace,
//               and the name of an open descriptor (/dev/stdout, /dev/fd/N) must not be replaced:
//               both are written in place. In both modes, the file stdout or stderr is
//               redirected to (named /dev/stdout or by its own name) is written through a
//               duplicate of that stream's descriptor, after what the stream wrote.
// Opened up front, so a bad path fails before any work: InputError(field, "cannot write PATH:
// <reason>"), exit 2. A FIFO is opened without blocking: a reader must open its end within
// `open_wait` (the run's --timeout), else that is the error. Every later failure (write, sync,
// close, rename) is OutputError("FIELD: cannot write PATH: <reason>"), exit 6.
class OutputFile {
 public:
  enum class Mode { kInPlace, kAtomic };
  static constexpr std::chrono::milliseconds kDefaultOpenWait{10000};  // --timeout's default

  OutputFile(const std::string& path, const std::string& field, Mode mode = Mode::kInPlace,
             std::chrono::milliseconds open_wait = kDefaultOpenWait);
  // Closes quietly; removes the temporary file when commit() never succeeded.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // The permission bits kAtomic gives the file (default: those of the regular file it replaces,
  // else 0666 masked by the umask, as open(2) gives a new file).
  void set_mode(mode_t mode) { mode_ = mode; }
  void write(std::string_view data);
  // Closes the file, checked; kAtomic: syncs it first and renames it over the target. At most once.
  void commit();
  void commit(std::string_view data) {
    write(data);
    commit();
  }

 private:
  [[noreturn]] void fail(int err) const;
  void open_atomic(const std::function<void(int)>& refuse);
  int link_temp();  // a nameless temporary file given its name: 0 or errno

  std::string path_;    // as given: what messages name
  std::string field_;   // the flag, in messages
  std::string target_;  // kAtomic: what the rename replaces (a link resolved)
  std::string temp_;    // kAtomic: the temporary file's name once it has one; "" otherwise
  std::string dir_;     // kAtomic: the target's directory
  bool atomic_ = false;
  bool nameless_ = false;        // kAtomic through O_TMPFILE: temp_ not yet linked
  bool truncate_first_ = false;  // kInPlace, a regular file: emptied by the first write
  int fd_ = -1;
  mode_t mode_;
  uid_t uid_ = static_cast<uid_t>(-1);  // kAtomic: the replaced file's owner and group
  gid_t gid_ = static_cast<gid_t>(-1);
  std::unique_ptr<TempName> guard_;  // the named temporary file, for the signal handler
};

// What the FIFO waits of OutputFile and of the case reader share: "10 s" or "1500 ms" for a
// message, and a descriptor opened O_NONBLOCK made blocking again for its reads or writes.
std::string wait_text(std::chrono::milliseconds wait);
void make_blocking(int fd);

// True when `a` and `b` name the same existing file (same device and inode).
bool same_file(const std::string& a, const std::string& b);

}  // namespace meshrun
