#include "support/json.hpp"

namespace meshrun::testing {

nlohmann::json parse_json(const std::string& text) { return nlohmann::json::parse(text); }

nlohmann::ordered_json parse_ordered_json(const std::string& text) {
  return nlohmann::ordered_json::parse(text);
}

}  // namespace meshrun::testing
