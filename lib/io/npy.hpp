// numpy's .npy files (np.save; format versions 1.0, 2.0 and 3.0): arrays of a case's input given
// as {"npy": "PATH"}, and outputs written with --save-npy. Only what np.save writes for float
// arrays is read: little-endian float32 ('<f4') or float64 ('<f8'), C order.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "io/file_set.hpp"
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

// Writes each of `tensors` as DIR/NAME.npy (`names` in the same order), creating `dir` if needed;
// each file whole or not at all (OutputFile's kAtomic). Throws OutputError "--save-npy: cannot
// write PATH: reason" (or "cannot create DIR") when one cannot be.
void save_npy(const std::string& dir, const std::vector<std::string>& names,
              const std::vector<Tensor>& tensors,
              std::chrono::milliseconds open_wait = std::chrono::seconds(10));

}  // namespace meshrun
