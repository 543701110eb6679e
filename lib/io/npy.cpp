#include "io/npy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "io/file_set.hpp"
#include "io/json_text.hpp"
#include "io/output.hpp"
#include "io/signal_cleanup.hpp"
#include "io/tensor_json.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// A read-only private mapping of a whole file, unmapped when it goes out of scope.
class Mapping {
 public:
  // Throws InputError(field, "cannot read PATH: reason").
  Mapping(const std::string& path, const std::string& field) {
    // O_NONBLOCK: a FIFO named as a .npy must not hang the open; it is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(path, field, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      fail(path, field, err);
    }
    if (!S_ISREG(st.st_mode)) {
      // Only a regular file has a size to map (a directory, a pipe, a device has not).
      ::close(fd);
      if (S_ISDIR(st.st_mode)) fail(path, field, EISDIR);
      throw InputError(field, "cannot read " + path + ": not a regular file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    stamp_ = stamp_of(st);
    // Mapped, as issue 9 asks (the blocks are read from the page cache, no read buffer). A file
    // that another process truncates while it is being read raises SIGBUS at the next access
    // past its new end: the guard turns that into this input's error, one line and exit 2
    // (io/signal_cleanup.hpp). A file that was short from the start is refused by the size
    // checks below, with its field and path.
    if (size_ > 0) {
      // MAP_POPULATE (Linux): every page is read, so they are mapped in one call, not one fault
      // each.
#ifdef MAP_POPULATE
      constexpr int kFlags = MAP_PRIVATE | MAP_POPULATE;
#else
      constexpr int kFlags = MAP_PRIVATE;
#endif
      void* p = ::mmap(nullptr, size_, PROT_READ, kFlags, fd, 0);
      const int err = errno;
      ::close(fd);
      if (p == MAP_FAILED) fail(path, field, err);
      data_ = static_cast<const unsigned char*>(p);
      guard_ = std::make_unique<GuardedMapping>(
          data_, size_,
          field + ": cannot read " + path + ": the file shrank while it was being read (SIGBUS)");
    } else {
      ::close(fd);
    }
  }
  ~Mapping() {
    guard_.reset();  // before the range can be mapped again
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  const FileStamp& stamp() const { return stamp_; }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& field, int err) {
    throw InputError(field, "cannot read " + path + ": " + std::strerror(err));
  }
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  FileStamp stamp_;
  std::unique_ptr<GuardedMapping> guard_;
};

std::uint32_t le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

std::uint64_t le64(const unsigned char* p) {
  return std::uint64_t{le32(p)} | std::uint64_t{le32(p + 4)} << 32;
}

// What the header dict says: {'descr': '<f4', 'fortran_order': False, 'shape': (8, 1), }
struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The text after "'key':" (either quote), blanks skipped; nullopt when the key is absent.
std::optional<std::string_view> after_key(std::string_view dict, std::string_view key) {
  for (const char q : {'\'', '"'}) {
    const std::string quoted = std::string(1, q) + std::string(key) + q;
    std::size_t at = dict.find(quoted);
    if (at == std::string_view::npos) continue;
    at = dict.find(':', at + quoted.size());
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = dict.substr(at + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return rest;
  }
  return std::nullopt;
}

// Parses the Python literal dict numpy writes; nullopt when it is not one.
std::optional<Header> parse_header(std::string_view dict) {
  Header h;
  const auto descr = after_key(dict, "descr");
  if (!descr || descr->empty() || (descr->front() != '\'' && descr->front() != '"')) return {};
  const std::size_t close = descr->find(descr->front(), 1);
  if (close == std::string_view::npos) return {};
  h.descr = std::string(descr->substr(1, close - 1));

  const auto fortran = after_key(dict, "fortran_order");
  if (!fortran) return {};
  if (fortran->starts_with("True")) {
    h.fortran_order = true;
  } else if (!fortran->starts_with("False")) {
    return {};
  }

  auto shape = after_key(dict, "shape");
  if (!shape || !shape->starts_with("(")) return {};
  std::string_view s = shape->substr(1);
  for (;;) {
    while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
    if (s.empty()) return {};
    if (s.front() == ')') break;
    std::size_t n = 0;
    std::size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
      if (n > (SIZE_MAX - 9) / 10) return {};  // no real array has such a dimension
      n = n * 10 + static_cast<std::size_t>(s[digits] - '0');
      ++digits;
    }
    if (digits == 0) return {};
    h.shape.push_back(n);
    s.remove_prefix(digits);
  }
  return h;
}

std::string shape_tuple(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// "input.x[3][1]" for flat index `i` of an array of `shape`.
std::string element_path(const std::string& field, const Shape& shape, std::size_t i) {
  return field + index_suffix(shape, i);
}

}  // namespace

namespace {

// A .npy file mapped and its header checked: the element type and count, where the data starts.
// Issue #49 (dtypes2): besides float32 and float64, the dtypes meshrun holds as float32 exactly,
// as np.save writes them: float16 '<f2', bfloat16 '<V2' (ml_dtypes' bfloat16, which np.save
// writes as 2-byte void), int8 '|i1', uint8 '|u1', int16 '<i2', uint16 '<u2'. Each element is
// converted to its float32 value; the program's declared dtype is checked on the values after
// (program_checks.cpp), as for inline arrays.
enum class NpyKind : std::uint8_t { kF4, kF8, kF2, kBF2, kI1, kU1, kI2, kU2 };
struct NpyDescr {
  const char* descr;
  NpyKind kind;
  std::size_t itemsize;
};
constexpr NpyDescr kDescrs[] = {
    {"<f4", NpyKind::kF4, 4},  {"<f8", NpyKind::kF8, 8}, {"<f2", NpyKind::kF2, 2},
    {"<V2", NpyKind::kBF2, 2}, {"|i1", NpyKind::kI1, 1}, {"|u1", NpyKind::kU1, 1},
    {"<i2", NpyKind::kI2, 2},  {"<u2", NpyKind::kU2, 2},
};

// IEEE half's bits as its float32 value (exact: every half is a float32).
float half_value(std::uint16_t h) {
  const float sign = (h & 0x8000u) != 0 ? -1.0f : 1.0f;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -24);
  if (e == 31)
    return m == 0 ? sign * std::numeric_limits<float>::infinity()
                  : std::numeric_limits<float>::quiet_NaN();
  return sign * std::ldexp(static_cast<float>(m | 0x400), e - 25);
}

struct OpenNpy {
  std::shared_ptr<const Mapping> file;
  Shape shape;
  NpyKind kind = NpyKind::kF4;
  std::size_t itemsize = 4;  // 4: '<f4', 8: '<f8', 2 or 1: the narrow dtypes
  std::size_t count = 0;
  const unsigned char* data = nullptr;
};

OpenNpy open_npy(const std::string& path, const std::vector<std::string>& dims,
                 const std::string& field) {
  OpenNpy npy;
  npy.file = std::make_shared<const Mapping>(path, field);
  const auto bad = [&](const std::string& what) { return InputError(field, path + ": " + what); };
  const unsigned char* bytes = npy.file->data();
  const std::size_t size = npy.file->size();
  if (size < 10 || std::string_view(reinterpret_cast<const char*>(bytes), 6) != kMagic) {
    throw bad("not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw bad(".npy format " + std::to_string(major) + "." + std::to_string(minor) +
              " is not supported (1.0, 2.0 or 3.0)");
  }
  // Version 1 has a 2-byte header length, 2 and 3 a 4-byte one (3 allows UTF-8 in it).
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) throw bad("truncated header");
  const std::size_t header_len = major == 1 ? std::size_t{bytes[8]} | std::size_t{bytes[9]} << 8
                                            : std::size_t{le32(bytes + 8)};
  if (header_len > size - prefix) throw bad("truncated header");
  const std::optional<Header> header =
      parse_header(std::string_view(reinterpret_cast<const char*>(bytes + prefix), header_len));
  if (!header) throw bad("the header is not a numpy header dict");
  const NpyDescr* known = nullptr;
  for (const NpyDescr& d : kDescrs)
    if (header->descr == d.descr) known = &d;
  if (known == nullptr) {
    throw bad("dtype '" + excerpt(header->descr) +
              "' is not supported (little-endian float32 '<f4' or float64 '<f8'; float16 '<f2', "
              "bfloat16 '<V2', int8 '|i1', uint8 '|u1', int16 '<i2', uint16 '<u2')");
  }
  if (header->fortran_order) throw bad("Fortran order is not supported (save it in C order)");
  check_shape(header->shape, dims, field);

