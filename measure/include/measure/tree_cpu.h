// The CPU this process and every process it started kept busy over an interval: a script's run is the CLI, the
// script's interpreter and its DataLoader workers. What the machine's busy share (measure::LoadProbe) holds
// besides it is other work's: the cores a prediction can count on are the rest (client::cores_free).
#pragma once

namespace tb::measure {

// This process's CPU, its children's that ended and were waited for (each with its own waited-for children),
// and its live descendants' so far (/proc/PID/stat: utime + stime + cutime + cstime), in ns; -1 when unreadable.
// A child counted live at one reading and waited for at the next is counted once in each: its time moves from
// one sum to the other, whole. A descendant whose parent ended without waiting for it is no longer one (it is
// reparented) and drops out of the later reading: the DataLoader joins its workers, a script's interpreter is
// waited for.
long long tree_cpu_ns();

class TreeCpuProbe {
 public:
  TreeCpuProbe();
  // The tree's CPU since construction over the wall time since: the cores it kept busy (NaN when unreadable).
  double cores() const;
  // The tree's CPU since construction, in ns (-1 when unreadable).
  long long cpu_ns() const;

 private:
  long long cpu0_ns_ = -1, wall0_ns_ = 0;
};

}  // namespace tb::measure
