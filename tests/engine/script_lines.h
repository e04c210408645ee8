// What the script-patch tests share: where a line of a script's text is.
#pragma once

#include <sstream>
#include <string>

namespace tb::test_util {

// The 1-based number of the first line of `text` that contains `needle`; 0 when none does.
inline int line_of(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n)
    if (l.find(needle) != std::string::npos) return n;
  return 0;
}

}  // namespace tb::test_util
