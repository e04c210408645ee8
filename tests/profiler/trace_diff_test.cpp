// diff_traces on two hand-built runs of the same loop, before and after a fix, with the answers worked out.
#include <gtest/gtest.h>

#include <algorithm>

#include "profiler/analysis.h"
#include "profiler/trace_diff.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;

const ClassDelta& cls(const TraceDiff& d, const char* name) {
  static const ClassDelta none;
  for (const auto& c : d.classes)
    if (c.name == name) return c;
  ADD_FAILURE() << "no class " << name;
  return none;
}

TEST(TraceDiff, BeforeAndAfterALoaderFix) {
  // A: 3 steps of 100 us: data wait [0,40], kernel k1 [40,100] (launched at 40).
  Builder a;
  for (int i = 0; i < 3; ++i) {
    const int64_t s = i * 100;
    a.range("step", s, s + 100, i);
    a.range("data_wait", s, s + 40);
    a.kernel(s + 40, s + 100, s + 40, 7, "k1");
  }
  // B: 3 steps of 60 us: k1 [0,50] and a new k2 [50,60], no data wait.
  Builder b;
  for (int i = 0; i < 3; ++i) {
    const int64_t s = i * 60;
    b.range("step", s, s + 60, i);
    b.kernel(s, s + 50, s, 7, "k1");
    b.kernel(s + 50, s + 60, s + 1, 7, "k2");
  }
  const auto ra = a.run(), rb = b.run();
  const TraceDiff d = diff_traces(a.t, ra, b.t, rb);
  EXPECT_TRUE(d.per_step);
  EXPECT_NEAR(d.speedup, 100.0 / 60.0, 1e-9);
  EXPECT_DOUBLE_EQ(cls(d, "loader_stall").a_ns, 40 * us);  // per step
  EXPECT_DOUBLE_EQ(cls(d, "loader_stall").b_ns, 0);
  EXPECT_DOUBLE_EQ(cls(d, "gpu_busy").delta_ns(), 0);  // 60 us busy per step in both
  auto k1 = std::find_if(d.changed.begin(), d.changed.end(), [](const NameDelta& n) { return n.name == "k1"; });
  ASSERT_NE(k1, d.changed.end());
  EXPECT_DOUBLE_EQ(k1->a_ns, 60 * us);
  EXPECT_DOUBLE_EQ(k1->b_ns, 50 * us);
  EXPECT_DOUBLE_EQ(k1->b_count, 1);
  ASSERT_FALSE(d.added.empty());
  EXPECT_EQ(d.added[0].name, "k2");
  EXPECT_DOUBLE_EQ(d.added[0].b_ns, 10 * us);
  auto removed_wait = std::find_if(d.removed.begin(), d.removed.end(), [](const NameDelta& n) { return n.name == "data_wait"; });
  ASSERT_NE(removed_wait, d.removed.end());
  EXPECT_FALSE(removed_wait->kernel);
  ASSERT_EQ(d.findings_disappeared.size(), 1u);
  EXPECT_EQ(d.findings_disappeared[0], "loader_stall");
  EXPECT_TRUE(d.findings_appeared.empty());
  const std::string j = to_json(d);
  EXPECT_NE(j.find("\"findings_disappeared\":[\"loader_stall\"]"), std::string::npos) << j;
}

TEST(TraceDiff, WithoutStepsTotalsAreCompared) {
  Builder a, b;
  a.kernel(0, 10, 0);
  b.kernel(0, 30, 0);
  const auto ra = a.run(), rb = b.run();
  const TraceDiff d = diff_traces(a.t, ra, b.t, rb);
  EXPECT_FALSE(d.per_step);
  EXPECT_FALSE(d.notes.empty());
  EXPECT_DOUBLE_EQ(cls(d, "gpu_busy").delta_ns(), 20 * us);
  EXPECT_NEAR(d.speedup, 1.0 / 3.0, 1e-9);
}

}  // namespace
}  // namespace tb::prof
