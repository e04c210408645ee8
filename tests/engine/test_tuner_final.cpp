// The final alternation with knobs that depend on others and arms that cannot run. The case a user met: an
// image-folder script on a CPU, `tune --script train.py --budget 200`, kept workers=2 + persistent_workers,
// then prefetch=4 and prefetch=8 on top; the final's arm "without workers" left prefetch=8 behind, the
// launcher refused it ("prefetch only matters with workers > 0"), and the whole result was thrown away while
// the summary said the final alternation confirmed it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

using namespace tb::engine;

namespace {

KnobInfo knob(std::string id, KnobType type, std::string def, std::string rec) {
  KnobInfo k;
  k.id = std::move(id);
  k.title = k.id;
  k.type = type;
  k.default_value = std::move(def);
  k.recommended_value = std::move(rec);
  if (type == KnobType::Bool) k.choices = {"off", "on"};
  if (type == KnobType::Int) k.max = 64;
  k.applies_to = "scripts";
  return k;
}

int num(const Config& c, const char* k) { return std::stoi(c.at(k)); }

// A script reading JPEGs with PIL on two cores: 60 ms of decoding and 30 ms of training a step inline; loader
// workers overlap them, a deeper prefetch smooths the workers' jitter, persistent workers save the fork at
// every short epoch; in_order=off changes nothing here. Its launcher refuses prefetch and in_order without workers.
class FolderScript : public SimModel {
 public:
  std::string name() const override { return "folder-script"; }
  std::string device() const override { return "simulated 2-core CPU"; }
  std::string kind() const override { return "cpu"; }
  const std::vector<KnobInfo>& catalog() const override {
    static const std::vector<KnobInfo> c = {knob("workers", KnobType::Int, "0", "2"),
                                            knob("prefetch", KnobType::Int, "2", "4"),
                                            knob("persistent_workers", KnobType::Bool, "off", "on"),
                                            knob("in_order", KnobType::Bool, "on", "off")};
    return c;
  }
  SimStep step(const Config& c, double slowdown) const override {
    SimStep p;
    const int w = num(c, "workers");
    p.gpu = 30;
    if (w == 0) {
      p.data_wait = 60;
      p.step = 90;
    } else {
      const double loader = 60.0 / std::min(w, 2) * (1 + 0.6 / num(c, "prefetch")) * slowdown +
                            (c.at("persistent_workers") == "on" ? 0 : 8);
      p.data_wait = std::max(0.0, loader - 30);
      p.step = std::max(loader, 30.0) + 1;
    }
    return p;
  }
  double loss_penalty(const Config&) const override { return 0; }
  std::optional<std::string> out_of_memory(const Config&) const override { return std::nullopt; }
  std::optional<std::string> refuses(const Config& c) const override {
    if (num(c, "workers") == 0 && num(c, "prefetch") != 2)
      return "prefetch=" + c.at("prefetch") + ": prefetch only matters with workers > 0 (set workers first)";
    if (num(c, "workers") == 0 && c.at("in_order") == "off")
      return std::string("in_order=off: in_order only matters with workers > 0 (set workers first)");
    return std::nullopt;
  }
  int cores() const override { return 2; }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override {
    return {{"workers", {"0", "1", "2"}},
            {"prefetch", {"2", "4", "8"}},
            {"persistent_workers", {"off", "on"}},
            {"in_order", {"on", "off"}}};
  }
};

// The same script where loading inline is cheap: a worker's hand-off costs more than it overlaps (a GAN on
// tensors in memory measured workers=1 0.58x), so workers are never kept.
class InlineScript : public FolderScript {
 public:
  std::string name() const override { return "inline-script"; }
  SimStep step(const Config& c, double) const override {
    SimStep p;
    p.gpu = 30;
    p.data_wait = num(c, "workers") == 0 ? 1 : 20;
    p.step = 31 + (num(c, "workers") == 0 ? 0 : 20);
    return p;
  }
};

// Two switches that each pay 1.3x; the job refuses `a` off with `b` on (the arm "final without a").
class RefusesAnArm : public SimModel {
 public:
  std::string name() const override { return "refuses-an-arm"; }
  std::string device() const override { return "simulated"; }
  const std::vector<KnobInfo>& catalog() const override {
    static const std::vector<KnobInfo> c = {knob("a", KnobType::Bool, "off", "on"), knob("b", KnobType::Bool, "off", "on")};
    return c;
  }
  SimStep step(const Config& c, double) const override {
    SimStep p;
    p.step = 100 / (c.at("a") == "on" ? 1.3 : 1.0) / (c.at("b") == "on" ? 1.3 : 1.0);
    p.gpu = p.step;
    return p;
  }
  double loss_penalty(const Config&) const override { return 0; }
  std::optional<std::string> out_of_memory(const Config&) const override { return std::nullopt; }
  std::optional<std::string> refuses(const Config& c) const override {
    if (c.at("a") == "off" && c.at("b") == "on") return std::string("b=on needs a=on (a refusal of the job's)");
    return std::nullopt;
  }
  int cores() const override { return 2; }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override {
    return {{"a", {"off", "on"}}, {"b", {"off", "on"}}};
  }
};

std::string notes_of(const TuneResult& r) {
  std::string s;
  for (const auto& n : r.notes) s += n + "\n";
  return s;
}

// A tune of `budget` seconds of one of the scripts above, on a quiet machine (3% noise).
template <class Script>
TuneResult tune_script(uint64_t seed, double budget) {
  SimOptions so;
  so.noise = 0.03;
  SimulatedWorkload w(seed, so, std::make_unique<Script>());
  TuneOptions o;
  o.budget_s = budget;
  return run_tune(w, o);
}

// A built-in profile's tune at `budget`, held to the budget's wall.
TuneResult profile_tune(SimulatedWorkload& w, uint64_t seed, double budget) {
  TuneOptions o;
  o.budget_s = budget;
  TuneResult r = run_tune(w, o);
  EXPECT_LE(r.elapsed_s, 1.05 * budget) << "seed " << seed;
  return r;
}

}  // namespace

