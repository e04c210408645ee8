// Runs a child process to completion with a deadline (the tuner's fresh-process windows), started and stopped
// by the one launcher (client/launch.h). Never hangs: the child is stopped when the deadline passes. Torch-free,
// private to the engine.
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

}  // namespace tb::engine
