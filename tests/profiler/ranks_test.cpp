// Across ranks (profiler/ranks.h): the straggler is the rank the others wait for at the all-reduce, with the
// time they lose and its cause; balanced ranks have none. Hand-built two-process traces (Gloo on the CPU:
// the wait is the training thread's comm_wait while an all-reduce runs), numbers worked out in comments.
#include <gtest/gtest.h>

#include <memory>

#include "profiler/analysis.h"
#include "profiler/range_names.h"
#include "profiler/ranks.h"
#include "profiler/trace.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;

// One 100 us step on a rank: data wait, forward, backward, then the wait for the all-reduce, optimizer.
void rank_step(Builder& b, uint32_t train, uint32_t comm, int64_t t, int64_t index, int64_t data, int64_t wait) {
  b.range(names::kStep, t, t + 100, index, train);
  b.range(names::kDataWait, t, t + data, kNoArg, train);
  const int64_t bwd_end = t + 95 - wait;
  b.range(names::kForward, t + data, t + data + 20, kNoArg, train);
  b.range(names::kBackward, t + data + 20, bwd_end, kNoArg, train);
  b.range(names::kCommWait, bwd_end, t + 95, kNoArg, train);
  b.range(names::kGlooAllReduce, bwd_end - 5, t + 95, 4096, comm);
  b.range(names::kOptimizer, t + 95, t + 100, kNoArg, train);
}

// Rank A: pid 1 (the builder's training thread, a Gloo thread); rank B: pid 2 (its own two threads).
struct TwoRanks : Builder {
  const uint32_t a_comm = t.track_for(TrackKind::CpuThread, 1, 2, "comm (gloo)");
  const uint32_t b_train = t.track_for(TrackKind::CpuThread, 2, 20, "train");
  const uint32_t b_comm = t.track_for(TrackKind::CpuThread, 2, 21, "comm (gloo)");
  // One step of each rank: A's and B's data wait and communication wait.
  void step(int64_t s, int64_t a_data, int64_t a_wait, int64_t b_data, int64_t b_wait) {
    rank_step(*this, cpu, a_comm, s * 100, s, a_data, a_wait);
    rank_step(*this, b_train, b_comm, s * 100, s, b_data, b_wait);
  }
};

std::vector<AnalysisResult> per_pid(Builder& b) {
  b.t.finalize();
  std::vector<AnalysisResult> out;
  for (int64_t pid : processes_with_steps(b.t)) {
    AnalysisOptions o;
    o.pid = pid;
    out.push_back(analyze(b.t, o));
  }
  return out;
}

// Two ranks on two hosts, both pid 1: merged, each keeps a process of its own with its steps, and the pid it
// had on its host.
TEST(Ranks, MergedRankTracesKeepEachRankApart) {
  std::vector<std::unique_ptr<Trace>> traces;
  for (int r = 0; r < 2; ++r) {
    Builder b;
    const uint32_t comm = b.t.track_for(TrackKind::CpuThread, 1, 2, "comm (gloo)");
    for (int64_t s = 0; s < 3; ++s) rank_step(b, b.cpu, comm, s * 100, s, 10 + 20 * r, 5);
    b.t.finalize();
    traces.push_back(std::make_unique<Trace>(std::move(b.t)));
  }
  EXPECT_EQ(merge_rank_traces({}), nullptr);
  const auto merged = merge_rank_traces(std::move(traces));
  ASSERT_NE(merged, nullptr);
  const auto pids = processes_with_steps(*merged);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_NE(pids[0], pids[1]);
  for (int64_t pid : pids) EXPECT_EQ(os_pid(pid), 1);
  AnalysisOptions o;
  o.pid = pids[1];
  EXPECT_EQ(analyze(*merged, o).steps.size(), 3u);
}

