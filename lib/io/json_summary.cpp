#include "io/json_summary.hpp"

#include <cmath>
#include <cstdint>
#include <set>

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
  JsonSummary* summary;  // what it fills, or nullptr when it is not summarised
  std::string key;       // object: the member being parsed
  std::size_t index = 0;  // array: the element being parsed (counted when it ends)
  std::set<std::string> keys;  // object: every key so far, to find one given twice
};

// The SAX handler. Arrays are summarised by one "tensor" state at a time: a summarised array
// never holds another (its elements are at depth 3 or more).
class SummaryHandler {
 public:
  SummaryHandler(JsonDocument& doc, const JsonSource& source,
                 bool (*is_case_key)(const std::string&))
      : doc_(doc), source_(source), is_case_key_(is_case_key) {}

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
    return true;
  }
  bool end_array() {
    if (tensor_ != nullptr) {
      leading_open_ = false;
      const std::size_t rel = frames_.size() - tensor_level_;
      if (rel == 1) end_row();
    }
    if (frames_.size() == tensor_level_) tensor_ = nullptr;
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
    const bool summarised_object = kind == JsonKind::object && summary != nullptr &&
                                   frames_.size() < kSummarisedDepth;
    frames_.push_back({kind == JsonKind::object, summarised_object ? summary : nullptr, "", 0, {}});
    if (kind == JsonKind::array && summary != nullptr && frames_.size() > 1) {
      tensor_ = summary;
      tensor_level_ = frames_.size();
      tensor_->leading_rank = 1;
      leading_open_ = true;
    }
  }

  bool close() {
    frames_.pop_back();
    end_value();
    return true;
  }

  // ---- the array being summarised (tensor_, whose frame is frames_[tensor_level_ - 1]) ----

  // Every value inside it, at any depth, before it is pushed.
  void tensor_element(JsonKind kind) {
    // The leading rank counts the '[' that open the array, one right after the other.
    if (leading_open_ && kind == JsonKind::array) {
      ++tensor_->leading_rank;
    } else {
      leading_open_ = false;
    }
    const std::size_t rel = frames_.size() - tensor_level_;  // 0: an element, 1: in a row
    if (rel == 0) {
      const std::size_t i = frames_.back().index;
      tensor_->size = i + 1;
      if (i == 0) two_d_ = kind == JsonKind::array;
      if (two_d_) {
        row_flaw_.reset();
        row_length_ = 0;
        if (kind != JsonKind::array) flaw({ArrayFlaw::not_a_row, i, std::nullopt, kind});
      } else if (kind != JsonKind::number) {
        flaw({ArrayFlaw::not_a_number, i, std::nullopt, kind});
      }
    } else if (rel == 1 && two_d_) {
      const std::size_t j = row_length_++;
      if (kind != JsonKind::number && !row_flaw_) {
        row_flaw_ = ArrayFlaw{ArrayFlaw::not_a_number, row(), j, kind};
      }
    }
  }

  // A number directly in it (1-D) or in one of its rows (2-D).
  void tensor_number(double v) {
    const std::size_t rel = frames_.size() - tensor_level_;
    if (rel != (two_d_ ? 1u : 0u)) return;
    const auto f = static_cast<float>(v);  // as JAX converts a Python float: nearest float32
    if (std::isinf(f)) {
      ArrayFlaw overflow{ArrayFlaw::overflow, row(), std::nullopt, JsonKind::number, v};
      if (!two_d_) return flaw(overflow);
      overflow.col = row_length_ - 1;
      if (!row_flaw_) row_flaw_ = overflow;
      return;
    }
    // A row longer than row 0 is ragged: keep none of it.
    if (two_d_ && row() > 0 && row_length_ > tensor_->cols) return;
    tensor_->data.push_back(f);
  }

  // A row of a 2-D array ended: it has row 0's length, then its elements are checked.
  void end_row() {
    if (!two_d_) return;
    const std::size_t i = frames_[tensor_level_ - 1].index;
    if (i == 0) tensor_->cols = row_length_;
    if (i > 0 && row_length_ != tensor_->cols) {
      flaw({ArrayFlaw::ragged, i, std::nullopt, JsonKind::array, 0, row_length_});
    } else if (row_flaw_) {
      flaw(*row_flaw_);
    }
  }

  std::size_t row() const { return frames_[tensor_level_ - 1].index; }

  void flaw(const ArrayFlaw& f) {
    if (tensor_->flaw) return;
    tensor_->flaw = f;
    tensor_->data = {};  // no use for the numbers any more
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
  const JsonSource& source_;
  bool (*is_case_key_)(const std::string&);
  std::vector<Frame> frames_;
  bool saw_case_key_ = false;

  JsonSummary* tensor_ = nullptr;
  std::size_t tensor_level_ = 0;  // frames_.size() with the tensor's frame on top
  bool leading_open_ = false;
  bool two_d_ = false;
  std::size_t row_length_ = 0;
  std::optional<ArrayFlaw> row_flaw_;
};

}  // namespace

std::string kind_name(JsonKind kind) {
  switch (kind) {
    case JsonKind::null: return "null";
    case JsonKind::boolean: return "a boolean";
    case JsonKind::number: return "a number";
    case JsonKind::string: return "a string";
    case JsonKind::array: return "an array";
    case JsonKind::object: return "an object";
  }
  return "a value";
}

JsonDocument parse_json_summary(JsonSource& source, bool (*is_case_key)(const std::string& key)) {
  JsonDocument doc;
  SummaryHandler handler(doc, source, is_case_key);
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
