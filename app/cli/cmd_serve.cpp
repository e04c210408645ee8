// Placeholder until its owner lands the real command; replaced, not extended.
#include <cstdio>
#include "commands.h"
namespace tb::cli {
int cmd_serve(int, char**) {
  std::fprintf(stderr, "tunebench-cli: error: 'serve' is not built yet\n");
  return 1;
}
}  // namespace tb::cli