TEST(TunerFinal, AnArmWithoutWorkersTakesTheirPrefetchAlong) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    TuneResult r = tune_script<FolderScript>(seed, 200);
    const std::string notes = notes_of(r);
    EXPECT_EQ(notes.find("final alternation failed"), std::string::npos) << "seed " << seed << "\n" << notes;
    // Workers and a deeper prefetch are kept, and checked: the arm without workers went without prefetch too.
    EXPECT_NE(r.final_config.at("workers"), "0") << "seed " << seed;
    EXPECT_NE(r.final_config.at("prefetch"), "2") << "seed " << seed;
    bool checked = false;
    for (const auto& t : r.trials)
      if (t.phase == "final" && t.knob == "workers") {
        checked = true;
        EXPECT_EQ(t.outcome, "held") << t.reason;
        EXPECT_NE(t.reference.find("prefetch"), std::string::npos) << t.reference;
      }
    EXPECT_TRUE(checked) << "seed " << seed;
    EXPECT_EQ(r.verdict, "faster");
    EXPECT_NE(r.ended.find("confirmed"), std::string::npos) << r.ended;
  }
}

// What means nothing without loader workers (the knob table's `needs`) waits for them: in_order=off had been
// tried from 0 workers on a script, refused by its launcher, a failed trial.
TEST(TunerFinal, WhatNeedsWorkersWaitsForThem) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const TuneResult r = tune_script<InlineScript>(seed, 120);
    EXPECT_EQ(r.final_config.at("workers"), "0") << "seed " << seed;
    for (const auto& id : {"prefetch", "persistent_workers", "in_order"}) {
      const auto s = std::find_if(r.skipped.begin(), r.skipped.end(), [&](const SkippedTrial& x) { return x.knob == id; });
      ASSERT_NE(s, r.skipped.end()) << "seed " << seed << ": " << id << " not said";
      EXPECT_EQ(s->reason, std::string(id) + " only matters with workers > 0 (tried again once workers are kept)");
    }
  }
  for (uint64_t seed : {1u, 2u, 3u}) {
    const TuneResult r = tune_script<FolderScript>(seed, 200);
    int after_workers = 0;
    for (const auto& t : r.trials) {
      EXPECT_NE(t.outcome, "failed") << "seed " << seed << ": " << t.knob << "=" << t.value << ": " << t.reason;
      if (t.knob != "prefetch" && t.knob != "persistent_workers" && t.knob != "in_order") continue;
      if (t.phase == "final") continue;
      EXPECT_TRUE(std::regex_search(t.reference, std::regex("(^|, )workers=[1-9]")))
          << "seed " << seed << ": " << t.knob << " from " << t.reference;
      after_workers += t.knob == "in_order";
    }
    EXPECT_GE(after_workers, 1) << "seed " << seed << ": in_order never tried once workers were kept";
  }
}

