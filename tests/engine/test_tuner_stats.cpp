// Statistics of the tuner: median, the bootstrap interval of a ratio of medians, the "no effect" call.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/tuner.h"

using tb::engine::bootstrap_median_ratio;
using tb::engine::median;

TEST(TunerStats, MedianOddEvenEmptyAndNaN) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_DOUBLE_EQ(median({1, std::nan(""), 5, 3}), 3.0);  // non-finite values are ignored
}

TEST(TunerStats, IdenticalInputsAreNoEffect) {
  std::vector<double> a = {100, 101, 99, 102, 98, 100, 100.5, 99.5};
  auto r = bootstrap_median_ratio(a, a, 2000, 0.95, 1);
  ASSERT_TRUE(r.valid());
  EXPECT_DOUBLE_EQ(r.ratio, 1.0);
  EXPECT_LE(r.ci_low, 1.0);
  EXPECT_GE(r.ci_high, 1.0);
  EXPECT_TRUE(r.no_effect());
  EXPECT_FALSE(r.faster());
  EXPECT_FALSE(r.slower());
  // Constant samples: a degenerate but valid interval exactly at 1.
  std::vector<double> c(10, 50.0);
  auto d = bootstrap_median_ratio(c, c);
  EXPECT_DOUBLE_EQ(d.ci_low, 1.0);
  EXPECT_DOUBLE_EQ(d.ci_high, 1.0);
  EXPECT_TRUE(d.no_effect());
}

TEST(TunerStats, SeededAndDeterministic) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(100, 5);
  std::vector<double> a(20), b(20);
  for (auto& x : a) x = g(rng);
  for (auto& x : b) x = g(rng) * 1.1;
  auto r1 = bootstrap_median_ratio(a, b, 1000, 0.95, 42);
  auto r2 = bootstrap_median_ratio(a, b, 1000, 0.95, 42);
  EXPECT_EQ(r1.ci_low, r2.ci_low);
  EXPECT_EQ(r1.ci_high, r2.ci_high);
  EXPECT_LE(r1.ci_low, r1.ratio);
  EXPECT_GE(r1.ci_high, r1.ratio);
}

TEST(TunerStats, DetectsClearEffectsBothWays) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(24), fast(24), slow(24);
  for (auto& x : a) x = 200 * (1 + 0.03 * u(rng));
  for (auto& x : fast) x = 240 * (1 + 0.03 * u(rng));
  for (auto& x : slow) x = 170 * (1 + 0.03 * u(rng));
  auto f = bootstrap_median_ratio(a, fast);
  EXPECT_TRUE(f.faster());
  EXPECT_NEAR(f.ratio, 1.2, 0.03);
  auto s = bootstrap_median_ratio(a, slow);
  EXPECT_TRUE(s.slower());
  EXPECT_NEAR(s.ratio, 0.85, 0.03);
}

TEST(TunerStats, InvalidInputsAreNoEffectNotACrash) {
  EXPECT_FALSE(bootstrap_median_ratio({}, {1, 2}).valid());
  EXPECT_TRUE(bootstrap_median_ratio({}, {1, 2}).no_effect());
  EXPECT_FALSE(bootstrap_median_ratio({0, 0, 0}, {1, 2}).valid());  // zero baseline median: no ratio
  EXPECT_FALSE(bootstrap_median_ratio({std::nan("")}, {1.0}).valid());
}

// Coverage on known distributions: the 95% interval of the ratio of medians should contain the true ratio
// about 95% of the time (percentile bootstrap of medians is a little off at small n; allow 88..99%).
TEST(TunerStats, BootstrapCoverageIsRoughlyNominal) {
  struct Case {
    const char* name;
    int n;
    double true_ratio;
    int dist;  // 0 normal, 1 lognormal (skewed), 2 uniform
  };
  for (const Case& c : {Case{"normal n=16 ratio 1", 16, 1.0, 0}, Case{"lognormal n=24 ratio 1.3", 24, 1.3, 1},
                        Case{"uniform n=12 ratio 0.9", 12, 0.9, 2}}) {
    std::mt19937_64 rng(1234);
    std::normal_distribution<double> g(0, 1);
    std::uniform_real_distribution<double> u(-1, 1);
    // Each distribution is scaled so that its median is exactly `m`.
    auto draw = [&](double m) {
      switch (c.dist) {
        case 0: return m * (1 + 0.04 * g(rng));
        case 1: return m * std::exp(0.1 * g(rng));
        default: return m * (1 + 0.05 * u(rng));
      }
    };
    const int experiments = 300;
    int covered = 0;
    for (int e = 0; e < experiments; ++e) {
      std::vector<double> a(c.n), b(c.n);
      for (auto& x : a) x = draw(100.0);
      for (auto& x : b) x = draw(100.0 * c.true_ratio);
      auto r = bootstrap_median_ratio(a, b, 500, 0.95, 1000 + e);
      if (r.ci_low <= c.true_ratio && c.true_ratio <= r.ci_high) ++covered;
    }
    const double coverage = covered / static_cast<double>(experiments);
    EXPECT_GE(coverage, 0.88) << c.name;
    EXPECT_LE(coverage, 0.99) << c.name;
  }
}

// A 99% interval is wider than a 90% one on the same data.
TEST(TunerStats, ConfidenceWidensTheInterval) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(100, 4);
  std::vector<double> a(30), b(30);
  for (auto& x : a) x = g(rng);
  for (auto& x : b) x = g(rng);
  auto r90 = bootstrap_median_ratio(a, b, 2000, 0.90, 7);
  auto r99 = bootstrap_median_ratio(a, b, 2000, 0.99, 7);
  EXPECT_LT(r99.ci_low, r90.ci_low);
  EXPECT_GT(r99.ci_high, r90.ci_high);
}
