// Axis ends for live charts.
#pragma once

#include <cmath>

namespace tb::ui {

// An axis end at or above v that moves in round steps (123 -> 150, 1234 -> 1500): a live run's axes change
// every few dozen steps, not at each one (each change lays out and shapes the axis labels again).
inline double roundUpAxis(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1;
  const double unit = std::pow(10.0, std::floor(std::log10(v))) / 2;
  return std::ceil(v / unit) * unit;
}

}  // namespace tb::ui
