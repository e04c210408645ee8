#include "measure/tree_cpu.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>

namespace tb::measure {
namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

long long rusage_ns(int who) {
  rusage u{};
  if (::getrusage(who, &u) != 0) return -1;
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000'000LL + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1'000LL;
}

// The CPU of this process's live descendants so far, each with its waited-for children.
long long descendants_cpu_ns() {
  DIR* d = ::opendir("/proc");
  if (!d) return -1;
  std::map<int, int> parent;
  std::map<int, long long> ticks;
  while (const dirent* e = ::readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');  // the command's name may hold spaces and parentheses
    if (close == std::string::npos || close + 2 > text.size()) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    // ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    long long v[14] = {};
    if (!(rest >> state)) continue;
    int n = 0;
    while (n < 14 && (rest >> v[n])) ++n;
    if (n < 14) continue;
    parent[pid] = static_cast<int>(v[0]);
    ticks[pid] = v[10] + v[11] + v[12] + v[13];
  }
  ::closedir(d);
  const int self = ::getpid();
  const double tick_ns = 1e9 / double(::sysconf(_SC_CLK_TCK));
  long long sum = 0;
  for (const auto& [pid, t] : ticks) {
    if (pid == self) continue;
    int p = parent[pid];
    for (int hops = 0; p > 1 && p != self && hops < 64; ++hops) {
      const auto it = parent.find(p);
      p = it == parent.end() ? 0 : it->second;
    }
    if (p == self) sum += static_cast<long long>(double(t) * tick_ns);
  }
  return sum;
}

}  // namespace

long long tree_cpu_ns() {
  const long long self = rusage_ns(RUSAGE_SELF), children = rusage_ns(RUSAGE_CHILDREN), live = descendants_cpu_ns();
  return self < 0 || children < 0 || live < 0 ? -1 : self + children + live;
}

TreeCpuProbe::TreeCpuProbe() : cpu0_ns_(tree_cpu_ns()), wall0_ns_(now_ns()) {}

double TreeCpuProbe::cores() const {
  const long long cpu = cpu_ns(), wall = now_ns() - wall0_ns_;
  if (cpu < 0 || wall <= 0) return std::numeric_limits<double>::quiet_NaN();
  return double(cpu) / double(wall);
}

long long TreeCpuProbe::cpu_ns() const {
  const long long cpu = tree_cpu_ns();
  return cpu0_ns_ < 0 || cpu < 0 ? -1 : std::max(0LL, cpu - cpu0_ns_);
}

}  // namespace tb::measure
