// The knob catalog and config parsing (torch-free logic; compat.h and torch_version.h say what this build and
// machine have).
#include <gtest/gtest.h>

#include <set>

#include "compat.h"
#include "engine/knobs.h"
#include "engine/session.h"
#include "torch_version.h"

namespace tb::engine {
namespace {

TEST(Knobs, CatalogHasEveryDesignKnobWithEveryFieldFilled) {
  const std::set<std::string> want = {"workers", "pin_memory", "non_blocking", "prefetch", "cudnn_benchmark",
                                      "amp", "tf32", "channels_last", "batch_size", "zero_grad_none",
                                      "conv_bias_before_bn", "anomaly_detection", "fused_pointwise",
                                      "grad_accumulation", "checkpointing", "cuda_graphs", "cpu_allocator", "intra_op_threads", "sync_free_logging",
                                      "fused_optimizer", "fp32_preprocess", "fast_decode",
                                      // data parallel (docs/distributed.md)
                                      "ranks", "bucket_cap_mb", "gradient_as_bucket_view", "comm_hook", "broadcast_buffers",
                                      "static_graph"};
  std::set<std::string> got;
  for (const auto& k : knob_catalog()) {
    got.insert(k.id);
    EXPECT_FALSE(k.title.empty()) << k.id;
    EXPECT_FALSE(k.description.empty()) << k.id;
    EXPECT_FALSE(k.default_value.empty()) << k.id;
    EXPECT_FALSE(k.recommended_value.empty()) << k.id;
    EXPECT_FALSE(k.applies_to.empty()) << k.id;
    EXPECT_FALSE(k.pytorch_snippet.empty()) << k.id;
    EXPECT_FALSE(k.libtorch_snippet.empty()) << k.id;
    EXPECT_TRUE(normalize_knob_value(k.id, k.default_value)) << k.id << " default invalid";
    EXPECT_TRUE(normalize_knob_value(k.id, k.recommended_value)) << k.id << " recommended invalid";
    if (k.type != KnobType::Int) EXPECT_FALSE(k.choices.empty()) << k.id;
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(find_knob("amp")->changes_numerics);
  EXPECT_TRUE(find_knob("batch_size")->changes_numerics);
  EXPECT_FALSE(find_knob("workers")->changes_numerics);
  // The allocator, the cuDNN autotuner and the ranks take effect at process start; nothing else does.
  for (const auto& k : knob_catalog())
    EXPECT_EQ(k.process_scope, k.id == "cpu_allocator" || k.id == "cudnn_benchmark" || k.id == "ranks") << k.id;
}

TEST(Knobs, NormalizeAcceptsSynonymsAndRejectsBadValues) {
  EXPECT_EQ(normalize_knob_value("channels_last", "TRUE").value(), "on");
  EXPECT_EQ(normalize_knob_value("pin_memory", "0").value(), "off");
  EXPECT_FALSE(normalize_knob_value("pin_memory", "maybe"));
  EXPECT_EQ(normalize_knob_value("amp", "BF16").value(), "bf16");
  EXPECT_FALSE(normalize_knob_value("amp", "fp8"));
  EXPECT_FALSE(normalize_knob_value("batch_size", "0"));  // below min
  EXPECT_FALSE(normalize_knob_value("workers", "12x"));
  EXPECT_FALSE(normalize_knob_value("no_such_knob", "1"));
}

TEST(Knobs, ParseConfigList) {
  auto c = parse_config_list("workers=2, channels_last=on,amp=bf16");
  EXPECT_EQ(c.at("workers"), "2");
  EXPECT_EQ(c.at("channels_last"), "on");
  EXPECT_EQ(c.at("amp"), "bf16");
  EXPECT_THROW(parse_config_list("workers"), std::invalid_argument);
  EXPECT_THROW(parse_config_list("bogus=1"), std::invalid_argument);
  EXPECT_THROW(parse_config_list("workers=-1"), std::invalid_argument);
  auto d = default_config({{"batch_size", "64"}});
  EXPECT_EQ(d.at("batch_size"), "64");
  EXPECT_EQ(d.at("workers"), "0");
  EXPECT_EQ(d.size(), knob_catalog().size());
}

// Without a GPU (a CPU-only build, or a CUDA build on a machine with no device, as here) the GPU knobs are off
// and say why: which of the two it is.
TEST(Knobs, NoGpuSaysWhyGpuKnobsDoNotApply) {
  if (compat::cuda_available()) GTEST_SKIP() << "a CUDA device is here: the GPU knobs apply";
  for (const auto& s : knob_states_here("cpu")) {
    const std::string& id = s.info.id;
    if (id == "pin_memory" || id == "non_blocking" || id == "cudnn_benchmark" || id == "tf32" || id == "cuda_graphs") {
      EXPECT_FALSE(s.applicability.applicable) << id;
      EXPECT_NE(s.applicability.reason.find(TUNEBENCH_TORCH_CUDA ? "no CUDA device: " : "CPU-only"), std::string::npos)
          << id << ": " << s.applicability.reason;
    }
    if (id == "amp") {
      EXPECT_TRUE(s.applicability.applicable);
      // fp16 autocast with loss scaling runs on the CPU since LibTorch 2.3; before, the reason says why not.
      if (TB_TORCH_AT_LEAST(2, 3)) {
        EXPECT_TRUE(s.applicability.unavailable_values.empty());
      } else {
        EXPECT_EQ(s.applicability.unavailable_values, std::vector<std::string>{"fp16"});
        EXPECT_NE(s.applicability.reason.find("fp16"), std::string::npos);
      }
    }
    if (id == "workers" || id == "channels_last" || id == "zero_grad_none") EXPECT_TRUE(s.applicability.applicable) << id;
  }
}

}  // namespace
}  // namespace tb::engine
