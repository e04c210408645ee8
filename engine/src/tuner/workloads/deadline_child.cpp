#include "tuner/workloads/deadline_child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "client/launch.h"

namespace tb::engine {

ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s) {
  ChildResult r;
  char err_path[] = "/tmp/tunebench-child-XXXXXX";
  const int err_fd = mkstemp(err_path);
  if (err_fd < 0) {
    r.error = std::string("cannot create a temporary file: ") + std::strerror(errno);
    return r;
  }
  // Its own group: at the deadline the stop reaches the ranks a launcher started, too. Out of our terminal's
  // group it would miss a Ctrl-C, so it dies with us instead (this thread waits for it: the parent-death
  // signal follows the thread that started it).
  auto started = client::Process::launch({.argv = argv, .env = env, .in = client::kDevNull, .out = client::kDevNull,
                                          .err = err_fd, .own_group = true, .dies_with_parent = true});
  close(err_fd);
  if (!started) {
    r.error = started.error().message;
    unlink(err_path);
    return r;
  }
  client::Process& child = *started;
  r.started = true;
  const auto t0 = std::chrono::steady_clock::now();
  if (!child.wait(timeout_s)) {
    // A run past its deadline holds the cores the next measurement needs: no grace beyond a moment.
    child.stop(0.2);
    r.timed_out = true;
  } else {
    child.stop();  // ended: only the group's last word to what it left behind
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int status = *child.status();
  if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  std::ifstream f(err_path);
  // The reason, not the epilogue: a launcher's last line says which rank failed, its error line why.
  std::string line, last, last_error;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    last = line;
    if (const auto at = line.find("error: "); at != std::string::npos) last_error = line.substr(at + 7);
  }
  r.stderr_tail = last_error.empty() ? last : last_error;
  unlink(err_path);
  return r;
}

}  // namespace tb::engine
