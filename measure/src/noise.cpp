#include "measure/noise.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "measure/stats.h"

namespace tb::measure {
namespace {
std::string pct(double x, int prec = 1, bool sign = false) {
  char buf[64];
  std::snprintf(buf, sizeof buf, sign ? "%+.*f%%" : "%.*f%%", prec, 100 * x);
  return buf;
}
}  // namespace

LoadProbe::LoadProbe() : start_(read()) {}

LoadProbe::Ticks LoadProbe::read() {
  Ticks t;
  std::ifstream f("/proc/stat");
  std::string cpu;
  unsigned long long v[10] = {};
  if (!(f >> cpu) || cpu != "cpu") return t;
  for (int i = 0; i < 10 && (f >> v[i]); ++i) {
  }
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
  t.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  t.idle = v[3] + v[4];
  t.steal = v[7];
  t.ok = t.total > 0;
  return t;
}

SystemLoad LoadProbe::stop() const {
  SystemLoad s;
  s.cores = int(std::thread::hardware_concurrency());
  std::ifstream la("/proc/loadavg");
  double l1 = 0;
  if (la >> l1) s.loadavg_1min = l1;
  const Ticks end = read();
  if (start_.ok && end.ok && end.total > start_.total) {
    const double dt = double(end.total - start_.total);
    s.steal_share = double(end.steal - start_.steal) / dt;
    s.busy_share = 1.0 - double(end.idle - start_.idle) / dt;
  }
  return s;
}

NoiseReport assess_noise(const std::vector<Window>& windows, const SystemLoad& load) {
  NoiseReport r;
  r.load = load;
  std::vector<double> x, t, logx;
  for (const auto& w : windows) {
    const double v = w.throughput();
    if (!(v > 0) || !std::isfinite(v)) continue;
    x.push_back(v);
    t.push_back(w.mid_s());
    logx.push_back(std::log(v));
  }
  r.windows = int(x.size());
  if (x.empty()) {
    r.verdict = "too few windows";
    r.text = "too few windows to judge the noise";
    return r;
  }
  r.mean = mean(x);
  r.cv = x.size() >= 2 ? stddev(x) / r.mean : 0.0;
  const LinearFit f = fit_line(t, logx);
  if (f.df >= 1 && t.back() > t.front()) {
    const double span = t.back() - t.front();
    const double tq = student_t_quantile(0.995, f.df);
    r.drift = std::expm1(f.slope * span);
    r.drift_lo = std::expm1((f.slope - tq * f.slope_se) * span);
    r.drift_hi = std::expm1((f.slope + tq * f.slope_se) * span);
    const bool significant = (f.slope - tq * f.slope_se) > 0 || (f.slope + tq * f.slope_se) < 0;
    r.drifting = significant && std::fabs(r.drift) >= 0.02;
  }
  std::ostringstream s;
  if (x.size() < 3) {
    r.verdict = "too few windows";
    s << "too few windows to judge the noise (" << x.size() << ")";
  } else if (r.drifting) {
    r.verdict = "drifting";
    s << "drifting: " << pct(r.drift, 1, true) << " over the run (99% interval " << pct(r.drift_lo, 1, true) << " to "
      << pct(r.drift_hi, 1, true) << ", " << x.size() << " windows)";
  } else {
    r.verdict = r.cv >= 0.03 ? "noisy" : "quiet";
    s << r.verdict << ": ±" << pct(2 * r.cv) << " (CV " << pct(r.cv) << " over " << x.size() << " windows)";
  }
  if (load.cores > 0 && load.loadavg_1min == load.loadavg_1min && load.loadavg_1min > load.cores + 0.5)
    s << "; load average " << std::round(load.loadavg_1min * 10) / 10 << " on " << load.cores << " cores";
  if (load.steal_share == load.steal_share && load.steal_share >= 0.02) s << "; " << pct(load.steal_share) << " steal time";
  r.text = s.str();
  return r;
}

}  // namespace tb::measure
