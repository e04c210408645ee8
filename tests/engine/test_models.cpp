// Models: each one builds, declares its input and trains a step (CPU, small inputs).
#include <gtest/gtest.h>

#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "compat.h"
#include "models.h"
#include "optimizer.h"

namespace tb::engine {
namespace {

double train_one_step(Model& m) {
  m.train(true);
  const auto& in = m.input();
  auto x = torch::randn({2, in.channels, in.height, in.width});
  auto y = torch::randint(0, in.num_classes, {2}, torch::kLong);
  auto params = m.trainable_parameters();
  std::vector<torch::Tensor> before;
  for (auto& p : params) before.push_back(p.detach().clone());
  auto loss = m.loss(m.forward(x), y);
  loss.backward();
  AdamW opt;
  opt.step(params, /*foreach=*/true);
  int changed = 0;
  for (size_t i = 0; i < params.size(); ++i) changed += !torch::equal(before[i], params[i].detach());
  EXPECT_GT(changed, 0) << m.name() << ": no parameter moved";
  return loss.item<double>();
}

TEST(Models, MnistCnnTrainsAStep) {
  auto m = make_model("mnist_cnn", {});
  EXPECT_EQ(m->input().channels, 1);
  EXPECT_EQ(m->input().height, 28);
  EXPECT_EQ(m->input().num_classes, 10);
  double loss = train_one_step(*m);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, std::log(10.0), 1.0);
}

TEST(Models, ResNet18And50TrainAStepOnSmallInputs) {
  ModelOptions o;
  o.input_height = o.input_width = 32;
  o.num_classes = 10;
  for (const char* name : {"resnet18", "resnet50"}) {
    auto m = make_model(name, o);
    EXPECT_EQ(m->input().channels, 3);
    EXPECT_TRUE(std::isfinite(train_one_step(*m))) << name;
  }
  // torchvision parameter count for resnet18 with 1000 classes (conv biases off): 11,689,512.
  ModelOptions full;
  full.conv_bias_before_bn = true;
  auto r18 = make_model("resnet18", full);
  r18->set_conv_bias_before_bn(false);
  int64_t n = 0;
  for (auto& p : r18->trainable_parameters()) n += p.numel();
  EXPECT_EQ(n, 11689512);
}

TEST(Models, VitTinyTrainsAStepAndFusedMatchesOpByOp) {
  ModelOptions o;
  o.input_height = o.input_width = 32;
  o.num_classes = 10;
  auto m = make_model("vit_tiny", o);
  EXPECT_TRUE(std::isfinite(train_one_step(*m)));
  // Same weights, eval mode (no dropout): the fused and op-by-op GELU paths agree closely.
  m->train(false);
  torch::NoGradGuard ng;
  auto x = torch::randn({2, 3, 32, 32});
  m->set_fused_pointwise(false);
  auto a = m->forward(x);
  m->set_fused_pointwise(true);
  auto b = m->forward(x);
  EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-4));
}

TEST(Models, UnknownModelIsRejected) {
  EXPECT_THROW(make_model("alexnet", {}), std::invalid_argument);
  EXPECT_THROW(make_model("torchscript:", {}), std::invalid_argument);
}

TEST(Models, CheckpointingRecomputesAndKeepsGradients) {
  ModelOptions o;
  o.input_height = o.input_width = 32;
  o.num_classes = 10;
  auto m = make_model("resnet18", o);
  m->train(true);
  auto x = torch::randn({2, 3, 32, 32});
  auto y = torch::tensor({1, 3}, torch::kLong);
  auto params = m->trainable_parameters();
  auto grads = [&] {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    m->loss(m->forward(x), y).backward();
    std::vector<torch::Tensor> g;
    for (auto& p : params) g.push_back(p.grad().clone());
    return g;
  };
  auto plain = grads();
  m->set_checkpointing(true);
  const int64_t before = checkpoint_recomputations();
  auto ckpt = grads();
  EXPECT_EQ(checkpoint_recomputations() - before, 4);  // one per ResNet stage
  ASSERT_EQ(plain.size(), ckpt.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(torch::allclose(plain[i], ckpt[i], 1e-4, 1e-5)) << i;
}

TEST(Models, CheckpointingReplaysDropoutMasks) {
  auto m = make_model("mnist_cnn", {});
  m->train(true);
  auto x = torch::randn({4, 1, 28, 28});
  auto y = torch::tensor({1, 2, 3, 4}, torch::kLong);
  auto params = m->trainable_parameters();
  auto grads = [&](bool ck) {
    m->set_checkpointing(ck);
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    torch::manual_seed(5);
    m->loss(m->forward(x), y).backward();
    std::vector<torch::Tensor> g;
    for (auto& p : params) g.push_back(p.grad().clone());
    return g;
  };
  auto a = grads(false), b = grads(true);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << i;
}

TEST(Models, FusedAndLoopAdamWAgree) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> p1 = {torch::randn({4, 3}), torch::randn({5})}, p2;
  for (auto& p : p1) p2.push_back(p.clone());
  AdamW a, b;
  for (int s = 0; s < 3; ++s) {
    for (size_t i = 0; i < p1.size(); ++i) {
      auto g = torch::randn_like(p1[i]);
      p1[i].mutable_grad() = g.clone();
      p2[i].mutable_grad() = g.clone();
    }
    a.step(p1, false);
    b.step(p2, true);
  }
  for (size_t i = 0; i < p1.size(); ++i) EXPECT_TRUE(torch::allclose(p1[i], p2[i], 1e-6, 1e-7));
}

