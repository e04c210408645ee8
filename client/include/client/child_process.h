// A child process with a protocol channel (client/): the child writes JSON lines on its fd 3 and reads the
// parent's on its fd 4; its stdout and stderr (the user's prints, tracebacks) go to one pipe whose lines
// the parent forwards where it likes and whose last lines it keeps for error messages.
//
// Never hangs: every read takes a deadline; terminate() is the one stop ladder (launch.h): SIGTERM, then
// SIGKILL after a grace period, and the child reaped. Threading: read_line/write_line/terminate from one
// thread; the output pump runs on its own thread and only touches the output tail (under a lock) and the
// forward callback.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/launch.h"

namespace tb::client {

class ChildProcess {
 public:
  // Called from the output thread with each line the child printed on stdout/stderr (no newline).
  using OutputFn = std::function<void(const std::string&)>;

  ~ChildProcess();
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv[0] (a path, or a name searched in PATH) with `env` (complete "K=V" list; empty: inherit).
  // Or why it could not start.
  Status start(const std::vector<std::string>& argv, const std::vector<std::string>& env, OutputFn output = {});

  // The next protocol line, waiting at most `timeout_s`. nullopt on timeout; "" never (empty lines are
  // skipped). Sets eof() when the child closed its end (it exited or closed fd 3).
  std::optional<std::string> read_line(double timeout_s);
  bool eof() const { return eof_; }
  // Writes one line (a newline is added). False when the child is gone.
  bool write_line(const std::string& line);
  // Closes our end of the child's input: the child sees EOF (the launcher stops like on `stop`).
  void close_input();

  // Non-blocking: has it exited? Then exit_code() is set (-signal when killed by one).
  bool exited();
  // Waits up to `timeout_s` for the exit; then SIGTERM, `grace_s` later SIGKILL. Always reaps.
  int terminate(double timeout_s = 0, double grace_s = 2);
  std::optional<int> exit_code() const;
  pid_t pid() const { return proc_.pid(); }

  // The last lines the child printed on stdout/stderr (a traceback, an error); complete after terminate().
  std::vector<std::string> output_tail() const;

 private:
  void pump();
  void finish_pump();  // waits (bounded) for the output pump to drain, then stops it

  Process proc_;
  int proto_ = -1;  // read end of the child's fd 3
  int input_ = -1;  // write end of the child's fd 4
  int output_ = -1; // read end of stdout+stderr
  bool eof_ = false;
  std::string buf_;
  OutputFn forward_;
  std::thread pump_;
  std::atomic<bool> pump_done_{false}, stop_pump_{false};
  mutable std::mutex tail_mu_;
  std::deque<std::string> tail_;
};

// Splits "k=v,k=v" (no validation). Shared by the launcher's command lines.
std::string join_config(const std::vector<std::pair<std::string, std::string>>& kv);

}  // namespace tb::client
