// Placeholder until its owner lands the real command; replaced, not extended.
#include <cstdio>
#include "commands.h"
namespace tb::cli {
int cmd_knobs(int, char**) {
  std::fprintf(stderr, "tunebench-cli: error: 'knobs' is not built yet\n");
  return 1;
}
}  // namespace tb::cli
