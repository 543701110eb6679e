#include "support/errors.hpp"

namespace meshrun {

void fail_check(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(std::string("internal error: ") + msg + " (" + cond + " failed at " + file +
                      ":" + std::to_string(line) + ")");
}

}  // namespace meshrun
