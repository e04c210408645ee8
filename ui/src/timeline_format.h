// How the timeline writes a duration (its ruler, labels and tooltips): "850 ns", "12.5 µs", "3.20 ms", "1.250 s".
#pragma once

#include <QString>
#include <cmath>

namespace tb::ui {

inline QString fmtDuration(double ns) {
  const double a = std::abs(ns);
  if (a < 1e3) return QString::number(ns, 'f', 0) + " ns";
  if (a < 1e6) return QString::number(ns / 1e3, 'f', a < 1e4 ? 2 : 1) + " µs";
  if (a < 1e9) return QString::number(ns / 1e6, 'f', a < 1e7 ? 2 : 1) + " ms";
  return QString::number(ns / 1e9, 'f', 3) + " s";
}

}  // namespace tb::ui
