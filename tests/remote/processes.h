// /proc queries for the remote-target tests: which processes run what, and whose child they are. They
// check that a remote run leaves nothing behind on the server (which is this machine). Test-only.
#pragma once

#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tb::test_util {

// The whole of /proc/PID/FILE, "" when the process is gone. A process that exits between the open and the
// read fails the read with ESRCH, which libstdc++'s filebuf throws through an istreambuf_iterator.
inline std::string proc_file(pid_t pid, const char* file) {
  try {
    std::ifstream f("/proc/" + std::to_string(pid) + "/" + file);
    return std::string(std::istreambuf_iterator<char>(f), {});
  } catch (const std::exception&) {
    return "";
  }
}

// argv of a process joined by spaces ("" when it is gone).
inline std::string command_line(pid_t pid) {
  std::string cmd = proc_file(pid, "cmdline");
  for (char& c : cmd)
    if (c == '\0') c = ' ';
  if (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  return cmd;
}

inline std::string argv0(pid_t pid) {
  const std::string cmd = proc_file(pid, "cmdline");
  return cmd.substr(0, cmd.find('\0'));
}

// The parent pid ("pid (comm) state ppid ..."; comm may hold spaces and parentheses), 0 when gone.
inline pid_t parent_of(pid_t pid) {
  const std::string stat = proc_file(pid, "stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos ? 0 : pid_t(std::atoi(stat.c_str() + paren + 4));
}

// Every process whose command line holds `needle`.
inline std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> pids;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::stoi(name));
    if (command_line(pid).find(needle) != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

// The child of `parent` running ssh (argv[0] "ssh" or ".../ssh"), -1 if none.
inline pid_t ssh_child_of(pid_t parent) {
  for (pid_t p : processes_with("ssh")) {
    const std::string a = argv0(p);
    const bool ssh = a == "ssh" || (a.size() > 4 && a.compare(a.size() - 4, 4, "/ssh") == 0);
    if (ssh && parent_of(p) == parent) return p;
  }
  return -1;
}

}  // namespace tb::test_util
