// Why the loader is slow (client/loader_verdict.h): the grade by the loop's wait, the parts costliest first,
// and the worker count that would feed the model, from loading processes' reports as the launcher writes them.
#include <gtest/gtest.h>

#include <limits>

#include <cmath>

#include "client/loader_verdict.h"

using tb::client::loader_verdict;
using tb::client::LoaderVerdict;

namespace {

// One loading process's report (docs/protocol.md, done.summary.loader_parts): `samples` samples of `ms` each,
// `cpu` of that on the CPU; its parts as {name, ms per sample}; `life_ms` its life.
nlohmann::json proc(const std::string& who, int samples, int batches, std::vector<std::pair<std::string, double>> parts,
                    double cpu_share, double life_ms) {
  nlohmann::json p = {{"who", who}, {"pid", 100}, {"samples", samples}, {"batches", batches}};
  double busy = 0;
  nlohmann::json ps = nlohmann::json::object();
  for (const auto& [name, ms] : parts) {
    const double ns = ms * 1e6 * (name == "collate" ? batches : samples);
    ps[name] = {{"ns", int64_t(ns)}, {"calls", name == "collate" ? batches : samples}};
    busy += ns;
  }
  p["parts"] = ps;
  p["busy_ns"] = int64_t(busy);
  p["cpu_ns"] = int64_t(busy * cpu_share);
  p["life_ns"] = int64_t(life_ms * 1e6);
  return p;
}

std::string joined(const LoaderVerdict& v) {
  std::string s;
  for (const auto& l : v.lines()) s += l + "\n";
  return s;
}

}  // namespace

