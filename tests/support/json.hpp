// nlohmann::json's parser for the tests, compiled once (support/json.cpp, the meshrun_test_json
// library) instead of in every test file that reads JSON: json::parse instantiates the lexer and
// the parser, about 4-5 s of one test file's compile under ASan (issue #32.7).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace meshrun::testing {

// json::parse(text): throws nlohmann::json::parse_error on a text that is not JSON.
nlohmann::json parse_json(const std::string& text);
// The same, keeping the members' order.
nlohmann::ordered_json parse_ordered_json(const std::string& text);

}  // namespace meshrun::testing
