// `tunebench-cli run|tune|knobs|make-dataset --remote [user@]host[:port] [--remote-cli PATH] ...`: the same
// command on another machine over ssh, its output files brought back here. No LibTorch on this side: this
// is tunebench-cli itself, so a laptop without the engine can drive a GPU server.
//
// How: one ssh connection runs the command on the remote under `sh -c` (whatever the user's login shell is),
// with every output option (--json, --trace, --report) pointed into a private directory there; its stdout
// and stderr stream here as they come. A second connection sends that directory back as a tar stream, which
// the local `tar` unpacks next to the paths the user gave (a report's .md sidecar comes with it), and
// removes it. The remote run watches the channel: when it closes (ssh killed, link lost) the run's process
// group is stopped and its directory removed, so no training is left orphaned on the server.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "client/remote.h"
#include "commands.h"

extern char** environ;

namespace tb::cli {
namespace {
namespace fs = std::filesystem;

constexpr const char* kProtocol = "(protocol 1)";  // what `tunebench-cli --version` ends with
constexpr int kExitNoCli = 127, kExitVersion = 126, kExitNoDir = 125;

int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  return code;
}

// posix_spawnp with the three standard fds given (-1: inherit). Returns the pid or -1 (errno set).
pid_t spawn(const std::vector<std::string>& argv, int in, int out, int err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in >= 0) posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
  if (out >= 0) posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
  if (err >= 0) posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO);
  std::vector<char*> av;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

// The exit status, or -signal when the process was killed by one.
int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// Copies the lines of each `from` fd to its `to` fd (-1: keep only) until every one has ended, and returns the
// lines of the last stream (stderr). Lines of the remote script's own ("tunebench-remote: ...") are kept but not
// shown: the caller turns them into a message. `rewrite` may change a shown line.
struct Stream {
  int from, to;
};
std::vector<std::string> pump_lines(std::vector<Stream> streams,
                                    const std::function<std::string(std::string)>& rewrite = {}) {
  std::vector<std::string> kept;
  std::vector<std::string> partial(streams.size());
  auto end_line = [&](size_t k) {
    std::string& line = partial[k];
    if (streams[k].to >= 0 && line.rfind("tunebench-remote: ", 0) != 0) {
      const std::string out = (rewrite ? rewrite(line) : line) + "\n";
      (void)!::write(streams[k].to, out.data(), out.size());
    }
    if (k + 1 == streams.size()) {
      kept.push_back(line);
      if (kept.size() > 200) kept.erase(kept.begin());
    }
    line.clear();
  };
  std::vector<pollfd> fds;
  for (const auto& st : streams) fds.push_back({st.from, POLLIN, 0});
  size_t open = fds.size();
  char buf[4096];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!partial[k].empty()) end_line(k);
        fds[k].fd = -1;
        --open;
        continue;
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == '\n') end_line(k);
        else partial[k] += buf[i];
      }
    }
  }
  return kept;
}

struct Output {
  std::string option, local;  // e.g. --json, results/run.json
};

std::string random_id() {
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
  return id;
}

// The remote sh script of the run. `args` are quoted words; output i goes to "$d/i/<its file name>".
std::string run_script(const client::RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                       size_t outputs) {
  const std::string cli = client::shell_quote(t.cli);
  std::string s = "d=\"${TMPDIR:-/tmp}/tunebench-remote-" + id + "\"\n";
  s += "command -v " + cli + " >/dev/null 2>&1 || { echo \"tunebench-remote: no program " + t.cli +
       "\" >&2; exit " + std::to_string(kExitNoCli) + "; }\n";
  s += "v=$(" + cli + " --version 2>/dev/null)\n";
  s += "case \"$v\" in *'" + std::string(kProtocol) + "'*) ;; *) echo \"tunebench-remote: version: $v\" >&2; exit " +
       std::to_string(kExitVersion) + ";; esac\n";
  s += "mkdir -m 700 \"$d\" || exit " + std::to_string(kExitNoDir) + "\n";
  for (size_t i = 0; i < outputs; ++i) s += "mkdir \"$d/" + std::to_string(i) + "\"\n";
  // setsid: the command leads its own process group, which the watcher stops as a whole (tune's fresh
  // processes, the ranks of --ranks). A background job of a shell without job control is no group leader, so
  // setsid execs in place and $p is that group. (`set -m` needs a terminal, which ssh -T does not give.)
  std::string command = cli;
  for (const auto& a : args) command += " " + a;
  s += "exec 3<&0\nif command -v setsid >/dev/null 2>&1; then setsid " + command + " </dev/null &\nelse " + command +
       " </dev/null &\nfi\np=$!\n";
  // The watcher marks the loss before it stops the run, so the shell that waits knows to remove everything.
  s += "{ cat >/dev/null; [ -e \"$d/.done\" ] || { touch \"$d/.lost\"; kill -TERM -$p || kill -TERM $p; sleep 10; "
       "kill -KILL -$p || kill -KILL $p; }; } <&3 >/dev/null 2>&1 &\n";
  s += "w=$!\nexec 3<&-\nwait $p\nrc=$?\ntouch \"$d/.done\"\nkill $w 2>/dev/null\n";
  s += "if [ -e \"$d/.lost\" ]; then rm -rf \"$d\"; exit $rc; fi\n";
  if (outputs == 0) s += "rm -rf \"$d\"\n";
  s += "exit $rc\n";
  return "sh -c " + client::shell_quote(s);
}

