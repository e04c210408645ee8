// A count as a person reads an estimate: two significant figures, its thousands grouped ("15,000", "2,900", "85").
// The tuner's trials and the GUI's Compare panel say a break-even this way, so one change reads the same in both.
#pragma once

#include <cmath>
#include <string>

namespace tb {

inline std::string about_count(double n) {
  if (!(n >= 0) || !std::isfinite(n)) return "?";
  const double step = n >= 1000 ? std::pow(10.0, std::floor(std::log10(n)) - 1) : n >= 100 ? 10 : 1;
  std::string digits = std::to_string(static_cast<long long>(std::ceil(n / step) * step));
  for (int at = int(digits.size()) - 3; at > 0; at -= 3) digits.insert(size_t(at), ",");
  return digits;
}

}  // namespace tb
