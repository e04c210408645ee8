// The measuring protocol's statistics (measure/): exact values where they exist, and the behaviour of the
// intervals and verdicts on simulated step sequences with the features measured on this machine
// (autocorrelated steps, slow drift, a one-way jump). Seeded: every expectation is exact for these seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "measure/interval.h"
#include "measure/noise.h"
#include "measure/stats.h"
#include "measure/tree_cpu.h"
#include "measure/warmup.h"
#include "measure/window.h"

using namespace tb::measure;

namespace {
Window win(double throughput, double start = 0, int steps = 10) {
  Window w;
  w.steps = steps;
  w.samples = 32 * steps;
  w.wall_s = double(w.samples) / throughput;
  w.start_s = start;
  return w;
}

// Step times with AR(1) noise (lag-1 correlation `phi`, marginal CV `cv`) around a mean that may change at a
// given time (a one-way jump, like glibc's allocator switching regime) and drift linearly.
struct StepProcess {
  std::mt19937_64 rng;
  double phi, cv, e = 0;
  double t = 0;            // seconds elapsed
  double jump_at = 1e300;  // from this time on the step is `jump` times faster
  double jump = 1;
  double drift_per_s = 0;  // relative speed-up per second
  StepProcess(uint64_t seed, double phi_, double cv_) : rng(seed), phi(phi_), cv(cv_) {}
  // One window of `n` steps of a configuration whose noise-free step is `ms` milliseconds.
  Window window(double ms, int n) {
    std::normal_distribution<double> g(0, cv * std::sqrt(1 - phi * phi));
    Window w;
    w.start_s = t;
    for (int i = 0; i < n; ++i) {
      e = phi * e + g(rng);
      double step = ms * std::exp(e) / (t >= jump_at ? jump : 1.0) / (1 + drift_per_s * t);
      w.steps++;
      w.samples += 32;
      w.wall_s += step / 1000;
      t += step / 1000;
    }
    return w;
  }
  // An A/B trial: `pairs` pairs, order alternating AB, BA, ... (the tuner's order).
  void trial(double a_ms, double b_ms, int pairs, int n, std::vector<Window>& a, std::vector<Window>& b) {
    for (int r = 0; r < pairs; ++r) {
      if (r % 2 == 0) {
        a.push_back(window(a_ms, n));
        b.push_back(window(b_ms, n));
      } else {
        b.push_back(window(b_ms, n));
        a.push_back(window(a_ms, n));
      }
    }
  }
};
}  // namespace

TEST(MeasureStats, StudentTQuantilesMatchTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5706, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.995, 10), 3.1693, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), 1.95996, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.025, 5), -2.5706, 1e-3);
  EXPECT_NEAR(student_t_cdf(0, 3), 0.5, 1e-12);
  EXPECT_NEAR(student_t_cdf(2.3534, 3), 0.95, 1e-4);
}

TEST(MeasureStats, LocationSpreadAndLine) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_DOUBLE_EQ(median({1, std::nan(""), 5, 3}), 3.0);
  EXPECT_DOUBLE_EQ(mean({1, 2, 3, 6}), 3.0);
  EXPECT_NEAR(stddev({2, 4, 4, 4, 5, 5, 7, 9}), 2.138089935, 1e-9);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  LinearFit f = fit_line({0, 1, 2, 3}, {1, 3, 5, 7});
  EXPECT_NEAR(f.slope, 2.0, 1e-12);
  EXPECT_NEAR(f.intercept, 1.0, 1e-12);
  EXPECT_NEAR(f.slope_se, 0.0, 1e-12);
  EXPECT_EQ(f.df, 2);
}

TEST(MeasureWindow, ThroughputIsSamplesOverWallTimeNotAMedianOfStepRates) {
  // Grad accumulation of 4: three 10 ms micro-steps and one 40 ms optimizer step, 32 samples each.
  std::vector<StepTiming> steps;
  for (int i = 0; i < 16; ++i) steps.push_back({32, i * 1000000LL, (i % 4 == 3 ? 40 : 10) * 1000000LL, 0, 5});
  auto w = windows_of(steps, 8);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].steps, 8);
  EXPECT_EQ(w[0].minor_faults, 40);
  // 8 steps, 256 samples in 140 ms; the median step rate would say 3200 samples/s.
  EXPECT_NEAR(w[0].throughput(), 256 / 0.140, 1e-9);
  EXPECT_NEAR(pooled_throughput(w), 512 / 0.280, 1e-9);
  // A short tail merges into the window before it; a half window stands alone.
  EXPECT_EQ(windows_of(std::vector<StepTiming>(19, {1, 0, 1000, 0, 0}), 8).back().steps, 11);
  EXPECT_EQ(windows_of(std::vector<StepTiming>(20, {1, 0, 1000, 0, 0}), 8).size(), 3u);
}

