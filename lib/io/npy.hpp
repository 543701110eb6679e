// numpy's .npy files (np.save; format versions 1.0, 2.0 and 3.0): arrays of a case's input given
// as {"npy": "PATH"}, and outputs written with --save-npy. Only what np.save writes for float
// arrays is read: little-endian float32 ('<f4') or float64 ('<f8'), C order; and (issue #49) the
// dtypes float32 holds exactly: float16, bfloat16 (ml_dtypes' '<V2'), int8, uint8, int16, uint16.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "io/file_set.hpp"
#include "io/output.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

// The float32 tensor in the .npy file at `path`, whose shape must be `dims`' rank with no empty
// dimension (checked like an inline array, with the same messages). The file is mapped, not read
// into a buffer; the tensor is the only copy made. Throws InputError naming `field` and the file
// for a file that cannot be read or is not such a .npy (wrong magic or version, another dtype,
// Fortran order, truncated), and for a value that is not finite or overflows float32.
Tensor read_npy(const std::string& path, const std::vector<std::string>& dims,
                const std::string& field);

// The values of a float32 array left in its mapped .npy file, and what keeps the file mapped
// (both null when the array was read into a tensor instead).
struct MappedArray {
  const float* data = nullptr;
  std::shared_ptr<const void> file;
};

// An input array from a .npy file: float32 as stored (what np.save writes) is left in the file's
// mapping, each device's block to be read from it -- then `tensor` holds the shape only (no data)
// and `mapped` the values; float64 (converted to float32) and data a float load cannot reach (a
// hand-made header not padded to alignment) are read into `tensor`.
struct NpyInput {
  Tensor tensor;
  MappedArray mapped;
  FileStamp stamp;  // the file as it was mapped
};

// read_npy's checks and messages (every value is checked, mapped or not), without its copy.
NpyInput map_npy(const std::string& path, const std::vector<std::string>& dims,
                 const std::string& field);

// `tensor` as a .npy file (format 1.0, '<f4', C order), as np.save would write it.
std::string npy_bytes(const Tensor& tensor);

// DIR/NAME.npy: where save_npy writes the output NAME.
std::string npy_path(const std::string& dir, const std::string& name);

// The files of --save-npy DIR: DIR created and every DIR/NAME.npy opened (OutputFile's kAtomic)
// up front, so that a path that cannot be written is an InputError(`field`), exit 2, before any
// work; written by commit(), one after another, each whole or not at all (a failure part-way,
// OutputError, exit 6, leaves the ones before it replaced and the rest as they were).
class NpyFiles {
 public:
  NpyFiles(const std::string& dir, const std::vector<std::string>& names, const std::string& field,
           std::chrono::milliseconds open_wait);
  // `tensors` in the order of the names.
  void commit(const std::vector<Tensor>& tensors);

 private:
  std::vector<std::unique_ptr<OutputFile>> files_;
};

}  // namespace meshrun
