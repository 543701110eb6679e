// axis_index_groups (issue #50) on the in-process engine, through the Communicator interface:
// psum, pmean, pmax, pmin, all_gather and psum_scatter over subgroups listed out of rank order,
// on the staged and the direct path, in place and not. Every expected value is computed here,
// serially: the left fold over the subgroup in its listed order (communicator.hpp's rule, what
// JAX 0.10.2 gives on CPU: a psum over [[3, 2, 1, 0]] of 1e8, 1, -1e8, 1 is 0), plain copies for
// the gather. A member passing other groups, or none, is a mismatched collective on every member,
// named in one line; a table that is not a partition into groups of one size is refused.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <exception>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "collectives/in_process.hpp"
#include "support/errors.hpp"
#include "support/run_ranks.hpp"

using namespace meshrun;
using meshrun::testing::run_ranks;
using meshrun::testing::run_ranks_collect;

namespace {

constexpr std::size_t kHuge = std::size_t{1} << 40;

// Full-mantissa floats of spread exponents: a fold's order shows in its bits.
std::vector<std::vector<float>> inputs(int n, std::size_t count, unsigned seed) {
  std::mt19937_64 g(seed);
  std::vector<std::vector<float>> in(static_cast<std::size_t>(n), std::vector<float>(count));
  for (auto& v : in) {
    for (float& x : v) {
      const float m = 1.0f + static_cast<float>(g() >> 40) / static_cast<float>(1ull << 24);
      x = std::ldexp(m, static_cast<int>(g() % 13) - 6) * ((g() & 1) ? -1.0f : 1.0f);
      if (g() % 11 == 0) x = (g() & 1) ? 0.0f : -0.0f;  // signed zeros: pmax's order shows too
    }
  }
  return in;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
         });
}

GroupOptions switch_at(std::size_t staged_max_bytes) {
  GroupOptions o;
  o.staged_max_bytes = staged_max_bytes;
  o.timeout = std::chrono::seconds(60);
  return o;
}

