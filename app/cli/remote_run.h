// The pieces of a remote run over ssh (docs/remote.md), shared by one host (cmd_remote.cpp) and a group across
// hosts (cmd_remote_group.cpp). tunebench-cli only: no LibTorch.
//
// A remote command runs under `sh -c` in a private directory ($TMPDIR/tunebench-remote-<id>) that holds its
// outputs; it leads its own process group, and a watcher on the channel stops that group when the channel
// closes (ssh killed, link lost, or this side closing the ssh's stdin on purpose), so no training is orphaned.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "client/remote.h"

namespace tb::cli::remote {

inline constexpr const char* kProtocol = "(protocol 1)";  // what `tunebench-cli --version` ends with
// Exit codes of the remote script for what it found missing (explain_exit turns them into a line).
inline constexpr int kExitNoCli = 127, kExitVersion = 126, kExitNoDir = 125, kExitNoTorchrun = 124;

// Prints "tunebench-cli: error: msg" and returns `code`.
int fail(const std::string& msg, int code);

// posix_spawnp with the three standard fds given (-1: inherit). Returns the pid or -1 (errno set).
pid_t spawn(const std::vector<std::string>& argv, int in, int out, int err);
// The exit status, or -signal when the process was killed by one.
int wait_exit(pid_t pid);

// Copies the lines of each `from` fd to its `to` fd (-1: keep only) until every one has ended, and returns the
// lines of the last stream (stderr). Lines of the remote script's own ("tunebench-remote: ...") are kept but not
// shown: the caller turns them into a message. `rewrite` may change a shown line.
struct Stream {
  int from, to;
};
std::vector<std::string> pump_lines(std::vector<Stream> streams,
                                    const std::function<std::string(std::string)>& rewrite = {});

struct Output {
  std::string option, local;  // e.g. --json, results/run.json
};

std::string random_id();

// `run|tune|knobs|make-dataset|serve --remote ...` as parsed: `args` are the remote command's quoted words (outputs
// already pointed into "$d/i/"), `hosts` the --remote value as given.
struct Command {
  std::string name, hosts, remote_cli, ranks_per_host, master_addr;
  std::vector<std::string> args;
  std::vector<Output> outputs;
};
// The hosts of --remote HOST1,HOST2,... as written (one when there is no comma; an empty one stays, for
// parse_remote to refuse).
std::vector<std::string> split_hosts(const std::string& hosts);

// A remote CLI line as shown here: an error line says where it happened ("tunebench-cli: error: on gpu2: ...").
std::string say_where(std::string line, const std::string& where);

// A group across hosts (--remote HOST1,HOST2,...; cmd_remote_group.cpp).
int run_on_hosts(const Command& c);

// The remote sh command of a run: `args` are quoted words after the CLI; output i goes to "$d/i/<its file>".
// With `torchrun_args` ("--nnodes 2 --node_rank 1 ..."), the CLI runs under PyTorch's launcher as the host
// has it (torchrun, else python3 -m torch.distributed.run; exit kExitNoTorchrun when neither), its logs in the
// working directory. `keep_outputs` false: the directory goes when the command ends (a group's other nodes,
// whose outputs rank 0 gathers).
std::string run_script(const client::RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                       size_t outputs, const std::string& torchrun_args = "", bool keep_outputs = true);

// The remote sh command of `serve` on a group's first host: rank 0 reads the run protocol from the channel's
// stdin (through a FIFO: serve ends, and stops its group, when the channel's stdin ends, and whatever still
// runs 10 s later is stopped); $d is its trace directory.
std::string serve_script(const client::RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                         const std::string& torchrun_args);

// Names the remote working directory's files by the local paths they get: "trace written to
// /tmp/tunebench-remote-<id>/1/t.json" -> "trace written to results/t.json"; also inside a fetched run JSON.
std::string localize(std::string text, const std::string& id, const std::vector<Output>& outputs);

// Brings the remote directory back, puts each output's files next to the local path asked for, and removes
// the directory there. 0, or 1 after saying why.
int fetch(const client::RemoteTarget& t, const std::string& id, const std::vector<Output>& outputs);

// One line for an exit status of the remote script that means something was missing or the connection
// failed (ssh's 255); "" for any other status (the command's own).
std::string explain_exit(const client::RemoteTarget& t, int rc, const std::vector<std::string>& err);

}  // namespace tb::cli::remote
