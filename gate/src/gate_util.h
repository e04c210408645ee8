// What the gate's files share: the clock its times are on and printf-style numbers.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace tb::gate {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace tb::gate
