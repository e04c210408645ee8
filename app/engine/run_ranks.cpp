// `run --ranks N` and `serve --ranks N`: the local launchers (run_ranks.h).
#include "run_ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "client/child_process.h"
#include "engine/distributed.h"

extern char** environ;

namespace tb::cli {
using client::describe_exit;
using client::self_exe;

// Starts rank 0..N-1 of `args` with torchrun's variables on `port`. In a led group (serve, tune) rank 0 has
// the launcher's stdin/stdout; the others read nothing and write their stdout to stderr, so no stray line
// reaches the parent. Empty when a fork failed (the ranks already started are stopped).
static std::vector<pid_t> spawn_group(const std::string& exe, std::vector<std::string> args,
                                      const std::vector<std::string>& base_env, int ranks, int timeout_s, int port,
                                      bool led) {
  std::vector<pid_t> pids(size_t(ranks), -1);
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> env = base_env;
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("TUNEBENCH_DIST_TIMEOUT=" + std::to_string(timeout_s));
    std::vector<char*> av, ev;
    for (auto& a : args) av.push_back(a.data());
    av.push_back(nullptr);
    for (auto& e : env) ev.push_back(e.data());
    ev.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      // A rank must not outlive its launcher (killed at a tuner's deadline, by the GUI, by a terminal): it
      // would go on training, holding the cores the next measurement needs.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      if (led && r > 0) {
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
      }
      ::execve(exe.c_str(), av.data(), ev.data());
      std::fprintf(stderr, "tunebench-cli: error: cannot start rank %d: %s\n", r, std::strerror(errno));
      ::_exit(127);
    }
    if (pid < 0) {
      std::fprintf(stderr, "tunebench-cli: error: cannot start rank %d: %s\n", r, std::strerror(errno));
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
      for (pid_t p : pids)
        if (p > 0) ::waitpid(p, nullptr, 0);
      return {};
    }
    pids[size_t(r)] = pid;
  }
  return pids;
}

static void kill_and_reap(const std::vector<pid_t>& pids, const std::vector<bool>& done, int from) {
  for (size_t o = size_t(from); o < pids.size(); ++o)
    if (!done[o]) ::kill(pids[o], SIGKILL);
  for (size_t o = size_t(from); o < pids.size(); ++o)
    if (!done[o]) ::waitpid(pids[o], nullptr, 0);
}

