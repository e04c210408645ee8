// `tunebench-cli run|tune --remote HOST1,HOST2,... [--ranks-per-host N|gpu] [--master-addr ADDR] ...`: one
// data-parallel group across those hosts, started from here with PyTorch's own launcher on each
// (docs/distributed.md, "Across hosts"): `torchrun --nnodes K --node_rank i --nproc_per_node N --master_addr A
// --master_port P --no_python tunebench-cli ...`, the same command on every node, over one ssh each.
//
// The rendezvous: node 0's address is the one this machine's ssh reached it at (the server side of
// SSH_CONNECTION, asked of node 0 before anything starts), which the other nodes of a cluster reach as well;
// --master-addr names another (a fast interconnect's address). The port is one node 0 finds free then.
// Rank 0 runs on node 0 and writes --json/--trace/--report, which come back from node 0 alone; the other
// nodes' working directories go when their commands end.
//
// Never a hang, nothing orphaned: a node whose connection ends in failure while others run has the others'
// ssh stdin closed, which stops their runs (the run script's watcher); so does a node still running 60 s after
// node 0 ended, and every node when this process gets SIGTERM, SIGINT or SIGHUP.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/remote.h"
#include "remote_run.h"

namespace tb::cli::remote {
namespace {

constexpr auto kGraceAfterNodeZero = std::chrono::seconds(60);
constexpr auto kStopWait = std::chrono::seconds(20);

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

struct Node {
  client::RemoteTarget target;
  std::string id;
  int stdin_w = -1;  // kept open and never written: closing it stops the node's run
  bool serves = false;  // a serve's first host: its stdin is ours, so it is stopped by ending its ssh
  client::Process ssh;
  int rc = 0;
  bool ended = false;
  std::vector<std::string> err;
};

// Node 0's address as this machine's ssh reached it, and a port free there now ("ADDR PORT"); "" on
// failure, with `why` set.
std::string find_rendezvous(const client::RemoteTarget& node0, std::string& why) {
  const std::string script =
      "set -- $SSH_CONNECTION; "
      "p=$(python3 -c 'import socket; s=socket.socket(); s.bind((\"\", 0)); print(s.getsockname()[1])' 2>/dev/null) "
      "|| p=29500; echo \"tunebench-rendezvous $3 $p\"";
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    why = "pipe failed";
    return "";
  }
  // stdout and stderr in one stream: its lines are the answer, or ssh's complaint.
  auto ssh = client::Process::launch(
      {.argv = client::ssh_argv(node0, "sh -c " + client::shell_quote(script)), .out = out[1], .err = out[1]});
  ::close(out[1]);
  const auto lines = ssh ? pump_lines({{out[0], -1}}) : std::vector<std::string>{ssh.error().message};
  ::close(out[0]);
  const int rc = ssh && ssh->wait() ? ssh->exit_code() : 255;
  const std::string mark = "tunebench-rendezvous ";
  for (const auto& l : lines)
    if (rc == 0 && l.rfind(mark, 0) == 0 && l.size() > mark.size() + 2 && l[mark.size()] != ' ') return l.substr(mark.size());
  why = rc == 255 ? client::explain_ssh_failure(node0, lines)
                  : "cannot learn " + node0.display() + "'s address (SSH_CONNECTION)" +
                        (lines.empty() ? std::string() : ": " + lines.back()) + "; pass --master-addr ADDR";
  return "";
}

bool valid_ranks_per_host(const std::string& n) {
  if (n == "gpu") return true;
  if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos) return false;
  const int v = std::stoi(n);
  return v >= 1 && v <= 64;
}

// The group's nodes while they run: each node's ssh is watched on a thread of its own, and the first failure (or a
// stop) closes the others' stdin so that their runs end.
struct Group {
  std::vector<Node> nodes;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::thread> threads;
  int first_failed = -1;  // the node whose failure ended the group
  bool stopping = false;  // we stopped the hosts (a signal, the grace after node 0): their ends are no failure

