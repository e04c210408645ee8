// The knob leak test (bench/bench_engine_leak.cpp) in its deterministic form: in one session, baseline -> each CPU knob value ->
// baseline leaves the session exactly as it was (config, threads, anomaly mode, model structure and memory
// layout, autocast, batch size, loader queue). The timed form (the baseline's throughput before and after
// each knob) is bench/bench_engine_leak.cpp: speeds belong in benches.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <sstream>

#include "engine/make_dataset.h"
#include "engine/session.h"
#include "models.h"
#include "session_internal.h"
#include "test_data_common.h"

namespace tb::engine {
namespace {

// Everything a knob can leave behind that the session exposes, as one comparable string.
std::string fingerprint(Session& s) {
  std::ostringstream o;
  for (const auto& [k, v] : s.config()) o << k << "=" << v << ";";
  o << "|threads=" << torch::get_num_threads() << "|anomaly=" << torch::autograd::AnomalyMode::is_enabled();
  SessionInternals in = session_internals(s);
  o << "|params=" << in.params.size();
  for (const auto& p : in.params)
    o << "[" << p.sizes() << (p.dim() == 4 && p.is_contiguous(at::MemoryFormat::ChannelsLast) && !p.is_contiguous() ? "nhwc" : "")
      << "]";
  torch::NoGradGuard ng;
  const auto& spec = in.model->input();
  torch::Tensor y = in.forward_as_step(torch::zeros({2, spec.channels, spec.height, spec.width}));
  o << "|out=" << y.sizes() << toString(y.scalar_type());
  return o.str();
}

// `only`: restrict to these knobs (empty: every applicable one). `shard` of `shards`: every shards-th knob value
// from the shard-th on, so that one test's walk stays well inside a logic test's 30 s on a slow 2-core machine
// (the whole walk took 32-34 s there).
void round_trip_every_cpu_knob(SessionOptions o, const std::vector<std::string>& only = {}, int at_least = 8,
                               int shard = 0, int shards = 1) {
  auto s = Session::create(o);
  for (int i = 0; i < 2; ++i) s->step();
  const Config base = s->config();
  const std::string before = fingerprint(*s);
  int tried = 0, seen = 0;
  for (const auto& k : s->knobs()) {
    if (!k.applicability.applicable || k.info.process_scope) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), k.info.id) == only.end()) continue;
    std::vector<std::string> values;
    if (k.info.type == KnobType::Int) {
      values = {k.info.id == "intra_op_threads" ? "1" : k.info.id == "batch_size" ? "8" : k.info.recommended_value};
    } else {
      for (const auto& c : k.info.choices) values.push_back(c);
    }
    for (const auto& v : values) {
      if (v == base.at(k.info.id) || v.empty()) continue;
      if (std::find(k.applicability.unavailable_values.begin(), k.applicability.unavailable_values.end(), v) !=
          k.applicability.unavailable_values.end())
        continue;
      if (seen++ % shards != shard) continue;
      SCOPED_TRACE(k.info.id + "=" + v);
      Config c = {{k.info.id, v}};
      if (k.info.id == "prefetch") c["workers"] = "2";
      s->apply(c);
      for (int i = 0; i < 3; ++i) s->step();
      Config back;
      for (const auto& [id, _] : c) back[id] = base.at(id);
      s->apply(back);
      const StepRecord r = s->step();
      EXPECT_EQ(r.samples, std::stoll(base.at("batch_size")));  // no batch of the knob's config leaks through
      EXPECT_EQ(fingerprint(*s), before);
      ++tried;
    }
  }
  EXPECT_GE(tried, at_least);
}

SessionOptions resnet_on_jpegs(const testing::TempDir& dir) {
  ImageFolderSpec spec;
  spec.out = dir.str();
  spec.images = 24;
  spec.width = spec.height = 48;
  spec.classes = 3;
  generate_image_folder(spec);
  SessionOptions o;
  o.model = "resnet18";
  o.data = "imagefolder:" + dir.str();
  o.device = "cpu";
  o.input_height = o.input_width = 32;
  o.warmup_steps = 1;
  o.max_warmup_steps = 1;
  o.drift_guard_steps = 0;
  o.knobs = {{"batch_size", "4"}};
  return o;
}

// Every CPU knob value in two halves (alternate values), each in its own session.
TEST(SessionRoundTrip, EveryCpuKnobLeavesNoStateBehindFirstHalf) {
  testing::TempDir dir;
  round_trip_every_cpu_knob(resnet_on_jpegs(dir), {}, 4, 0, 2);
}

TEST(SessionRoundTrip, EveryCpuKnobLeavesNoStateBehindSecondHalf) {
  testing::TempDir dir;
  round_trip_every_cpu_knob(resnet_on_jpegs(dir), {}, 4, 1, 2);
}

// The knob only the transformer has (the rest are covered above, on a faster model).
TEST(SessionRoundTrip, FusedPointwiseLeavesNoStateBehind) {
  SessionOptions o;
  o.model = "vit_tiny";
  o.data = "synthetic";
  o.device = "cpu";
  o.input_height = o.input_width = 32;
  o.num_classes = 10;
  o.warmup_steps = 1;
  o.max_warmup_steps = 1;
  o.drift_guard_steps = 0;
  o.knobs = {{"batch_size", "4"}};
  round_trip_every_cpu_knob(o, {"fused_pointwise"}, 1);
}

}  // namespace
}  // namespace tb::engine
