#include "client/remote.h"

#include <cstdlib>
#include <sstream>

namespace tb::client {

std::string RemoteTarget::display() const {
  return port > 0 ? destination + ":" + std::to_string(port) : destination;
}

Result<RemoteTarget> parse_remote(const std::string& spec) {
  auto fail = [](std::string why) { return Error{std::move(why)}; };
  if (spec.empty()) return fail("--remote needs a host: [user@]host[:port]");
  if (spec[0] == '-') return fail("bad remote host '" + spec + "': it starts with '-'");
  if (spec.find_first_of(" \t\n'\"") != std::string::npos) return fail("bad remote host '" + spec + "'");
  RemoteTarget t;
  const size_t at = spec.rfind('@');
  const std::string user = at == std::string::npos ? "" : spec.substr(0, at + 1);
  std::string host = at == std::string::npos ? spec : spec.substr(at + 1);
  std::string port;
  if (!host.empty() && host[0] == '[') {  // [v6]:port
    const size_t close = host.find(']');
    if (close == std::string::npos) return fail("bad remote host '" + spec + "': no ']'");
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') return fail("bad remote host '" + spec + "'");
      port = host.substr(close + 2);
    }
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.find(':'); colon != std::string::npos) {
    if (host.find(':', colon + 1) != std::string::npos) return fail("bad remote host '" + spec + "': write IPv6 as [addr]:port");
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host.empty()) return fail("bad remote host '" + spec + "': no host name");
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end || p < 1 || p > 65535) return fail("bad remote port '" + port + "' (1..65535)");
    t.port = int(p);
  }
  t.destination = user + host;
  return t;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> ssh_argv(const RemoteTarget& target, const std::string& remote_command) {
  std::vector<std::string> argv;
  if (const char* cmd = std::getenv("TUNEBENCH_SSH_COMMAND"); cmd && *cmd) {
    std::istringstream words(cmd);
    for (std::string w; words >> w;) argv.push_back(w);
  }
  if (argv.empty()) argv.push_back("ssh");
  for (const char* o : {"BatchMode=yes", "ServerAliveInterval=15", "ServerAliveCountMax=4", "ConnectTimeout=20"})
    argv.insert(argv.end(), {"-o", o});
  argv.push_back("-T");  // no terminal: the channel carries bytes as they are
  if (target.port > 0) argv.insert(argv.end(), {"-p", std::to_string(target.port)});
  argv.insert(argv.end(), {"--", target.destination, remote_command});
  return argv;
}

std::string explain_ssh_failure(const RemoteTarget& target, const std::vector<std::string>& ssh_stderr) {
  const std::string host = target.display();
  auto has = [&](const char* what) {
    for (const auto& l : ssh_stderr)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  if (has("Could not resolve hostname")) return "cannot resolve the host name of '" + host + "'";
  if (has("Connection refused")) return host + " refused the connection (is sshd running there, on that port?)";
  if (has("timed out") || has("No route to host") || has("Network is unreachable"))
    return host + " is unreachable (" + (has("No route") ? "no route to host" : "the connection timed out") + ")";
  if (has("Permission denied"))
    return host + " refused the authentication: TuneBench never asks for a password (BatchMode); set up a key "
                  "(ssh-copy-id) or an agent so that 'ssh " + target.destination + " true' works without a prompt";
  if (has("Host key verification failed") || has("REMOTE HOST IDENTIFICATION HAS CHANGED"))
    return "the host key of " + host + " is unknown or changed: connect once with ssh in a terminal to check and "
           "accept it";
  if (has("not responding") || has("closed by remote host") || has("Broken pipe") || has("reset by peer") ||
      has("kex_exchange_identification"))
    return "the connection to " + host + " was lost";
  for (auto it = ssh_stderr.rbegin(); it != ssh_stderr.rend(); ++it)
    if (!it->empty()) return "ssh to " + host + " failed: " + *it;
  return "ssh to " + host + " failed (exit 255)";
}

}  // namespace tb::client