// The serial reference of `op` for member r.
std::vector<float> expected(CollectiveOp op, const IndexGroups& groups,
                            const std::vector<std::vector<float>>& in, int r) {
  const std::span<const int> sub = groups.of(r);
  const std::size_t m = in[0].size(), k = sub.size();
  std::vector<float> out;
  if (op == CollectiveOp::kAllGather) {
    for (int s : sub)
      out.insert(out.end(), in[static_cast<std::size_t>(s)].begin(),
                 in[static_cast<std::size_t>(s)].end());
    return out;
  }
  const std::size_t block = op == CollectiveOp::kReduceScatter ? m / k : m;
  const std::size_t at =
      op == CollectiveOp::kReduceScatter ? static_cast<std::size_t>(groups.position(r)) * block : 0;
  for (std::size_t i = 0; i < block; ++i) {
    float acc = op == CollectiveOp::kAllReduceMax   ? -INFINITY
                : op == CollectiveOp::kAllReduceMin ? INFINITY
                                                    : in[static_cast<std::size_t>(sub[0])][at + i];
    for (std::size_t p = 0; p < k; ++p) {
      const float v = in[static_cast<std::size_t>(sub[p])][at + i];
      if (op == CollectiveOp::kAllReduceMax) {
        acc = std::max(acc, v);
      } else if (op == CollectiveOp::kAllReduceMin) {
        acc = std::min(acc, v);
      } else if (p > 0) {
        acc += v;
      }
    }
    if (op == CollectiveOp::kAllReduceMean) acc /= static_cast<float>(k);
    out.push_back(acc);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(index_groups)

// Every op, on both paths (everything staged, everything direct, the default switch), groups of
// 1, 2, 3 and 4 listed out of rank order: each member gets the serial fold (or concatenation, or
// block) of its own subgroup in the listed order, bit for bit; reductions in place too.
BOOST_AUTO_TEST_CASE(every_op_equals_the_serial_fold_in_listed_order) {
  const std::vector<std::vector<std::vector<int>>> tables = {
      {{5, 2, 0}, {1, 4, 3}},        // 6 members, groups of 3
      {{3, 1}, {0, 2}, {5, 4}},      // 6 members, groups of 2
      {{6, 0, 3, 5}, {1, 7, 2, 4}},  // 8, groups of 4
      {{0}, {1}, {2}, {3}},          // 4, groups of 1
  };
  const CollectiveOp ops[] = {CollectiveOp::kAllReduce,    CollectiveOp::kAllReduceMean,
                              CollectiveOp::kAllReduceMax, CollectiveOp::kAllReduceMin,
                              CollectiveOp::kAllGather,    CollectiveOp::kReduceScatter};
  int runs = 0;
  for (const auto& table : tables) {
    int n = 0;
    for (const auto& g : table) n += static_cast<int>(g.size());
    const IndexGroups groups(table, n);
    const auto k = static_cast<std::size_t>(groups.subgroup_size());
    for (std::size_t count : {std::size_t{0}, std::size_t{12}, std::size_t{5003 * 4}}) {
      for (std::size_t sw : {std::size_t{0}, kHuge, std::size_t{16 * 1024}}) {
        for (CollectiveOp op : ops) {
          for (bool in_place : {false, true}) {
            const bool reduction =
                op != CollectiveOp::kAllGather && op != CollectiveOp::kReduceScatter;
            if (in_place && !reduction) continue;
            const auto in = inputs(n, count, static_cast<unsigned>(count + n + sw % 7));
            auto bufs = in;
            const std::size_t out_count = op == CollectiveOp::kAllGather       ? count * k
                                          : op == CollectiveOp::kReduceScatter ? count / k
                                                                               : count;
            if (op == CollectiveOp::kReduceScatter && count % k != 0) continue;
            std::vector<std::vector<float>> outs(static_cast<std::size_t>(n),
                                                 std::vector<float>(out_count, NAN));
            InProcessGroup g(n, "data", switch_at(sw));
            run_ranks(g, [&](Communicator& c, int r) {
              auto& buf = bufs[static_cast<std::size_t>(r)];
              c.grouped(op, groups, buf,
                        in_place ? std::span<float>(buf)
                                 : std::span<float>(outs[static_cast<std::size_t>(r)]));
            });
            for (int r = 0; r < n; ++r) {
              const auto& got =
                  in_place ? bufs[static_cast<std::size_t>(r)] : outs[static_cast<std::size_t>(r)];
              BOOST_TEST(same_bits(got, expected(op, groups, in, r)),
                         op_name(op)
                             << " groups " << groups.str() << " count " << count << " switch " << sw
                             << (in_place ? " in place" : "") << ": member " << r);
            }
            ++runs;
          }
        }
      }
    }
  }
  BOOST_TEST_MESSAGE(runs << " grouped runs");
}

// JAX's own example of the order (communicator.hpp): 1e8, 1, -1e8, 1 on four devices.
BOOST_AUTO_TEST_CASE(the_psum_folds_in_the_listed_order_as_jax_does) {
  const std::vector<float> x = {1e8f, 1.0f, -1e8f, 1.0f};
  for (const auto& [table, want] : std::vector<std::pair<std::vector<std::vector<int>>, float>>{
           {{{0, 1, 2, 3}}, 1.0f}, {{{3, 2, 1, 0}}, 0.0f}, {{{0, 2, 1, 3}}, 2.0f}}) {
    const IndexGroups groups(table, 4);
    std::vector<float> got(4, NAN);
    InProcessGroup g(4, "i");
    run_ranks(g, [&](Communicator& c, int r) {
      c.grouped(CollectiveOp::kAllReduce, groups, std::span<const float>(&x[r], 1),
                std::span<float>(&got[static_cast<std::size_t>(r)], 1));
    });
    for (float v : got) BOOST_TEST(v == want, groups.str());
  }
}

// One member passing another table (or none) than its peers: every member fails with the one
// line naming both calls, and nobody combines values.
BOOST_AUTO_TEST_CASE(a_member_with_other_groups_is_a_mismatched_collective) {
  const IndexGroups pairs({{0, 1}, {2, 3}}, 4), crossed({{0, 2}, {1, 3}}, 4);
  for (bool ungrouped : {false, true}) {
    std::vector<float> in(8, 1.0f);
    std::vector<std::vector<float>> outs(4, std::vector<float>(8));
    InProcessGroup g(4, "data");
    const auto errors = run_ranks_collect(
        g,
        [&](Communicator& c, int r) {
          auto& out = outs[static_cast<std::size_t>(r)];
          if (r == 2 && ungrouped) {
            c.all_reduce_sum(in, out);
          } else {
            c.grouped(CollectiveOp::kAllReduce, r == 2 ? crossed : pairs, in, out);
          }
        },
        /*abort_on_error=*/false);
    for (int r = 0; r < 4; ++r) {
      const auto& e = errors[static_cast<std::size_t>(r)];
      BOOST_TEST_REQUIRE(static_cast<bool>(e), "member " << r << " did not fail");
      try {
        std::rethrow_exception(e);
      } catch (const CollectiveError& x) {
        const std::string m = x.what();
        BOOST_TEST(m.find("mismatched collectives on 'data': device ") == 0, m);
        BOOST_TEST(
            m.find("psum #1 with 8 elements over axis_index_groups of 2") != std::string::npos, m);
        BOOST_TEST(m.find('\n') == std::string::npos, m);
        // The member without groups is named as such, the others with theirs.
        BOOST_TEST(m.find(ungrouped ? "device 2 called psum #1 with 8 elements over"
                                    : "device 2 called psum #1 with 8 elements over "
                                      "axis_index_groups of 2") ==
                       (ungrouped ? std::string::npos : m.find("device 2 called")),
                   m);
      } catch (const std::exception& x) {
        BOOST_TEST(false, "member " << r << ": " << x.what());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(tables_that_are_not_a_partition_into_equal_groups_are_refused) {
  BOOST_TEST(IndexGroups::invalid({{0, 1}, {2, 3}}, 4) == "");
  BOOST_TEST(IndexGroups::invalid({{0}, {1, 2, 3}}, 4) ==
             "groups of 1 and 3 members (they must be of one size)");
  BOOST_TEST(IndexGroups::invalid({{0, 1}, {1, 2}}, 4) == "member 1 is in two groups");
  BOOST_TEST(IndexGroups::invalid({{0, 1}}, 4) == "member 2 is in no group");
  BOOST_TEST(IndexGroups::invalid({{0, 1}, {2, 5}}, 4) == "member 5 is not in [0, 4)");
  BOOST_TEST(IndexGroups::invalid({}, 4) == "no groups");
  const IndexGroups g({{3, 0}, {2, 1}}, 4);
  BOOST_TEST(g.str() == "[[3,0],[2,1]]");
  BOOST_TEST(g.subgroup_size() == 2);
  BOOST_TEST(g.position(0) == 1);
  BOOST_TEST(g.of(1)[0] == 2);
  BOOST_TEST(g.hash() != IndexGroups({{0, 3}, {2, 1}}, 4).hash());
}

BOOST_AUTO_TEST_SUITE_END()
