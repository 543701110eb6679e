// Deliberate failures, so users and tests can watch the failure paths:
//   fail:D@K  -- device D throws when it reaches its K-th collective (K from 1)
//   stall:D@K -- device D never arrives at its K-th collective (it waits until the mesh aborts)
//   internal:D@K -- device D hits a (simulated) bug in meshrun there: an InternalError, exit 4,
//                   which no grader may mistake for a failure of the case
#pragma once

#include <cstdint>
#include <string>

namespace meshrun {

struct Injection {
  enum class Kind { kFail, kStall, kInternal } kind;
  int device;
  std::uint64_t at;  // the collective's sequence number on that device, from 1
};

// Parses "fail:3@2" / "stall:0@1"; throws InputError naming `flag` on anything else.
Injection parse_injection(const std::string& text, const std::string& flag = "--inject");
// "fail:3@2": the spec parse_injection reads.
std::string injection_str(const Injection& inj);
// "fail:3@9 never fired: device 3 entered only 2 collective(s)": an injection that tested nothing,
// which every command reports as a usage error (`entered`: that device's count).
std::string unfired_message(const Injection& inj, std::uint64_t entered);

}  // namespace meshrun
