#include "io/result_writer.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <system_error>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/cpus.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

// Text for `out`, gathered in a fixed buffer and appended a buffer at a time: a number is
// written straight into it (put_number), not appended to the string character by character.
// The last part reaches `out` at flush(), which the writer calls: not in a destructor, where a
// failing append (bad_alloc) could only end the process.
class TextBuffer {
 public:
  explicit TextBuffer(std::string& out) : out_(out) {}
  TextBuffer(const TextBuffer&) = delete;
  TextBuffer& operator=(const TextBuffer&) = delete;

  void put(char c) {
    room(1);
    *at_++ = c;
  }
  void put(std::string_view text) {
    if (text.size() > sizeof buf_) {
      flush();
      out_.append(text);
      return;
    }
    room(text.size());
    at_ = std::copy(text.begin(), text.end(), at_);
  }
  void number(float v, const NumberFormat& format) {
    MESHRUN_CHECK(std::isfinite(v), "a non-finite result is refused before it is written");
    room(kMaxNumberChars);
    at_ = put_number(at_, v, format);
  }
  void flush() {
    out_.append(buf_, static_cast<std::size_t>(at_ - buf_));
    at_ = buf_;
  }

 private:
  void room(std::size_t n) {
    if (static_cast<std::size_t>(buf_ + sizeof buf_ - at_) < n) flush();
  }
  std::string& out_;
  char buf_[std::size_t{1} << 14];
  char* at_ = buf_;
};

void append_row(TextBuffer& out, const float* values, std::size_t n, const NumberFormat& format) {
  out.put('[');
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out.put(',');
    out.number(values[i], format);
  }
  out.put(']');
}

// What comes before row `r` (of the rows, the last dimension's runs, of an array of `shape`,
// rank >= 2) in its nested lists: "[[" before the first of a rank-3 array, "," between two rows of
// one matrix, "],[" where one matrix ends and the next begins. With `after_last`, the "]]" after
// the last row instead.
std::string row_prefix(const Shape& shape, std::size_t r, bool after_last = false) {
  const std::size_t outer = shape.size() - 1;  // the dimensions rows are nested in
  if (after_last) return std::string(outer, ']');
  if (r == 0) return std::string(outer, '[');
  std::size_t fresh = 0;  // the dimensions whose index went back to 0 at this row
  for (std::size_t d = outer; d-- > 1 && r % shape[d] == 0;) {
    r /= shape[d];
    ++fresh;
  }
  return std::string(fresh, ']') + ',' + std::string(fresh, '[');
}

std::size_t row_count(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d) n *= shape[d];
  return n;
}

void append_tensor(TextBuffer& out, const Tensor& t, const NumberFormat& format) {
  MESHRUN_CHECK(t.rank() <= kMaxRank && t.size() == shape_size(t.shape), "malformed output tensor");
  if (t.rank() == 0) {
    out.number(t.data.at(0), format);
    return;
  }
  if (t.rank() == 1) {
    append_row(out, t.data.data(), t.size(), format);
    return;
  }
  const std::size_t cols = t.shape.back();
  const std::size_t rows = row_count(t.shape);
  for (std::size_t i = 0; i < rows; ++i) {
    out.put(row_prefix(t.shape, i));
    append_row(out, t.data.data() + i * cols, cols, format);
  }
  out.put(row_prefix(t.shape, rows, true));
}

// The result in document order as pieces: literal text, then optionally numbers -- one bare
// number (a scalar) or a row in brackets.
struct Piece {
  std::string text;
  const float* values = nullptr;
  std::size_t n = 0;
  bool row = false;
};

