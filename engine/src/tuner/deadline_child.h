// Runs a child process to completion with a deadline (the tuner's fresh-process windows). Never hangs: the
// child is killed when the deadline passes. Torch-free, private to the engine.
#pragma once

#include <string>
#include <vector>

namespace tb::engine {

struct ChildResult {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;      // -1 when killed by a signal or not started
  std::string stderr_tail; // the child's last "error: " line on stderr (what follows it), else its last line
  std::string error;       // why it could not start
  double seconds = 0;      // wall time from start to exit (or to the kill)
};

// argv[0] is the program path. `env` is the complete environment ("K=V"). stdout is discarded.
ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s);

// This process's environment for a fresh run: without the allocator settings it may carry (LD_PRELOAD of
// jemalloc/tcmalloc, GLIBC_TUNABLES malloc entries, the re-exec marker), so a child runs exactly the allocator
// its own --set cpu_allocator asks for; and without torchrun's rank variables (RANK, WORLD_SIZE, MASTER_PORT,
// ...), so that a child of a rank (a live group's tune) is its own process or group, never a second rank 0
// of this process's group.
std::vector<std::string> fresh_environment();

}  // namespace tb::engine
