// One way to start a child process and one way to stop it (client/). Every child TuneBench starts outside
// the GUI's event loop goes through Process::launch: the tuner's fresh-process runs (a deadline), the ranks
// of a local group (die with their launcher), the ssh streams of remote runs, the protocol channel of a
// script or a serve (ChildProcess, child_process.h). Every stop goes down one ladder: the caller asks first
// in its own way (a `stop` message, closing the child's stdin), then stop() sends SIGTERM and, `grace_s`
// later, SIGKILL; the child is always reaped. (Anchor: Hotspot's job tracker, one owner per process.)
//
// Threading: one thread waits for a Process (poll/wait/stop); another may signal() it (a watchdog) as long
// as it knows the process has not been reaped yet (its own bookkeeping under a lock, as the remote group's).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tb::client {

// What a child's standard fd gets, besides one of our fds (dup2'd there).
inline constexpr int kInherit = -1;   // ours (the terminal, the GUI's pipe)
inline constexpr int kDevNull = -2;   // /dev/null
inline constexpr int kToStderr = -3;  // stdout only: whatever its stderr gets (ranks that must not write on a protocol stdout)

struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH
  std::vector<std::string> env;   // the complete environment ("K=V"); empty: this process's
  int in = kInherit, out = kInherit, err = kInherit;
  std::vector<std::pair<int, int>> fds;  // more fds: (ours, the child's number), e.g. a channel on 3 and 4
  bool own_group = false;         // leads its own process group: signals reach what it starts (loader workers)
  bool dies_with_parent = false;  // SIGKILLed when this process dies: a rank must not outlive its launcher
};

// The grace a stop gives SIGTERM before SIGKILL, unless the caller knows better.
inline constexpr double kStopGraceS = 2.0;

class Process {
 public:
  // Starts it, or says why not ("cannot start ssh: No such file or directory").
  static Result<Process> launch(const LaunchSpec& spec);

  Process() = default;
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  // One still running is stopped (the ladder, 1 s grace): nothing is left behind by an early return.
  ~Process();

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }
  // Non-blocking: has it ended (reaped)? Then status() is set.
  bool poll();
  // Waits up to `timeout_s` (< 0: without limit) for the end. True when it ended.
  bool wait(double timeout_s = -1);
  // The waitpid() status, once ended.
  std::optional<int> status() const;
  // The exit code, or -signal when a signal ended it; -1 while running.
  int exit_code() const;
  // Sends `sig` (to its whole group when it leads one); nothing once it has been reaped.
  void signal(int sig);
  // The ladder: SIGTERM now, SIGKILL `grace_s` later; reaped. With its own group, the group gets a last
  // SIGKILL when it ended (the workers a crashed script leaves). Returns status().
  int stop(double grace_s = kStopGraceS);

 private:
  void reaped(int status);

  pid_t pid_ = -1;
  bool own_group_ = false;
  std::atomic<bool> done_{false};
  int status_ = 0;
};

// The ladder for many at once (a rank group): SIGTERM to each still running, SIGKILL to those still running
// `grace_s` later, every one reaped.
void stop_all(const std::vector<Process*>& processes, double grace_s = kStopGraceS);

// This process's environment ("K=V") for a child, less what must not leak into it. `rank_variables`:
// torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*, and our collective
// timeout), so that a child of a rank is its own process or group, never a second rank of this one's.
// `allocator`: the CPU allocator settings this process may carry (jemalloc/tcmalloc in LD_PRELOAD, glibc's
// malloc tunables, the allocator restart marker), so that a child runs exactly the allocator it asks for.
struct InheritedEnv {
  bool rank_variables = false;
  bool allocator = false;
};
std::vector<std::string> inherited_environment(InheritedEnv drop);

// This program's own path (/proc/self/exe), "" when unreadable: children are started from the same build.
std::string self_exe();
// A waitpid() status in words: "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string describe_exit(int status);

}  // namespace tb::client
