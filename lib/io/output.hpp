// Checked output. A result is the product, so every byte meshrun promises -- the result dict on
// stdout, `check`'s report, a --trace file -- goes out through write(2) with partial writes and
// EINTR retried, and is closed with its error checked. Any failure (ENOSPC on a full disk, EBADF
// on a closed stdout, EPIPE when SIGPIPE is ignored and the reader left, EFBIG past RLIMIT_FSIZE)
// is an OutputError "<stream>: <the OS's reason>" -- exit 6, never a silent success.
#pragma once

#include <string>
#include <string_view>

namespace meshrun {

// Writes all of `data` to `fd`; throws OutputError("<name>: <strerror>") on failure.
void write_all(int fd, std::string_view data, const std::string& name);

// The result stream. write_stdout is write_all(1, ..., "stdout"); close_stdout closes fd 1 and
// reports a deferred error (a file system may report ENOSPC or EIO only at close).
void write_stdout(std::string_view data);
void close_stdout();

// A file meshrun writes (--trace=FILE). Opened (created or truncated) up front, so a bad path
// fails before any work; closed and checked by close(); the destructor closes quietly.
class OutputFile {
 public:
  // Throws InputError(field, "cannot open PATH: <reason>").
  OutputFile(const std::string& path, const std::string& field);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view data) { write_all(fd_, data, path_); }
  void close();

 private:
  int fd_;
  std::string path_;
};

// True when `a` and `b` name the same existing file (same device and inode).
bool same_file(const std::string& a, const std::string& b);

}  // namespace meshrun