// channels_last after the optimizer has state: the state follows the parameters' new layout (and back).
TEST(Models, AdamWStateFollowsTheParameterLayout) {
  torch::Tensor w = torch::randn({8, 3, 3, 3}), b = torch::randn({8});
  std::vector<torch::Tensor> params = {w, b};
  AdamW opt;
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  opt.step(params, false);
  ASSERT_NE(opt.state_of(w), nullptr);
  EXPECT_TRUE(opt.state_of(w)->exp_avg.is_contiguous());
  {
    torch::NoGradGuard ng;
    w.set_data(w.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  opt.match_layouts(params);
  EXPECT_TRUE(opt.state_of(w)->exp_avg.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(opt.state_of(w)->exp_avg_sq.is_contiguous());
  {
    torch::NoGradGuard ng;
    w.set_data(w.data().contiguous());
  }
  opt.match_layouts(params);
  EXPECT_TRUE(opt.state_of(w)->exp_avg_sq.is_contiguous());
}

// The CUDA-graph optimizer path (device-side step count) is plain tensor math, so it is checked here on the
// CPU: capture = one step_capturable call, replays = the same call again. It must match the eager AdamW,
// count steps as the engine reports them (capture is not a step, each replay is), and after "replays"
// sync_step_counts() lets eager steps continue with the right bias correction.
TEST(Models, CapturableAdamWMatchesEagerAndCountsReplays) {
  torch::manual_seed(4);
  std::vector<torch::Tensor> p1 = {torch::randn({4, 3}), torch::randn({5})}, p2;
  for (auto& p : p1) p2.push_back(p.clone());
  const std::vector<torch::Tensor> init = {p1[0].clone(), p1[1].clone()};
  std::vector<std::vector<torch::Tensor>> grads;
  for (int s = 0; s < 5; ++s) grads.push_back({torch::randn({4, 3}), torch::randn({5})});
  auto set_grads = [](std::vector<torch::Tensor>& ps, const std::vector<torch::Tensor>& g) {
    for (size_t i = 0; i < ps.size(); ++i) ps[i].mutable_grad() = g[i].clone();
  };
  AdamW eager, graph;
  for (int s = 0; s < 5; ++s) {
    set_grads(p1, grads[size_t(s)]);
    eager.step(p1, false);
  }
  // One eager step, then three "replays" of the capturable step, then eager again.
  set_grads(p2, grads[0]);
  graph.step(p2, false);
  auto step_t = torch::full({1}, double(graph.steps()));
  for (int s = 1; s < 4; ++s) {
    set_grads(p2, grads[size_t(s)]);
    graph.step_capturable(p2, step_t);
    graph.count_replay();
  }
  EXPECT_EQ(graph.steps(), 4);
  EXPECT_EQ(step_t.item<float>(), 4.0f);
  graph.sync_step_counts();
  set_grads(p2, grads[4]);
  graph.step(p2, false);
  EXPECT_EQ(graph.steps(), 5);
  for (size_t i = 0; i < p1.size(); ++i) EXPECT_TRUE(torch::allclose(p1[i], p2[i], 1e-5, 1e-6)) << i;
  // Without the sync the resumed eager step uses bias correction for step 2, not 5, and lands elsewhere.
  AdamW stale;
  std::vector<torch::Tensor> p3 = {init[0].clone(), init[1].clone()};
  set_grads(p3, grads[0]);
  stale.step(p3, false);
  auto t3 = torch::full({1}, double(stale.steps()));
  for (int s = 1; s < 4; ++s) {
    set_grads(p3, grads[size_t(s)]);
    stale.step_capturable(p3, t3);
    stale.count_replay();
  }
  set_grads(p3, grads[4]);
  stale.step(p3, false);
  EXPECT_FALSE(torch::allclose(p1[0], p3[0], 1e-5, 1e-6));
}

}  // namespace
}  // namespace tb::engine