// One start of a `run` group on `port`. Returns the launcher's exit code, or -1 when rank 0 could not listen
// on the port (another process took it): the others are stopped and nothing is recorded.
static int launch_once(const std::string& exe, std::vector<std::string> args, const std::vector<std::string>& base_env,
                int ranks, int timeout_s, int port, const std::string& json_path) {
  std::fprintf(stderr, "run: starting %d ranks (rendezvous at 127.0.0.1:%d, collective timeout %d s)\n", ranks, port,
               timeout_s);
  const std::vector<pid_t> pids = spawn_group(exe, std::move(args), base_env, ranks, timeout_s, port, false);
  if (pids.empty()) return 1;
  // Wait for every rank; after the first failure the rest get the collective timeout (they notice a dead
  // peer at their next collective, or time out) plus a grace period, then are stopped.
  std::vector<int> status(size_t(ranks), 0);
  std::vector<bool> done(size_t(ranks), false), stopped(size_t(ranks), false);
  int left = ranks, first_failed = -1;
  std::chrono::steady_clock::time_point deadline{};
  bool termed = false;
  while (left > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (done[size_t(r)]) continue;
      int st = 0;
      const pid_t w = ::waitpid(pids[size_t(r)], &st, WNOHANG);
      if (w != pids[size_t(r)]) continue;
      done[size_t(r)] = true;
      status[size_t(r)] = st;
      --left;
      if (r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == kExitPortInUse) {
        kill_and_reap(pids, done, 1);
        return -1;
      }
      const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      if (!ok && !stopped[size_t(r)])
        std::fprintf(stderr, "run: rank %d %s\n", r, describe_exit(st).c_str());
      if (!ok && first_failed < 0 && !stopped[size_t(r)]) {
        first_failed = r;
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 15);
      }
    }
    if (left == 0) break;
    const auto now = std::chrono::steady_clock::now();
    if (first_failed >= 0 && now > deadline) {
      for (int r = 0; r < ranks; ++r)
        if (!done[size_t(r)]) {
          if (!termed)
            std::fprintf(stderr, "run: rank %d did not end %d s after rank %d failed: stopping it\n", r,
                         timeout_s + 15, first_failed);
          ::kill(pids[size_t(r)], termed ? SIGKILL : SIGTERM);
          stopped[size_t(r)] = true;
        }
      termed = true;
      deadline = now + std::chrono::seconds(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // What the launcher saw goes into rank 0's document (which rank ended how), when it wrote one.
  if (!json_path.empty()) {
    std::ifstream in(json_path);
    nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_discarded() && doc.is_object()) {
      nlohmann::json exits = nlohmann::json::array();
      for (int r = 0; r < ranks; ++r) {
        const int st = status[size_t(r)];
        exits.push_back({{"rank", r},
                         {"ok", WIFEXITED(st) && WEXITSTATUS(st) == 0},
                         {"stopped_by_launcher", bool(stopped[size_t(r)])},
                         {"how", describe_exit(st)}});
      }
      doc["exits"] = exits;
      std::ofstream out(json_path);
      out << doc.dump(2) << "\n";
    }
  }
  if (first_failed < 0) return 0;
  const int st = status[size_t(first_failed)];
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

// A led group (launch_led_group): rank 0 is the command. The launcher says on stderr when another rank dies
// (rank 0 then fails at its next collective, within the timeout, and reports it), speaks for rank 0 when it
// dies without a word (serve: an error and `done` on stdout, which only rank 0 wrote to before; else a line
// on stderr), and gives the other ranks 10 s after rank 0 to end before it stops them. -1: rank 0's port was
// taken.
static int led_once(const std::string& verb, const std::string& exe, std::vector<std::string> args,
                    const std::vector<std::string>& base_env, int ranks, int timeout_s, int port) {
  std::fprintf(stderr, "%s: starting %d ranks (rendezvous at 127.0.0.1:%d, collective timeout %d s)\n", verb.c_str(),
               ranks, port, timeout_s);
  const std::vector<pid_t> pids = spawn_group(exe, std::move(args), base_env, ranks, timeout_s, port, true);
  if (pids.empty()) return 1;
  std::vector<bool> done(size_t(ranks), false);
  int left = ranks, rank0_status = 0;
  bool rank0_done = false, termed = false;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  while (left > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (done[size_t(r)]) continue;
      int st = 0;
      if (::waitpid(pids[size_t(r)], &st, WNOHANG) != pids[size_t(r)]) continue;
      done[size_t(r)] = true;
      --left;
      const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      if (r > 0) {
        // Said whether or not rank 0 ended first: from 2.x Gloo sees the reset at once, and rank 0 may be
        // reaped in the same sweep as the rank that took it down.
        if (!ok && !rank0_done) {
          std::fprintf(stderr, "%s: rank %d %s; rank 0 ends the %s at its next collective (within %d s)\n",
                       verb.c_str(), r, describe_exit(st).c_str(), verb == "serve" ? "run" : verb.c_str(), timeout_s);
          deadline = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s + 15));
        } else if (!ok) {
          std::fprintf(stderr, "%s: rank %d %s\n", verb.c_str(), r, describe_exit(st).c_str());
        }
        continue;
      }
      rank0_done = true;
      rank0_status = st;
      if (WIFEXITED(st) && WEXITSTATUS(st) == kExitPortInUse) {
        kill_and_reap(pids, done, 1);
        return -1;
      }
      if (!WIFEXITED(st)) {
        const std::string why = "rank 0 of the data-parallel group " + describe_exit(st);
        if (verb == "serve") {
          // Rank 0 died between lines (a lost line ends with a newline first): the parent still gets why.
          nlohmann::json err = {{"type", "error"}, {"v", 1}, {"recoverable", false}, {"message", why}};
          nlohmann::json fin = {{"type", "done"}, {"v", 1}, {"summary", {{"reason", "error"}}}};
          std::printf("\n%s\n%s\n", err.dump().c_str(), fin.dump().c_str());
          std::fflush(stdout);
        } else {
          std::fprintf(stderr, "tunebench-cli: error: %s\n", why.c_str());
        }
      }
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      // After rank 0 ended: the others had 10 s. Before: a rank died and rank 0 did not end in time.
      const int from = rank0_done ? 1 : 0;
      if (!rank0_done && !termed)
        std::fprintf(stderr, "%s: rank 0 did not end %d s after a rank failed: stopping it\n", verb.c_str(),
                     timeout_s + 15);
      for (int r = from; r < ranks; ++r)
        if (!done[size_t(r)]) ::kill(pids[size_t(r)], termed ? SIGKILL : SIGTERM);
      termed = true;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(rank0_status)) return WEXITSTATUS(rank0_status);
  return 1;
}

