#include "tuner/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace tb::engine {

std::vector<std::string> fresh_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
        key == "MASTER_ADDR" || key == "MASTER_PORT" || key == "TUNEBENCH_DIST_TIMEOUT" ||
        key.rfind("TORCHELASTIC_", 0) == 0)
      continue;
    if (kv.rfind("TUNEBENCH_CPU_ALLOCATOR_REEXEC=", 0) == 0) continue;
    if (kv.rfind("GLIBC_TUNABLES=", 0) == 0 && kv.find("glibc.malloc.") != std::string::npos) continue;
    if (kv.rfind("LD_PRELOAD=", 0) == 0) {
      std::string rest, item;
      std::stringstream ss(kv.substr(11));
      while (std::getline(ss, item, ':')) {
        if (item.find("jemalloc") != std::string::npos || item.find("tcmalloc") != std::string::npos) continue;
        if (!item.empty()) rest += (rest.empty() ? "" : ":") + item;
      }
      if (rest.empty()) continue;
      kv = "LD_PRELOAD=" + rest;
    }
    out.push_back(kv);
  }
  return out;
}

ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s) {
  ChildResult r;
  char err_path[] = "/tmp/tunebench-child-XXXXXX";
  const int err_fd = mkstemp(err_path);
  if (err_fd < 0) {
    r.error = std::string("cannot create a temporary file: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
  std::vector<char*> av, ev;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, av[0], &fa, nullptr, av.data(), ev.data());
  posix_spawn_file_actions_destroy(&fa);
  close(err_fd);
  if (rc != 0) {
    r.error = std::string("cannot start ") + argv[0] + ": " + std::strerror(rc);
    unlink(err_path);
    return r;
  }
  r.started = true;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
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