// Names the remote working directory's files by the local paths they get: "trace written to
// /tmp/tunebench-remote-<id>/1/t.json" -> "trace written to results/t.json"; also inside a fetched run JSON.
std::string localize(std::string text, const std::string& id, const std::vector<Output>& outputs) {
  const std::string marker = "/tunebench-remote-" + id + "/";
  for (size_t at; (at = text.find(marker)) != std::string::npos;) {
    const size_t blank = text.find_last_of(" '\"(\n", at);
    const size_t start = blank == std::string::npos ? 0 : blank + 1;
    const size_t slot = at + marker.size(), slash = text.find('/', slot);
    if (slash == std::string::npos) break;
    const size_t i = size_t(std::atoi(text.c_str() + slot));
    const std::string dir = i < outputs.size() ? fs::path(outputs[i].local).parent_path().string() : "";
    text.replace(start, slash + 1 - start, dir.empty() ? "" : dir + "/");
  }
  return text;
}

std::string fetch_script(const std::string& id, size_t outputs) {
  std::string s = "d=\"${TMPDIR:-/tmp}/tunebench-remote-" + id + "\"\n[ -e \"$d/.done\" ] || exit 3\ncd \"$d\" && tar -cf -";
  for (size_t i = 0; i < outputs; ++i) s += " " + std::to_string(i);
  s += "\nrc=$?\ncd / && rm -rf \"$d\"\nexit $rc\n";
  return "sh -c " + client::shell_quote(s);
}

// Brings the remote directory back and puts each output's files next to the local path asked for.
int fetch(const client::RemoteTarget& t, const std::string& id, const std::vector<Output>& outputs) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec) / ("tunebench-fetch-" + id);
  fs::create_directories(tmp, ec);
  if (ec) return fail("cannot make " + tmp.string() + ": " + ec.message(), 1);
  int data[2], err[2];
  if (pipe2(data, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return fail("pipe failed", 1);
  const pid_t ssh = spawn(client::ssh_argv(t, fetch_script(id, outputs.size())), -1, data[1], err[1]);
  const pid_t tar = spawn({"tar", "-xf", "-", "-C", tmp.string()}, data[0], -1, -1);
  ::close(data[0]), ::close(data[1]), ::close(err[1]);
  const auto ssh_err = pump_lines({{err[0], -1}});
  ::close(err[0]);
  const int ssh_rc = ssh > 0 ? wait_exit(ssh) : 255;
  const int tar_rc = tar > 0 ? wait_exit(tar) : 1;
  int rc = 0;
  if (ssh_rc == 255) rc = fail("fetching the results: " + client::explain_ssh_failure(t, ssh_err), 1);
  else if (ssh_rc != 0 || tar_rc != 0) rc = fail("fetching the results from " + t.display() + " failed" +
                                                 (ssh_err.empty() ? std::string() : ": " + ssh_err.back()), 1);
  for (size_t i = 0; i < outputs.size() && rc == 0; ++i) {
    const fs::path local = outputs[i].local;
    for (const auto& e : fs::directory_iterator(tmp / std::to_string(i), ec)) {
      const fs::path dest = local.parent_path().empty() ? e.path().filename() : local.parent_path() / e.path().filename();
      if (outputs[i].option == "--trace") {  // big, and names no output file
        fs::copy_file(e.path(), dest, fs::copy_options::overwrite_existing, ec);
      } else {  // a run's JSON names its trace; a report its sidecar
        std::ifstream in(e.path(), std::ios::binary);
        const std::string text(std::istreambuf_iterator<char>(in), {});
        std::ofstream out(dest, std::ios::binary | std::ios::trunc);
        out << localize(text, id, outputs);
        if (!out) ec = std::make_error_code(std::errc::io_error);
      }
      if (ec) rc = fail("cannot write " + dest.string() + ": " + ec.message(), 1);
    }
  }
  fs::remove_all(tmp, ec);
  return rc;
}
}  // namespace