// An interval that says nothing is said to be unknown, not printed: two pairs of a machine at load 2.7 on 2
// cores gave an A/A "0.846x [0.009, 77.974]", another [0.000, 61650.918].
TEST(MeasureInterval, AnIntervalThatSaysNothingIsUnknown) {
  RatioInterval e;
  EXPECT_EQ(e.text(), "n/a");
  e.ratio = 1.07;
  EXPECT_EQ(e.text(), "1.070x [interval unknown: too few pairs]");
  e.lo = 0.79;
  e.hi = 1.46;
  EXPECT_EQ(e.text(), "1.070x [0.790, 1.460]");
  EXPECT_EQ(e.text(2), "1.07x [0.79, 1.46]");
  e.ratio = 0.846;
  e.lo = 0.009;
  e.hi = 77.974;
  e.pairs = 2;
  EXPECT_EQ(e.text(), "0.846x [interval unknown: 2 pairs too far apart]");
}

TEST(MeasureInterval, PairedRatioExactAndPooled) {
  std::vector<Window> a = {win(100), win(100), win(100)}, b = {win(110), win(110), win(110)};
  RatioInterval r = paired_ratio(a, b);
  ASSERT_TRUE(r.valid());
  EXPECT_NEAR(r.ratio, 1.1, 1e-12);
  EXPECT_NEAR(r.lo, 1.1, 1e-12);  // no spread: a degenerate interval at the ratio
  EXPECT_TRUE(r.faster());
  // The same pairs with an A/A floor of sd 0.02 over 4 pairs: df 2 + 3 = 5, s^2 = 3 * 0.02^2 / 5.
  NoiseFloor f;
  f.sd_log = 0.02;
  f.df = 3;
  f.pairs = 4;
  RatioInterval p = paired_ratio(a, b, &f);
  EXPECT_DOUBLE_EQ(p.df, 5);
  const double s = std::sqrt(3 * 0.0004 / 5);
  EXPECT_NEAR(p.hi, 1.1 * std::exp(student_t_quantile(0.975, 5) * s / std::sqrt(3.0)), 1e-9);
  // One pair and no floor: a ratio but no interval ("no effect").
  RatioInterval one = paired_ratio({win(100)}, {win(150)});
  EXPECT_NEAR(one.ratio, 1.5, 1e-12);
  EXPECT_FALSE(one.valid());
  EXPECT_TRUE(one.no_effect());
  // The floor's band: a change smaller than it is inside the noise.
  EXPECT_NEAR(f.band(3), std::expm1(student_t_quantile(0.975, 5) * 0.02 / std::sqrt(3.0)), 1e-12);
}

TEST(MeasureInterval, NullEffectOnAutocorrelatedStepsIsRarelyCalled) {
  // 400 simulated trials of a knob that does nothing, on steps with lag-1 correlation 0.6 and 8% CV: the
  // paired interval (3 pairs of 12-step windows + an A/A floor of 4 pairs) should exclude 1 about 5% of the
  // time. Treating steps as independent would make most of these "significant".
  int called = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    StepProcess p(seed, 0.6, 0.08);
    std::vector<Window> a0, a1, a, b;
    p.trial(30, 30, 4, 12, a0, a1);
    NoiseFloor f = noise_floor(a0, a1);
    p.trial(30, 30, 3, 12, a, b);
    RatioInterval r = paired_ratio(a, b, &f);
    ASSERT_TRUE(r.valid());
    if (!r.no_effect()) ++called;
  }
  EXPECT_LE(called, 36);  // 9%: the 95% level plus binomial slack (sd of the count ~4.4)
  EXPECT_GE(called, 6);   // and not vacuously wide
}

TEST(MeasureInterval, TrueEffectIsCoveredAndFound) {
  int covered = 0, found = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    StepProcess p(seed, 0.6, 0.08);
    std::vector<Window> a0, a1, a, b;
    p.trial(30, 30, 4, 12, a0, a1);
    NoiseFloor f = noise_floor(a0, a1);
    p.trial(30, 30 / 1.15, 3, 12, a, b);  // 15% faster
    RatioInterval r = paired_ratio(a, b, &f);
    if (r.lo <= 1.15 && r.hi >= 1.15) ++covered;
    if (r.faster()) ++found;
  }
  EXPECT_GE(covered, 270);  // >= 90% coverage of the true ratio
  EXPECT_GE(found, 240);    // and a 15% gain is seen most of the time at this noise
}

