// Interval arithmetic for the analyses (private): every class of time is a sorted, merged list of
// intervals, measured and clipped by binary search so a million-event trace stays linear.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "profiler/analysis.h"

namespace tb::prof::iv {

using Intervals = std::vector<Interval>;

// Sorts and merges overlapping/touching intervals; drops empty ones.
inline Intervals merge(Intervals v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const Interval& i) { return i.t1 <= i.t0; }), v.end());
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.t0 < b.t0; });
  Intervals out;
  out.reserve(v.size());
  for (const Interval& i : v) {
    if (!out.empty() && i.t0 <= out.back().t1) out.back().t1 = std::max(out.back().t1, i.t1);
    else out.push_back(i);
  }
  return out;
}

inline Intervals::const_iterator first_ending_after(const Intervals& merged, int64_t a) {
  return std::upper_bound(merged.begin(), merged.end(), a, [](int64_t t, const Interval& i) { return t < i.t1; });
}

// Total length of the (merged, sorted) intervals inside [a, b]. O(log n + k).
inline int64_t measure(const Intervals& merged, int64_t a, int64_t b) {
  if (b <= a) return 0;
  int64_t sum = 0;
  for (auto it = first_ending_after(merged, a); it != merged.end() && it->t0 < b; ++it)
    sum += std::min(b, it->t1) - std::max(a, it->t0);
  return sum;
}

// Pieces of the (merged, sorted) intervals inside [a, b], appended to out.
inline void clip(const Intervals& merged, int64_t a, int64_t b, Intervals& out) {
  if (b <= a) return;
  for (auto it = first_ending_after(merged, a); it != merged.end() && it->t0 < b; ++it) {
    const int64_t x = std::max(a, it->t0), y = std::min(b, it->t1);
    if (y > x) out.push_back({x, y});
  }
}

// [a, b] minus the (merged, sorted) intervals, appended to out.
inline void complement(const Intervals& merged, int64_t a, int64_t b, Intervals& out) {
  if (b <= a) return;
  int64_t cur = a;
  for (auto it = first_ending_after(merged, a); it != merged.end() && it->t0 < b; ++it) {
    if (it->t0 > cur) out.push_back({cur, it->t0});
    cur = std::max(cur, it->t1);
  }
  if (cur < b) out.push_back({cur, b});
}

// The pieces of `pieces` (sorted, disjoint) that lie inside the merged set / outside it.
inline Intervals intersect(const Intervals& pieces, const Intervals& merged) {
  Intervals out;
  for (const Interval& p : pieces) clip(merged, p.t0, p.t1, out);
  return out;
}
inline Intervals subtract(const Intervals& pieces, const Intervals& merged) {
  Intervals out;
  for (const Interval& p : pieces) complement(merged, p.t0, p.t1, out);
  return out;
}
inline int64_t total(const Intervals& v) {
  int64_t s = 0;
  for (const Interval& i : v) s += i.length();
  return s;
}
inline Interval largest(const Intervals& v) {
  Interval best;
  for (const Interval& i : v)
    if (i.length() > best.length()) best = i;
  return best;
}

}  // namespace tb::prof::iv
