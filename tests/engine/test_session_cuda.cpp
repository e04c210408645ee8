// What only a CUDA device can show about a session: skipped, and saying so, everywhere else.
#include <gtest/gtest.h>

#include "compat.h"
#include "engine/session.h"

#include <algorithm>
#include <utility>

namespace tb::engine {
namespace {

// A tune switches configurations every window, and with cuda_graphs on every switch re-captures the step. On an
// H200 each dropped graph's private pool stayed reserved: after ~10 captures 114.6 GiB sat in private pools and
// every later capture and trial ran out of memory. What the device holds must not grow with the captures.
// A ResNet-18 on synthetic `size` x `size` images on the CUDA device, one warm-up step, no drift guard.
SessionOptions cuda_resnet18(int size, Config knobs) {
  SessionOptions o;
  o.model = "resnet18";
  o.data = "synthetic";
  o.device = "cuda";
  o.input_height = o.input_width = size;
  o.num_classes = 10;
  o.warmup_steps = 1;
  o.max_warmup_steps = 1;
  o.drift_guard_steps = 0;
  o.seed = 1;
  o.knobs = std::move(knobs);
  return o;
}

TEST(SessionCuda, ARecapturedGraphGivesItsMemoryBack) {
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a CUDA device: " << compat::cuda_unavailable_reason();
  auto s = Session::create(cuda_resnet18(96, {{"cuda_graphs", "on"}, {"amp", "bf16"}, {"batch_size", "64"}}));
  std::vector<int64_t> reserved;
  for (int round = 0; round < 16; ++round) {
    s->apply({{"batch_size", round % 2 ? "32" : "64"}});
    StepRecord r;
    for (int i = 0; i < 5; ++i) r = s->step();  // two eager steps, the capture, replays
    ASSERT_GT(r.memory.device_reserved_bytes, 0);
    reserved.push_back(r.memory.device_reserved_bytes);
  }
  for (const auto& w : s->take_warnings()) EXPECT_EQ(w.find("capturing the step failed"), std::string::npos) << w;
  EXPECT_GE(s->describe().value("cuda_graph_replays", int64_t{0}), 16 * 2) << "the step was not captured";
  // Once both batch sizes ran (rounds 0 and 1), later rounds hold no more than they did, give or take the
  // allocator's rounding: 16 captures that each kept their pool hold several times as much.
  const int64_t settled = std::max(reserved[0], reserved[1]);
  for (size_t i = 2; i < reserved.size(); ++i)
    EXPECT_LE(reserved[i], settled + settled / 4 + (64 << 20)) << "round " << i << ": " << reserved[i] << " bytes reserved, "
                                                                << settled << " after the first two";
}

// PyTorch answers a convolution from the algorithm it cached for its shapes, its heuristics' or the benchmark's,
// whatever the flag says: once steps ran, cudnn_benchmark changes nothing either way, and a live change would be
// measured as doing nothing. The session refuses it and keeps what it had.
TEST(SessionCuda, CudnnBenchmarkIsRefusedEitherWayOnceStepsRan) {
  if (!compat::cuda_available()) GTEST_SKIP() << "needs a CUDA device: " << compat::cuda_unavailable_reason();
  auto s = Session::create(cuda_resnet18(64, {{"cudnn_benchmark", "off"}, {"batch_size", "16"}}));
  s->step();
  EXPECT_THROW(s->apply({{"cudnn_benchmark", "on"}}), EngineError);
  EXPECT_EQ(s->config().at("cudnn_benchmark"), "off");
  auto t = Session::create(cuda_resnet18(64, {{"cudnn_benchmark", "on"}, {"batch_size", "16"}}));
  t->step();
  EXPECT_THROW(t->apply({{"cudnn_benchmark", "off"}}), EngineError);
  EXPECT_EQ(t->config().at("cudnn_benchmark"), "on");
}

}  // namespace
}  // namespace tb::engine