TEST(MeasureInterval, AOneWayJumpDoesNotCreditTheKnob) {
  // The process becomes 2x faster at a random moment during a null trial (glibc's allocator changing
  // regime). The alternating order puts the jump inside one pair; the interval widens instead of calling a
  // gain for whichever arm ran after it.
  int gains = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    StepProcess p(seed, 0.4, 0.04);
    std::vector<Window> a0, a1, a, b;
    p.trial(30, 30, 4, 12, a0, a1);
    NoiseFloor f = noise_floor(a0, a1);
    std::mt19937_64 r(seed);
    p.jump_at = p.t + std::uniform_real_distribution<double>(0, 2.0)(r);
    p.jump = 2.0;
    p.trial(30, 30, 3, 12, a, b);
    if (paired_ratio(a, b, &f).faster()) ++gains;
  }
  EXPECT_LE(gains, 20);
}

TEST(MeasureInterval, OneHiccupDoesNotSetTheNoiseFloor) {
  // Measured here: A/A windows 621/620, 622/604, 355/580, 607/596 samples/s: one window caught a burst.
  std::vector<Window> a = {win(621), win(622), win(355), win(607)}, b = {win(620), win(604), win(580), win(596)};
  NoiseFloor f = noise_floor(a, b);
  EXPECT_EQ(f.pairs, 3);
  EXPECT_LT(f.sd_log, 0.02);
  EXPECT_GT(std::fabs(f.outlier), 0.3);  // reported: that pair's ratio was ~50% off the others
  // Two hiccups: the machine is noisy, nothing is left out.
  a[0] = win(300);
  NoiseFloor g = noise_floor(a, b);
  EXPECT_EQ(g.pairs, 4);
  EXPECT_TRUE(std::isnan(g.outlier));
  EXPECT_GT(g.sd_log, 0.2);
}

TEST(MeasureInterval, WelchOnSequentialSegments) {
  std::vector<Window> before, after;
  for (int i = 0; i < 6; ++i) before.push_back(win(100 + (i % 2 ? 2 : -2), i));
  for (int i = 0; i < 6; ++i) after.push_back(win(150 + (i % 2 ? 3 : -3), 6 + i));
  RatioInterval r = welch_ratio(before, after);
  ASSERT_TRUE(r.valid());
  EXPECT_NEAR(r.ratio, pooled_throughput(after) / pooled_throughput(before), 1e-12);
  EXPECT_TRUE(r.faster());
  EXPECT_FALSE(welch_ratio({win(100)}, after).valid());
}

TEST(MeasureNoise, VerdictsOnQuietNoisyAndDriftingRuns) {
  std::vector<Window> quiet, noisy, drifting;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0, 1);
  for (int i = 0; i < 20; ++i) {
    quiet.push_back(win(100 * (1 + 0.005 * g(rng)), i));
    noisy.push_back(win(100 * (1 + 0.06 * g(rng)), i));
    drifting.push_back(win(100 * (1 + 0.1 * i / 19.0) * (1 + 0.005 * g(rng)), i));
  }
  NoiseReport q = assess_noise(quiet);
  EXPECT_EQ(q.verdict, "quiet");
  EXPECT_FALSE(q.drifting);
  EXPECT_LT(q.cv, 0.01);
  NoiseReport n = assess_noise(noisy);
  EXPECT_EQ(n.verdict, "noisy");
  EXPECT_NE(n.text.find("noisy: ±"), std::string::npos);
  NoiseReport d = assess_noise(drifting);
  EXPECT_EQ(d.verdict, "drifting");
  EXPECT_NEAR(d.drift, 0.10, 0.02);
  EXPECT_NE(d.text.find("drifting: +"), std::string::npos);
  EXPECT_EQ(assess_noise({win(100), win(100)}).verdict, "too few windows");
  SystemLoad busy;
  busy.cores = 2;
  busy.loadavg_1min = 3.4;
  busy.steal_share = 0.05;
  NoiseReport b = assess_noise(quiet, busy);
  EXPECT_NE(b.text.find("load average 3.4 on 2 cores"), std::string::npos);
  EXPECT_NE(b.text.find("5.0% steal time"), std::string::npos);
}

TEST(MeasureNoise, LoadProbeReadsProc) {
  LoadProbe p;
  volatile double x = 0;
  for (int i = 0; i < 2000000; ++i) x = x + std::sqrt(double(i));
  SystemLoad s = p.stop();
  EXPECT_GT(s.cores, 0);
  EXPECT_TRUE(s.readable());  // Linux: /proc/loadavg and /proc/stat exist
  EXPECT_GE(s.loadavg_1min, 0.0);
}