TEST(TunerFinal, AnArmThatCannotRunCostsThatArmOnly) {
  SimOptions so;
  so.noise = 0.02;
  SimulatedWorkload w(4, so, std::make_unique<RefusesAnArm>());
  TuneOptions o;
  o.budget_s = 200;
  TuneResult r = run_tune(w, o);
  EXPECT_EQ(r.final_config.at("a"), "on");
  EXPECT_EQ(r.final_config.at("b"), "on");
  std::string a_outcome, b_outcome;
  for (const auto& t : r.trials)
    if (t.phase == "final") (t.knob == "a" ? a_outcome : t.knob == "b" ? b_outcome : a_outcome) += t.knob.empty() ? "" : t.outcome;
  EXPECT_EQ(a_outcome, "unchecked");  // its arm without it (a off, b on) could not run
  EXPECT_EQ(b_outcome, "held");
  EXPECT_TRUE(r.speedup.faster());
  EXPECT_NEAR(r.speedup.ratio, 1.69, 0.1);
  const std::string notes = notes_of(r);
  EXPECT_EQ(notes.find("final alternation failed"), std::string::npos) << notes;
  EXPECT_NE(notes.find("could not check a=on"), std::string::npos) << notes;
}

// A knob the search deferred and never had time for is measured as one more arm of the final, the final with it,
// over the first two rounds: the H100 profile's 120 s tunes had ended with pinned memory, the conv-bias and
// logging switches "skipped (budget)" and 5-8 s of the budget unused. Each such row is against the final, its
// knob is no longer said skipped, and it is kept only on a gain beyond the floor -- then the headline measures
// the final with it (its arm's windows), one extra at most (two were never measured together).
TEST(TunerFinal, AKnobNoTrialHadTimeForIsAnArmOfTheFinal) {
  int tunes_with_extras = 0, held = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SimulatedWorkload w(seed, sim_options_for("gpu"));
    const TuneResult r = profile_tune(w, seed, 120);
    const Trial* headline = nullptr;
    for (const auto& t : r.trials)
      if (t.phase == "final" && t.knob.empty() && t.value.rfind("all kept knobs (in this process)", 0) == 0) headline = &t;
    int extras = 0, kept = 0;
    for (const auto& t : r.trials) {
      if (t.phase != "final" || t.knob.empty() || t.reference != "final") continue;
      ++extras;
      const std::string kv = t.knob + "=" + t.value;
      const auto info = std::find_if(w.model().catalog().begin(), w.model().catalog().end(),
                                     [&](const KnobInfo& k) { return k.id == t.knob; });
      ASSERT_NE(info, w.model().catalog().end()) << kv;
      EXPECT_FALSE(info->process_scope || info->changes_numerics) << "seed " << seed << ": " << kv;
      EXPECT_EQ(t.a.size(), 2u) << "seed " << seed << ": " << kv << ": " << t.reason;
      EXPECT_NE(t.reason.find("measured in the final alternation on top of the final"), std::string::npos) << t.reason;
      for (const auto& s : r.skipped)
        EXPECT_FALSE(s.knob == t.knob && s.value == t.value) << "seed " << seed << ": " << kv << " measured and skipped";
      const bool in_final = r.final_config.at(t.knob) == t.value;
      EXPECT_EQ(in_final, t.outcome == "held") << "seed " << seed << ": " << kv << ": " << t.outcome << ": " << t.reason;
      if (t.outcome != "held") continue;
      ++kept;
      EXPECT_TRUE(t.estimate.valid() && t.estimate.lo > 1) << "seed " << seed << ": " << kv << ": " << t.reason;
      ASSERT_NE(headline, nullptr) << "seed " << seed;
      ASSERT_EQ(headline->b.size(), t.b.size()) << "seed " << seed << ": the headline is not the final with " << kv;
      EXPECT_EQ(headline->b[0].wall_s, t.b[0].wall_s) << "seed " << seed << ": the headline is not the final with " << kv;
    }
    EXPECT_LE(kept, 1) << "seed " << seed;
    tunes_with_extras += extras > 0;
    held += kept;
  }
  // Measured: 8 of these 10 tunes had an extra, 32 of 40 seeds (1-4 arms each; 6 of them kept).
  EXPECT_GE(tunes_with_extras, 5);
  std::printf("gpu at 120 s, seeds 1-10: an extra arm in %d tunes, %d kept\n", tunes_with_extras, held);
}

