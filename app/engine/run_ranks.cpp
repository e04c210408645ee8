// `run --ranks N` and `serve --ranks N`: the local launchers (run_ranks.h).
#include "run_ranks.h"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "client/launch.h"
#include "client/protocol.h"
#include "engine/distributed.h"

namespace tb::cli {
using client::describe_exit;
using client::Process;
using client::self_exe;

// Starts rank 0..N-1 of `args` with torchrun's variables on `port`. In a led group (serve, tune) rank 0 has
// the launcher's stdin/stdout; the others read nothing and write their stdout to stderr, so no stray line
// reaches the parent. A rank must not outlive its launcher (killed at a tuner's deadline, by the GUI, by a
// terminal): it would go on training, holding the cores the next measurement needs. Empty when a start failed
// (the ranks already started are stopped).
static std::vector<Process> spawn_group(const std::vector<std::string>& args, const std::vector<std::string>& base_env,
                                        int ranks, int timeout_s, int port, bool led) {
  std::vector<Process> group;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> env = base_env;
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("TUNEBENCH_DIST_TIMEOUT=" + std::to_string(timeout_s));
    const bool quiet = led && r > 0;
    auto p = Process::launch({.argv = args,
                              .env = env,
                              .in = quiet ? client::kDevNull : client::kInherit,
                              .out = quiet ? client::kToStderr : client::kInherit,
                              .dies_with_parent = true});
    if (!p) {
      std::fprintf(stderr, "tunebench-cli: error: rank %d: %s\n", r, p.error().message.c_str());
      std::vector<Process*> started;
      for (auto& g : group) started.push_back(&g);
      client::stop_all(started, 0);
      return {};
    }
    group.push_back(std::move(p).value());
  }
  return group;
}

// The ladder for the ranks from `from` on that still run: SIGTERM, SIGKILL `grace_s` later, reaped.
static void stop_ranks(std::vector<Process>& group, int from, double grace_s) {
  std::vector<Process*> rest;
  for (size_t r = size_t(from); r < group.size(); ++r) rest.push_back(&group[r]);
  client::stop_all(rest, grace_s);
}

// One start of a `run` group on `port`. Returns the launcher's exit code, or -1 when rank 0 could not listen
// on the port (another process took it): the others are stopped and nothing is recorded.
static int launch_once(const std::vector<std::string>& args, const std::vector<std::string>& base_env, int ranks,
                       int timeout_s, int port, const std::string& json_path) {
  std::fprintf(stderr, "run: starting %d ranks (rendezvous at 127.0.0.1:%d, collective timeout %d s)\n", ranks, port,
               timeout_s);
  std::vector<Process> group = spawn_group(args, base_env, ranks, timeout_s, port, false);
  if (group.empty()) return 1;
  // Wait for every rank; after the first failure the rest get the collective timeout (they notice a dead
  // peer at their next collective, or time out) plus a grace period, then are stopped.
  std::vector<int> status(size_t(ranks), 0);
  std::vector<bool> done(size_t(ranks), false), stopped(size_t(ranks), false);
  int left = ranks, first_failed = -1;
  std::chrono::steady_clock::time_point deadline{};
  while (left > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (done[size_t(r)] || !group[size_t(r)].poll()) continue;
      const int st = *group[size_t(r)].status();
      done[size_t(r)] = true;
      status[size_t(r)] = st;
      --left;
      if (r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == kExitPortInUse) {
        stop_ranks(group, 1, 0);
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
    if (first_failed >= 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < ranks; ++r)
        if (!done[size_t(r)]) {
          std::fprintf(stderr, "run: rank %d did not end %d s after rank %d failed: stopping it\n", r,
                       timeout_s + 15, first_failed);
          stopped[size_t(r)] = true;
        }
      stop_ranks(group, 0, 3.0);  // the next sweep records how each ended
      continue;
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
static int led_once(const std::string& verb, const std::vector<std::string>& args,
                    const std::vector<std::string>& base_env, int ranks, int timeout_s, int port) {
  std::fprintf(stderr, "%s: starting %d ranks (rendezvous at 127.0.0.1:%d, collective timeout %d s)\n", verb.c_str(),
               ranks, port, timeout_s);
  std::vector<Process> group = spawn_group(args, base_env, ranks, timeout_s, port, true);
  if (group.empty()) return 1;
  std::vector<bool> done(size_t(ranks), false);
  int left = ranks, rank0_status = 0;
  bool rank0_done = false;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  while (left > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (done[size_t(r)] || !group[size_t(r)].poll()) continue;
      const int st = *group[size_t(r)].status();
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
        stop_ranks(group, 1, 0);
        return -1;
      }
      if (!WIFEXITED(st)) {
        const std::string why = "rank 0 of the data-parallel group " + describe_exit(st);
        if (verb == "serve") {
          // Rank 0 died between lines (a lost line ends with a newline first): the parent still gets why.
          std::fputc('\n', stdout);
          client::protocol::Channel out(stdout);
          out.error(why, false);
          out.send_done({{"reason", "error"}});
        } else {
          std::fprintf(stderr, "tunebench-cli: error: %s\n", why.c_str());
        }
      }
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      // After rank 0 ended: the others had 10 s. Before: a rank died and rank 0 did not end in time.
      if (!rank0_done)
        std::fprintf(stderr, "%s: rank 0 did not end %d s after a rank failed: stopping it\n", verb.c_str(),
                     timeout_s + 15);
      stop_ranks(group, rank0_done ? 1 : 0, 3.0);  // the next sweep records how each ended
      deadline = std::chrono::steady_clock::time_point::max();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(rank0_status)) return WEXITSTATUS(rank0_status);
  return 1;
}

namespace {

// This program again with `verb` and the same options but --ranks, and the environment without torchrun's
// variables (each rank gets its own). False when this program's path is unknown.
bool group_command(int argc, char** argv, const char* verb, std::vector<std::string>& args,
                   std::vector<std::string>& base_env) {
  const std::string exe = self_exe();
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
  base_env = client::inherited_environment({.rank_variables = true});
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
  std::vector<std::string> args, base_env;
  if (!group_command(argc, argv, "run", args, base_env)) return 1;
  return with_free_port("run", [&](int port) { return launch_once(args, base_env, ranks, timeout_s, port, json_path); });
}

int launch_led_group(int argc, char** argv, const char* verb, int ranks, int timeout_s) {
  std::vector<std::string> args, base_env;
  if (!group_command(argc, argv, verb, args, base_env)) return 1;
  return with_free_port(verb, [&](int port) { return led_once(verb, args, base_env, ranks, timeout_s, port); });
}

}  // namespace tb::cli