  npy.kind = known->kind;
  npy.itemsize = known->itemsize;
  const std::size_t available = size - prefix - header_len;
  std::size_t count = 1;  // dimensions are >= 1 (checked); a product past the file is truncated
  bool fits = true;
  for (const std::size_t d : header->shape) {
    fits = fits && count <= available / npy.itemsize / d;
    if (fits) count *= d;
  }
  if (!fits) {
    throw bad("truncated: " + std::to_string(available) + " bytes of data for shape " +
              shape_tuple(header->shape) + " of " + header->descr);
  }
  npy.shape = header->shape;
  npy.count = count;
  npy.data = bytes + prefix + header_len;
  return npy;
}

// Values [at, at + n) of a float32 array, checked in one vectorisable pass; only a run holding a
// non-finite value is walked, to name its first one.
void check_finite_run(const float* run, std::size_t at, std::size_t n, const OpenNpy& npy,
                      const std::string& path, const std::string& field) {
  std::uint32_t all_ones_exponent = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto u = std::bit_cast<std::uint32_t>(run[i]);
    all_ones_exponent |= static_cast<std::uint32_t>((u & 0x7f800000u) == 0x7f800000u);
  }
  for (std::size_t i = 0; all_ones_exponent != 0 && i < n; ++i) {
    if (!std::isfinite(run[i])) {
      throw InputError(element_path(field, npy.shape, at + i),
                       number_text(run[i]) + " is not a finite number (" + path + ")");
    }
  }
}