// What the finals leave of the budget (their reserve holds what a guess may need: a fresh process not measured
// yet is held 1.25x) measures the knobs still skipped for it, each on top of the final (two pairs of arms, or a
// trial of its own), said and not kept: the headline was measured without them. The synthetic-data profile's
// 300 s tunes had ended with zero_grad_none, sync_free_logging or the multi-tensor optimizer "skipped (budget)"
// and 12 s unused (median).
TEST(TunerFinal, WhatTheFinalsLeaveMeasuresTheKnobsSkippedForBudget) {
  int tunes_with_rows = 0, own_trials = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SimulatedWorkload w(seed, sim_options_for("gpu-synthetic"));
    const TuneResult r = profile_tune(w, seed, 300);
    bool after = false;
    for (const auto& t : r.trials) {
      if (t.phase != "leftover") {
        EXPECT_FALSE(after) << "seed " << seed << ": a " << t.phase << " row after the finals' leftovers";
        continue;
      }
      after = true;
      const std::string kv = t.knob + "=" + t.value;
      EXPECT_EQ(t.reference, "final") << kv;
      // Two pairs of arms, or a trial of its own (a recipe change, a numerics knob, a compile); one clearly slower
      // pair ends a trial.
      if (t.outcome != "slower") EXPECT_GE(t.a.size(), 2u) << "seed " << seed << ": " << kv << ": " << t.reason;
      EXPECT_NE(r.final_config.at(t.knob), t.value) << "seed " << seed << ": " << kv << " kept after the headline";
      EXPECT_FALSE(t.accepted) << kv;
      if (t.outcome == "gain") EXPECT_NE(t.reason.find("not kept"), std::string::npos) << t.reason;
      own_trials += t.knob == "grad_accumulation" || t.knob == "batch_size";  // recipe changes: no arm says them
      for (const auto& s : r.skipped)
        EXPECT_FALSE(s.knob == t.knob && s.value == t.value) << "seed " << seed << ": " << kv << " measured and skipped";
    }
    tunes_with_rows += after;
  }
  // Measured: 20 of 40 seeds (1-3 knobs each), 6 of these 10; grad_accumulation=4 in a trial of its own in 2.
  EXPECT_GE(tunes_with_rows, 3);
  EXPECT_GE(own_trials, 1);
  std::printf("gpu-synthetic at 300 s, seeds 1-10: knobs measured after the finals in %d tunes\n", tunes_with_rows);
}
