// prof::time_classes, the one list of the classes of time that the GUI's bar, `analyze`'s summary, the JSON
// and the tuner's snapshot compose theirs from: on the real Kineto traces of tests/testdata (the GPU
// variant, and each step's) and on a hand-built CPU-only data-parallel trace (the CPU-only variant).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis_test_util.h"
#include "profiler/range_names.h"
#include "profiler/time_classes.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;

std::vector<std::string> ids(const std::vector<TimeClass>& v) {
  std::vector<std::string> out;
  for (const auto& c : v) out.emplace_back(c.id);
  return out;
}

void expect_unique_ids(const std::vector<TimeClass>& v) {
  std::set<std::string_view> seen;
  for (const auto& c : v) EXPECT_TRUE(seen.insert(c.id).second) << "id repeats: " << c.id;
}

// The GUI's bar, in its order: the busy classes, then the idle causes, the profiler's own time last.
const std::vector<std::string> kGpuIds = {"compute",      "comm_exposed",    "memory_exposed", "loader_stall",
                                          "sync_idle",    "runtime_idle",    "launch_gap",     "launch_overhead",
                                          "edge_idle",    "event_wait",      "other_idle",     "profiler"};

TEST(TimeClasses, GpuClassesPartitionTheTracedWindowOfEveryRealTrace) {
  size_t steps = 0;
  for (const char* name : {"kineto_train_step_rank0.json.gz", "kineto_alexnet_a100.json.gz",
                           "kineto_ddp_2rank_rank1.json.gz", "kineto_event_sync_multistream.json.gz",
                           "kineto_nccl_sampled_rank0.json.gz", "kineto_nccl_sampled_rank1.json.gz"}) {
    SCOPED_TRACE(name);
    const auto t = test_util::load(name);
    ASSERT_NE(t, nullptr);
    const AnalysisResult r = analyze(*t);
    ASSERT_TRUE(r.has_gpu);
    const std::vector<TimeClass> classes = time_classes(r);
    EXPECT_EQ(ids(classes), kGpuIds);
    expect_unique_ids(classes);
    int64_t all = 0, busy = 0;
    for (const auto& c : classes) {
      EXPECT_GE(c.ns, 0) << c.id;
      EXPECT_FALSE(c.label.empty()) << c.id;
      all += c.ns;
      if (c.busy) busy += c.ns;
    }
    // As the GUI's slices did: the whole traced window, nothing more, nothing less; busy first, then idle.
    EXPECT_EQ(all, r.traced_ns());
    EXPECT_EQ(busy, r.gpu_busy_ns);
    EXPECT_EQ(all - busy, idle_total(r));
    EXPECT_EQ(classes[8].ns, r.lead_in_ns + r.tail_ns);
    // The GUI took memcpy/memset as what busy leaves, `analyze` printed memory_exposed_ns: the same figure.
    EXPECT_EQ(classes[2].ns, r.memory_exposed_ns);
    // Each step's GPU side in the same classes: busy + idle of that step (alexnet_a100 has no steps).
    for (const auto& st : r.steps) {
      ++steps;
      const std::vector<TimeClass> sc = time_classes(st);
      EXPECT_EQ(ids(sc), kGpuIds);
      int64_t s_all = 0, s_busy = 0;
      for (const auto& c : sc) {
        s_all += c.ns;
        if (c.busy) s_busy += c.ns;
      }
      EXPECT_EQ(s_busy, st.gpu_busy_ns) << "step " << st.index;
      EXPECT_EQ(s_all, st.gpu_busy_ns + st.gpu_idle_ns) << "step " << st.index;
    }
  }
  EXPECT_GT(steps, 0u);
}

// Data parallel on the CPU, two steps of 100 us: the data wait, the all-reduce backward did not hide, a
// validation between the steps and TuneBench's pause; the rest is the training thread's own.
Builder cpu_data_parallel() {
  Builder b;
  const uint32_t comm = b.t.track_for(TrackKind::CpuThread, 1, 2, "comm (gloo)");
  b.range(names::kStep, 0, 100, 0);
  b.range(names::kDataWait, 0, 10);
  b.range(names::kGlooAllReduce, 70, 88, 1024, comm);
  b.range(names::kCommWait, 70, 92);  // 18 us of it while the all-reduce runs
  b.range("## outside training ##", 100, 130);
  Event pause;
  pause.kind = EventKind::Overhead;
  pause.name = b.t.intern("TuneBench: trace chunk boundary");
  pause.start_ns = 130 * us;
  pause.end_ns = 150 * us;
  b.t.add_event(b.cpu, pause);
  b.range(names::kStep, 150, 250, 1);
  b.range(names::kDataWait, 150, 170);
  b.range(names::kGlooAllReduce, 220, 238, 1024, comm);
  b.range(names::kCommWait, 220, 240);
  return b;
}

TEST(TimeClasses, CpuOnlyVariantIsTheTrainingThreadsTime) {
  const AnalysisResult r = cpu_data_parallel().run();
  ASSERT_FALSE(r.has_gpu);
  ASSERT_EQ(r.traced_ns(), 250 * us);
  const std::vector<TimeClass> classes = time_classes(r);
  EXPECT_EQ(ids(classes), (std::vector<std::string>{"loader_stall", "comm_exposed", "outside_training", "profiler",
                                                    "training_busy_other"}));
  expect_unique_ids(classes);
  EXPECT_EQ(classes[0].label, "waiting for data");
  EXPECT_EQ(classes[1].label, "waiting for all-reduce");
  EXPECT_EQ(classes[0].ns, 30 * us);
  EXPECT_EQ(classes[1].ns, 36 * us);
  EXPECT_EQ(classes[2].ns, 30 * us);
  EXPECT_EQ(classes[3].ns, 20 * us);
  EXPECT_EQ(classes[4].ns, (250 - 30 - 36 - 30 - 20) * us);
  int64_t all = 0;
  for (const auto& c : classes) {
    EXPECT_FALSE(c.busy) << c.id;  // no GPU: nothing is GPU work
    all += c.ns;
  }
  EXPECT_EQ(all, r.traced_ns());
  // The JSON lists them in the same order, under the same ids.
  EXPECT_NE(to_json(r).find("\"time_classes\":[{\"id\":\"loader_stall\",\"label\":\"waiting for data\",\"us\":30,"),
            std::string::npos);
}

// A CPU-only trace with none of the optional classes still lists every class of its variant (0 ns): a consumer
// keys its colour or wording by a fixed set of ids, and the rest is all of the window.
TEST(TimeClasses, CpuOnlyVariantListsItsClassesAtZero) {
  Builder b;
  b.range(names::kStep, 0, 100, 0);
  b.range(names::kStep, 100, 200, 1);
  const AnalysisResult r = b.run();
  ASSERT_FALSE(r.has_gpu);
  const std::vector<TimeClass> classes = time_classes(r);
  ASSERT_EQ(classes.size(), 5u);
  expect_unique_ids(classes);
  for (size_t i = 0; i + 1 < classes.size(); ++i) EXPECT_EQ(classes[i].ns, 0) << classes[i].id;
  EXPECT_EQ(classes.back().ns, r.traced_ns());
}

}  // namespace
}  // namespace tb::prof