constexpr std::size_t kRun = 4096;

// float32 as stored (little-endian host) into `values`, in runs through a buffer that stays in L1:
// each run checked, then appended, so the tensor's memory is written once, never zeroed first.
void copy_float32(const OpenNpy& npy, const std::string& path, const std::string& field,
                  std::vector<float>& values) {
  float run[kRun];
  for (std::size_t at = 0; at < npy.count; at += kRun) {
    const std::size_t n = std::min(kRun, npy.count - at);
    std::memcpy(run, npy.data + 4 * at, 4 * n);
    check_finite_run(run, at, n, npy, path, field);
    values.insert(values.end(), run, run + n);
  }
}

// The same checks on an aligned float32 array left in its mapping: read in place, nothing copied.
void check_float32_in_place(const float* data, const OpenNpy& npy, const std::string& path,
                            const std::string& field) {
  for (std::size_t at = 0; at < npy.count; at += kRun)
    check_finite_run(data + at, at, std::min(kRun, npy.count - at), npy, path, field);
}

bool float32_in_place(const OpenNpy& npy) {
  return npy.kind == NpyKind::kF4 && std::endian::native == std::endian::little;
}

Tensor to_tensor(const OpenNpy& npy, const std::string& path, const std::string& field) {
  std::vector<float> values;
  if (float32_in_place(npy)) {
    values.reserve(npy.count);
    copy_float32(npy, path, field, values);
    return Tensor(npy.shape, std::move(values));
  }
  values.resize(npy.count);
  for (std::size_t i = 0; i < npy.count; ++i) {
    double v = 0;
    const unsigned char* at = npy.data + npy.itemsize * i;
    const auto le16 = [at] { return static_cast<std::uint16_t>(at[0] | at[1] << 8); };
    switch (npy.kind) {
      case NpyKind::kF4:
        v = std::bit_cast<float>(le32(at));
        break;
      case NpyKind::kF8:
        v = std::bit_cast<double>(le64(at));
        break;
      case NpyKind::kF2:
        v = half_value(le16());
        break;
      case NpyKind::kBF2:
        v = std::bit_cast<float>(std::uint32_t{le16()} << 16);
        break;
      case NpyKind::kI1:
        v = static_cast<std::int8_t>(at[0]);
        break;
      case NpyKind::kU1:
        v = at[0];
        break;
      case NpyKind::kI2:
        v = static_cast<std::int16_t>(le16());
        break;
      case NpyKind::kU2:
        v = le16();
        break;
    }
    // Inline JSON cannot hold NaN or infinity; a .npy input is held to the same values.
    if (!std::isfinite(v)) {
      throw InputError(element_path(field, npy.shape, i),
                       number_text(v) + " is not a finite number (" + path + ")");
    }
    const auto f = static_cast<float>(v);  // float64: rounded to nearest, as JAX converts
    if (std::isinf(f)) {
      throw InputError(element_path(field, npy.shape, i),
                       number_text(v) + " overflows float32 (" + path + ")");
    }
    values[i] = f;
  }
  return Tensor(npy.shape, std::move(values));
}

}  // namespace

