// The tests' one "run the members of a group as threads", for either engine's groups: fn(j) on one
// std::jthread per local member j, each member's error kept, and the first cause among them chosen
// by the mesh's own rule (collectives/first_cause.hpp). A member that throws calls on_error(j) --
// typically aborting the group, so the others are released instead of waiting for it.
// run_ranks / run_ranks_collect: over an InProcessGroup; tests/mpi/mpi_members.hpp: over an
// MpiGroup.
#pragma once

#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/first_cause.hpp"
#include "collectives/in_process.hpp"

namespace meshrun::testing {

struct MemberErrors {
  std::vector<std::exception_ptr> errors;  // per member; null where fn returned
  int first = -1;                          // FirstCause's pick, -1 if none failed
  void rethrow_first() const {
    if (first >= 0) std::rethrow_exception(errors[static_cast<std::size_t>(first)]);
  }
};

template <class Fn, class OnError>
MemberErrors run_members(int count, Fn&& fn, OnError&& on_error) {
  MemberErrors out;
  out.errors.resize(static_cast<std::size_t>(count));
  FirstCause first;
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(count));
    for (int j = 0; j < count; ++j) {
      threads.emplace_back([&, j] {
        try {
          fn(j);
        } catch (...) {
          auto& e = out.errors[static_cast<std::size_t>(j)];
          e = std::current_exception();
          first.note(j, e);
          on_error(j, e);
        }
      });
    }
  }  // joins
  out.first = first.first();
  return out;
}

// fn(comm, rank) for every member of `g`; a member that throws aborts the group unless
// abort_on_error is false -- for tests where every member must detect a failure by itself.
template <class F>
std::vector<std::exception_ptr> run_ranks_collect(InProcessGroup& g, F&& fn, bool abort_on_error) {
  return run_members(
             g.size(), [&](int r) { fn(g.member(r), r); },
             [&](int, const std::exception_ptr&) {
               if (abort_on_error) g.abort();
             })
      .errors;
}

// The same, rethrowing the first cause.
template <class F>
void run_ranks(InProcessGroup& g, F&& fn) {
  run_members(
      g.size(), [&](int r) { fn(g.member(r), r); },
      [&](int, const std::exception_ptr&) { g.abort(); })
      .rethrow_first();
}

}  // namespace meshrun::testing