  // Closes the stdin of every node still running: their watchers stop their runs. Under `mu`.
  void stop_others(size_t except) {
    for (size_t k = 0; k < nodes.size(); ++k) {
      Node& n = nodes[k];
      if (k == except || n.ended) continue;
      if (n.stdin_w >= 0) ::close(n.stdin_w);
      n.stdin_w = -1;
      if (n.serves) n.ssh.signal(SIGTERM);  // its channel closes: serve sees its stdin end
    }
  }
  // Starts node `i`'s ssh and its watcher; false when it could not start (it and the ones after it are ended,
  // the ones before stopped).
  bool start(size_t i, const Command& c, const std::string& per_host, const std::string& addr, const std::string& port);
  void watch(size_t i, int out0, int err0, const Command& c);
  // Waits for every node. A node still running 60 s after node 0 ended, or any when this process is told to
  // stop (the GUI's Stop, Ctrl-C), is stopped; one that has not ended 20 s after that loses its ssh.
  void wait();
  // The group's exit status, each node's failure said.
  int result(const Command& c) const;
};

bool Group::start(size_t i, const Command& c, const std::string& per_host, const std::string& addr,
                  const std::string& port) {
  // serve: rank 0 on the first host speaks the run protocol on this process's stdin/stdout (the GUI's pipes),
  // which its ssh inherits.
  Node& n = nodes[i];
  const std::string torchrun = "--nnodes " + std::to_string(nodes.size()) + " --node_rank " + std::to_string(i) +
                               " --nproc_per_node " + per_host + " --master_addr " + client::shell_quote(addr) +
                               " --master_port " + client::shell_quote(port) +
                               // 2: only stderr goes through torchrun's log files (and on to ours, tee'd),
                               // rank 0's stdout stays the protocol's.
                               " --redirects 2 --tee 2";
  n.serves = c.name == "serve" && i == 0;
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  const bool piped = (n.serves || pipe2(in, O_CLOEXEC) == 0) && pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0;
  const std::string script = n.serves ? client::remote_serve_script(n.target, n.id, c.args, torchrun)
                                      : client::remote_run_script(n.target, n.id, c.args, c.outputs.size(), torchrun, i == 0);
  std::string start_error = piped ? "" : std::string("pipe failed: ") + std::strerror(errno);
  if (piped) {
    auto ssh = client::Process::launch({.argv = client::ssh_argv(n.target, script), .in = n.serves ? client::kInherit : in[0],
                                        .out = out[1], .err = err[1]});
    if (ssh) n.ssh = std::move(ssh).value();
    else start_error = ssh.error().message;
  }
  for (int fd : {in[0], out[1], err[1]})
    if (fd >= 0) ::close(fd);
  n.stdin_w = in[1];
  if (!n.ssh.started()) {
    for (int fd : {out[0], err[0]})
      if (fd >= 0) ::close(fd);
    std::lock_guard<std::mutex> lock(mu);
    for (size_t k = i; k < nodes.size(); ++k) {
      nodes[k].ended = true;
      nodes[k].rc = 255;
    }
    n.err = {start_error};
    first_failed = int(i);
    stop_others(i);
    return false;
  }
  threads.emplace_back([this, i, out0 = out[0], err0 = err[0], &c] { watch(i, out0, err0, c); });
  return true;
}

void Group::watch(size_t i, int out0, int err0, const Command& c) {
  Node& me = nodes[i];
  const std::string where = me.target.display();
  // Node 0's stdout is the run's; every other line says which host it came from.
  const auto rewrite = [&](std::string line) {
    if (i == 0) return say_where(localize(std::move(line), me.id, c.outputs), where);
    const std::string shown = say_where(line, where);
    return shown != line ? shown : "[" + where + "] " + line;
  };
  auto lines = pump_lines({{out0, i == 0 ? STDOUT_FILENO : STDERR_FILENO}, {err0, STDERR_FILENO}}, rewrite);
  ::close(out0), ::close(err0);
  me.ssh.wait();
  const int rc = me.ssh.exit_code();
  std::lock_guard<std::mutex> lock(mu);
  me.rc = rc;
  me.err = std::move(lines);
  me.ended = true;
  if (rc != 0 && first_failed < 0 && !stopping) {  // one node failed: the group cannot go on
    first_failed = int(i);
    stop_others(i);
  }
  cv.notify_all();
}

