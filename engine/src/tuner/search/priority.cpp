// The knobs' tuner facts, one row each, and what the search reads from them (priority.h).
#include "tuner/search/priority.h"

#include <algorithm>

namespace tb::engine::search {
namespace {

const std::vector<KnobFacts>& table() {
  // {id, {cuda: loader, h2d, launch, sync, compute, comm}, {cpu: ...}, needs, ladder, model-level, recipe, cost}
  using L = Ladder;
  using C = TrialCost;
  static const std::vector<KnobFacts> t = {
      // The loader. One worker took an H100's JPEG pipeline from 360 to 650 samples/s (loader stall 44%).
      {"workers", {0.9, 0, 0, 0, 0, 0}, {0.9, 0, 0, 0, 0, 0}, "", L::Workers, false, false, C::Plain},
      {"fast_decode", {0.4, 0, 0, 0, 0, 0}, {0.4, 0, 0, 0, 0, 0}, "", L::None, false, false, C::Plain},
      {"fp32_preprocess", {0.3, 0, 0, 0, 0, 0}, {0.3, 0, 0, 0, 0, 0}, "", L::None, false, false, C::Plain},
      {"prefetch", {0.15, 0, 0, 0, 0, 0}, {0.15, 0, 0, 0, 0, 0}, "workers", L::Doubling, false, false, C::Plain},
      {"persistent_workers", {0.2, 0, 0, 0, 0, 0}, {0.2, 0, 0, 0, 0, 0}, "workers", L::None, false, false, C::Plain},
      {"pin_memory", {0.05, 0.5, 0, 0, 0, 0}, {}, "", L::None, false, false, C::Plain},
      {"non_blocking", {0, 0.8, 0, 0, 0, 0}, {}, "pin_memory", L::None, false, false, C::Plain},
      // The host's launch path: a ResNet-50 step in LibTorch issues ~3000 ops; an H100 finishes them sooner.
      {"cuda_graphs", {0, 0, 0.95, 0.5, 0, 0}, {}, "", L::None, true, false, C::Plain},
      {"fused_optimizer", {0, 0, 0.3, 0, 0.05, 0}, {0, 0, 0, 0, 0.1, 0}, "", L::None, true, false, C::Plain},
      {"conv_bias_before_bn", {0, 0, 0.2, 0, 0.05, 0}, {0, 0, 0, 0, 0.05, 0}, "", L::None, true, false, C::Plain},
      {"zero_grad_none", {0, 0, 0.12, 0, 0.02, 0}, {0, 0, 0, 0, 0.03, 0}, "", L::None, true, false, C::Plain},
      {"batch_size", {0, 0, 0.45, 0.45, 0.05, 0}, {0, 0, 0, 0, 0.1, 0.3}, "", L::Doubling, false, true, C::Plain},
      {"grad_accumulation", {0, 0, 0.1, 0, 0, 0.5}, {0, 0, 0, 0, 0.02, 0.5}, "", L::None, false, true, C::Plain},
      {"compile", {0, 0, 0.6, 0, 0.15, 0}, {0, 0, 0, 0, 0.2, 0}, "", L::None, false, false, C::Compiles},
      {"sync_free_logging", {0, 0, 0.05, 0.7, 0, 0}, {0, 0, 0, 0, 0.02, 0}, "", L::None, false, false, C::Plain},
      // No prior of its own (the even default): it trades speed for memory and pays only through a bigger batch.
      {"checkpointing", {0.02, 0.02, 0.02, 0.02, 0.02, 0.02}, {0.02, 0.02, 0.02, 0.02, 0.02, 0.02}, "", L::None, false,
       false, C::Plain},
      // The device's arithmetic.
      {"amp", {0, 0, 0, 0, 0.4, 0}, {0, 0, 0, 0, 0.25, 0}, "", L::None, true, false, C::RecompilesUnderCompile},
      {"channels_last", {0, 0, 0, 0, 0.2, 0}, {0, 0, 0, 0, 0.1, 0}, "", L::None, true, false, C::RecompilesUnderCompile},
      {"tf32", {0, 0, 0, 0, 0.08, 0}, {}, "", L::None, false, false, C::Plain},
      {"cudnn_benchmark", {0, 0, 0, 0, 0.08, 0}, {}, "", L::None, false, false, C::Plain},
      {"fused_pointwise", {0, 0, 0.1, 0, 0.1, 0}, {0, 0, 0, 0, 0.15, 0}, "", L::None, false, false, C::Plain},
      {"intra_op_threads", {0, 0, 0, 0, 0.01, 0}, {0.1, 0, 0, 0, 0.2, 0}, "", L::None, false, false, C::Plain},
      {"anomaly_detection", {0, 0, 0.3, 0, 0.3, 0}, {0, 0, 0, 0, 0.3, 0}, "", L::None, false, false, C::Plain},
      // The process and the group.
      {"cpu_allocator", {0.01, 0, 0, 0, 0.01, 0}, {0.15, 0, 0, 0, 0.15, 0}, "", L::None, false, false, C::Plain},
      {"ranks", {}, {0, 0, 0, 0, 0.3, 0}, "", L::None, false, false, C::Plain},
      {"bucket_cap_mb", {0, 0, 0, 0, 0, 0.1}, {0, 0, 0, 0, 0, 0.1}, "", L::None, false, false, C::Plain},
      {"gradient_as_bucket_view", {0, 0, 0, 0, 0, 0.05}, {0, 0, 0, 0, 0, 0.05}, "", L::None, false, false, C::Plain},
      {"comm_hook", {0, 0, 0, 0, 0, 0.3}, {0, 0, 0, 0, 0, 0.3}, "", L::None, false, false, C::Plain},
      {"static_graph", {0, 0, 0, 0, 0, 0.05}, {0, 0, 0, 0, 0, 0.05}, "", L::None, false, false, C::Plain},
      {"broadcast_buffers", {0, 0, 0, 0, 0, 0.05}, {0, 0, 0, 0, 0, 0.05}, "", L::None, false, false, C::Plain},
  };
  return t;
}

}  // namespace

StepShares shares_of(const std::vector<std::pair<std::string, double>>& breakdown_ms, double step_ms) {
  if (breakdown_ms.empty()) return {};
  double total = 0;
  for (const auto& [k, v] : breakdown_ms) total += std::max(0.0, v);
  const double step = step_ms > 0 ? std::max(step_ms, total) : total;
  if (!(step > 0)) return {};
  StepShares s{0, 0, 0, 0, 0, 0};
  for (const auto& [k, v] : breakdown_ms) {
    const double x = std::max(0.0, v) / step;
    if (k == "loader stall" || k == "data wait") s.loader += x;
    else if (k == "h2d") s.h2d += x;
    else if (k == "launch gaps") s.launch += x;
    else if (k == "GPU busy" || k == "forward" || k == "backward" || k == "optimizer" || k == "compute") s.compute += x;
    else if (k == "comm wait") s.comm += x;
    else if (k == "other idle") {
      // A GPU idle outside loader stalls and launch gaps: the host blocked on it, or a copy on its thread.
      s.sync += x;
      s.h2d += x;
    }
  }
  return s;
}

const std::vector<KnobFacts>& knob_facts() { return table(); }

const KnobFacts* facts_of(const std::string& id) {
  for (const auto& f : table())
    if (f.id == id) return &f;
  return nullptr;
}

double expected_gain(const std::string& knob, const StepShares& s, bool cuda) {
  const KnobFacts* f = facts_of(knob);
  const Removes r = !f ? Removes{0.02, 0.02, 0.02, 0.02, 0.02, 0.02} : (cuda ? f->cuda : f->cpu);
  const double removed = r.loader * s.loader + r.h2d * s.h2d + r.launch * s.launch + r.sync * s.sync +
                         r.compute * s.compute + r.comm * s.comm;
  return 1.0 / std::max(0.05, 1.0 - std::min(0.95, removed));
}

std::string kind_of(const std::string& knob, bool cuda) {
  const KnobFacts* f = facts_of(knob);
  if (!f) return "";
  const Removes r = cuda ? f->cuda : f->cpu;
  const std::vector<std::pair<std::string, double>> kinds = {{"loader", r.loader}, {"h2d", r.h2d},   {"launch", r.launch},
                                                             {"sync", r.sync},     {"compute", r.compute}, {"comm", r.comm}};
  auto best = std::max_element(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return best->second > 0 ? best->first : "";
}

double extra_cost_s(const std::string& knob, bool cuda, bool compiled) {
  // Inductor compiling a ResNet-50's forward and backward takes about a minute; a CPU's tiny models seconds.
  const double compile = cuda ? 60.0 : 15.0;
  const KnobFacts* f = facts_of(knob);
  if (!f) return 0.0;
  if (f->cost == TrialCost::Compiles) return compiled ? 0.0 : compile;
  if (compiled && f->cost == TrialCost::RecompilesUnderCompile) return compile;
  return 0.0;
}

std::vector<std::string> dependents(const std::string& knob) {
  std::vector<std::string> out;
  for (const auto& f : table())
    if (f.needs == knob) out.push_back(f.id);
  return out;
}

std::string depends_on(const std::string& knob) {
  const KnobFacts* f = facts_of(knob);
  return f ? f->needs : std::string();
}

}  // namespace tb::engine::search