TEST(LoaderVerdict, GradesTheStepByTheLoopsWaitAsXProfDoes) {
  const nlohmann::json parts = nlohmann::json::array({proc("main", 64, 8, {{"dataset code", 1.0}}, 1.0, 100)});
  // 64 samples over steps of 1 s in all: waiting 250, 100, 40 ms of it.
  EXPECT_EQ(loader_verdict(parts, 64, 1'000'000'000, 250'000'000, 2).grade, "highly input-bound");
  EXPECT_EQ(loader_verdict(parts, 64, 1'000'000'000, 200'000'000, 2).grade, "highly input-bound");
  EXPECT_EQ(loader_verdict(parts, 64, 1'000'000'000, 100'000'000, 2).grade, "moderately input-bound");
  EXPECT_EQ(loader_verdict(parts, 64, 1'000'000'000, 40'000'000, 2).grade, "not input-bound");
  EXPECT_FALSE(loader_verdict(nlohmann::json::array(), 64, 1'000'000'000, 0, 2).valid);
  EXPECT_FALSE(loader_verdict(parts, 0, 0, 0, 2).valid);
}

TEST(LoaderVerdict, NamesTheCostliestPartFirstAndCollatePerBatch) {
  const nlohmann::json parts = nlohmann::json::array(
      {proc("worker 0", 32, 4, {{"read + decode (PIL)", 0.8}, {"SlowBlur", 4.2}, {"ToTensor", 0.5}, {"collate", 0.3}},
            0.3, 400),
       proc("worker 1", 32, 4, {{"read + decode (PIL)", 0.8}, {"SlowBlur", 4.2}, {"ToTensor", 0.5}, {"collate", 0.3}},
            0.3, 400)});
  const LoaderVerdict v = loader_verdict(parts, 64, 1'000'000'000, 600'000'000, 2);
  ASSERT_TRUE(v.valid);
  EXPECT_EQ(v.workers, 2);
  EXPECT_EQ(v.samples, 64);
  ASSERT_EQ(v.parts.size(), 4u);
  EXPECT_EQ(v.parts[0].name, "SlowBlur");
  EXPECT_NEAR(v.parts[0].ms, 4.2, 1e-3);
  const auto collate = std::find_if(v.parts.begin(), v.parts.end(), [](const auto& p) { return p.name == "collate"; });
  ASSERT_NE(collate, v.parts.end());
  EXPECT_TRUE(collate->per_batch);
  EXPECT_NEAR(collate->ms, 0.3, 1e-3);
  // Busy time a sample: 5.5 ms of parts, plus a batch's collate over its 8 samples.
  EXPECT_NEAR(v.ms_per_sample, 5.5 + 0.3 / 8, 1e-3);
  const std::string text = joined(v);
  EXPECT_NE(text.find("highly input-bound"), std::string::npos) << text;
  EXPECT_NE(text.find("in each of 2 workers"), std::string::npos) << text;
  EXPECT_LT(text.find("SlowBlur"), text.find("read + decode (PIL)")) << text;
  EXPECT_NE(text.find("collate 0.30 ms a batch"), std::string::npos) << text;
}

TEST(LoaderVerdict, PredictsTheWorkersThatFeedTheModelBoundedByTheCores) {
  // A loader that mostly waits on reads (10% CPU): workers scale past the cores. The loop waited 600 of 1000
  // ms for 64 samples, so the model takes 64 / 0.4 s = 160 samples/s; a sample costs 20 ms: 50 a second a
  // worker, so 4 workers supply 200, and a run with them should measure the model's 160.
  const nlohmann::json io = nlohmann::json::array({proc("worker 0", 64, 8, {{"dataset code", 20.0}}, 0.1, 1400)});
  const LoaderVerdict v = loader_verdict(io, 64, 1'000'000'000, 600'000'000, 2);
  EXPECT_NEAR(v.consume_sps, 160, 1e-6);
  EXPECT_NEAR(v.supply_sps, 50, 1e-6);
  EXPECT_EQ(v.need_workers, 4);
  EXPECT_FALSE(v.cores_bound);
  EXPECT_NEAR(v.expect_sps, 160, 1e-6);
  EXPECT_NE(joined(v).find("about 4 workers would supply 200 (run it: --set workers=4)"), std::string::npos) << joined(v);
  // All on the CPU with 2 cores: 100 samples/s at most whatever the count, which 2 workers reach.
  const nlohmann::json cpu = nlohmann::json::array({proc("worker 0", 64, 8, {{"Resize", 20.0}}, 1.0, 1400)});
  const LoaderVerdict c = loader_verdict(cpu, 64, 1'000'000'000, 600'000'000, 2);
  EXPECT_TRUE(c.cores_bound);
  EXPECT_NEAR(c.supply_with(8), 100, 1e-6);
  EXPECT_NEAR(c.expect_sps, 100, 1e-6);
  EXPECT_EQ(c.need_workers, 2);
  EXPECT_NE(joined(c).find("no worker count feeds it on 2 cores"), std::string::npos) << joined(c);
  EXPECT_NE(joined(c).find("make Resize cheaper"), std::string::npos) << joined(c);
  // With 8 cores the same loader is fed by 4 workers.
  EXPECT_EQ(loader_verdict(cpu, 64, 1'000'000'000, 600'000'000, 8).need_workers, 4);
  // The training process's own CPU shares the cores: 2 ms of loading and 12 of training a sample on 2 cores
  // bound the read-bound loader above at 2000 / 14 = 142.9 samples/s, under the model's 160; 3 workers reach it.
  const LoaderVerdict t = loader_verdict(io, 64, 1'000'000'000, 600'000'000, 2, 12.0);
  EXPECT_TRUE(t.cores_bound);
  EXPECT_NEAR(t.expect_sps, 2000.0 / 14, 1e-6);
  EXPECT_EQ(t.need_workers, 3);
  // A loop that hardly waits: nothing to predict.
  const LoaderVerdict quiet = loader_verdict(io, 64, 1'000'000'000, 10'000'000, 2);
  EXPECT_EQ(quiet.need_workers, 0);
  EXPECT_NE(joined(quiet).find("more workers would not speed the step"), std::string::npos) << joined(quiet);
}

TEST(LoaderVerdict, IdleWorkersWhileTheLoopWaitsPointAtTheTrainingProcess) {
  // Two workers busy a tenth of their life, the loop waiting 30%: the workers are not the bound.
  const nlohmann::json parts = nlohmann::json::array({proc("worker 0", 32, 4, {{"dataset code", 1.0}}, 1.0, 320),
                                                      proc("worker 1", 32, 4, {{"dataset code", 1.0}}, 1.0, 320)});
  const LoaderVerdict v = loader_verdict(parts, 64, 1'000'000'000, 300'000'000, 2);
  EXPECT_NEAR(v.busy_share, 0.1, 1e-6);
  const std::string text = joined(v);
  EXPECT_NE(text.find("the workers are idle 90% of their time"), std::string::npos) << text;
  EXPECT_NE(text.find("the wait comes from elsewhere"), std::string::npos) << text;
}

TEST(LoaderVerdict, WorkersStartedLaterAreTheLoaderAsItEnded) {
  // Samples loaded in the training process before a live change to two workers, then in the workers.
  const nlohmann::json parts = nlohmann::json::array({proc("main", 100, 10, {{"dataset code", 9.0}}, 1.0, 1000),
                                                      proc("worker 0", 16, 2, {{"dataset code", 2.0}}, 1.0, 100),
                                                      proc("worker 1", 16, 2, {{"dataset code", 2.0}}, 1.0, 100)});
  const LoaderVerdict v = loader_verdict(parts, 64, 1'000'000'000, 100'000'000, 4);
  EXPECT_EQ(v.workers, 2);
  EXPECT_EQ(v.samples, 32);
  EXPECT_NEAR(v.ms_per_sample, 2.0, 1e-6);
}

// The cores a prediction counts on: the machine's less what other processes kept busy during the run.
TEST(LoaderVerdict, TheCoresFreeOfOtherWork) {
  EXPECT_EQ(tb::client::cores_free(2, 0.10, 0.2), 2);   // quiet: the run's own CPU is all the machine did
  EXPECT_EQ(tb::client::cores_free(2, 0.60, 0.2), 1);   // another CPU-bound test beside it: one core
  EXPECT_EQ(tb::client::cores_free(2, 1.00, 0.1), 1);   // never fewer than one
  EXPECT_EQ(tb::client::cores_free(16, 0.30, 0.8), 12);
  EXPECT_EQ(tb::client::cores_free(4, std::numeric_limits<double>::quiet_NaN(), 0.5), 4);  // /proc not readable
}
