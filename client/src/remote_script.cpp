// The remote scripts (client/remote_script.h): written once, for the CLI and the GUI.
#include "client/remote_script.h"

#include <cstdio>
#include <random>

namespace tb::client {

std::string remote_id() {
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
  return id;
}

namespace {
// The script's start: its working directory's name in $d, the checks of the CLI (and of PyTorch's launcher,
// with `torchrun_args`: the torchrun script, else the module of the python3 with torch), and the command line
// that runs the CLI (its arguments not yet added).
std::string prologue(const RemoteTarget& t, const std::string& id, const std::string& torchrun_args,
                     std::string& command) {
  const std::string cli = shell_quote(t.cli);
  std::string s = "d=\"${TMPDIR:-/tmp}/tunebench-remote-" + id + "\"\n";
  s += "command -v " + cli + " >/dev/null 2>&1 || { echo \"tunebench-remote: no program " + t.cli +
       "\" >&2; exit " + std::to_string(kRemoteExitNoCli) + "; }\n";
  s += "v=$(" + cli + " --version 2>/dev/null)\n";
  s += "case \"$v\" in *'" + std::string(kRemoteProtocol) + "'*) ;; *) echo \"tunebench-remote: version: $v\" >&2; exit " +
       std::to_string(kRemoteExitVersion) + ";; esac\n";
  command = cli;
  if (!torchrun_args.empty()) {
    s += "if command -v torchrun >/dev/null 2>&1; then tr=torchrun\n"
         "elif python3 -c 'import torch.distributed.run' >/dev/null 2>&1; then tr='python3 -m torch.distributed.run'\n"
         "else echo \"tunebench-remote: no torchrun\" >&2; exit " + std::to_string(kRemoteExitNoTorchrun) + "\nfi\n";
    command = "$tr " + torchrun_args + " --log_dir \"$d/torchrun\" --no_python " + cli;
  }
  s += "mkdir -m 700 \"$d\" || exit " + std::to_string(kRemoteExitNoDir) + "\n";
  // The run's temporary files go with its directory: PyTorch 2.x leaves a torchinductor_<user> cache in
  // $TMPDIR from any training script, which must not outlive the run on someone else's server.
  s += "mkdir \"$d/tmp\" && TMPDIR=\"$d/tmp\" && export TMPDIR\n";
  return s;
}
}  // namespace

std::string remote_run_script(const RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
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
  return "sh -c " + shell_quote(s);
}

std::string remote_serve_script(const RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                         const std::string& torchrun_args) {
  std::string command;
  std::string s = prologue(t, id, torchrun_args, command);
  for (const auto& a : args) command += " " + a;
  // serve reads the channel through a FIFO that `cat` fills: when the channel ends, serve sees its stdin end
  // and stops its group; what is still running 10 s later (torchrun waiting at its exit barrier for a host
  // that was stopped) is stopped as run_script's watcher does.
  s += "mkfifo \"$d/stdin\" || exit " + std::to_string(kRemoteExitNoDir) + "\n";
  // (An asynchronous list's stdin is /dev/null in a shell without job control: the channel goes through fd 3.)
  s += "exec 3<&0\nif command -v setsid >/dev/null 2>&1; then setsid " + command + " <\"$d/stdin\" &\nelse " + command +
       " <\"$d/stdin\" &\nfi\np=$!\n";
  s += "{ cat >\"$d/stdin\"; [ -e \"$d/.done\" ] || { sleep 10; kill -TERM -$p || kill -TERM $p; sleep 10; "
       "kill -KILL -$p || kill -KILL $p; }; } <&3 >/dev/null 2>&1 &\n";
  s += "w=$!\nexec 3<&-\nwait $p\nrc=$?\ntouch \"$d/.done\"\nkill $w 2>/dev/null\nrm -rf \"$d\"\nexit $rc\n";
  return "sh -c " + shell_quote(s);
}

std::string remote_fetch_script(const std::string& id, size_t outputs) {
  std::string s = "d=\"${TMPDIR:-/tmp}/tunebench-remote-" + id + "\"\n[ -e \"$d/.done\" ] || exit 3\ncd \"$d\" && tar -cf -";
  for (size_t i = 0; i < outputs; ++i) s += " " + std::to_string(i);
  s += "\nrc=$?\ncd / && rm -rf \"$d\"\nexit $rc\n";
  return "sh -c " + shell_quote(s);
}

std::string explain_remote_exit(const RemoteTarget& t, int rc, const std::vector<std::string>& err) {
  auto has = [&](const std::string& what) {
    for (const auto& l : err)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  if (rc == 255) return explain_ssh_failure(t, err);
  if (rc == kRemoteExitNoCli && has("tunebench-remote: no program"))
    return t.display() + " has no '" + t.cli + "' on the PATH of a non-interactive ssh shell: " +
           "install it there (docs/remote.md: cmake --install or the tunebench-cli .deb) or pass --remote-cli PATH";
  if (rc == kRemoteExitVersion && has("tunebench-remote: version"))
    return "'" + t.cli + "' on " + t.display() + " does not speak " + kRemoteProtocol + ": install the same TuneBench version there";
  if (rc == kRemoteExitNoDir && !err.empty() && err.back().find("mkdir") != std::string::npos)
    return "cannot make a working directory on " + t.display() + ": " + err.back();
  if (rc == kRemoteExitNoTorchrun && has("tunebench-remote: no torchrun"))
    return t.display() + " has neither torchrun nor a python3 with torch on the PATH of a non-interactive ssh " +
           "shell: a group across hosts starts PyTorch's launcher on each (install torch there)";
  return "";
}

}  // namespace tb::client