void Group::wait() {
  {
    using Clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lock(mu);
    std::optional<Clock::time_point> node0_ended, hard_stop;
    auto all_ended = [&] { return std::all_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.ended; }); };
    auto stop_all = [&](const char* why) {
      std::fprintf(stderr, "tunebench-cli: %s: stopping every host\n", why);
      stopping = true;
      stop_others(nodes.size());
      hard_stop = Clock::now() + kStopWait;
    };
    while (!all_ended()) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      const auto now = Clock::now();
      if (nodes[0].ended && !node0_ended) node0_ended = now;
      if (g_stop_signal != 0 && !hard_stop) stop_all(strsignal(g_stop_signal));
      if (node0_ended && !hard_stop && now - *node0_ended > kGraceAfterNodeZero)
        stop_all("node 0 ended a minute ago and other nodes still run");
      if (hard_stop && now > *hard_stop) {
        for (auto& n : nodes)
          if (!n.ended) n.ssh.signal(SIGKILL);
        hard_stop = Clock::time_point::max();
      }
    }
  }
  for (auto& t : threads) t.join();
  for (auto& n : nodes)
    if (n.stdin_w >= 0) ::close(n.stdin_w);
}

int Group::result(const Command& c) const {
  int rc = 0;
  for (const Node& n : nodes) {
    const std::string why = n.rc < 0 ? "ssh to " + n.target.display() + " was killed (signal " + std::to_string(-n.rc) + ")"
                                     : client::explain_remote_exit(n.target, n.rc, n.err);
    if (!why.empty()) rc = fail(why, 1);
  }
  if (first_failed >= 0) {
    const Node& n = nodes[size_t(first_failed)];
    rc = fail("the group ended: node " + std::to_string(first_failed) + " (" + n.target.display() + ") " +
                  (n.rc < 0 ? "lost its ssh" : "failed (exit status " + std::to_string(n.rc) + ")") +
                  (nodes.size() > 1 ? ", and the other nodes were stopped" : ""),
              first_failed == 0 && nodes[0].rc > 0 && nodes[0].rc < 124 ? nodes[0].rc : 1);
  }
  if (!c.outputs.empty() && nodes[0].rc >= 0 && client::explain_remote_exit(nodes[0].target, nodes[0].rc, nodes[0].err).empty()) {
    const int frc = fetch(nodes[0].target, nodes[0].id, c.outputs);
    if (frc != 0 && rc == 0) rc = frc;
  }
  return rc;
}

}  // namespace

int run_on_hosts(const Command& c) {
  const std::string per_host = c.ranks_per_host.empty() ? "1" : c.ranks_per_host;
  if (!valid_ranks_per_host(per_host))
    return fail("--ranks-per-host needs an integer from 1 to 64, or gpu (one rank per GPU), not '" + per_host + "'", 2);
  Group g;
  for (const std::string& host : split_hosts(c.hosts)) {
    auto t = client::parse_remote(host);
    if (!t) return fail("--remote " + c.hosts + ": " + t.error().message, 2);
    if (!c.remote_cli.empty()) t->cli = c.remote_cli;
    g.nodes.push_back({*t});
  }
  if (g.nodes.size() > 64) return fail("--remote names " + std::to_string(g.nodes.size()) + " hosts: at most 64", 2);

  std::string why;
  const std::string found = find_rendezvous(g.nodes[0].target, why);
  if (found.empty()) return fail(why, 1);
  const std::string addr = c.master_addr.empty() ? found.substr(0, found.find(' ')) : c.master_addr;
  const std::string port = found.substr(found.find(' ') + 1);
  std::fprintf(stderr, "tunebench-cli: a group of %zu hosts x %s rank(s), rendezvous at %s:%s (node 0: %s)\n",
               g.nodes.size(), per_host.c_str(), addr.c_str(), port.c_str(), g.nodes[0].target.display().c_str());

  // SIGTERM, SIGINT, SIGHUP: stop every host before ending, so that none keeps a run or a directory.
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  const std::string id = client::remote_id();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].id = id + "-" + std::to_string(i);
    if (!g.start(i, c, per_host, addr, port)) break;
  }
  g.wait();
  return g.result(c);
}

}  // namespace tb::cli::remote
