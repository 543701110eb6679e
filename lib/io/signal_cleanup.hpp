// What a signal must not leave behind. meshrun writes every whole-or-nothing file through a
// temporary file beside the target (io/output.hpp); a SIGTERM from a CI job's timeout, a Ctrl-C,
// a reader that left (SIGPIPE) or mpirun ending the job must not leave that temporary file in the
// user's directory. And an input file mapped into memory (a .npy array, io/npy.cpp) that another
// process truncates while it is read raises SIGBUS on the next access: that is an input error
// naming the file, not a crash.
//
// Mechanism: two fixed tables of slots, filled and emptied without locks (a slot is claimed with
// a compare-and-swap and published with a release store), read by one signal handler that does
// only async-signal-safe things (unlink, write, _exit, raise):
//   - the termination signals (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGXCPU) that
//     were not ignored when meshrun started: unlink every registered temporary file, then die of
//     the same signal with its default action (the shell sees 128+N, as without the handler);
//   - SIGBUS at an address inside a registered mapping: unlink the temporary files, write
//     "meshrun: <message>" on stderr and _exit with the input-error code (2). A SIGBUS elsewhere
//     is a real crash: the default action, core and all.
// The handler is installed when a slot is filled (again if something replaced it since), so a run
// that maps nothing and replaces no file (the plain `meshrun PROGRAM CASE` to stdout) pays
// nothing. SIGKILL cannot be caught:
// OutputFile therefore keeps its temporary file nameless (O_TMPFILE) until the moment it renames
// it, so only a SIGKILL in the microseconds between link and rename could leave one.
#pragma once

#include <cstddef>
#include <string>

namespace meshrun {

// A temporary file's name, unlinked by the handler while registered.
class TempName {
 public:
  TempName() = default;
  explicit TempName(const std::string& path);
  ~TempName();
  TempName(const TempName&) = delete;
  TempName& operator=(const TempName&) = delete;

 private:
  int slot_ = -1;
};

// A mapped input: a SIGBUS inside [begin, begin + size) ends meshrun with `message` (one line).
class GuardedMapping {
 public:
  GuardedMapping() = default;
  GuardedMapping(const void* begin, std::size_t size, const std::string& message);
  ~GuardedMapping();
  GuardedMapping(const GuardedMapping&) = delete;
  GuardedMapping& operator=(const GuardedMapping&) = delete;

 private:
  int slot_ = -1;
};

// The exit code of a SIGBUS in a guarded mapping (meshrun's input-error code; default 2).
void set_input_error_exit_code(int code);

}  // namespace meshrun
