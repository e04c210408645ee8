// A knob's own start-up (CUDA graphs' capture, a worker pool's spawn, cuDNN's search) is measured from the
// trial's windows, left out of the rate and said beside it with when it pays back; a run shorter than that
// (--run-steps) keeps no such change. On a world whose graphs take seconds to capture each time they are switched
// on, and one that is the same world without the capture.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/tuner.h"
#include "tuner/workloads/sim_model.h"
#include "tuner/workloads/sim_workload.h"
#include "tuner/workloads/sim_world.h"

using namespace tb::engine;

namespace {

nlohmann::json world(double capture_s) {
  nlohmann::json w = nlohmann::json::parse(R"({
    "format": "tunebench-world 1", "name": "graphs", "kind": "cuda", "cores": 8, "batch": 32,
    "parts": {
      "gpu": {"ms": 4, "per_sample_ms": 0.1, "source": "test: a small model's step"},
      "host": {"ms": 6, "source": "test: a launch-bound host"},
      "loader": {"per_sample_ms": 0.01, "source": "test"}
    },
    "knobs": {
      "cuda_graphs": {"values": ["off", "on"], "effects": {"on": {"host": 0.2, "source": "test: launches replayed"}}},
      "amp": {"values": ["off", "bf16"], "effects": {"bf16": {"gpu": 0.7, "loss": 0.01, "source": "test"}}}
    },
    "noise": {"per_pair": 0.02, "per_step": 0.01, "source": "test: a quiet device"},
    "costs": {"process_start_s": 5, "source": "test"}
  })");
  if (capture_s > 0) w["costs"]["startup_s"] = {{"cuda_graphs=on", capture_s}};
  return w;
}

TuneResult tune(double capture_s, int64_t run_steps, uint64_t seed = 1) {
  const nlohmann::json w = world(capture_s);
  SimulatedWorkload s(seed, world_options(w), make_world_model(w).value());
  TuneOptions o;
  o.budget_s = 120;
  o.run_steps = run_steps;
  return run_tune(s, o);
}

const Trial* graphs_trial(const TuneResult& r) {
  for (const auto& t : r.trials)
    if (t.knob == "cuda_graphs" && t.phase.find("final") == std::string::npos) return &t;
  return nullptr;
}

}  // namespace

TEST(TunerStartup, AKnobsOwnStartUpIsSaidWithItsBreakEven) {
  const TuneResult r = tune(3.0, 0);
  const Trial* t = graphs_trial(r);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->outcome, "gain") << t->reason;
  EXPECT_GT(t->startup_s, 0) << t->reason;
  EXPECT_NE(t->reason.find("its start-up: ~"), std::string::npos) << t->reason;
  EXPECT_NE(t->reason.find("left out of the rate, paid back after ~"), std::string::npos) << t->reason;
  ASSERT_TRUE(std::isfinite(t->break_even_steps));
  EXPECT_GT(t->break_even_steps, 0);
  // The knob without a capture of its own says none; nor does one whose turning off costs what turning on does.
  const TuneResult plain = tune(0, 0);
  const Trial* p = graphs_trial(plain);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->startup_s, 0) << p->reason;
  EXPECT_EQ(p->reason.find("start-up"), std::string::npos) << p->reason;
  for (const auto& x : plain.trials) EXPECT_EQ(x.reason.find("start-up"), std::string::npos) << x.knob << ": " << x.reason;
}

TEST(TunerStartup, ARunShorterThanTheBreakEvenKeepsNoSuchChange) {
  const double be = graphs_trial(tune(3.0, 0))->break_even_steps;
  ASSERT_TRUE(std::isfinite(be));
  const TuneResult short_run = tune(3.0, std::max<int64_t>(1, int64_t(be / 4)));
  const Trial* t = graphs_trial(short_run);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->outcome, "not paid back") << t->reason;
  EXPECT_FALSE(t->accepted);
  EXPECT_NE(t->reason.find("(--run-steps), not kept"), std::string::npos) << t->reason;
  EXPECT_NE(short_run.final_config.at("cuda_graphs"), "on");
  const TuneResult long_run = tune(3.0, int64_t(be * 100));
  EXPECT_EQ(graphs_trial(long_run)->outcome, "gain") << graphs_trial(long_run)->reason;
}
