// What the files of the MPI group share (not part of the API): message tags, the header format,
// the wait's pacing, and small conversions. mpi_group.hpp holds the protocol.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "collectives/communicator.hpp"
#include "support/errors.hpp"

namespace meshrun::mpi_detail {

// Message tags on the data communicator. Chain chunks of consecutive calls cannot be confused:
// MPI never lets a message overtake an earlier one with the same source, tag and communicator.
inline constexpr int kChainTag = 1;
inline constexpr int kGatherTag = 2;
inline constexpr int kPermuteTag = 16;  // + the receiving device's global id
// The header in front of every gathered block and chain chunk: op (with a grouped call's subgroup
// size above its low 8 bits: op_word), element count, sequence number and permutation hash (a
// grouped call's: its groups' table hash; both with the site folded in), 4 x 64 bits carried as 8
// floats (MPI copies them bit for bit).
inline constexpr std::size_t kHdr = 8;
// Abort notices: at most this many characters of the reason.
inline constexpr int kNoticeMax = 1024;
// A cross-rank wait re-tests between sched_yield calls for this long, then sleeps between tests.
inline constexpr auto kYieldFor = std::chrono::microseconds(200);
inline constexpr auto kSleep = std::chrono::microseconds(50);
// The watcher polls the notice channel (and the local abort flag) this often.
inline constexpr auto kWatchEvery = std::chrono::milliseconds(1);

inline int as_int(std::size_t v) {
  MESHRUN_CHECK(v <= static_cast<std::size_t>(INT32_MAX), "MPI message larger than 2^31 elements");
  return static_cast<int>(v);
}

inline std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

// Writes the header of a gathered block or chain chunk (kHdr floats) at `dst`.
inline std::uint64_t op_word(CollectiveOp op, std::uint32_t subgroup) {
  return static_cast<std::uint64_t>(op) | std::uint64_t{subgroup} << 8;
}
inline void write_header(float* dst, std::uint64_t op_word, std::uint64_t count, std::uint64_t seq,
                         std::uint64_t hash) {
  const std::uint64_t h[4] = {op_word, count, seq, hash};
  std::memcpy(dst, h, sizeof h);
}

}  // namespace meshrun::mpi_detail
