// The pieces of a remote run over ssh (docs/remote.md) on this side, shared by one host (cmd_remote.cpp) and a
// group across hosts (cmd_remote_group.cpp): their streams and the fetch of the outputs (the processes are
// client/launch.h's). The
// scripts ssh runs there are client/remote_script.h (the GUI's remote sessions use them too). tunebench-cli
// only: no LibTorch.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "client/launch.h"
#include "client/remote.h"
#include "client/remote_script.h"

namespace tb::cli::remote {

// Prints "tunebench-cli: error: msg" and returns `code`.
int fail(const std::string& msg, int code);

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


// Names the remote working directory's files by the local paths they get: "trace written to
// /tmp/tunebench-remote-<id>/1/t.json" -> "trace written to results/t.json"; also inside a fetched run JSON.
std::string localize(std::string text, const std::string& id, const std::vector<Output>& outputs);

// Brings the remote directory back, puts each output's files next to the local path asked for, and removes
// the directory there. 0, or 1 after saying why.
int fetch(const client::RemoteTarget& t, const std::string& id, const std::vector<Output>& outputs);

}  // namespace tb::cli::remote
