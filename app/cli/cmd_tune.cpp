// Placeholder until its owner lands the real command; replaced, not extended.
#include <cstdio>
#include "commands.h"
namespace tb::cli {
int cmd_tune(int, char**) {
  std::fprintf(stderr, "tunebench-cli: error: 'tune' is not built yet\n");
  return 1;
}
}  // namespace tb::cli
