// The local members of an MpiGroup as threads, through the tests' one helper
// (support/run_ranks.hpp): a member that throws anything but a CollectiveError aborts the group
// with "device D (rank r) failed after <op> #<seq> on '<axis>': <what>", which every rank reports.
#pragma once

#include <functional>
#include <string>

#include "collectives/mpi/mpi_group.hpp"
#include "support/errors.hpp"
#include "support/run_ranks.hpp"

namespace meshrun::testing {

inline MemberErrors run_mpi_members(MpiGroup& group,
                                    const std::function<void(MpiCommunicator&)>& body) {
  return run_members(
      group.local_devices(), [&](int j) { body(group.member(j)); },
      [&](int j, const std::exception_ptr& error) {
        try {
          std::rethrow_exception(error);
        } catch (const CollectiveError&) {  // the group knows why already
        } catch (const std::exception& e) {
          MpiCommunicator& c = group.member(j);
          group.abort("device " + std::to_string(c.rank()) + " (rank " +
                      std::to_string(group.rank()) + ") failed after " + op_name(c.last_op()) +
                      " #" + std::to_string(c.seq()) + " on '" + group.axis() + "': " + e.what());
        }
      });
}

}  // namespace meshrun::testing
