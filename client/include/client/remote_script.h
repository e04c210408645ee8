// The shell side of a run on another machine (docs/remote.md): the `sh -c` scripts ssh runs there and what
// their exit codes mean. One copy for the CLI's --remote (one host or a group across hosts) and the GUI's
// remote sessions, so a fix to the watcher or the clean-up reaches both.
//
// A remote command runs in a private directory ($TMPDIR/tunebench-remote-<id>, "$d" in its words) that holds
// its outputs and its temporary files; it leads its own process group, and a watcher on the channel stops that
// group when the channel closes (ssh killed, link lost, or this side closing ssh's stdin on purpose), so no
// training is orphaned on someone else's server.
#pragma once

#include <string>
#include <vector>

#include "client/remote.h"

namespace tb::client {

inline constexpr const char* kRemoteProtocol = "(protocol 1)";  // what `tunebench-cli --version` ends with
// Exit codes of the remote script for what it found missing (explain_remote_exit turns them into a line).
inline constexpr int kRemoteExitNoCli = 127, kRemoteExitVersion = 126, kRemoteExitNoDir = 125,
                     kRemoteExitNoTorchrun = 124;

// A fresh id for a remote working directory (16 hex digits).
std::string remote_id();

// A run's script: `args` are the quoted words after the CLI; output i goes to "$d/i/<its file>". With
// `torchrun_args` ("--nnodes 2 --node_rank 1 ..."), the CLI runs under PyTorch's launcher as the host has it
// (torchrun, else python3 -m torch.distributed.run; exit kRemoteExitNoTorchrun when neither), its logs in the
// working directory. `keep_outputs` false: the directory goes when the command ends (a group's other nodes,
// whose outputs rank 0 gathers).
std::string remote_run_script(const RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                              size_t outputs, const std::string& torchrun_args = "", bool keep_outputs = true);
// `serve`'s script: the channel reaches serve through a FIFO, so serve sees its stdin end when the channel
// does; the directory goes when serve ends.
std::string remote_serve_script(const RemoteTarget& t, const std::string& id, const std::vector<std::string>& args,
                                const std::string& torchrun_args = "");
// Streams the finished outputs as a tar of "0", "1", ... and removes the directory (exit 3: not finished).
std::string remote_fetch_script(const std::string& id, size_t outputs);

// One line for an exit the scripts explain (ssh's 255 included), "" for any other: `err` is the remote
// stderr's lines.
std::string explain_remote_exit(const RemoteTarget& t, int rc, const std::vector<std::string>& err);

}  // namespace tb::client
