// The headers most test files include, precompiled once per build tree and reused by every test
// executable (tests/CMakeLists.txt). Parsing them was a second or two of each of the 58 test
// files' compile: the test objects took 209 CPU seconds in the release tree and 261 in the ASan
// tree without it, 161 and 224 with it (issue #32.7; each object compiled alone, two at a time).
// Only headers from outside meshrun, so that a change to lib/ does not rebuild it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
