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
//
// Several hosts (--remote HOST1,HOST2,...): run, tune and serve start one data-parallel group across them
// (cmd_remote_group.cpp); knobs asks the first host, make-dataset runs on each in turn.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "client/remote.h"
#include "commands.h"
#include "remote_run.h"

namespace tb::cli {
namespace {
namespace fs = std::filesystem;
using namespace remote;

// One host: the command runs there as it would here.
int run_on_one_host(const Command& c) {
  auto target = client::parse_remote(c.hosts);
  if (!target) return fail(target.error().message, 2);
  if (!c.remote_cli.empty()) target->cli = c.remote_cli;

  const std::string id = client::remote_id();
  // Shown lines: the server's paths named as the local ones; its errors say where they happened.
  const auto rewrite = [&](std::string line) { return say_where(localize(std::move(line), id, c.outputs), target->display()); };
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    return fail("pipe failed", 1);
  // stdin: a pipe we keep open and never write. Its end (this process gone) is what the remote watches.
  auto ssh = client::Process::launch(
      {.argv = client::ssh_argv(*target, client::remote_run_script(*target, id, c.args, c.outputs.size())),
       .in = in[0], .out = out[1], .err = err[1]});
  ::close(in[0]), ::close(out[1]), ::close(err[1]);
  if (!ssh) {
    ::close(out[0]), ::close(err[0]), ::close(in[1]);
    return fail(ssh.error().message, 1);
  }
  const auto ssh_err = pump_lines({{out[0], STDOUT_FILENO}, {err[0], STDERR_FILENO}}, rewrite);
  ::close(out[0]), ::close(err[0]);
  ssh->wait();
  const int rc = ssh->exit_code();
  ::close(in[1]);
  if (rc < 0)
    return fail("ssh to " + target->display() + " was killed (signal " + std::to_string(-rc) +
                "): the remote run stops as its channel closes, its results are not fetched", 1);
  if (const std::string why = client::explain_remote_exit(*target, rc, ssh_err); !why.empty()) return fail(why, 1);
  if (!c.outputs.empty()) {
    const int frc = fetch(*target, id, c.outputs);
    if (frc != 0 && rc == 0) return frc;
  }
  return rc;
}
}  // namespace

bool wants_remote(int argc, char** argv) {
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (!std::strcmp(argv[i], "--remote")) return true;
  return false;
}

int cmd_remote(int argc, char** argv) {
  Command c;
  c.name = argv[0];
  if (c.name != "run" && c.name != "tune" && c.name != "knobs" && c.name != "make-dataset" && c.name != "serve")
    return fail("'" + c.name + "' has no --remote (run, tune, knobs, make-dataset have; the GUI: tunebench --remote)", 2);
  c.args = {client::shell_quote(c.name)};
  bool after_dashes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (!after_dashes && a == "--") {
      after_dashes = true;
      if (c.name == "serve") c.args.push_back("--inline-files");  // before the script's own arguments
    }
    const bool has_value = i + 1 < argc;
    if (!after_dashes && (a == "--remote" || a == "--remote-cli" || a == "--ranks-per-host" || a == "--master-addr")) {
      if (!has_value) return fail(a + " needs a value", 2);
      (a == "--remote" ? c.hosts : a == "--remote-cli" ? c.remote_cli : a == "--ranks-per-host" ? c.ranks_per_host
                                                                                                 : c.master_addr) = argv[++i];
    } else if (!after_dashes && c.name == "serve" && a == "--trace-dir" && has_value) {
      ++i;  // the chunks are written on the first host and travel inside the protocol (--inline-files)
      c.args.insert(c.args.end(), {"--trace-dir", "\"$d\""});
    } else if (!after_dashes && (a == "--json" || a == "--trace" || a == "--report") && has_value) {
      const std::string local = argv[++i];
      const fs::path parent = fs::path(local).parent_path();
      std::error_code ec;
      if (local.empty() || local == "-") return fail(a + " needs a file name", 2);
      if (!parent.empty() && !fs::is_directory(parent, ec))
        return fail("cannot write " + local + ": no directory " + parent.string() + " here", 2);
      c.args.push_back(a);
      // Double quotes: "$d" expands on the remote, the file name stays one word.
      c.args.push_back("\"$d/" + std::to_string(c.outputs.size()) + "/\"" +
                       client::shell_quote(fs::path(local).filename().string()));
      c.outputs.push_back({a, local});
    } else {
      c.args.push_back(client::shell_quote(a));
    }
  }
  if (c.name == "serve" && !after_dashes) c.args.push_back("--inline-files");
  const bool group = c.hosts.find(',') != std::string::npos;
  if (c.name == "serve" && !group)
    return fail("serve --remote takes a group's hosts (HOST1,HOST2,...); the GUI reaches one host with ssh itself", 2);
  if (!group && !(c.ranks_per_host.empty() && c.master_addr.empty()))
    return fail("--ranks-per-host and --master-addr are for a group across hosts: --remote HOST1,HOST2,...", 2);
  if (group && (c.name == "knobs" || c.name == "make-dataset")) {
    // What applies is asked of the first host (a group's hosts are alike); a dataset is made on every host,
    // where each rank reads it.
    int rc = 0;
    for (const std::string& host : split_hosts(c.hosts)) {
      c.hosts = host;
      if ((rc = run_on_one_host(c)) != 0 || c.name == "knobs") break;
    }
    return rc;
  }
  return group ? run_on_hosts(c) : run_on_one_host(c);
}

}  // namespace tb::cli
