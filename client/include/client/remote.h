// A remote target reached over the system's OpenSSH client (client/): the pieces every remote run shares,
// headless (`tunebench-cli run|tune --remote`) or the GUI's `serve` child.
//
// Why the `ssh` program and not a library: the user's ~/.ssh/config, keys, agent, ProxyJump and known hosts
// then work exactly as in their terminal, and nothing listens on a port on either side (the remote program
// talks on the SSH channel's stdio). BatchMode=yes: TuneBench never shows a password prompt; a host that
// wants one gets a message saying to set up a key or an agent. ServerAlive*: a dead link is noticed within
// about a minute instead of the TCP timeout (never a hang). (Anchors: Orbit's OrbitSshQt, Nsight Systems.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace tb::client {

struct RemoteTarget {
  std::string destination;            // "[user@]host" as ssh takes it (a Host alias of ~/.ssh/config works)
  int port = 0;                       // 0: what ssh's config says (22)
  std::string cli = "tunebench-cli";  // the program on the remote (a name on its PATH or a path there)
  std::string display() const;        // "user@host:port" for messages and the window
};

// "[user@]host[:port]" (IPv6: "[::1]:2222"). An error on bad input: empty, a leading '-' (ssh would read it
// as an option), a port outside 1..65535.
Result<RemoteTarget> parse_remote(const std::string& spec);

// POSIX shell single-quoting: the remote login shell gets `s` as one word, whatever it holds.
std::string shell_quote(const std::string& s);

// argv of the local ssh that runs `remote_command` (one shell command line, already quoted) on the target.
// The ssh program and extra options come from TUNEBENCH_SSH_COMMAND when set (split at blanks, as git does
// with GIT_SSH_COMMAND; the tests point it at their own sshd with "ssh -F config"), else "ssh".
std::vector<std::string> ssh_argv(const RemoteTarget& target, const std::string& remote_command);

// ssh exits 255 when the connection failed (anything else is the remote command's status). One line saying
// what went wrong and what to do, from ssh's stderr: unknown host, refused, unreachable, authentication,
// host key, connection lost; else ssh's last line.
std::string explain_ssh_failure(const RemoteTarget& target, const std::vector<std::string>& ssh_stderr);

}  // namespace tb::client
