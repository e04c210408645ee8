// The run JSON's figures from step records (engine/run_json.h), on records made here.
#include <gtest/gtest.h>

#include <vector>

#include "engine/run_json.h"

using tb::engine::StepRecord;

namespace {
StepRecord step(int64_t index, double ms) {
  StepRecord r;
  r.index = index;
  r.samples = 256;
  r.wall_ns = static_cast<int64_t>(ms * 1e6);
  return r;
}
}  // namespace

// Tracing's cost compares each side's typical step: on a busy machine one of the ~10 untraced steps is
// descheduled (20 ms against 1 ms steps) and must not make the traced steps look faster than the untraced; a
// loader-bound script's alternating steps must not look slower traced.
TEST(RunJson, TracingCostIsTheTypicalStepOfEachSide) {
  std::vector<StepRecord> steps;
  for (int i = 0; i < 10; ++i) steps.push_back(step(i, i == 4 ? 20.0 : 1.0));
  for (int i = 10; i < 30; ++i) steps.push_back(step(i, 1.6));
  StepRecord warm = step(-1, 500.0);
  warm.warmup = true;
  steps.insert(steps.begin(), warm);
  const auto cost = tb::engine::tracing_cost_json(steps, {{10, 29}});
  ASSERT_TRUE(cost.is_object());
  EXPECT_EQ(cost["untraced_steps"].get<int>(), 10);
  EXPECT_EQ(cost["traced_steps"].get<int>(), 20);
  EXPECT_NEAR(cost["untraced_step_ms"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(cost["traced_speed"].get<double>(), 1.0 / 1.6, 1e-9);
  EXPECT_NE(tb::engine::tracing_cost_text(cost).find("0.62x"), std::string::npos) << tb::engine::tracing_cost_text(cost);
  // A loader-bound script's steps alternate (two workers' batches arrive together): 35 and 3 ms on both sides,
  // 11 untraced (six of 35) and 29 traced (fifteen of 3). Tracing cost nothing; no figure may say it did (the
  // sides' medians, 35 and 3 ms, said 11.7x).
  std::vector<StepRecord> alternating;
  for (int i = 0; i < 40; ++i) alternating.push_back(step(i, i % 2 ? 3.0 : 35.0));
  const auto even = tb::engine::tracing_cost_json(alternating, {{11, 39}});
  EXPECT_GT(even["traced_speed"].get<double>(), 0.95) << even.dump();
  EXPECT_LT(even["traced_speed"].get<double>(), 1.2) << even.dump();
  EXPECT_EQ(tb::engine::tracing_cost_text(even), "");
  // Too few steps on a side: nothing measured, nothing said.
  EXPECT_TRUE(tb::engine::tracing_cost_json(steps, {{0, 29}}).is_null());
  EXPECT_EQ(tb::engine::tracing_cost_text(nullptr), "");
}
