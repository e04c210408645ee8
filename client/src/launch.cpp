#include "client/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace tb::client {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One fd the child gets: `from` (ours; kDevNull opens /dev/null, for `to` 1 a kToStderr copies fd 2) on `to`.
struct FdMove {
  int from, to;
};

// The moves in the order they must happen: stdin, stderr, then stdout (it may copy stderr), then the rest.
// A source fd that an earlier move would overwrite is first copied out of the way (`moved` holds the copies
// for the caller to close).
std::vector<FdMove> plan_moves(const LaunchSpec& s, std::vector<int>& moved) {
  std::vector<FdMove> m;
  if (s.in != kInherit) m.push_back({s.in, 0});
  if (s.err != kInherit) m.push_back({s.err, 2});
  if (s.out != kInherit) m.push_back({s.out, 1});
  for (const auto& [ours, theirs] : s.fds) m.push_back({ours, theirs});
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].from < 0) continue;
    const bool clobbered = std::any_of(m.begin(), m.begin() + long(i), [&](const FdMove& e) { return e.to == m[i].from; });
    if (!clobbered) continue;
    const int copy = ::fcntl(m[i].from, F_DUPFD_CLOEXEC, 10);
    if (copy >= 0) moved.push_back(copy), m[i].from = copy;
  }
  return m;
}

// argv[0] as execve wants it: a name without '/' looked up in PATH (before a fork: the child may only make
// async-signal-safe calls). "" when not found.
std::string resolve(const std::string& name) {
  // A path is checked too: after a fork its exec failure would only show as the child's exit code 127, where
  // posix_spawn says "No such file or directory" at once.
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0;;) {
    const size_t colon = dirs.find(':', at);
    std::string dir = dirs.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) return "";
    at = colon + 1;
  }
}

// fork + exec, for what posix_spawn cannot do (the parent-death signal). Only async-signal-safe calls after
// the fork. Returns the pid, or -errno.
pid_t fork_exec(const std::string& path, char* const* av, char* const* ev, const std::vector<FdMove>& moves,
                bool own_group, bool dies_with_parent) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return -errno;
  if (pid > 0) {
    if (own_group) ::setpgid(pid, pid);  // also here: a signal to the group right after the start finds it
    return pid;
  }
  if (dies_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl: no one to serve
  }
  if (own_group) ::setpgid(0, 0);
  for (const FdMove& m : moves) {
    int from = m.from;
    if (from == kDevNull) from = ::open("/dev/null", m.to == 0 ? O_RDONLY : O_WRONLY);
    else if (from == kToStderr) from = 2;
    if (from == m.to) ::fcntl(from, F_SETFD, 0);  // dup2 onto itself keeps close-on-exec
    else ::dup2(from, m.to);
  }
  ::execve(path.c_str(), av, ev);
  const int e = errno;
  const char msg[] = "cannot exec the child\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(e == ENOENT ? 127 : 126);
}

}  // namespace