std::vector<Piece> result_pieces(const ProgramDef& program, const std::vector<Tensor>& outputs) {
  std::vector<Piece> pieces;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const ArgDef& arg = program.outputs[i];
    const Tensor& t = outputs[i];
    MESHRUN_CHECK(t.rank() == arg.dims.size(), "output " + arg.name + " has the wrong rank");
    MESHRUN_CHECK(t.rank() <= kMaxRank && t.size() == shape_size(t.shape),
                  "malformed output tensor");
    std::string key(i == 0 ? "{" : ",");
    key += nlohmann::json(arg.name).dump();
    key += ':';
    if (t.rank() == 0) {
      MESHRUN_CHECK(std::isfinite(t.data.at(0)),
                    "a non-finite result is refused before it is written");
      pieces.push_back({std::move(key), t.data.data(), 1, false});
    } else if (t.rank() == 1) {
      pieces.push_back({std::move(key), t.data.data(), t.size(), true});
    } else {
      const std::size_t cols = t.shape.back();
      const std::size_t rows = row_count(t.shape);
      for (std::size_t r = 0; r < rows; ++r) {
        pieces.push_back({r == 0 ? key + row_prefix(t.shape, r) : row_prefix(t.shape, r),
                          t.data.data() + r * cols, cols, true});
      }
      pieces.push_back({row_prefix(t.shape, rows, true)});
    }
  }
  pieces.push_back({outputs.empty() ? "{}" : "}"});
  return pieces;
}

void format_pieces(std::string& text, const Piece* first, const Piece* last,
                   const NumberFormat& format) {
  TextBuffer out(text);
  for (const Piece* p = first; p != last; ++p) {
    out.put(p->text);
    if (p->values == nullptr) continue;
    if (p->row) {
      append_row(out, p->values, p->n, format);
    } else {
      out.number(p->values[0], format);
    }
  }
  out.flush();
}

// Below this many numbers one thread formats the result; above, the CPUs share it.
constexpr std::size_t kParallelNumbers = std::size_t{1} << 16;

}  // namespace

std::string tensor_json(const Tensor& t, const NumberFormat& format) {
  std::string out;
  TextBuffer buffer(out);
  append_tensor(buffer, t, format);
  buffer.flush();
  return out;
}

// A large result is formatted by every CPU the process may use (the mesh is done by now, so
// they are idle): the pieces are cut into contiguous runs of about equal numbers of elements,
// each run formatted into its own string on its own thread, and the strings joined in order --
// the bytes one thread would have written.
std::string write_result(const ProgramDef& program, const std::vector<Tensor>& outputs,
                         const NumberFormat& format) {
  MESHRUN_CHECK(outputs.size() == program.outputs.size(), "one tensor per declared output");
  const std::vector<Piece> pieces = result_pieces(program, outputs);
  std::size_t elements = 0;
  for (const Tensor& t : outputs) elements += t.size();
  const std::size_t parts =
      elements < kParallelNumbers ? 1 : std::min<std::size_t>(usable_cpus(), 8);
  // Run k: the pieces from bounds[k] up to bounds[k + 1].
  std::vector<std::size_t> bounds{0};
  std::size_t seen = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    seen += pieces[i].n;
    if (bounds.size() < parts && seen * parts >= elements * bounds.size()) bounds.push_back(i + 1);
  }
  bounds.push_back(pieces.size());
  std::vector<std::string> text(bounds.size() - 1);
  auto format_run = [&](std::size_t k) {
    std::size_t numbers = 0;
    for (std::size_t i = bounds[k]; i < bounds[k + 1]; ++i) numbers += pieces[i].n;
    text[k].reserve(numbers * 12 + 64);  // "-0.123456," is 10; one growth at most for longer forms
    format_pieces(text[k], pieces.data() + bounds[k], pieces.data() + bounds[k + 1], format);
  };
  std::vector<std::exception_ptr> errors(text.size());
  std::vector<char> on_helper(text.size(), 0);
  {
    std::vector<std::jthread> helpers;
    for (std::size_t k = 1; k < text.size(); ++k) {
      try {
        helpers.emplace_back([&, k] {
          try {
            format_run(k);
          } catch (...) {
            errors[k] = std::current_exception();
          }
        });
        on_helper[k] = 1;
      } catch (const std::system_error&) {
        // No thread for it: this one formats it below.
      }
    }
    format_run(0);
    for (std::size_t k = 1; k < text.size(); ++k) {
      if (!on_helper[k]) format_run(k);
    }
  }  // joined
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  if (text.size() == 1) return std::move(text[0]);
  std::size_t size = 0;
  for (const std::string& t : text) size += t.size();
  std::string out;
  out.reserve(size + 1);  // + 1: the caller's final newline must not reallocate (and copy) it all
  for (const std::string& t : text) out += t;
  return out;
}

}  // namespace meshrun
