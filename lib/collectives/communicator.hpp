// Communicator: how data moves between the devices of one mesh axis. The programs and the mesh
// see only this interface; the in-process engine (in_process.hpp) implements it with shared
// memory and atomics, and the MPI engine (mpi/mpi_group.hpp) with one OS process per rank.
//
// An engine implements the operations it can: each one it leaves out reports, when called, that
// this engine does not implement it (UnimplementedError, "mpi does not implement all_gather"), as
// XLA's communicator returns Unimplemented -- so a new collective can be added to one engine first.
//
// Every call is collective: all `size()` members make the same calls in the same order with the
// same op and element count. Every reduction folds the members' values in rank order
// 0, 1, ..., n-1 (((v0 + v1) + v2) + ...), so every member gets identical bits and so does every
// repeated run, whatever the timing or the message size.
//
// pmax and pmin fold as XLA's CPU collectives do (what jax.lax.pmax / pmin return on CPU, checked
// with JAX 0.10.2): from -inf (pmin: +inf), acc = max(acc, v_r) for r = 0, 1, ..., n-1, where
// max(a, b) is std::max's (a < b) ? b : a and min(a, b) is std::min's (b < a) ? b : a. So
//  - a NaN never wins: it compares false, the accumulator stays; a group of NaNs gives -inf
//    (pmin: +inf). Not lax.max's rule (elementwise, a NaN operand propagates): XLA's collective
//    folds with std::max, not with its max instruction.
//  - of equal values the lowest rank's bits win: pmax of (-0.0, +0.0) is -0.0, of (+0.0, -0.0)
//    is +0.0 (lax.max would give +0.0 for both).
// Values are float32 whatever the program's dtype (int32 and bool held exactly), so the same fold
// is int32's max and bool's or (pmin: and).
//
// axis_index_groups (JAX's psum(x, 'i', axis_index_groups=[[0, 1], [2, 3]]); also pmean, pmax,
// pmin, all_gather, psum_scatter, and all_to_all, which the interpreter builds from all_gather):
// the members 0..n-1 of a group split into subgroups of one size k (IndexGroups), each member's
// collective running over its own subgroup only (Communicator::grouped). Its rank there is its
// position in the subgroup as listed, not its rank in the group: an all_gather concatenates, and
// a psum_scatter hands out blocks, in the listed order, and a reduction folds in it,
// ((v_g0 + v_g1) + v_g2) + ... for the subgroup [g0, g1, g2, ...] -- what XLA's CPU all-reduce
// does with replica_groups (checked with JAX 0.10.2 on 4 devices holding 1e8, 1, -1e8, 1: a psum
// over [[3, 2, 1, 0]] gives 0, over [[0, 2, 1, 3]] 2, over [[0, 1, 2, 3]] 1; a pmax over
// [[1, 0], [3, 2]] of -0.0, +0.0, +0.0, -0.0 gives +0.0, +0.0, -0.0, -0.0). pmean divides by k.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshrun {

enum class CollectiveOp : std::uint8_t {
  kAllReduce,
  kAllReduceMean,
  kAllGather,
  kReduceScatter,
  kPermute,
  kAllReduceMax,  // last: the numbers above are carried in MPI headers and CollectiveWhere
  kAllReduceMin
};
const char* op_name(CollectiveOp op);  // JAX's words: "psum", "all_gather", ...
// How every message, trace and profile names one collective: "psum #3" (the group's sequence
// number), and with its group "psum #3 on 'data'".
std::string collective_label(std::string_view op, std::uint64_t seq);
std::string collective_label(CollectiveOp op, std::uint64_t seq);
std::string collective_label(CollectiveOp op, std::uint64_t seq, std::string_view group);

// A ppermute's source_of table as one number (FNV-1a), which every engine compares between members
// to tell mismatched permutations apart.
std::uint64_t permutation_hash(std::span<const int> source_of);

// A collective's first sync point as one member saw it: when it arrived, and when the last member
// of the group had arrived (what it waited for). Left untouched by an engine that cannot tell, or
// when the wait ended in an error (`complete` then stays as it was).
// A partition of a group's members 0..n-1 into subgroups of one size (axis_index_groups, above).
// Every member holds the same table: the engines compare hash() between members as they compare a
// permutation's, so members that pass different tables get the mismatched-collective error.
class IndexGroups {
 public:
  // "" when `groups` splits 0..n-1 into non-empty subgroups of one size, each member in exactly
  // one; else why not, in a few words ("member 2 is in two groups", "groups of 1 and 3 members").
  static std::string invalid(const std::vector<std::vector<int>>& groups, int n);
  // `groups` must be valid (invalid() == "").
  IndexGroups(std::vector<std::vector<int>> groups, int n);
  int members() const { return static_cast<int>(subgroup_of_.size()); }           // n
  int subgroup_size() const { return static_cast<int>(groups_.front().size()); }  // k
  // Member `rank`'s subgroup, as listed, and its position there.
  std::span<const int> of(int rank) const {
    return groups_[static_cast<std::size_t>(subgroup_of_[static_cast<std::size_t>(rank)])];
  }
  int position(int rank) const { return position_[static_cast<std::size_t>(rank)]; }
  std::uint64_t hash() const { return hash_; }  // FNV-1a of the table, never 0
  std::string str() const;                      // "[[0,1],[2,3]]"