namespace {

// This program again with `verb` and the same options but --ranks, and the environment without torchrun's
// variables (each rank gets its own). False when this program's path is unknown.
bool group_command(int argc, char** argv, const char* verb, std::string& exe, std::vector<std::string>& args,
                   std::vector<std::string>& base_env) {
  exe = self_exe();
  if (exe.empty()) {
    std::fprintf(stderr, "tunebench-cli: error: %s --ranks: cannot find this program's path\n", verb);
    return false;
  }
  args = {exe, verb};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ranks") == 0) {
      ++i;
      continue;
    }
    args.emplace_back(argv[i]);
  }
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
        key == "MASTER_ADDR" || key == "MASTER_PORT" || key == "TUNEBENCH_DIST_TIMEOUT" ||
        key == "TORCHELASTIC_USE_AGENT_STORE")
      continue;
    base_env.push_back(kv);
  }
  return true;
}

// Up to 3 starts, each on a port that was free a moment ago; `once` returns -1 when the port was taken.
int with_free_port(const char* verb, const std::function<int(int)>& once) {
  const char* forced = std::getenv("TUNEBENCH_RANKS_FIRST_PORT");
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = attempt == 0 && forced && std::atoi(forced) > 0 ? std::atoi(forced) : engine::free_tcp_port();
    if (port == 0) {
      std::fprintf(stderr, "tunebench-cli: error: %s --ranks: no free TCP port on 127.0.0.1 for the rendezvous\n", verb);
      return 1;
    }
    const int code = once(port);
    if (code >= 0) return code;
    std::fprintf(stderr, "%s: port %d was taken before rank 0 could listen on it; starting the ranks again on another\n",
                 verb, port);
  }
  std::fprintf(stderr, "tunebench-cli: error: %s --ranks: the rendezvous port was taken 3 times in a row\n", verb);
  return 1;
}

}  // namespace

int launch_ranks(int argc, char** argv, int ranks, int timeout_s, const std::string& json_path) {
  std::string exe;
  std::vector<std::string> args, base_env;
  if (!group_command(argc, argv, "run", exe, args, base_env)) return 1;
  return with_free_port("run", [&](int port) { return launch_once(exe, args, base_env, ranks, timeout_s, port, json_path); });
}

int launch_led_group(int argc, char** argv, const char* verb, int ranks, int timeout_s) {
  std::string exe;
  std::vector<std::string> args, base_env;
  if (!group_command(argc, argv, verb, exe, args, base_env)) return 1;
  return with_free_port(verb, [&](int port) { return led_once(verb, exe, args, base_env, ranks, timeout_s, port); });
}

}  // namespace tb::cli
