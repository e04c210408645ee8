// Session + trainer: every knob's effect is observable on the CPU (tiny models, few steps).
#include <gtest/gtest.h>

#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "compat.h"
#include "engine/session.h"
#include "models.h"
#include "session_internal.h"
#include "torch_version.h"

namespace tb::engine {
namespace {

SessionOptions tiny(const std::string& model = "mnist_cnn", Config knobs = {}) {
  SessionOptions o;
  o.model = model;
  o.data = "synthetic";
  o.warmup_steps = 1;
  o.max_warmup_steps = 1;  // exactly one warm-up step: these tests count steps (the rule is tested below)
  o.drift_guard_steps = 0;
  o.seed = 1;
  if (!knobs.count("batch_size")) knobs["batch_size"] = "4";
  o.knobs = knobs;
  if (model != "mnist_cnn") {
    o.input_height = o.input_width = 32;
    o.num_classes = 10;
  }
  return o;
}

bool has_warning(const std::vector<std::string>& w, const std::string& needle) {
  for (const auto& s : w)
    if (s.find(needle) != std::string::npos) return true;
  return false;
}

TEST(Session, TrainsStepsWithRecords) {
  auto s = Session::create(tiny());
  auto r0 = s->step();
  auto r1 = s->step();
  EXPECT_EQ(r0.index, 0);
  EXPECT_EQ(r1.index, 1);
  EXPECT_EQ(r0.samples, 4);
  EXPECT_TRUE(r0.warmup);
  EXPECT_FALSE(r1.warmup);
  EXPECT_GT(r1.wall_ns, 0);
  EXPECT_TRUE(std::isfinite(r1.loss));
  EXPECT_TRUE(r1.optimizer_step);
  auto d = s->describe();
  EXPECT_EQ(d["model"], "mnist_cnn");
  EXPECT_EQ(d["input"], nlohmann::json({1, 28, 28}));
  EXPECT_EQ(d["optimizer_steps"], 2);
  EXPECT_FALSE(d["versions"]["libtorch"].get<std::string>().empty());
}

// Warm-up ends when the step time is stable (measure/warmup.h), not after a fixed count: at least the
// minimum and two blocks to compare, at most the cap, always a prefix of the steps after a change; a change
// starts it again.
TEST(Session, WarmupEndsWhenStableWithinItsBounds) {
  auto o = tiny();
  o.warmup_steps = 2;
  o.max_warmup_steps = 12;
  auto s = Session::create(o);
  int warm = 0;
  bool measured = false;
  for (int i = 0; i < 20; ++i) {
    const bool w = s->warming_up();
    auto r = s->step();
    EXPECT_EQ(r.warmup, w);
    if (r.warmup) {
      EXPECT_FALSE(measured) << "warm-up steps form a prefix";
      ++warm;
    } else {
      measured = true;
    }
    EXPECT_GE(r.minor_faults, 0);
  }
  EXPECT_GE(warm, 4);  // min 2, and two blocks of 2 steps to compare
  EXPECT_LE(warm, 12);
  s->apply({{"batch_size", "8"}});
  EXPECT_TRUE(s->warming_up());
  EXPECT_EQ(s->describe()["warmup"]["block"], 2);
  s->apply({{"grad_accumulation", "3"}});
  EXPECT_EQ(s->describe()["warmup"]["block"], 3);  // whole accumulation periods
}

TEST(Session, BadInputIsAnEngineError) {
  auto o = tiny();
  o.model = "alexnet";
  EXPECT_THROW(Session::create(o), EngineError);
  o = tiny();
  o.data = "imagefolder:/nonexistent/dir";
  EXPECT_THROW(Session::create(o), EngineError);
  o = tiny();
  o.knobs["bogus"] = "1";
  EXPECT_THROW(Session::create(o), EngineError);
  auto s = Session::create(tiny());
  EXPECT_THROW(s->apply({{"amp", "fp8"}}), EngineError);
  EXPECT_THROW(s->apply({{"nope", "on"}}), EngineError);
  EXPECT_EQ(s->revision(), 0);
  EXPECT_EQ(s->config().at("amp"), "off");
}

// `ranks` is a fact about the process: the config says what runs, and neither a start nor a live change can
// make one process a group; the message says how to start one.
TEST(Session, RanksSaysWhatRunsAndIsNeverChangedLive) {
  auto s = Session::create(tiny());
  EXPECT_EQ(s->config().at("ranks"), "1");
  try {
    s->apply({{"ranks", "2"}});
    FAIL() << "a live ranks change must be refused";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("run --ranks 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s->config().at("ranks"), "1");
  auto o = tiny();
  o.knobs["ranks"] = "2";
  EXPECT_THROW(Session::create(o), EngineError);
  o.knobs["ranks"] = "1";
  EXPECT_EQ(Session::create(o)->config().at("ranks"), "1");
}

TEST(Session, ChannelsLastConvertsWeightsAndInputs) {
  auto s = Session::create(tiny("mnist_cnn", {{"channels_last", "on"}}));
  auto in = session_internals(*s);
  int four_d = 0;
  for (auto& t : in.model->state_tensors()) {
    if (t.dim() != 4) continue;
    ++four_d;
    EXPECT_TRUE(t.is_contiguous(at::MemoryFormat::ChannelsLast));
  }
  EXPECT_EQ(four_d, 2);
  s->step();
  s->apply({{"channels_last", "off"}});
  for (auto& t : session_internals(*s).model->state_tensors())
    if (t.dim() == 4) EXPECT_TRUE(t.is_contiguous());
}

TEST(Session, AnomalyDetectionTogglesAnomalyMode) {
  auto s = Session::create(tiny());
  EXPECT_FALSE(torch::autograd::AnomalyMode::is_enabled());
  s->apply({{"anomaly_detection", "on"}});
  EXPECT_TRUE(torch::autograd::AnomalyMode::is_enabled());
  EXPECT_TRUE(std::isfinite(s->step().loss));
  s->apply({{"anomaly_detection", "off"}});
  EXPECT_FALSE(torch::autograd::AnomalyMode::is_enabled());
}

TEST(Session, Bf16AutocastOnCpuProducesBf16Activations) {
  auto s = Session::create(tiny("resnet18", {{"amp", "bf16"}}));
  auto in = session_internals(*s);
  auto out = in.forward_as_step(torch::randn({2, 3, 32, 32}));
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(std::isfinite(s->step().loss));
  s->apply({{"amp", "off"}});
  EXPECT_EQ(session_internals(*s).forward_as_step(torch::randn({2, 3, 32, 32})).scalar_type(), torch::kFloat);
}

// fp16 autocast and its loss scaling run on the CPU since LibTorch 2.3; before, fp16 says why it does not apply.
TEST(Session, Fp16OnCpuRunsFromLibTorch23AndSaysWhyBefore) {
  if (compat::cuda_available()) GTEST_SKIP() << "a CUDA device is here: the session would train on it";
  auto s = Session::create(tiny());
  s->apply({{"amp", "fp16"}});
  const auto out = session_internals(*s).forward_as_step(torch::randn({2, 1, 28, 28}));
  if (TB_TORCH_AT_LEAST(2, 3)) {
    EXPECT_FALSE(has_warning(s->take_warnings(), "fp16"));
    EXPECT_EQ(out.scalar_type(), torch::kHalf);
    EXPECT_TRUE(std::isfinite(s->step().loss)) << "a scaled fp16 step on the CPU";
  } else {
    EXPECT_TRUE(has_warning(s->take_warnings(), "fp16"));
    EXPECT_EQ(out.scalar_type(), torch::kFloat);
  }
}

TEST(Session, ConvBiasBeforeBnOffRemovesBiases) {
  auto s = Session::create(tiny("resnet18"));
  const size_t with_bias = session_internals(*s).params.size();
  s->apply({{"conv_bias_before_bn", "off"}});
  const size_t without = session_internals(*s).params.size();
  EXPECT_EQ(with_bias - without, 20u);  // stem + 16 block convs + 3 downsample convs
  s->step();
  // The dropped biases are out of the graph: no gradient reaches them and the optimizer skips them.
  auto in = session_internals(*s);
  int unused = 0;
  for (auto& t : in.model->state_tensors()) {
    if (!t.requires_grad()) continue;
    bool in_params = false;
    for (auto& p : in.params) in_params |= p.is_same(t);
    if (in_params) continue;
    ++unused;
    EXPECT_FALSE(t.grad().defined());
    EXPECT_EQ(t.abs().sum().item<double>(), 0.0);
  }
  EXPECT_EQ(unused, 20);
}

TEST(Session, GradAccumulationStepsOptimizerOncePerNMicroBatches) {
  auto s = Session::create(tiny("mnist_cnn", {{"grad_accumulation", "3"}}));
  std::vector<bool> steps;
  for (int i = 0; i < 6; ++i) steps.push_back(s->step().optimizer_step);
  EXPECT_EQ(steps, (std::vector<bool>{false, false, true, false, false, true}));
  EXPECT_EQ(s->describe()["optimizer_steps"], 2);
}

TEST(Session, ZeroGradNoneLeavesGradsUndefined) {
  auto s = Session::create(tiny("mnist_cnn", {{"zero_grad_none", "on"}}));
  s->step();
  for (auto& p : session_internals(*s).params) EXPECT_FALSE(p.grad().defined());
  s->apply({{"zero_grad_none", "off"}});
  s->step();
  for (auto& p : session_internals(*s).params) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
  }
}

TEST(Session, NonApplicableKnobsSayWhy) {
  auto s = Session::create(tiny());
  for (const auto& k : s->knobs()) {
    if (!k.applicability.applicable) EXPECT_FALSE(k.applicability.reason.empty()) << k.info.id;
    if (k.info.id == "conv_bias_before_bn" || k.info.id == "fused_pointwise" || k.info.id == "workers" ||
        k.info.id == "pin_memory" || k.info.id == "non_blocking")
      EXPECT_FALSE(k.applicability.applicable) << k.info.id;  // mnist_cnn has no BN/GELU; synthetic data
#if !TUNEBENCH_TORCH_CUDA
    if (k.info.id == "pin_memory" || k.info.id == "cuda_graphs" || k.info.id == "tf32")
      EXPECT_FALSE(k.applicability.applicable) << k.info.id;
#endif
  }
  s->apply({{"fused_pointwise", "on"}});
  EXPECT_TRUE(has_warning(s->take_warnings(), "fused_pointwise=on has no effect here"));
}

TEST(Session, BatchSizeChangeAppliesAtBoundaryWithNewRevision) {
  auto s = Session::create(tiny());
  auto r0 = s->step();
  EXPECT_EQ(r0.config_rev, 0);
  EXPECT_EQ(s->apply({{"batch_size", "8"}}), 1);
  auto r1 = s->step();
  EXPECT_EQ(r1.config_rev, 1);
  EXPECT_EQ(r1.samples, 8);
  EXPECT_TRUE(r1.warmup);  // new warm-up after a change
  EXPECT_FALSE(s->step().warmup);
}

TEST(Session, BatchSizeOutOfMemoryRevertsWithWarning) {
  auto o = tiny();
  o.simulate_oom_above_batch = 6;
  auto s = Session::create(o);
  s->step();
  s->apply({{"batch_size", "16"}});
  EXPECT_EQ(s->config().at("batch_size"), "4");
  EXPECT_TRUE(has_warning(s->take_warnings(), "out of memory"));
  EXPECT_EQ(s->step().samples, 4);
}

TEST(Session, LossDriftGuardComparesSeededBatches) {
  auto o = tiny();
  o.drift_guard_steps = 2;
  auto s = Session::create(o);
  auto before = s->describe()["optimizer_steps"].get<int64_t>();
  ASSERT_EQ(s->describe()["drift_checks"].size(), 0u);  // batch_size at create is the start state
  s->apply({{"amp", "bf16"}});
  auto d = s->describe();
  ASSERT_EQ(d["drift_checks"].size(), 1u);
  const auto& c = d["drift_checks"][0];
  EXPECT_EQ(c["changed"]["amp"], "bf16");
  EXPECT_EQ(c["baseline"].size(), 2u);
  EXPECT_EQ(c["test"].size(), 2u);
  EXPECT_LT(c["max_rel_diff"].get<double>(), 0.1);  // bf16 stays close on the first steps
  EXPECT_NE(c["baseline"][0], c["test"][0]);         // but it really ran in another precision
  EXPECT_EQ(d["optimizer_steps"].get<int64_t>(), before + 4);  // guard steps ran...
  // ...and the snapshot was restored: the same session without the guard gives the same next loss.
  // (The global torch RNG drives dropout: step s before s2's creation reseeds it.)
  const double after_guard = s->step().loss;
  auto s2 = Session::create(tiny("mnist_cnn", {{"amp", "bf16"}}));
  EXPECT_NEAR(after_guard, s2->step().loss, 1e-3);
  // A non-numerics knob runs no guard.
  s->apply({{"zero_grad_none", "on"}});
  EXPECT_EQ(s->describe()["drift_checks"].size(), 1u);
}

TEST(Session, CheckpointingRecomputesInBackward) {
  auto s = Session::create(tiny("resnet18", {{"checkpointing", "on"}}));
  const int64_t before = checkpoint_recomputations();
  EXPECT_TRUE(std::isfinite(s->step().loss));
  EXPECT_EQ(checkpoint_recomputations() - before, 4);
}

TEST(Session, FusedOptimizerMatchesLoop) {
  auto a = Session::create(tiny("mnist_cnn", {{"fused_optimizer", "off"}}));
  std::vector<double> la;
  for (int i = 0; i < 3; ++i) la.push_back(a->step().loss);
  a.reset();
  auto b = Session::create(tiny("mnist_cnn", {{"fused_optimizer", "on"}}));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(b->step().loss, la[i], 1e-4) << i;
}

TEST(Session, SyncFreeLoggingReadsLossEveryN) {
  auto s = Session::create(tiny("mnist_cnn", {{"sync_free_logging", "3"}}));
  std::vector<bool> read;
  for (int i = 0; i < 6; ++i) read.push_back(std::isfinite(s->step().loss));
  EXPECT_EQ(read, (std::vector<bool>{true, false, false, true, false, false}));
}

TEST(Session, VitFusedPointwiseApplies) {
  auto s = Session::create(tiny("vit_tiny", {{"batch_size", "2"}}));
  for (const auto& k : s->knobs())
    if (k.info.id == "fused_pointwise") EXPECT_TRUE(k.applicability.applicable);
  s->apply({{"fused_pointwise", "on"}});
  EXPECT_TRUE(std::isfinite(s->step().loss));
}

// --- TorchScript ----------------------------------------------------------------------------------------
std::string tmp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tb_core_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string make_scripted(bool with_attrs, bool with_params) {
  torch::jit::Module m("TinyNet");
  if (with_params) {
    m.register_parameter("w", (torch::randn({10, 3 * 8 * 8}) * 0.01).requires_grad_(true), false);
    m.register_parameter("b", torch::zeros({10}).requires_grad_(true), false);
    m.define(R"(
      def forward(self, x):
          return torch.matmul(torch.flatten(x, 1), self.w.t()) + self.b
    )");
  } else {
    m.define(R"(
      def forward(self, x):
          return torch.flatten(x, 1)[:, :10] * 2.0
    )");
  }
  if (with_attrs) {
    m.register_attribute("input_shape", c10::ListType::ofInts(), c10::IValue(std::vector<int64_t>{3, 8, 8}));
    m.register_attribute("num_classes", c10::IntType::get(), c10::IValue(int64_t(10)));
  }
  std::string path = tmp_path(std::string("tiny_") + (with_attrs ? "a" : "n") + (with_params ? "p" : "x") + ".pt");
  m.save(path);
  return path;
}

TEST(Session, TorchScriptModelLoadsAndTrains) {
  const std::string path = make_scripted(/*with_attrs=*/true, true);
  auto o = tiny("mnist_cnn");
  o.model = "torchscript:" + path;
  auto s = Session::create(o);
  EXPECT_EQ(s->describe()["input"], nlohmann::json({3, 8, 8}));
  auto w0 = session_internals(*s).params[0].detach().clone();
  EXPECT_TRUE(std::isfinite(s->step().loss));
  EXPECT_FALSE(torch::equal(w0, session_internals(*s).params[0].detach()));
  for (const auto& k : s->knobs())
    if (k.info.id == "conv_bias_before_bn" || k.info.id == "checkpointing") EXPECT_FALSE(k.applicability.applicable);
}

TEST(Session, TorchScriptInputFromFlags) {
  const std::string path = make_scripted(false, true);
  auto o = tiny("mnist_cnn");
  o.model = "torchscript:" + path;
  EXPECT_THROW(Session::create(o), EngineError);  // no input declared, no flags
  o.input_channels = 3;
  o.input_height = o.input_width = 8;
  auto s = Session::create(o);
  EXPECT_EQ(s->describe()["classes"], 10);
  o.input_height = 9;  // 3*9*8 features != 192: the probe batch fails
  try {
    Session::create(o);
    FAIL() << "expected a probe failure";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("probe"), std::string::npos) << e.what();
  }
}

TEST(Session, NanLossGivesAClearWarning) {
  torch::jit::Module m("NanNet");
  m.register_parameter("w", torch::zeros({10, 3 * 8 * 8}).requires_grad_(true), false);
  m.define(R"(
    def forward(self, x):
        return torch.matmul(torch.flatten(x, 1), self.w.t()) * float('nan')
  )");
  m.register_attribute("input_shape", c10::ListType::ofInts(), c10::IValue(std::vector<int64_t>{3, 8, 8}));
  m.register_attribute("num_classes", c10::IntType::get(), c10::IValue(int64_t(10)));
  const std::string path = tmp_path("nan.pt");
  m.save(path);
  auto o = tiny("mnist_cnn");
  o.model = "torchscript:" + path;
  auto s = Session::create(o);
  auto r = s->step();
  EXPECT_TRUE(std::isnan(r.loss));
  EXPECT_TRUE(has_warning(s->take_warnings(), "the loss is NaN"));
  EXPECT_EQ(s->describe()["nan_losses"], 1);
}

TEST(Session, BadTorchScriptFilesAreRejected) {
  const std::string garbage = tmp_path("garbage.pt");
  std::ofstream(garbage) << "this is not a zip archive";
  auto o = tiny("mnist_cnn");
  o.model = "torchscript:" + garbage;
  try {
    Session::create(o);
    FAIL();
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  o.model = "torchscript:" + make_scripted(true, false);
  try {
    Session::create(o);
    FAIL();
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("no trainable parameters"), std::string::npos) << e.what();
  }
  o.model = "torchscript:/nonexistent/model.pt";
  EXPECT_THROW(Session::create(o), EngineError);
}

}  // namespace
}  // namespace tb::engine