Tensor read_npy(const std::string& path, const std::vector<std::string>& dims,
                const std::string& field) {
  return to_tensor(open_npy(path, dims, field), path, field);
}

NpyInput map_npy(const std::string& path, const std::vector<std::string>& dims,
                 const std::string& field) {
  const OpenNpy npy = open_npy(path, dims, field);
  NpyInput in;
  in.stamp = npy.file->stamp();
  // Left in the mapping: float32 as stored, aligned for float loads (np.save aligns the data to
  // 64 bytes; a hand-made header may not).
  if (float32_in_place(npy) && reinterpret_cast<std::uintptr_t>(npy.data) % alignof(float) == 0) {
    const auto* values = reinterpret_cast<const float*>(npy.data);
    check_float32_in_place(values, npy, path, field);
    in.tensor.shape = npy.shape;
    in.mapped = {values, npy.file};
    return in;
  }
  in.tensor = to_tensor(npy, path, field);
  return in;
}

std::string npy_bytes(const Tensor& tensor) {
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_tuple(tensor.shape) + ", }";
  // np.save pads the header with spaces and a newline so the data starts 64-byte aligned.
  const std::size_t unpadded = kMagic.size() + 4 + dict.size() + 1;
  dict += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  out.reserve(out.size() + 4 * tensor.size());
  for (const float f : tensor.data) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    for (int b = 0; b < 4; ++b) out += static_cast<char>((u >> (8 * b)) & 0xff);
  }
  return out;
}

std::string npy_path(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / (name + ".npy")).string();
}

NpyFiles::NpyFiles(const std::string& dir, const std::vector<std::string>& names,
                   const std::string& field, std::chrono::milliseconds open_wait) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(field, "cannot create " + dir + ": " + ec.message());
  for (const std::string& name : names) {
    files_.push_back(std::make_unique<OutputFile>(npy_path(dir, name), field,
                                                  OutputFile::Mode::kAtomic, open_wait));
  }
}

void NpyFiles::commit(const std::vector<Tensor>& tensors) {
  MESHRUN_CHECK(tensors.size() == files_.size(), "one array per file");
  for (std::size_t i = 0; i < tensors.size(); ++i) files_[i]->commit(npy_bytes(tensors[i]));
}

}  // namespace meshrun
