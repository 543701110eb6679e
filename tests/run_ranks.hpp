// The tests' "run n ranks as threads": fn(comm, rank) on one std::jthread per member of an
// InProcessGroup, each rank's error kept. A rank that throws aborts the group (so the others are
// released instead of waiting for it) unless abort_on_error is false -- for tests where every
// member must detect a failure by itself.
#pragma once

#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/in_process.hpp"

namespace meshrun::testing {

template <class F>
std::vector<std::exception_ptr> run_ranks_collect(InProcessGroup& g, F&& fn, bool abort_on_error) {
  const int n = g.size();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          fn(g.member(r), r);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
          if (abort_on_error) g.abort();
        }
      });
    }
  }  // joins
  return errors;
}

// The same, rethrowing the lowest rank's error.
template <class F>
void run_ranks(InProcessGroup& g, F&& fn) {
  for (auto& e : run_ranks_collect(g, std::forward<F>(fn), true))
    if (e) std::rethrow_exception(e);
}

}  // namespace meshrun::testing