namespace {
// Spends `s` seconds of this process's CPU (not wall: a busy machine only stretches it).
void burn_cpu(double s) {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  const double end = double(t.tv_sec) + t.tv_nsec * 1e-9 + s;
  volatile double x = 0;
  do {
    for (int i = 0; i < 10000; ++i) x = x + std::sqrt(double(i));
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  } while (double(t.tv_sec) + t.tv_nsec * 1e-9 < end);
}
}  // namespace

// The run's own CPU over an interval (what the loader verdict takes from the machine's busy share to find the
// cores other work kept): a script's interpreter and its workers are processes started before the interval; what
// they spent before it (torch's import, a spawned worker's start) is not the interval's, what they spend in it
// is, whether they ended and were waited for or are still alive at its end. Child A burns 0.4 s before and 0.2 s
// in the interval, then ends; child B's child G (a worker of B's) 0.3 s before and 0.1 s in it, and lives on.
TEST(MeasureTreeCpu, CountsTheDescendantsCpuInTheIntervalOnly) {
  int go[2], ready[2], done[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  char c;
  const pid_t a = ::fork();
  ASSERT_GE(a, 0);
  if (a == 0) {
    burn_cpu(0.4);
    (void)!::write(ready[1], "a", 1);
    (void)!::read(go[0], &c, 1);
    burn_cpu(0.2);
    (void)!::write(ready[1], "a", 1);
    ::_exit(0);
  }
  const pid_t b = ::fork();
  ASSERT_GE(b, 0);
  if (b == 0) {
    const pid_t g = ::fork();
    if (g == 0) {
      burn_cpu(0.3);
      (void)!::write(ready[1], "g", 1);
      (void)!::read(go[0], &c, 1);
      burn_cpu(0.1);
      (void)!::write(ready[1], "g", 1);
      (void)!::read(done[0], &c, 1);  // alive until the probe has been read
      ::_exit(0);
    }
    ::waitpid(g, nullptr, 0);
    ::_exit(0);
  }
  for (int n = 0; n < 2; ++n) ASSERT_EQ(::read(ready[0], &c, 1), 1);  // both burned what they burn before
  const auto t0 = std::chrono::steady_clock::now();
  const TreeCpuProbe probe;
  ASSERT_EQ(::write(go[1], "gg", 2), 2);  // one byte each
  for (int n = 0; n < 2; ++n) ASSERT_EQ(::read(ready[0], &c, 1), 1);  // both burned what they burn in it
  ASSERT_EQ(::waitpid(a, nullptr, 0), a);
  const double cores = probe.cores();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)!::write(done[1], "d", 1);
  ASSERT_EQ(::waitpid(b, nullptr, 0), b);
  for (int fd : {go[0], go[1], ready[0], ready[1], done[0], done[1]}) ::close(fd);
  ASSERT_TRUE(cores >= 0) << "the probe read no CPU";
  const double cpu = cores * wall;
  EXPECT_GT(cpu, 0.22) << "the 0.3 s spent in the interval is missing";
  EXPECT_LT(cpu, 0.5) << "the 0.7 s spent before the interval was counted";
}

TEST(MeasureWarmup, EndsWhenStableNotAfterAFixedCount) {
  // Three cold steps (allocator growth), then steady 10 ms steps: the last two blocks of 3 agree first at
  // the 9th step ({20,10,10} vs {10,10,10} still differ by a third).
  WarmupDetector d(3, 3, 0.10, 30);
  const int64_t ms = 1000000;
  const int64_t seq[] = {80 * ms, 40 * ms, 20 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms};
  int n = 0;
  for (int64_t w : seq) {
    d.add(32, w);
    ++n;
    if (d.done()) break;
  }
  EXPECT_TRUE(d.done());
  EXPECT_EQ(d.reason(), "stable");
  EXPECT_EQ(n, 9);
  // Periodic steps (accumulation 4: 10,10,10,40 ms) are stable with a block of one period.
  WarmupDetector p4(3, 4, 0.10, 40);
  for (int i = 0; i < 40 && !p4.done(); ++i) p4.add(32, (i % 4 == 3 ? 40 : 10) * ms);
  EXPECT_EQ(p4.reason(), "stable");
  EXPECT_EQ(p4.steps(), 8);
  // Never settling: capped, and it says so.
  WarmupDetector c(3, 3, 0.10, 12);
  for (int i = 0; i < 20; ++i) c.add(32, (10 + 5 * i) * ms);
  EXPECT_EQ(c.reason(), "cap");
  EXPECT_EQ(c.steps(), 12);
  // No warm-up asked for: done at once.
  WarmupDetector none(0, 3, 0.1, 30);
  EXPECT_TRUE(none.done());
  EXPECT_EQ(none.reason(), "none");
}
