// What a remote run over ssh is made of (remote_run.h): the remote shell script, the streams, the fetch.
#include "remote_run.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

extern char** environ;

namespace tb::cli::remote {
namespace fs = std::filesystem;

int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  return code;
}

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

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::vector<std::string> pump_lines(std::vector<Stream> streams,
                                    const std::function<std::string(std::string)>& rewrite) {
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

std::vector<std::string> split_hosts(const std::string& hosts) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t comma = hosts.find(',', at);
    out.push_back(hosts.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

std::string say_where(std::string line, const std::string& where) {
  static const std::string kErrorPrefix = "tunebench-cli: error: ";
  if (line.rfind(kErrorPrefix, 0) == 0) line.insert(kErrorPrefix.size(), "on " + where + ": ");
  return line;
}

std::string random_id() {
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
  return id;
}

namespace {
// The script's start: its working directory's name in $d, the checks of the CLI (and of PyTorch's launcher,
// with `torchrun_args`: the torchrun script, else the module of the python3 with torch), and the command line
// that runs the CLI (its arguments not yet added).
std::string prologue(const client::RemoteTarget& t, const std::string& id, const std::string& torchrun_args,
                     std::string& command) {
  const std::string cli = client::shell_quote(t.cli);
  std::string s = "d=\"${TMPDIR:-/tmp}/tunebench-remote-" + id + "\"\n";
  s += "command -v " + cli + " >/dev/null 2>&1 || { echo \"tunebench-remote: no program " + t.cli +
       "\" >&2; exit " + std::to_string(kExitNoCli) + "; }\n";
  s += "v=$(" + cli + " --version 2>/dev/null)\n";
  s += "case \"$v\" in *'" + std::string(kProtocol) + "'*) ;; *) echo \"tunebench-remote: version: $v\" >&2; exit " +
       std::to_string(kExitVersion) + ";; esac\n";
  command = cli;
  if (!torchrun_args.empty()) {
    s += "if command -v torchrun >/dev/null 2>&1; then tr=torchrun\n"
         "elif python3 -c 'import torch.distributed.run' >/dev/null 2>&1; then tr='python3 -m torch.distributed.run'\n"
         "else echo \"tunebench-remote: no torchrun\" >&2; exit " + std::to_string(kExitNoTorchrun) + "\nfi\n";
    command = "$tr " + torchrun_args + " --log_dir \"$d/torchrun\" --no_python " + cli;
  }
  s += "mkdir -m 700 \"$d\" || exit " + std::to_string(kExitNoDir) + "\n";
  // The run's temporary files go with its directory: PyTorch 2.x leaves a torchinductor_<user> cache in
  // $TMPDIR from any training script, which must not outlive the run on someone else's server.
  s += "mkdir \"$d/tmp\" && TMPDIR=\"$d/tmp\" && export TMPDIR\n";
  return s;
}
}  // namespace

std::string run_script(const client::RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                       size_t outputs, const std::string& torchrun_args, bool keep_outputs) {
  std::string command;
  std::string s = prologue(t, id, torchrun_args, command);
  for (size_t i = 0; i < outputs; ++i) s += "mkdir \"$d/" + std::to_string(i) + "\"\n";
  // setsid: the command leads its own process group, which the watcher stops as a whole (tune's fresh
  // processes, the ranks of --ranks, torchrun's workers). A background job of a shell without job control is
  // no group leader, so setsid execs in place and $p is that group. (`set -m` needs a terminal, which ssh -T
  // does not give.)
  for (const auto& a : args) command += " " + a;
  s += "exec 3<&0\nif command -v setsid >/dev/null 2>&1; then setsid " + command + " </dev/null &\nelse " + command +
       " </dev/null &\nfi\np=$!\n";
  // The watcher marks the loss before it stops the run, so the shell that waits knows to remove everything.
  s += "{ cat >/dev/null; [ -e \"$d/.done\" ] || { touch \"$d/.lost\"; kill -TERM -$p || kill -TERM $p; sleep 10; "
       "kill -KILL -$p || kill -KILL $p; }; } <&3 >/dev/null 2>&1 &\n";
  s += "w=$!\nexec 3<&-\nwait $p\nrc=$?\ntouch \"$d/.done\"\nkill $w 2>/dev/null\n";
  s += "if [ -e \"$d/.lost\" ]; then rm -rf \"$d\"; exit $rc; fi\n";
  if (outputs == 0 || !keep_outputs) s += "rm -rf \"$d\"\n";
  s += "exit $rc\n";
  return "sh -c " + client::shell_quote(s);
}

std::string serve_script(const client::RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                         const std::string& torchrun_args) {
  std::string command;
  std::string s = prologue(t, id, torchrun_args, command);
  for (const auto& a : args) command += " " + a;
  // serve reads the channel through a FIFO that `cat` fills: when the channel ends, serve sees its stdin end
  // and stops its group; what is still running 10 s later (torchrun waiting at its exit barrier for a host
  // that was stopped) is stopped as run_script's watcher does.
  s += "mkfifo \"$d/stdin\" || exit " + std::to_string(kExitNoDir) + "\n";
  // (An asynchronous list's stdin is /dev/null in a shell without job control: the channel goes through fd 3.)
  s += "exec 3<&0\nif command -v setsid >/dev/null 2>&1; then setsid " + command + " <\"$d/stdin\" &\nelse " + command +
       " <\"$d/stdin\" &\nfi\np=$!\n";
  s += "{ cat >\"$d/stdin\"; [ -e \"$d/.done\" ] || { sleep 10; kill -TERM -$p || kill -TERM $p; sleep 10; "
       "kill -KILL -$p || kill -KILL $p; }; } <&3 >/dev/null 2>&1 &\n";
  s += "w=$!\nexec 3<&-\nwait $p\nrc=$?\ntouch \"$d/.done\"\nkill $w 2>/dev/null\nrm -rf \"$d\"\nexit $rc\n";
  return "sh -c " + client::shell_quote(s);
}

std::string localize(std::string text, const std::string& id, const std::vector<Output>& outputs) {
  const std::string marker = "/tunebench-remote-" + id + "/";
  for (size_t at, from = 0; (at = text.find(marker, from)) != std::string::npos;) {
    const size_t blank = text.find_last_of(" '\"(\n", at);
    const size_t start = blank == std::string::npos ? 0 : blank + 1;
    const size_t slot = at + marker.size(), slash = text.find('/', slot);
    if (slash == std::string::npos) break;
    from = slot;
    if (!std::isdigit(static_cast<unsigned char>(text[slot]))) continue;  // not an output's slot ($d/tmp)
    const size_t i = size_t(std::atoi(text.c_str() + slot));
    const std::string dir = i < outputs.size() ? fs::path(outputs[i].local).parent_path().string() : "";
    text.replace(start, slash + 1 - start, dir.empty() ? "" : dir + "/");
    from = start;
  }
  return text;
}

namespace {
std::string fetch_script(const std::string& id, size_t outputs) {
  std::string s = "d=\"${TMPDIR:-/tmp}/tunebench-remote-" + id + "\"\n[ -e \"$d/.done\" ] || exit 3\ncd \"$d\" && tar -cf -";
  for (size_t i = 0; i < outputs; ++i) s += " " + std::to_string(i);
  s += "\nrc=$?\ncd / && rm -rf \"$d\"\nexit $rc\n";
  return "sh -c " + client::shell_quote(s);
}
}  // namespace

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
std::string explain_exit(const client::RemoteTarget& t, int rc, const std::vector<std::string>& err) {
  auto has = [&](const std::string& what) {
    for (const auto& l : err)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  if (rc == 255) return client::explain_ssh_failure(t, err);
  if (rc == kExitNoCli && has("tunebench-remote: no program"))
    return t.display() + " has no '" + t.cli + "' on the PATH of a non-interactive ssh shell: " +
           "install it there (docs/remote.md: cmake --install or the tunebench-cli .deb) or pass --remote-cli PATH";
  if (rc == kExitVersion && has("tunebench-remote: version"))
    return "'" + t.cli + "' on " + t.display() + " does not speak " + kProtocol + ": install the same TuneBench version there";
  if (rc == kExitNoDir && !err.empty() && err.back().find("mkdir") != std::string::npos)
    return "cannot make a working directory on " + t.display() + ": " + err.back();
  if (rc == kExitNoTorchrun && has("tunebench-remote: no torchrun"))
    return t.display() + " has neither torchrun nor a python3 with torch on the PATH of a non-interactive ssh " +
           "shell: a group across hosts starts PyTorch's launcher on each (install torch there)";
  return "";
}

}  // namespace tb::cli::remote
