#include "mesh/injection.hpp"

#include <charconv>

#include "support/errors.hpp"

namespace meshrun {

namespace {
template <class T>
bool parse_whole(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

Injection parse_injection(const std::string& text, const std::string& flag) {
  const auto colon = text.find(':'), at = text.find('@');
  Injection inj{Injection::Kind::kFail, 0, 0};
  const std::string kind = text.substr(0, colon);
  bool ok = colon != std::string::npos && at != std::string::npos && at > colon;
  if (ok) {
    if (kind == "fail") {
      inj.kind = Injection::Kind::kFail;
    } else if (kind == "stall") {
      inj.kind = Injection::Kind::kStall;
    } else if (kind == "internal") {
      inj.kind = Injection::Kind::kInternal;
    } else {
      ok = false;
    }
  }
  ok = ok && parse_whole(std::string_view(text).substr(colon + 1, at - colon - 1), inj.device) &&
       parse_whole(std::string_view(text).substr(at + 1), inj.at) && inj.device >= 0 && inj.at >= 1;
  if (!ok) {
    throw InputError(
        flag,
        "'" + text + "' is not fail:DEVICE@K, stall:DEVICE@K or internal:DEVICE@K (K from 1)");
  }
  return inj;
}

std::string injection_str(const Injection& inj) {
  const char* kind = inj.kind == Injection::Kind::kFail    ? "fail:"
                     : inj.kind == Injection::Kind::kStall ? "stall:"
                                                           : "internal:";
  return kind + std::to_string(inj.device) + "@" + std::to_string(inj.at);
}

std::string unfired_message(const Injection& inj, std::uint64_t entered) {
  return injection_str(inj) + " never fired: device " + std::to_string(inj.device) +
         " entered only " + std::to_string(entered) + " collective(s)";
}

}  // namespace meshrun
