// libstdc++'s std::sort (its introsort: median of three, unguarded partition, heap sort past
// 2 log2 n levels, insertion sort of runs of 16), step for step, with its two unguarded loops
// bounded by the range: under a comparison that is a strict weak order the bounds are never
// reached and the order is std::sort's; under one that is not -- a float `>` over NaNs, which
// XLA:CPU's approx_top_k sorts with -- std::sort may read outside the range where this stops at
// its ends, and gives std::sort's order wherever std::sort stays inside (JAX 0.10.2's approx_max_k
// on rows of NaNs, -0.0 and ties of 10 to 200 elements: the same indices). Internal to
// lib/interp (ops/sorting.cpp).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <utility>

namespace meshrun::interp::prim::guarded {

template <class T, class Less>
void linear_insert(T* first, T* last, Less less) {  // libstdc++'s __unguarded_linear_insert
  T val = std::move(*last);
  T* next = last - 1;
  while (last != first && less(val, *next)) {
    *last = std::move(*next);
    last = next;
    --next;
  }
  *last = std::move(val);
}

template <class T, class Less>
void insertion_sort(T* first, T* last, Less less) {
  if (first == last) return;
  for (T* i = first + 1; i != last; ++i) {
    if (less(*i, *first)) {
      T val = std::move(*i);
      std::move_backward(first, i, i + 1);
      *first = std::move(val);
    } else {
      linear_insert(first, i, less);
    }
  }
}

template <class T, class Less>
void move_median_to_first(T* result, T* a, T* b, T* c, Less less) {
  if (less(*a, *b)) {
    if (less(*b, *c))
      std::iter_swap(result, b);
    else if (less(*a, *c))
      std::iter_swap(result, c);
    else
      std::iter_swap(result, a);
  } else if (less(*a, *c)) {
    std::iter_swap(result, a);
  } else if (less(*b, *c)) {
    std::iter_swap(result, c);
  } else {
    std::iter_swap(result, b);
  }
}

template <class T, class Less>
T* partition(T* first, T* last, T* pivot, Less less) {  // __unguarded_partition
  T* const lo = first;
  T* const hi = last;
  while (true) {
    while (first != hi && less(*first, *pivot)) ++first;
    --last;
    while (last != lo && less(*pivot, *last)) --last;
    if (!(first < last)) return first;
    std::iter_swap(first, last);
    ++first;
  }
}

template <class T, class Less>
void introsort_loop(T* first, T* last, int depth, Less less) {
  while (last - first > 16) {
    if (depth == 0) {
      std::partial_sort(first, last, last, less);  // heap sort: bounded whatever `less`
      return;
    }
    --depth;
    T* mid = first + (last - first) / 2;
    move_median_to_first(first, first + 1, mid, last - 1, less);
    T* cut = partition(first + 1, last, first, less);
    introsort_loop(cut, last, depth, less);
    last = cut;
  }
}

template <class T, class Less>
void sort(T* first, T* last, Less less) {
  if (first == last) return;
  const auto n = static_cast<std::size_t>(last - first);
  introsort_loop(first, last, 2 * (static_cast<int>(std::bit_width(n)) - 1), less);
  if (last - first > 16) {
    insertion_sort(first, first + 16, less);
    for (T* i = first + 16; i != last; ++i) linear_insert(first, i, less);
  } else {
    insertion_sort(first, last, less);
  }
}

}  // namespace meshrun::interp::prim::guarded
