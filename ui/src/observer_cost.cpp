#include "ui/observer_cost.h"

#include <sys/resource.h>

#include <QObject>

#include <cmath>
#include <ctime>

namespace tb::ui {

qint64 processCpuNs() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return -1;
  auto ns = [](const timeval& t) { return qint64(t.tv_sec) * 1'000'000'000 + qint64(t.tv_usec) * 1000; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

qint64 monotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return qint64(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

double cpuShare(qint64 cpu0, qint64 wall0, qint64 cpu1, qint64 wall1) {
  if (cpu0 < 0 || cpu1 < cpu0 || wall0 < 0 || wall1 <= wall0) return std::nan("");
  return double(cpu1 - cpu0) / double(wall1 - wall0);
}

QString observerCostText(double share) {
  if (!(share > kObserverShareThreshold)) return {};
  return QObject::tr("window: %1% of a core while it measured (above %2%: it competes with the run for the CPU, "
                     "so the run may be slower here than without the window)")
      .arg(100 * share, 0, 'f', 0)
      .arg(100 * kObserverShareThreshold, 0, 'f', 0);
}

}  // namespace tb::ui
