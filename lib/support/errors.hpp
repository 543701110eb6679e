// Typed errors. Each kind maps to one exit code, in one place (exit_code.hpp):
//   InputError      -> 2  bad case file, bad flag value (names the file and the JSON field)
//   UnimplementedError -> 2  an InputError: the program calls a collective this engine lacks
//   CollectiveError -> 3  mismatched or timed-out collective, aborted mesh (AbortedError)
//   DeviceError     -> 3  a device body threw (names the device and the collective it was in)
//   InternalError   -> 4  a broken invariant (MESHRUN_CHECK)
//   NoCasesError    -> 5  `check` found no case to grade (pytest's "no tests collected")
//   OutputError     -> 6  a result could not be written whole (stdout, --trace FILE)
//   NonFiniteError  -> 7  the result holds NaN or an infinity, which its JSON cannot hold
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace meshrun {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input. `where` is the file (may be empty), `field` the JSON path (e.g. "input.x[3]").
class InputError : public Error {
 public:
  InputError(std::string field, const std::string& what)
      : Error(field.empty() ? what : field + ": " + what), field_(std::move(field)) {}
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

// The program calls a collective the engine does not implement ("mpi does not implement
// all_gather"; XLA's Unimplemented). An InputError: this input cannot run on this engine, exit 2.
class UnimplementedError : public InputError {
 public:
  explicit UnimplementedError(const std::string& what) : InputError("", what) {}
};

// A collective that could not complete: mismatch between devices, timeout, abort.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// A device released from a wait (or refused a collective) because the mesh was aborted by
// another device's failure or is being destroyed: a consequence, never the cause. Mesh::run
// reports the cause; it rethrows an AbortedError only when there is nothing else to report.
class AbortedError : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

// A collective wait reached its deadline; `missing` holds the members (ranks in the group) that
// had not arrived, so the mesh can say which of them were stalled and which only late.
class TimeoutError : public CollectiveError {
 public:
  TimeoutError(const std::string& what, std::vector<int> missing)
      : CollectiveError(what), missing_(std::move(missing)) {}
  const std::vector<int>& missing() const noexcept { return missing_; }

 private:
  std::vector<int> missing_;
};

// A device body threw; the message names the device and what it was doing.
class DeviceError : public Error {
 public:
  DeviceError(int device, const std::string& what) : Error(what), device_(device) {}
  int device() const noexcept { return device_; }

 private:
  int device_;
};

class InternalError : public Error {
 public:
  using Error::Error;
};

// A replicated output whose copies differ between devices (JAX's check_vma). In a built-in
// program that is meshrun's bug (exit 4); a program read from a file turns it into the file's
// error (exit 2), as JAX refuses such a program when it traces it.
class ReplicationError : public InternalError {
 public:
  ReplicationError(std::string output, const std::string& what)
      : InternalError(what), output_(std::move(output)) {}
  const std::string& output() const noexcept { return output_; }

 private:
  std::string output_;
};

// `meshrun check` was given paths that hold no case file: grading nothing is not a pass.
class NoCasesError : public Error {
 public:
  using Error::Error;
};

// A write, flush or close of a result failed; the message is "<stream>: <the OS's reason>".
class OutputError : public Error {
 public:
  using Error::Error;
};

// The program computed NaN or an infinity; the message names the first such output element.
class NonFiniteError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void fail_check(const char* cond, const char* file, int line, const std::string& msg);

}  // namespace meshrun

#define MESHRUN_CHECK(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) ::meshrun::fail_check(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
