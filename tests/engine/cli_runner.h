// Runs tunebench-cli (TB_CLI_PATH) through the shell the way a user types it, with optional environment
// assignments in front and an optional `timeout` guard, capturing exit code, stdout, stderr and wall time.
// Test-only (engine CLI tests).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tb::test_util {

struct CliOut {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

// `env`: "K=V K2=V2" or "". `timeout_s` > 0 wraps the command in timeout(1): a hang fails the test instead
// of blocking CTest.
inline CliOut run_cli_shell(const std::string& env, const std::string& args, int timeout_s = 0) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path();
  const std::string o =
      (dir / ("tb_cli_out_" + std::to_string(::getpid()) + "_" + std::to_string(counter++))).string();
  const std::string e = o + ".err";
  const std::string guard = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  CliOut r;
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system((env + " " + guard + TB_CLI_PATH + " " + args + " >" + o + " 2>" + e).c_str());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream fo(o), fe(e);
  r.out.assign(std::istreambuf_iterator<char>(fo), {});
  r.err.assign(std::istreambuf_iterator<char>(fe), {});
  std::filesystem::remove(o);
  std::filesystem::remove(e);
  return r;
}

}  // namespace tb::test_util