Result<Process> Process::launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) return Error{"nothing to start"};
  std::vector<int> moved;
  const std::vector<FdMove> moves = plan_moves(spec, moved);
  std::vector<char*> av, ev;
  for (const auto& a : spec.argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : spec.env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  char* const* envp = spec.env.empty() ? environ : ev.data();
  pid_t pid = -1;
  int rc = 0;
  if (spec.dies_with_parent) {
    const std::string path = resolve(spec.argv[0]);
    if (path.empty()) {
      rc = ENOENT;
    } else {
      pid = fork_exec(path, av.data(), envp, moves, spec.own_group, true);
      if (pid < 0) rc = -pid;
    }
  } else {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (const FdMove& m : moves) {
      if (m.from == kDevNull) posix_spawn_file_actions_addopen(&fa, m.to, "/dev/null", m.to == 0 ? O_RDONLY : O_WRONLY, 0);
      else posix_spawn_file_actions_adddup2(&fa, m.from == kToStderr ? 2 : m.from, m.to);  // clears close-on-exec
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (spec.own_group) {
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
      posix_spawnattr_setpgroup(&attr, 0);
    }
    rc = posix_spawnp(&pid, av[0], &fa, &attr, av.data(), envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  for (int fd : moved) ::close(fd);
  if (rc != 0) return Error{"cannot start " + spec.argv[0] + ": " + std::strerror(rc)};
  Process p;
  p.pid_ = pid;
  p.own_group_ = spec.own_group;
  return p;
}

Process::Process(Process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), own_group_(o.own_group_), done_(o.done_.load()), status_(o.status_) {}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (started() && !done_) stop(1.0);
    pid_ = std::exchange(o.pid_, -1);
    own_group_ = o.own_group_;
    done_ = o.done_.load();
    status_ = o.status_;
  }
  return *this;
}

Process::~Process() {
  if (started() && !done_) stop(1.0);
}

void Process::reaped(int status) {
  status_ = status;
  done_ = true;
}

bool Process::poll() {
  if (!started() || done_) return done_;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) reaped(st);
  else if (r < 0 && errno == ECHILD) reaped(0);  // reaped elsewhere: nothing left to wait for
  return done_;
}

bool Process::wait(double timeout_s) {
  if (!started()) return false;
  if (timeout_s < 0) {
    while (!done_) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, 0);
      if (r == pid_) reaped(st);
      else if (r < 0 && errno != EINTR) reaped(0);
    }
    return true;
  }
  const double until = now_s() + timeout_s;
  // Polling at 10 ms: a child's end is noticed soon enough for any deadline here, without a SIGCHLD handler
  // that would belong to the whole program.
  while (!poll()) {
    if (now_s() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::optional<int> Process::status() const {
  if (!done_) return std::nullopt;
  return status_;
}

int Process::exit_code() const {
  if (!done_) return -1;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return -WTERMSIG(status_);
  return -1;
}

void Process::signal(int sig) {
  if (!started() || done_) return;
  ::kill(own_group_ ? -pid_ : pid_, sig);
}

int Process::stop(double grace_s) {
  if (!started()) return 0;
  if (!poll()) {
    signal(SIGTERM);
    if (!wait(grace_s)) {
      signal(SIGKILL);
      wait();
    }
  }
  if (own_group_) ::kill(-pid_, SIGKILL);  // what it started and left behind (a script's loader workers)
  return status_;
}

void stop_all(const std::vector<Process*>& processes, double grace_s) {
  for (Process* p : processes)
    if (p && !p->poll()) p->signal(SIGTERM);
  const double until = now_s() + grace_s;
  for (Process* p : processes)
    if (p) p->wait(std::max(0.0, until - now_s()));
  for (Process* p : processes)
    if (p && !p->poll()) {
      p->signal(SIGKILL);
      p->wait();
    }
}

std::vector<std::string> inherited_environment(InheritedEnv drop) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (drop.rank_variables &&
        (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
         key == "MASTER_ADDR" || key == "MASTER_PORT" || key == "TUNEBENCH_DIST_TIMEOUT" ||
         key.rfind("TORCHELASTIC_", 0) == 0))
      continue;
    if (drop.allocator) {
      if (key == "TUNEBENCH_CPU_ALLOCATOR_REEXEC") continue;
      if (key == "GLIBC_TUNABLES" && kv.find("glibc.malloc.") != std::string::npos) continue;
      if (key == "LD_PRELOAD") {  // only the allocators go: a user's own preload stays
        std::string rest;
        for (size_t at = 11; at <= kv.size();) {
          const size_t colon = std::min(kv.find(':', at), kv.size());
          const std::string item = kv.substr(at, colon - at);
          at = colon + 1;
          if (item.empty() || item.find("jemalloc") != std::string::npos || item.find("tcmalloc") != std::string::npos)
            continue;
          rest += (rest.empty() ? "" : ":") + item;
        }
        if (rest.empty()) continue;
        kv = "LD_PRELOAD=" + rest;
      }
    }
    out.push_back(kv);
  }
  return out;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace tb::client