 private:
  std::vector<std::vector<int>> groups_;
  std::vector<int> subgroup_of_, position_;
  std::uint64_t hash_ = 0;
};

struct SyncMarks {
  std::chrono::steady_clock::time_point arrived{}, complete{};
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  // --profile: where the next collectives record their SyncMarks; nullptr (the default) records
  // nothing, and then costs the collective one pointer check.
  void mark_syncs(SyncMarks* marks) { marks_ = marks; }
  // Where the next collectives are called from: a number equal on every member for one place of
  // the program (the interpreter's equation, hashed), and its text for messages; 0 and null
  // where nothing names it (the built-in programs). Every engine compares it between members as
  // it compares the op and the count, so members that reach a collective from different places
  // -- a cond's other branch, one more iteration of a loop -- get the mismatched-collective error
  // instead of combining unrelated values.
  void set_site(std::uint64_t site, const char* text) {
    site_ = site;
    site_text_ = text;
  }
  // This member's body returned: it makes no more calls in this run. An engine that can tell
  // (the in-process one) then fails a member still waiting for it, at once, with the
  // mismatched-collective error rather than at its deadline; by default nothing happens.
  virtual void depart() {}
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Number of collectives this member has started (the next one gets sequence number seq()+1).
  virtual std::uint64_t seq() const = 0;

  // How messages name the engine: "in-process", "mpi".
  virtual const char* engine() const = 0;

  // The operations. Each default throws UnimplementedError ("<engine> does not implement <op>")
  // before anything is sent or counted.
  // out[i] = in_0[i] + ... + in_{n-1}[i]. in and out have the same size and may alias.
  virtual void all_reduce_sum(std::span<const float> in, std::span<float> out);
  // The same sum, then each element divided by n (jax.lax.pmean: a division, not a multiplication
  // by 1/n). A collective of its own, so errors and mismatches name it "pmean".
  virtual void all_reduce_mean(std::span<const float> in, std::span<float> out);
  // out[i] = max (min) of in_0[i], ..., in_{n-1}[i] by the fold above (jax.lax.pmax / pmin).
  // in and out have the same size and may alias.
  virtual void all_reduce_max(std::span<const float> in, std::span<float> out);
  virtual void all_reduce_min(std::span<const float> in, std::span<float> out);
  // out = in_0 ++ in_1 ++ ... ++ in_{n-1}; out.size() == n * in.size().
  virtual void all_gather(std::span<const float> in, std::span<float> out);
  // out = the rank-th block of (in_0 + ... + in_{n-1}); in.size() == n * out.size().
  virtual void reduce_scatter_sum(std::span<const float> in, std::span<float> out);
  // out = in_{source_of[rank]}, or zeros where source_of[rank] < 0. source_of has n entries and
  // is the same table on every member. in and out have the same size and must not alias.
  virtual void permute(std::span<const float> in, std::span<float> out,
                       std::span<const int> source_of);
  // `op` over this member's subgroup of `groups` only (axis_index_groups, above; groups.members()
  // == size()), k = groups.subgroup_size(): kAllReduce, kAllReduceMean (the sum divided by k),
  // kAllReduceMax, kAllReduceMin (in and out of one size; they may alias), kAllGather
  // (out.size() == k * in.size(): the subgroup's inputs in its listed order), kReduceScatter
  // (in.size() == k * out.size(): block position(rank) of the subgroup's sum). Errors and traces
  // name the op as the ungrouped one ("psum #3"); a member calling it with other groups than a
  // peer, or without groups, is a mismatched collective.
  virtual void grouped(CollectiveOp op, const IndexGroups& groups, std::span<const float> in,
                       std::span<float> out);

 protected:
  // Throws UnimplementedError: "<engine()> does not implement <op_name(op)>".
  [[noreturn]] void unimplemented(CollectiveOp op) const;
  SyncMarks* marks_ = nullptr;
  std::uint64_t site_ = 0;
  const char* site_text_ = nullptr;
};

}  // namespace meshrun
