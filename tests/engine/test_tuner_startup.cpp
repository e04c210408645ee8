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

// A loader whose workers are not persistent spawns them again at every pass of its loader (an epoch), not only
// when a trial switches them on; where the windows leave the passes' first steps out (long passes), that
// start-up is in no window's rate and must pay back within a pass. A loader-bound job whose four workers take
// seconds to start, its passes of `pass_steps` steps (0: whole-pass windows, or passes unknown).
namespace {

nlohmann::json loader_world(int pass_steps, const std::string& persistent) {
  // The graphs world above with a decode-bound loader fed by two workers, and their knobs instead of the graphs.
  nlohmann::json w = world(0);
  w["name"] = "epochs";
  w["parts"]["host"] = {{"ms", 3}, {"source", "test"}};
  w["parts"]["loader"] = {{"per_sample_ms", 1.0}, {"source", "test: a decode-bound loader"}};
  w["knobs"].erase("cuda_graphs");
  w["knobs"]["workers"] = {{"values", {"2", "4"}}};
  w["knobs"]["persistent_workers"] = {{"values", {"off", "on"}}};
  w["costs"]["startup_s"] = {{"workers=4", 3}};
  w["knobs"]["persistent_workers"]["default"] = persistent;
  if (pass_steps > 0) w["costs"]["pass_steps"] = pass_steps;
  return w;
}

// `pinned`: the user keeps persistent_workers as it is (--set), so no rung may turn it on.
TuneResult loader_tune(int pass_steps, const std::string& persistent = "off", bool pinned = false) {
  const nlohmann::json w = loader_world(pass_steps, persistent);
  SimulatedWorkload s(1, world_options(w), make_world_model(w).value());
  TuneOptions o;
  o.budget_s = 120;
  if (pinned) o.skip_knobs = {"persistent_workers"};
  return run_tune(s, o);
}

// The first search trial of workers=4 (the rung from the baseline's 2), whatever else it carried.
const Trial* workers_trial(const TuneResult& r) {
  for (const auto& t : r.trials)
    if (t.knob == "workers" && t.value == "4" && t.phase.find("final") == std::string::npos) return &t;
  return nullptr;
}

}  // namespace

TEST(TunerStartup, AStartUpAtEveryPassIsHeldAgainstThePass) {
  // Passes unknown (or held whole in each window): the start-up is a switch's, as before.
  const TuneResult once = loader_tune(0, "off", true);
  const Trial* o = workers_trial(once);
  ASSERT_NE(o, nullptr);
  ASSERT_EQ(o->outcome, "gain") << o->reason;
  ASSERT_GT(o->startup_s, 0) << o->reason;
  EXPECT_EQ(o->startup_each_pass_steps, 0) << o->reason;
  EXPECT_EQ(o->reason.find("every pass"), std::string::npos) << o->reason;
  const double be = o->break_even_steps;
  ASSERT_TRUE(std::isfinite(be)) << o->reason;

  // Long passes, many times the break-even: paid at every pass and paid back within each.
  const int long_pass = int(be * 20);
  const TuneResult paid = loader_tune(long_pass, "off", true);
  const Trial* p = workers_trial(paid);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->outcome, "gain") << p->reason;
  EXPECT_EQ(p->startup_each_pass_steps, long_pass) << p->reason;
  EXPECT_NE(p->reason.find("again at every pass of the training loader"), std::string::npos) << p->reason;
  EXPECT_NE(p->reason.find("steps of each pass"), std::string::npos) << p->reason;

  // Passes shorter than the break-even: each pass would lose what its steps gain, so workers=4 without
  // persistent workers is not kept.
  const int short_pass = std::max(2, int(be / 4));
  const TuneResult lost = loader_tune(short_pass, "off", true);
  const Trial* l = workers_trial(lost);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->outcome, "not paid back") << l->reason;
  EXPECT_FALSE(l->accepted);
  EXPECT_NE(l->reason.find("more than a pass's"), std::string::npos) << l->reason;
  EXPECT_EQ(lost.final_config.at("workers"), "2") << "kept workers=4 that re-spawn every " << short_pass << "-step pass";
}

TEST(TunerStartup, LongPassesKeepTheWorkersRungPersistent) {
  // Where persistent_workers is the tuner's to set, a workers rung over long passes keeps them (as the first
  // workers always do): then they start once, and the rung's rate is what every pass gets.
  const TuneResult r = loader_tune(20, "off");
  const Trial* t = workers_trial(r);
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->also.find("persistent_workers=on"), std::string::npos) << t->also;
  EXPECT_EQ(t->outcome, "gain") << t->reason;
  EXPECT_EQ(t->startup_each_pass_steps, 0) << t->reason;
  EXPECT_EQ(r.final_config.at("workers"), "4");
  EXPECT_EQ(r.final_config.at("persistent_workers"), "on");
  // Passes unknown: the rung from the job's own workers changes only their number, as before.
  const Trial* u = workers_trial(loader_tune(0, "off"));
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->also.find("persistent_workers"), std::string::npos) << u->also;
}

TEST(TunerStartup, PersistentWorkersStartOnce) {
  // The same short passes with the job's workers persistent: their start-up is a switch's, paid once.
  const TuneResult r = loader_tune(20, "on");
  const Trial* t = workers_trial(r);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->startup_each_pass_steps, 0) << t->reason;
  EXPECT_EQ(t->reason.find("every pass"), std::string::npos) << t->reason;
  EXPECT_NE(t->outcome, "not paid back") << t->reason;
}
