// Data parallel on the CPU (Gloo; docs/analysis.md): the bucket all-reduces on the communication thread and the
// training thread's wait for them after backward (docs/distributed.md). A hand-built trace with the expected
// numbers worked out in the comments.
#include <gtest/gtest.h>

#include "profiler/analysis.h"
#include "profiler/range_names.h"
#include "profiler/trace.h"
#include "analysis_test_util.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;

TEST(AnalysisHostComm, GlooAllReduceAndTheWaitBackwardDidNotHide) {
  Builder b;
  const uint32_t comm = b.t.track_for(TrackKind::CpuThread, 1, 2, "comm (gloo)");
  const uint32_t other = b.t.track_for(TrackKind::CpuThread, 2, 2, "comm (gloo)");  // another rank: out of scope
  // 3 steps of 100 us: data 10, forward 20, backward 60 (buckets handed over at +50 and +70, the last one
  // done at +88; the training thread waits from +70 to +92, of which 18 us while an all-reduce ran),
  // optimizer 10.
  for (int s = 0; s < 3; ++s) {
    const int64_t t = s * 100;
    b.range(names::kStep, t, t + 100, s);
    b.range(names::kDataWait, t, t + 10);
    b.range(names::kForward, t + 10, t + 30);
    b.range(names::kBackward, t + 30, t + 90);
    b.range(names::kCommWait, t + 70, t + 92);  // ends 4 us after the last result: that tail is not comm
    b.range(names::kOptimizer, t + 90, t + 100);
    b.range(names::kGlooAllReduce, t + 50, t + 65, 4096, comm);  // 15 us, hidden behind backward
    b.range(names::kGlooAllReduce, t + 70, t + 88, 1024, comm);  // 18 us, all of it waited for
    b.range(names::kGlooAllReduce, t + 40, t + 99, 1, other);
  }
  b.t.finalize();
  const AnalysisResult r = analyze(b.t);
  ASSERT_FALSE(r.has_gpu);
  ASSERT_EQ(r.steps.size(), 3u);
  // Per step: 15 + 18 = 33 us of all-reduce, 18 us of it exposed. The other process's ranges do not count.
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.comm_ns, 33 * us) << s.index;
    EXPECT_EQ(s.comm_exposed_ns, 18 * us) << s.index;
  }
  EXPECT_EQ(r.comm_ns, 99 * us);
  EXPECT_EQ(r.comm_exposed_ns, 54 * us);
  EXPECT_NEAR(r.comm_overlap, 1.0 - 54.0 / 99.0, 1e-9);  // 45/99 hidden
  // 54 of 300 us = 18% of the window: the exposed-communication finding, its evidence the longest wait.
  const Finding* f = test_util::find(r, FindingKind::ExposedComm);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, 0.18, 1e-9);
  EXPECT_EQ(f->evidence.length(), 18 * us);
}

}  // namespace
}  // namespace tb::prof
