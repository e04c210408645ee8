// The inputs every surface checks the same way (client/inputs.h): the tune budget, "k=v,..." settings, steps.
#include <gtest/gtest.h>

#include <cmath>

#include "client/inputs.h"

namespace in = tb::client::inputs;

TEST(Inputs, TheBudgetIsOneRange) {
  EXPECT_EQ(*in::tune_budget(in::kBudgetDefaultS), 120.0);
  EXPECT_EQ(*in::tune_budget(10), 10.0);
  EXPECT_EQ(*in::tune_budget(86400), 86400.0);
  for (double bad : {9.99, 0.0, -5.0, 86401.0, double(NAN), double(INFINITY)}) {
    const auto r = in::tune_budget(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("budget must be between 10 and 86400 seconds, got ", 0), 0u) << r.error().message;
  }
  EXPECT_EQ(*in::parse_tune_budget("90.5"), 90.5);
  for (const char* bad : {"", "abc", "120s", "12 0", "1e9", "5"}) {
    const auto r = in::parse_tune_budget(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_NE(r.error().message.find("budget"), std::string::npos) << r.error().message;
  }
}

TEST(Inputs, SettingsAreKnobEqualsValueInOrder) {
  const auto r = in::parse_settings(" workers = 2,amp=bf16,,prefetch=,");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], (std::pair<std::string, std::string>{"workers", "2"}));
  EXPECT_EQ((*r)[1], (std::pair<std::string, std::string>{"amp", "bf16"}));
  EXPECT_EQ((*r)[2], (std::pair<std::string, std::string>{"prefetch", ""}));
  EXPECT_TRUE(in::parse_settings("")->empty());
  for (const char* bad : {"workers", "a=1,workers", "=2", " =2"}) {
    const auto e = in::parse_settings(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().message.rfind("bad knob setting '", 0), 0u) << e.error().message;
    EXPECT_NE(e.error().message.find("expected knob=value"), std::string::npos);
  }
}

TEST(Inputs, AnIntegerIsTheWholeTextWithinItsRange) {
  EXPECT_EQ(in::parse_integer("12"), 12);
  EXPECT_EQ(in::parse_integer("-3"), -3);
  EXPECT_EQ(in::parse_integer("64", 1, 64), 64);
  for (const char* bad : {"", "12x", " 12", "1e3", "0x10", "99999999999999999999"})
    EXPECT_FALSE(in::parse_integer(bad).has_value()) << bad;
  EXPECT_FALSE(in::parse_integer("0", 1).has_value());
  EXPECT_FALSE(in::parse_integer("65", 1, 64).has_value());
}

TEST(Inputs, TheGatesTimeLimitIsOneRange) {
  EXPECT_EQ(*in::gate_max_time(in::kGateMaxTimeDefaultS), 1200);
  EXPECT_EQ(*in::gate_max_time(1), 1);
  for (double bad : {0.0, -5.0, 86401.0}) {
    const auto r = in::gate_max_time(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("--max-time must be between 1 and 86400 seconds", 0), 0u) << r.error().message;
  }
}

TEST(Inputs, TheTraceShareIsOneRange) {
  EXPECT_EQ(*in::parse_trace_share("0"), 0);
  EXPECT_EQ(*in::parse_trace_share("0.5"), in::kTraceShareMax);
  for (const char* bad : {"", "0.6", "-0.01", "a lot", "0.1x"}) {
    const auto r = in::parse_trace_share(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("--trace-share needs a share of the run from 0 (trace every step) to 0.5, got '", 0),
              0u) << r.error().message;
  }
}

// One --steps rule on every surface: run's least is 1, serve's 0 (until stopped), the gate's 5, and each stops at
// kStepsMax (the GUI's spin box too). The error names the range in one line.
TEST(Inputs, StepsAreOneRangeFromEachSurfacesLeast) {
  EXPECT_EQ(*in::parse_steps("1", in::kRunStepsMin), 1);
  EXPECT_EQ(*in::parse_steps("0", in::kServeStepsMin), 0);
  EXPECT_EQ(*in::parse_steps("5", in::kGateStepsMin), 5);
  EXPECT_EQ(*in::parse_steps("1000000", in::kRunStepsMin), in::kStepsMax);
  for (const char* bad : {"0", "-1", "1000001", "1.5", "1e3", "ten", " 3"}) {
    const auto r = in::parse_steps(bad, in::kRunStepsMin);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, std::string("--steps needs an integer from 1 to 1000000, got '") + bad + "'");
  }
  EXPECT_EQ(in::parse_steps("-1", in::kServeStepsMin).error().message,
            "--steps needs an integer from 0 (until stopped) to 1000000, got '-1'");
  EXPECT_EQ(in::parse_steps("4", in::kGateStepsMin).error().message,
            "--steps needs an integer from 5 to 1000000, got '4'");
  // No value at all: the range alone.
  EXPECT_EQ(in::parse_steps("", in::kRunStepsMin).error().message, "--steps needs an integer from 1 to 1000000");
}
