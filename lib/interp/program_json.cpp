// The program file's JSON (program_json.hpp): read whole within its limit, parsed once by a SAX
// handler that builds the document and counts as it goes.
#include "interp/program_json.hpp"

#include <sys/stat.h>

#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "io/json_text.hpp"
#include "support/errors.hpp"

namespace meshrun::interp {
namespace {

using json = nlohmann::json;

// "line 2, column 5 (byte 12)" of the 1-based offset `byte` in `text`.
std::string position(const std::string& text, std::size_t byte) {
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  std::size_t line = 1, start = 0;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(end - start + 1) +
         " (byte " + std::to_string(byte) + ")";
}

// Builds the document as nlohmann's own DOM parser does (each value appended to the container
// open at the top of the stack: constant time per value), and refuses, before the value is
// allocated, one nested too deep or one too many, and a key an open object already holds.
// Running out of memory while building is an InputError too: the handler keeps a reserve it
// releases first, so that the partial document's destructors (nlohmann's allocates a stack
// while it frees) run with memory to spare instead of ending the process in std::terminate.
class Builder {
 public:
  Builder(json& root, const std::string& text) : root_(root), text_(text) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return put(json(v)); }
  bool string(std::string& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t&) { throw InputError("", "invalid JSON: binary value"); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    Level& top = open_.back();
    if (top.value->get_ref<const json::object_t&>().count(k) != 0) {
      throw InputError(path(open_.size() - 1), "duplicate key \"" + excerpt(k) + "\"");
    }
    guarded([&] { top.key = std::move(k); });
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    if (const auto* p = dynamic_cast<const json::parse_error*>(&e)) {
      throw InputError(
          "", "invalid JSON at " + position(text_, p->byte) + ": " + parse_error_reason(p->what()));
    }
    // A number beyond double's range ("1e400") is nlohmann's out_of_range, not a parse error.
    std::string what = e.what();
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
    throw InputError("", "invalid JSON: " + excerpt(what));
  }

 private:
  struct Level {
    json* value;      // the open object or array
    std::string key;  // an object's latest key
  };

  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const std::bad_alloc&) {
      reserve_.reset();
      throw InputError("", "out of memory after " + std::to_string(values_) + " JSON values");
    }
  }

  // Appends `v` to the open container (or makes it the document) and returns where it is.
  json* add(json&& v) {
    if (++values_ > kMaxProgramJsonValues) {
      throw InputError("", "more than " + std::to_string(kMaxProgramJsonValues) +
                               " JSON values (the most a program file may hold)");
    }
    json* at = nullptr;
    guarded([&] {
      if (open_.empty()) {
        root_ = std::move(v);
        at = &root_;
      } else if (Level& top = open_.back(); top.value->is_array()) {
        auto& a = top.value->get_ref<json::array_t&>();
        a.push_back(std::move(v));
        at = &a.back();
      } else {
        auto& o = top.value->get_ref<json::object_t&>();
        at = &o.emplace(top.key, std::move(v)).first->second;
      }
    });
    return at;
  }
  bool put(json&& v) {
    add(std::move(v));
    return true;
  }
  bool open(json::value_t t) {
    if (open_.size() >= std::size_t(kMaxProgramJsonDepth)) {
      throw InputError("",
                       "nesting deeper than " + std::to_string(kMaxProgramJsonDepth) + " levels");
    }
    json* at = add(json(t));
    guarded([&] { open_.push_back({at, {}}); });
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  // The path of the container open at `level` ("exports[0].jaxpr"), for a message.
  std::string path(std::size_t level) const {
    std::string p;
    for (std::size_t i = 0; i < level; ++i) {
      if (open_[i].value->is_object()) {
        p += (p.empty() ? "" : ".") + excerpt(open_[i].key);
      } else {
        p += "[" + std::to_string(open_[i].value->size() - 1) + "]";
      }
    }
    return p;
  }

  json& root_;
  const std::string& text_;
  std::vector<Level> open_;
  std::uint64_t values_ = 0;
  std::unique_ptr<char[]> reserve_{new char[std::size_t{64} << 20]};  // untouched: no RSS
};

}  // namespace

json read_program_json(const std::string& path, std::uint64_t max_bytes,
                       std::chrono::milliseconds open_wait) {
  JsonSource source(path, max_bytes, open_wait);
  std::string text;
  // A regular file is read into one allocation of its size, not a doubling string (which would
  // hold a 1 GiB file twice while it grows).
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      std::uint64_t(st.st_size) <= max_bytes) {
    text.reserve(static_cast<std::size_t>(st.st_size));
  }
  for (std::string_view w; !(w = source.window(std::size_t{1} << 16)).empty();) {
    text.append(w);
    source.skip(w.size());
  }
  return parse_program_json(text);
}

json parse_program_json(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError("", "the file is empty");
  }
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    throw InputError("", "invalid JSON at " + position(text, nul + 1) + ": unexpected NUL byte");
  }
  json root;
  Builder builder(root, text);
  json::sax_parse(text, &builder);
  return root;
}

}  // namespace meshrun::interp
