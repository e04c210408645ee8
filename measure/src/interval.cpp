#include "measure/interval.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "measure/stats.h"

namespace tb::measure {
namespace {
std::string df_text(double df) {
  std::ostringstream s;
  s.precision(df == std::floor(df) ? 0 : 1);
  s.setf(std::ios::fixed);
  s << df;
  return s.str();
}
}  // namespace

double RatioInterval::half_width() const {
  if (!valid() || !(ratio > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (hi - lo) / 2 / ratio;
}

double NoiseFloor::band(int n, double confidence) const {
  if (!valid() || n < 1) return std::numeric_limits<double>::quiet_NaN();
  // The trial's own pairs add their degrees of freedom to the pooled spread (paired_ratio).
  const double t = student_t_quantile(0.5 + confidence / 2, df + double(n - 1));
  return std::expm1(t * sd_log / std::sqrt(double(n)));
}

RatioInterval paired_ratio(const std::vector<Window>& a, const std::vector<Window>& b, const NoiseFloor* floor,
                           double confidence) {
  RatioInterval r;
  r.confidence = confidence;
  std::vector<double> d;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double x = a[i].throughput(), y = b[i].throughput();
    if (x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y)) d.push_back(std::log(y / x));
  }
  r.pairs = int(d.size());
  if (d.empty()) return r;
  const double m = mean(d);
  r.ratio = std::exp(m);
  const double n = double(d.size());
  double var = 0, df = 0;
  if (d.size() >= 2) {
    const double s = stddev(d);
    var = s * s * (n - 1);
    df = n - 1;
  }
  const bool pooled = floor && floor->valid();
  if (pooled) {
    var += floor->sd_log * floor->sd_log * floor->df;
    df += floor->df;
  }
  if (df <= 0) return r;
  r.df = df;
  r.sd_log = std::sqrt(var / df);
  const double t = student_t_quantile(0.5 + confidence / 2, df);
  const double half = t * r.sd_log / std::sqrt(n);
  r.lo = std::exp(m - half);
  r.hi = std::exp(m + half);
  r.method = "paired t on log ratios (" + std::to_string(d.size()) + " pairs" +
             (pooled ? " + A/A floor of " + std::to_string(floor->pairs) + " pairs" : std::string()) + ", df " +
             df_text(df) + ")";
  return r;
}

NoiseFloor noise_floor(const std::vector<Window>& a, const std::vector<Window>& b) {
  NoiseFloor f;
  std::vector<double> d;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double x = a[i].throughput(), y = b[i].throughput();
    if (x > 0 && y > 0 && std::isfinite(x) && std::isfinite(y)) d.push_back(std::log(y / x));
  }
  // One hiccup (a window that caught another process's burst) would set the floor of every trial of the
  // tune. With 4 or more pairs, a pair far outside the spread of the others (more than 4 of their sd, and
  // more than 5%) is left out of the floor and reported; two such pairs mean the machine is simply noisy and
  // all are kept.
  if (d.size() >= 4) {
    int outlier = -1, count = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      std::vector<double> rest;
      for (size_t k = 0; k < d.size(); ++k)
        if (k != i) rest.push_back(d[k]);
      const double s = std::max(stddev(rest), 0.005);
      if (std::fabs(d[i] - mean(rest)) > std::max(4 * s, 0.05)) outlier = int(i), ++count;
    }
    if (count == 1) {
      f.outlier = std::expm1(d[size_t(outlier)] - mean(d));
      d.erase(d.begin() + outlier);
    }
  }
  f.pairs = int(d.size());
  if (d.size() < 2) return f;
  f.sd_log = stddev(d);
  f.df = double(d.size() - 1);
  f.bias = mean(d);
  return f;
}

NoiseFloor pool(const NoiseFloor& x, const NoiseFloor& y) {
  if (!x.valid()) return y;
  if (!y.valid()) return x;
  NoiseFloor f;
  f.df = x.df + y.df;
  f.sd_log = std::sqrt((x.sd_log * x.sd_log * x.df + y.sd_log * y.sd_log * y.df) / f.df);
  f.pairs = x.pairs + y.pairs;
  f.bias = (x.bias * x.pairs + y.bias * y.pairs) / double(f.pairs);
  return f;
}

RatioInterval welch_ratio(const std::vector<Window>& before, const std::vector<Window>& after, double confidence) {
  RatioInterval r;
  r.confidence = confidence;
  std::vector<double> x, y;
  for (const auto& w : before)
    if (w.throughput() > 0) x.push_back(std::log(w.throughput()));
  for (const auto& w : after)
    if (w.throughput() > 0) y.push_back(std::log(w.throughput()));
  if (x.empty() || y.empty()) return r;
  // The point estimate is the pooled throughput ratio (samples over seconds on each side).
  const double pa = pooled_throughput(before), pb = pooled_throughput(after);
  if (!(pa > 0) || !(pb > 0)) return r;
  r.ratio = pb / pa;
  r.pairs = int(std::min(x.size(), y.size()));
  if (x.size() < 2 || y.size() < 2) return r;
  const double vx = std::pow(stddev(x), 2) / double(x.size());
  const double vy = std::pow(stddev(y), 2) / double(y.size());
  const double se = std::sqrt(vx + vy);
  const double df = (vx + vy) * (vx + vy) /
                    ((vx * vx) / double(x.size() - 1) + (vy * vy) / double(y.size() - 1) + 1e-300);
  r.df = std::max(1.0, df);
  r.sd_log = se;
  const double t = student_t_quantile(0.5 + confidence / 2, r.df);
  const double m = std::log(r.ratio);
  r.lo = std::exp(m - t * se);
  r.hi = std::exp(m + t * se);
  r.method = "Welch t on log window throughputs (" + std::to_string(x.size()) + " + " + std::to_string(y.size()) +
             " windows, df " + df_text(r.df) + "; sequential, not alternated)";
  return r;
}

std::string RatioInterval::text(int prec) const {
  if (!(ratio == ratio)) return "n/a";
  char r[32], a[32], b[32];
  std::snprintf(r, sizeof r, "%.*fx", prec, ratio);
  if (!valid() || !(lo > 0) || !std::isfinite(hi))
    return std::string(r) + " [interval unknown: too few pairs]";
  if (hi / lo > 100)
    return std::string(r) + " [interval unknown: " + std::to_string(pairs) + " pairs too far apart]";
  std::snprintf(a, sizeof a, "%.*f", prec, lo);
  std::snprintf(b, sizeof b, "%.*f", prec, hi);
  return std::string(r) + " [" + a + ", " + b + "]";
}

}  // namespace tb::measure
