// Helpers of the remote-target tests (their private sshd is sshd_fixture.h): the --remote arguments, reading
// results, waiting, starting and killing a client, finding the remote runs. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "processes.h"
#include "sshd_fixture.h"

namespace tb::test_util {

// The remote side runs this build's CLI: a non-interactive ssh shell's PATH does not have it.
inline std::string remote(const std::string& hosts) {
  return std::string("--remote ") + hosts + " --remote-cli " + TB_CLI_PATH;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f, nullptr, false);
}

template <class Pred>
bool wait_for(Pred pred, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

// Starts `tunebench-cli ARGS` in the background (output to `log`); returns its pid.
inline pid_t start_cli(const std::string& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string cmd = std::string("exec ") + TB_CLI_PATH + " " + args + " >" + log + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    ::_exit(127);
  }
  return pid;
}

// The remote run: this machine's tunebench-cli with the marker and without --remote (that is the local client;
// the shells and the ssh carrying the remote script are no tunebench-cli).
inline int remote_runs(const std::string& marker) {
  int n = 0;
  for (pid_t p : processes_with(marker)) {
    const std::string a = tb::test_util::argv0(p);
    const bool cli = a.size() >= 13 && a.compare(a.size() - 13, 13, "tunebench-cli") == 0;
    if (cli && tb::test_util::command_line(p).find("--remote") == std::string::npos) ++n;
  }
  return n;
}

// Kills the local client when a test ends early.
struct KillAtExit {
  pid_t pid;
  ~KillAtExit() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
};

}  // namespace tb::test_util
