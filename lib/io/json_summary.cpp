#include "io/json_summary.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "support/errors.hpp"

namespace meshrun {
namespace {

using json = nlohmann::json;

// Top level is depth 0: the objects at depths 0..2 keep their members (the case keys, `input`'s
// fields, a field's {"npy": PATH}); anything deeper only counts as an element of an array being
// summarised.
constexpr std::size_t kSummarisedDepth = 3;

// One open container.
struct Frame {
  bool object;
  JsonSummary* summary;        // what it fills, or nullptr when it is not summarised
  std::string key;             // object: the member being parsed
  std::size_t index = 0;       // array: the element being parsed (counted when it ends)
  std::set<std::string> keys;  // object: every key so far, to find one given twice
};

// The SAX handler. Arrays are summarised by one "tensor" state at a time: a summarised array
// never holds another (its elements are at depth 3 or more).
class SummaryHandler {
 public:
  SummaryHandler(JsonDocument& doc, JsonSource& source, bool (*is_case_key)(const std::string&),
                 bool fast_numbers)
      : doc_(doc), source_(source), is_case_key_(is_case_key), fast_numbers_(fast_numbers) {}

  bool null() { return scalar(JsonKind::null); }
  bool boolean(bool) { return scalar(JsonKind::boolean); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return number(static_cast<double>(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return number(v); }
  bool string(std::string& s) {
    JsonSummary* summary = begin_value(JsonKind::string);
    if (summary != nullptr) summary->text = std::move(s);
    end_value();
    return true;
  }
  bool binary(json::binary_t&) { return scalar(JsonKind::null); }  // not produced for JSON

  bool start_object(std::size_t) {
    open(JsonKind::object);
    return true;
  }
  bool key(std::string& k) {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second && !doc_.duplicate) {
      doc_.duplicate = DuplicateKey{path(frames_.size() - 1), k};
    }
    if (frames_.size() == 1 && is_case_key_(k)) saw_case_key_ = true;
    f.key = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) {
    open(JsonKind::array);
    if (fast_numbers_ && tensor_ != nullptr && !tensor_->flaw) scan_numbers();
    return true;
  }
  bool end_array() {
    if (tensor_ != nullptr) {
      leading_open_ = false;
      if (levels_.size() > 1 && tracked()) end_level();
    }
    if (frames_.size() == tensor_level_) {
      tensor_ = nullptr;
      levels_.clear();
    }
    return close();
  }

  [[noreturn]] bool parse_error(std::size_t byte, const std::string& token,
                                const nlohmann::detail::exception& e) {
    if (e.id == 406) {
      // "number overflow parsing '1e400'": beyond double's range, so beyond float32's too.
      throw InputError(field(path(frames_.size())), excerpt(token) + " overflows float32");
    }
    throw_parse_error(source_, byte, e.what());
  }

 private:
  bool scalar(JsonKind kind) {
    begin_value(kind);
    end_value();
    return true;
  }

  bool number(double v) {
    JsonSummary* summary = begin_value(JsonKind::number);
    if (summary != nullptr) summary->number = v;
    if (tensor_ != nullptr && !tensor_->flaw) tensor_number(v);
    end_value();
    return true;
  }

  // A value starts at the current depth: its summary (if it is summarised), and what it means
  // to the array being summarised.
  JsonSummary* begin_value(JsonKind kind) {
    if (tensor_ != nullptr) tensor_element(kind);
    const std::size_t depth = frames_.size();
    if (depth == 0) {
      doc_.root.kind = kind;
      return &doc_.root;
    }
    Frame& parent = frames_.back();
    if (!parent.object || parent.summary == nullptr || depth > kSummarisedDepth) return nullptr;
    JsonSummary* summary = &parent.summary->members.emplace_back();
    summary->key = parent.key;
    summary->kind = kind;
    return summary;
  }

  // A value ended: the array holding it moves to its next element.
  void end_value() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  void open(JsonKind kind) {
    if (frames_.size() >= static_cast<std::size_t>(kMaxJsonDepth)) {
      throw InputError("", "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    JsonSummary* summary = begin_value(kind);
    // Objects keep their members only at the summarised depths; arrays there become tensors.
    const bool summarised_object =
        kind == JsonKind::object && summary != nullptr && frames_.size() < kSummarisedDepth;
    frames_.push_back({kind == JsonKind::object, summarised_object ? summary : nullptr, "", 0, {}});
    if (kind == JsonKind::array && summary != nullptr && frames_.size() > 1) {
      tensor_ = summary;
      tensor_level_ = frames_.size();
      tensor_->leading_rank = 1;
      tensor_->shape = {0};
      leading_open_ = true;
      levels_.assign(1, Level{});
    } else if (enter_) {  // an array of the tensor where one is due: its elements are checked
      enter_ = false;
      levels_.emplace_back();
      if (tensor_->shape.size() < levels_.size()) tensor_->shape.push_back(0);  // x[0][0]..: known
    }                                                                           // at its end
  }

  bool close() {
    frames_.pop_back();
    end_value();
    return true;
  }

  // ---- the array being summarised (tensor_, whose frame is frames_[tensor_level_ - 1]) ----
  //
  // levels_ holds its open arrays whose elements are checked: levels_[0] the tensor itself,
  // levels_[d] the array at depth d (an element of levels_[d - 1]'s) -- the arrays along the
  // first elements (which give the leading rank R), and after them every array where one is due
  // (an element at a depth below R - 1). Anything inside another value (an array where a number
  // is due, an object) is already a flaw and is not looked into.

  // The innermost open frame is levels_.back()'s: a value starting now is one of its elements.
  bool tracked() const { return frames_.size() + 1 == tensor_level_ + levels_.size(); }

  // Every value inside it, at any depth, before it is pushed.
  void tensor_element(JsonKind kind) {
    // The leading rank counts the '[' that open the array, one right after the other.
    const bool leading = leading_open_ && kind == JsonKind::array;
    if (leading) {
      ++tensor_->leading_rank;
    } else {
      leading_open_ = false;
    }
    if (tensor_->flaw || !tracked()) return;
    const std::size_t depth = levels_.size() - 1;  // 0: directly in the tensor
    const std::size_t i = levels_.back().count++;
    if (depth == 0) tensor_->shape[0] = i + 1;
    if (leading || (depth + 1 < tensor_->leading_rank && kind == JsonKind::array)) {
      enter_ = true;  // open() takes it as levels_[depth + 1]
    } else if (depth + 1 < tensor_->leading_rank) {
      report({ArrayFlaw::not_a_row, indices(), kind});
    } else if (kind != JsonKind::number) {
      report({ArrayFlaw::not_a_number, indices(), kind});
    }
  }

  // A number at depth R - 1 (an element of a row, or of a 1-D array).
  void tensor_number(double v) {
    if (!tracked() || levels_.size() != tensor_->leading_rank) return;
    const auto f = static_cast<float>(v);  // as JAX converts a Python float: nearest float32
    if (std::isinf(f)) return report({ArrayFlaw::overflow, indices(), JsonKind::number, v});
    // A row longer than the first one is ragged: keep none of what is past its length.
    const std::size_t d = levels_.size() - 1;
    if (d > 0 && levels_[0].count > 1 && levels_[d].count > tensor_->shape[d]) return;
    tensor_->data.push_back(f);
  }

  // The array of levels_.back() ended: it has the length of the first array at its depth (or is
  // that one), then its elements' first flaw (if any) is its own.
  void end_level() {
    const Level done = std::move(levels_.back());
    levels_.pop_back();
    if (tensor_->flaw) return;
    const std::size_t d = levels_.size();
    const bool first =
        std::all_of(levels_.begin(), levels_.end(), [](const Level& l) { return l.count == 1; });
    if (first) {
      tensor_->shape[d] = done.count;
    } else if (done.count != tensor_->shape[d]) {
      return report({ArrayFlaw::ragged, indices(), JsonKind::array, 0, done.count});
    }
    if (done.pending) report(*done.pending);
  }

  // The indices of the element levels_.back() is at (each level's last counted element).
  std::vector<std::size_t> indices() const {
    std::vector<std::size_t> at;
    at.reserve(levels_.size());
    for (const Level& l : levels_) at.push_back(l.count - 1);
    return at;
  }

  // A flaw inside levels_.back(): the tensor's when that is the tensor itself, else the array's
  // first, reported when it ends.
  void report(const ArrayFlaw& f) {
    if (levels_.size() > 1) {
      if (!levels_.back().pending) levels_.back().pending = f;
      return;
    }
    if (tensor_->flaw) return;
    tensor_->flaw = f;
    tensor_->data = {};  // no use for the numbers any more
  }

  // ---- the fast path: a tensor's runs of plain numbers ----
  //
  // nlohmann's lexer copies each number into a std::string and converts it with strtod: that
  // was most of the time a large case took to read. Right after the parser reported a '[' inside
  // a tensor (it has read nothing past it yet), this reads ahead in the source's buffer: a run of
  // `number , number , ... number` whose every token follows JSON's number grammar and converts
  // with std::from_chars is handed to number() -- the same handler the parser would call, in the
  // same order -- and skipped, so the parser resumes either at the ']' that ends the array or at
  // the start of a number that comes after a ','. Both are places where the parser, thinking the
  // array has just begun, accepts exactly what it would have accepted where it really is, and so
  // reports every error (bad token, missing ',', nesting, overflow: anything the fast path does
  // not take) with the same words; json_text corrects its byte offsets by what was skipped.
  //
  // The number's value is the parser's: a float token is correctly rounded to double (strtod and
  // from_chars agree), an integer token too (nlohmann's int64/uint64 then cast is also correctly
  // rounded) except "-0", which nlohmann reads as the integer 0, i.e. +0.0.
  enum class Token { ok, bad, cut };  // cut: the window ended inside it; more bytes may finish it

  static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static const char* skip_ws(const char* p, const char* end) {
    while (p < end && is_ws(*p)) ++p;
    return p;
  }

  // A number token at `p`: its value and its end in `after`.
  static Token number_at(const char* p, const char* end, double& value, const char*& after) {
    const char* s = p;
    auto digits = [&] {
      const char* first = s;
      while (s < end && is_digit(*s)) ++s;
      return s > first;
    };
    if (s < end && *s == '-') ++s;
    if (s == end) return Token::cut;
    if (*s == '0') {
      ++s;
    } else if (!digits()) {
      return Token::bad;
    }
    bool integer = true;
    if (s < end && *s == '.') {
      integer = false;
      ++s;
      if (!digits()) return s == end ? Token::cut : Token::bad;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
      integer = false;
      ++s;
      if (s < end && (*s == '+' || *s == '-')) ++s;
      if (!digits()) return s == end ? Token::cut : Token::bad;
    }
    if (s == end) return Token::cut;  // the token may go on past the window
    const auto [ptr, ec] = std::from_chars(p, s, value);
    if (ec != std::errc() || ptr != s) return Token::bad;  // out of range: the parser's to report
    if (integer && value == 0) value = 0;                  // "-0" is the integer 0
    after = s;
    return Token::ok;
  }

  void scan_numbers() {
    constexpr std::size_t kAhead = 4096;  // refill the window below this (numbers are short)
    for (;;) {
      const std::string_view w = source_.window(kAhead);
      const char* const end = w.data() + w.size();
      const char* resume = skip_ws(w.data(), end);  // the parser takes over here
      double v = 0;
      const char* after = nullptr;
      Token t = number_at(resume, end, v, after);
      bool closed = false;
      while (t == Token::ok) {  // v: a number at `resume`, not handed on yet
        const char* q = skip_ws(after, end);
        if (q < end && *q == ']') {
          number(v);
          resume = q;
          closed = true;
          break;
        }
        if (q == end || *q != ',') {
          t = q == end ? Token::cut : Token::bad;
          break;
        }
        const char* next = skip_ws(q + 1, end);
        double nv = 0;
        t = number_at(next, end, nv, after);
        if (t != Token::ok) break;
        number(v);
        resume = next;
        v = nv;
      }
      const auto n = static_cast<std::size_t>(resume - w.data());
      source_.skip(n);
      // Done at the ']', at a token the parser must see, or when the window made no progress
      // (a token longer than the window, or the end of the input).
      if (closed || t == Token::bad || n == 0) return;
    }
  }

  // "input.x[3]": the first `n` frames' members or elements being parsed.
  std::string path(std::size_t n) const {
    std::string p;
    for (std::size_t i = 0; i < n; ++i) {
      const Frame& f = frames_[i];
      if (!f.object) {
        p += '[';
        p += std::to_string(f.index);
        p += ']';
        continue;
      }
      if (!p.empty()) p += '.';
      p += f.key;
    }
    return p;
  }

  // A path as the case reader names fields: a bare input's are "input.*". Whether the document
  // is a case is known for sure only at its end; a case key seen so far decides it.
  std::string field(const std::string& p) const {
    if (frames_.empty() || saw_case_key_ || !frames_.front().object) return p;
    return p.empty() ? "input" : "input." + p;
  }

  JsonDocument& doc_;
  JsonSource& source_;
  bool (*is_case_key_)(const std::string&);
  bool fast_numbers_;
  std::vector<Frame> frames_;
  bool saw_case_key_ = false;

  struct Level {
    std::size_t count = 0;             // its elements so far
    std::optional<ArrayFlaw> pending;  // the first flaw among them
  };
  JsonSummary* tensor_ = nullptr;
  std::size_t tensor_level_ = 0;  // frames_.size() with the tensor's frame on top
  bool leading_open_ = false;
  std::vector<Level> levels_;
  bool enter_ = false;  // the value starting is an array levels_ takes
};

}  // namespace

std::string kind_name(JsonKind kind) {
  switch (kind) {
    case JsonKind::null:
      return "null";
    case JsonKind::boolean:
      return "a boolean";
    case JsonKind::number:
      return "a number";
    case JsonKind::string:
      return "a string";
    case JsonKind::array:
      return "an array";
    case JsonKind::object:
      return "an object";
  }
  return "a value";
}

JsonDocument parse_json_summary(JsonSource& source, bool (*is_case_key)(const std::string& key),
                                JsonNumbers numbers) {
  JsonDocument doc;
  SummaryHandler handler(doc, source, is_case_key, numbers == JsonNumbers::fast);
  json::sax_parse(source.begin(), source.end(), &handler);
  check_nothing_after(source);
  // The duplicate's path as the case reader names fields (a bare input's are "input.*").
  if (doc.duplicate && doc.root.kind == JsonKind::object) {
    bool is_case = false;
    for (const auto& member : doc.root.members) is_case = is_case || is_case_key(member.key);
    if (!is_case) {
      std::string& p = doc.duplicate->path;
      p = p.empty() ? "input" : "input." + p;
    }
  }
  return doc;
}

}  // namespace meshrun
