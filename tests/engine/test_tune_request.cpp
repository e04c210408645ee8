// The `tune` message's one reader (engine/tune_request.h), which serve and serve-script both call: its budget
// under the surfaces' rule, its knobs[] as the tune's only knobs, one line for what is wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/inputs.h"
#include "engine/knobs.h"
#include "engine/tune_request.h"

using namespace tb::engine;

namespace {

bool engine_knob(const std::string& id) { return find_knob(id) != nullptr; }

TEST(TuneRequest, TheBudgetAndTheKnobsOfTheMessage) {
  auto r = tune_request({{"type", "tune"}, {"budget_s", 60}, {"knobs", {"workers", "amp"}}}, engine_knob);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->budget_s, 60);
  EXPECT_EQ(r->only_knobs, (std::vector<std::string>{"workers", "amp"}));
  // Without them: the default budget, every knob.
  r = tune_request({{"type", "tune"}}, engine_knob);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->budget_s, tb::client::inputs::kBudgetDefaultS);
  EXPECT_TRUE(r->only_knobs.empty());
  EXPECT_EQ(r->run_steps, 0);  // the run's length not said
  // The run's length, as tune --run-steps: a one-time cost that pays back only after more steps is kept by none.
  r = tune_request({{"type", "tune"}, {"run_steps", 5000}}, engine_knob);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->run_steps, 5000);
  EXPECT_FALSE(r->budget_auto);
  // "auto", as tune --budget auto: one pass over every applicable knob, its cost said after the noise floor.
  r = tune_request({{"type", "tune"}, {"budget_s", "auto"}}, engine_knob);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->budget_auto);
  EXPECT_EQ(r->budget_s, tb::client::inputs::kBudgetDefaultS);  // plans the calibration only
  EXPECT_FALSE(r->plan_only);
  // The price alone (tune --plan; the GUI's Run > Price the auto-tune): the pass priced, nothing tried.
  r = tune_request({{"type", "tune"}, {"budget_s", 90}, {"plan_only", true}}, engine_knob);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->plan_only);
  EXPECT_EQ(r->budget_s, 90);
}

TEST(TuneRequest, WhatIsWrongIsOneLine) {
  auto r = tune_request({{"type", "tune"}, {"budget_s", 1}}, engine_knob);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("tune: ", 0), 0u) << r.error().message;
  // Text that is not "auto" is refused, never read as the default budget.
  for (const nlohmann::json& bad : {nlohmann::json("600"), nlohmann::json("Auto"), nlohmann::json::array()}) {
    r = tune_request({{"type", "tune"}, {"budget_s", bad}}, engine_knob);
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().message, "tune: budget_s is seconds or \"auto\", got " + bad.dump()) << r.error().message;
  }
  for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(2.5), nlohmann::json("5000")}) {
    r = tune_request({{"type", "tune"}, {"run_steps", bad}}, engine_knob);
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().message.rfind("tune: run_steps is the run's number of steps", 0), 0u) << r.error().message;
  }
  for (const nlohmann::json& bad : {nlohmann::json("yes"), nlohmann::json(1)}) {
    r = tune_request({{"type", "tune"}, {"plan_only", bad}}, engine_knob);
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().message, "tune: plan_only is true or false (got " + bad.dump() + ")");
  }
  r = tune_request({{"type", "tune"}, {"knobs", {"workers", "warp_speed"}}}, engine_knob);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown knob \"warp_speed\""), std::string::npos) << r.error().message;
  // What a knob is, is the caller's: a script's knobs are not the engine's.
  r = tune_request({{"type", "tune"}, {"knobs", {"compile"}}}, engine_knob);
  EXPECT_FALSE(r);
  r = tune_request({{"type", "tune"}, {"knobs", {"compile"}}}, [](const std::string& id) { return id == "compile"; });
  EXPECT_TRUE(r);
  r = tune_request({{"type", "tune"}, {"knobs", "workers"}}, engine_knob);
  EXPECT_FALSE(r);
}

}  // namespace
