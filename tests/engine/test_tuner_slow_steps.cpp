// A job whose steps take seconds (an LBFGS script's were 5-6 s): the tune's windows shrink to what such a step
// needs, and a budget that cannot hold the smallest tune says so after the calibration, with the budget that
// would, instead of running its noise floor past the end (127 s of a 60 s budget, no knob tried). And the other
// end: steps of a millisecond make windows of many steps, never a window of a few milliseconds.
#include <gtest/gtest.h>

#include <memory>
#include <regex>

#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

using namespace tb::engine;

namespace {
// The toy job with every step `factor` times as long.
class SlowSteps : public SimModel {
 public:
  explicit SlowSteps(double factor) : m_(make_sim_model("toy")), f_(factor) {}
  std::string name() const override { return m_->name(); }
  std::string device() const override { return m_->device(); }
  std::string kind() const override { return m_->kind(); }
  const std::vector<KnobInfo>& catalog() const override { return m_->catalog(); }
  Applicability applicability(const KnobInfo& k) const override { return m_->applicability(k); }
  Config baseline() const override { return m_->baseline(); }
  SimStep step(const Config& c, double s) const override {
    SimStep st = m_->step(c, s);
    for (double* v : {&st.step, &st.gpu, &st.launch, &st.data_wait, &st.h2d, &st.sync}) *v *= f_;
    return st;
  }
  double fresh_factor(const Config& c) const override { return m_->fresh_factor(c); }
  double loss_penalty(const Config& c) const override { return m_->loss_penalty(c); }
  double memory_total_mb() const override { return m_->memory_total_mb(); }
  std::optional<std::string> out_of_memory(const Config& c) const override { return m_->out_of_memory(c); }
  std::optional<std::string> refuses(const Config& c) const override { return m_->refuses(c); }
  int cores() const override { return m_->cores(); }
  SimCosts costs() const override { return m_->costs(); }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override {
    return m_->search_space();
  }

 private:
  std::unique_ptr<SimModel> m_;
  double f_;
};

TuneResult tune(double budget_s, uint64_t seed = 3, double factor = 35) {
  SimulatedWorkload w(seed, SimOptions{}, std::make_unique<SlowSteps>(factor));  // 35: ~5 s a step
  TuneOptions o;
  o.budget_s = budget_s;
  return run_tune(w, o);
}
}  // namespace

TEST(TunerSlowSteps, ABudgetThatHoldsNoTrialSaysWhatWould) {
  const TuneResult r = tune(60);
  EXPECT_TRUE(r.trials.empty()) << r.ended;
  EXPECT_EQ(r.verdict, "none");
  EXPECT_EQ(r.final_config, r.baseline);
  // Said at once, within the budget's margin: the calibration is all it spent.
  EXPECT_LE(r.elapsed_s, 60 * 1.1) << r.ended;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.ended, m, std::regex("holds no trial.*--budget ([0-9]+) or more"))) << r.ended;
  const double need = std::stod(m[1]);
  EXPECT_GT(need, 60);
  // The budget it names holds a tune: knobs are measured and the tune ends within it.
  const TuneResult enough = tune(need);
  EXPECT_GE(enough.trials.size(), 3u) << enough.ended;
  EXPECT_EQ(enough.ended.find("holds no trial"), std::string::npos) << enough.ended;
  EXPECT_LE(enough.elapsed_s, need * 1.1) << enough.ended;
}

TEST(TunerSlowSteps, LongStepsMakeShortWindows) {
  const TuneResult r = tune(1200);
  // min_window (6) steps of 5 s would be 30 s a window; 2 steps (10 s) average a long step's jitter.
  EXPECT_EQ(r.window, 2) << r.ended;
  bool screened = false;
  for (const auto& t : r.trials) screened |= t.phase == "screen";
  EXPECT_TRUE(screened) << r.ended;
  EXPECT_LE(r.elapsed_s, 1200 * 1.1);
}

// Steps of under a millisecond (a forward-forward script's 0.8 ms, a hand-written SGD loop's 0.4 ms) made
// windows of max_window's 30 steps, 12-24 ms: the timer's and the channel's jitter were the measurement, and
// its A/A pairs varied by ±57%. Windows last min_window_s however many steps that takes (a real one then
// varied by ±17%).
TEST(TunerSlowSteps, FastStepsMakeWindowsOfASecond) {
  const TuneResult r = tune(120, 3, 0.005);
  std::smatch m;
  std::string plan;
  for (const auto& n : r.notes) if (n.rfind("plan: ", 0) == 0) plan = n;
  ASSERT_TRUE(std::regex_search(plan, m, std::regex("; ([0-9.]+) ms/step at the baseline"))) << plan;
  const double step_s = std::stod(m[1]) / 1000;
  ASSERT_LT(step_s, 0.002) << plan;
  EXPECT_GE(r.window * step_s, TuneOptions{}.min_window_s * 0.9) << plan;
  EXPECT_GT(r.window, TuneOptions{}.max_window) << plan;
  bool screened = false;
  for (const auto& t : r.trials) screened |= t.phase == "screen";
  EXPECT_TRUE(screened) << r.ended;
  EXPECT_LE(r.elapsed_s, 120 * 1.1);
}