TEST(Ranks, ARankWithASlowLoaderIsTheStragglerAndTheFindingSaysWorkers) {
  TwoRanks b;
  // Rank A (pid 1) loads in 5 us and then waits 30 us for the all-reduce; rank B (pid 2) loads in 35 us and
  // waits 5: A loses 25 us per step to B, a quarter of the step, and B's loader is 30 us slower (>= 25/2).
  for (int s = 0; s < 6; ++s) b.step(s, 5, 30, 35, 5);
  ASSERT_EQ(processes_with_steps(b.t), (std::vector<int64_t>{1, 2}));
  const auto results = per_pid(b);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].pid, 1);
  EXPECT_EQ(results[1].pid, 2);
  EXPECT_EQ(results[1].steps.front().data_wait_ns, 35 * us);  // opt.pid analysed that process
  const RankAnalysis ra = analyze_ranks(results, {"rank 0", "rank 1"});
  EXPECT_EQ(ra.matched_steps, 6u);
  ASSERT_EQ(ra.straggler, 1);
  EXPECT_EQ(ra.ranks[1].straggler_steps, 6u);
  EXPECT_EQ(ra.ranks[0].comm_wait_median_ns, 30 * us);
  EXPECT_EQ(ra.ranks[1].comm_wait_median_ns, 5 * us);
  EXPECT_EQ(ra.ranks[0].work_median_ns, 70 * us);
  EXPECT_EQ(ra.wait_per_step_ns, 25 * us);
  EXPECT_NEAR(ra.wait_share, 0.25, 1e-9);
  EXPECT_EQ(ra.cause, "loader");
  ASSERT_EQ(ra.findings.size(), 1u);
  EXPECT_EQ(ra.findings[0].kind, FindingKind::Straggler);
  EXPECT_EQ(ra.findings[0].knob, "workers");
  EXPECT_NE(ra.findings[0].message.find("for rank 1"), std::string::npos) << ra.findings[0].message;
  EXPECT_NEAR(ra.findings[0].max_speedup, 1 / 0.75, 1e-9);
  const std::string json = to_json(ra);
  EXPECT_NE(json.find("\"straggler\":\"rank 1\""), std::string::npos) << json;
}

TEST(Ranks, ARankThatComputesLongerIsACauseNoKnobFixes) {
  TwoRanks b;
  // Same loaders (5 us); B's backward is 30 us longer, so A waits 35 us and B 5.
  for (int s = 0; s < 5; ++s) b.step(s, 5, 35, 5, 5);
  const RankAnalysis ra = analyze_ranks(per_pid(b));
  ASSERT_EQ(ra.straggler, 1);
  EXPECT_EQ(ra.wait_per_step_ns, 30 * us);
  EXPECT_EQ(ra.cause, "compute");
  ASSERT_EQ(ra.findings.size(), 1u);
  EXPECT_EQ(ra.findings[0].knob, "");
  EXPECT_EQ(ra.ranks[1].label, "pid 2");
}

TEST(Ranks, BalancedRanksHaveNoStragglerAndFewStepsNameNone) {
  TwoRanks b;
  // The late rank alternates: A late in even steps, B in odd ones.
  for (int s = 0; s < 6; ++s) b.step(s, 5, s % 2 ? 20 : 5, 5, s % 2 ? 5 : 20);
  const auto results = per_pid(b);
  const RankAnalysis ra = analyze_ranks(results);
  EXPECT_EQ(ra.straggler, -1);
  EXPECT_TRUE(ra.findings.empty());
  ASSERT_FALSE(ra.notes.empty());
  EXPECT_NE(ra.notes[0].find("changes from step to step"), std::string::npos) << ra.notes[0];
  // Only two step numbers in common: too few to name anyone.
  std::vector<AnalysisResult> cut = results;
  cut[1].steps.resize(2);
  const RankAnalysis few = analyze_ranks(cut);
  EXPECT_EQ(few.matched_steps, 2u);
  EXPECT_EQ(few.straggler, -1);
  EXPECT_NE(few.notes[0].find("too few"), std::string::npos);
}

}  // namespace
}  // namespace tb::prof