bool wants_remote(int argc, char** argv) {
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (!std::strcmp(argv[i], "--remote")) return true;
  return false;
}

int cmd_remote(int argc, char** argv) {
  const std::string cmd = argv[0];
  if (cmd != "run" && cmd != "tune" && cmd != "knobs" && cmd != "make-dataset")
    return fail("'" + cmd + "' has no --remote (run, tune, knobs, make-dataset have; the GUI: tunebench --remote)", 2);
  std::string spec, remote_cli;
  std::vector<std::string> args = {client::shell_quote(cmd)};
  std::vector<Output> outputs;
  bool after_dashes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (!after_dashes && a == "--") after_dashes = true;
    const bool has_value = i + 1 < argc;
    if (!after_dashes && (a == "--remote" || a == "--remote-cli")) {
      if (!has_value) return fail(a + " needs a value", 2);
      (a == "--remote" ? spec : remote_cli) = argv[++i];
    } else if (!after_dashes && (a == "--json" || a == "--trace" || a == "--report") && has_value) {
      const std::string local = argv[++i];
      const fs::path parent = fs::path(local).parent_path();
      std::error_code ec;
      if (local.empty() || local == "-") return fail(a + " needs a file name", 2);
      if (!parent.empty() && !fs::is_directory(parent, ec))
        return fail("cannot write " + local + ": no directory " + parent.string() + " here", 2);
      args.push_back(a);
      // Double quotes: "$d" expands on the remote, the file name stays one word.
      args.push_back("\"$d/" + std::to_string(outputs.size()) + "/\"" +
                     client::shell_quote(fs::path(local).filename().string()));
      outputs.push_back({a, local});
    } else {
      args.push_back(client::shell_quote(a));
    }
  }
  std::string error;
  auto target = client::parse_remote(spec, &error);
  if (!target) return fail(error, 2);
  if (!remote_cli.empty()) target->cli = remote_cli;

  const std::string id = random_id();
  // Shown lines: the server's paths named as the local ones; its errors say where they happened.
  const std::string error_prefix = "tunebench-cli: error: ";
  const auto rewrite = [&](std::string line) {
    line = localize(std::move(line), id, outputs);
    if (line.rfind(error_prefix, 0) == 0) line.insert(error_prefix.size(), "on " + target->display() + ": ");
    return line;
  };
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    return fail("pipe failed", 1);
  // stdin: a pipe we keep open and never write. Its end (this process gone) is what the remote watches.
  const pid_t ssh =
      spawn(client::ssh_argv(*target, run_script(*target, id, args, outputs.size())), in[0], out[1], err[1]);
  ::close(in[0]), ::close(out[1]), ::close(err[1]);
  if (ssh < 0) return fail(std::string("cannot start ssh: ") + std::strerror(errno), 1);
  const auto ssh_err = pump_lines({{out[0], STDOUT_FILENO}, {err[0], STDERR_FILENO}}, rewrite);
  ::close(out[0]), ::close(err[0]);
  const int rc = wait_exit(ssh);
  ::close(in[1]);
  if (rc < 0)
    return fail("ssh to " + target->display() + " was killed (signal " + std::to_string(-rc) +
                "): the remote run stops as its channel closes, its results are not fetched", 1);
  auto has = [&](const std::string& what) {
    for (const auto& l : ssh_err)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  if (rc == 255) return fail(client::explain_ssh_failure(*target, ssh_err), 1);
  if (rc == kExitNoCli && has("tunebench-remote: no program"))
    return fail(target->display() + " has no '" + target->cli + "' on the PATH of a non-interactive ssh shell: " +
                "install it there (docs/remote.md: cmake --install or the tunebench-cli .deb) or pass --remote-cli PATH", 1);
  if (rc == kExitVersion && has("tunebench-remote: version"))
    return fail("'" + target->cli + "' on " + target->display() + " does not speak " + kProtocol +
                ": install the same TuneBench version there", 1);
  if (rc == kExitNoDir && ssh_err.size() > 0 && ssh_err.back().find("mkdir") != std::string::npos)
    return fail("cannot make a working directory on " + target->display() + ": " + ssh_err.back(), 1);
  if (!outputs.empty()) {
    const int frc = fetch(*target, id, outputs);
    if (frc != 0 && rc == 0) return frc;
  }
  return rc;
}

}  // namespace tb::cli
