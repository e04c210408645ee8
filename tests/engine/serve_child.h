// `tunebench-cli serve ...` (TB_CLI_PATH) as a child with pipes on its stdin, stdout and stderr: send protocol
// messages, read them back with a timeout, wait for its exit. Test-only (serve tests, local and remote).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tb::test_util {

// `tunebench-cli serve ...` with pipes on stdin/stdout/stderr and `env` ("K=V") added to its environment.
struct ServeChild {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  std::string partial, err_text;

  ServeChild(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    int pin[2], pout[2], perr[2];
    EXPECT_EQ(pipe(pin), 0);
    EXPECT_EQ(pipe(pout), 0);
    EXPECT_EQ(pipe(perr), 0);
    pid = fork();
    if (pid == 0) {
      dup2(pin[0], 0);
      dup2(pout[1], 1);
      dup2(perr[1], 2);
      for (int fd : {pin[0], pin[1], pout[0], pout[1], perr[0], perr[1]}) close(fd);
      for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
      std::vector<std::string> copy{TB_CLI_PATH, "serve"};
      copy.insert(copy.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(TB_CLI_PATH, argv.data());
      _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    in = pin[1];
    out = pout[0];
    err = perr[0];
  }
  ~ServeChild() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    for (int fd : {in, out, err})
      if (fd >= 0) close(fd);
  }
  void send(const nlohmann::json& m) {
    const std::string line = m.dump() + "\n";
    ASSERT_EQ(write(in, line.data(), line.size()), ssize_t(line.size()));
  }
  // The next protocol message, or null at EOF or after `timeout_s` (stderr is drained meanwhile).
  nlohmann::json next(double timeout_s = 120) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      if (auto nl = partial.find('\n'); nl != std::string::npos) {
        const std::string line = partial.substr(0, nl);
        partial.erase(0, nl + 1);
        if (line.find_first_not_of(" \r") == std::string::npos) continue;
        auto m = nlohmann::json::parse(line, nullptr, false);
        EXPECT_FALSE(m.is_discarded()) << line;
        return m;
      }
      const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) return nullptr;
      pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
      if (poll(fds, 2, left) <= 0) continue;
      char buf[65536];
      if (fds[1].revents) {
        const ssize_t n = read(err, buf, sizeof buf);
        if (n > 0) err_text.append(buf, size_t(n));
      }
      if (fds[0].revents) {
        const ssize_t n = read(out, buf, sizeof buf);
        if (n <= 0) return nullptr;
        partial.append(buf, size_t(n));
      }
    }
  }
  // Reads messages until `want` says stop (true) or the stream ends; false on a timeout or EOF.
  bool until(const std::function<bool(const nlohmann::json&)>& want, double timeout_s = 120) {
    for (;;) {
      auto m = next(timeout_s);
      if (m.is_null()) return false;
      if (want(m)) return true;
    }
  }
  int wait_exit() {
    int status = 0;
    // Drain stderr so the launcher never blocks on a full pipe.
    char buf[4096];
    ssize_t n;
    while ((n = read(err, buf, sizeof buf)) > 0) err_text.append(buf, size_t(n));
    waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Waits for `n` steps, then returns the ranks' pids (rank 0 first); empty when the run ended first.
  std::vector<pid_t> ranks_after_steps(int n) {
    int steps = 0;
    if (!until([&](const nlohmann::json& m) { return m.value("type", "") == "step" && ++steps == n; })) return {};
    return ranks();
  }
  // The launcher's children in start order: rank 0, rank 1, ...
  std::vector<pid_t> ranks() const {
    std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
    std::vector<pid_t> pids;
    for (pid_t p; f >> p;) pids.push_back(p);
    std::sort(pids.begin(), pids.end());
    return pids;
  }
};

}  // namespace tb::test_util
