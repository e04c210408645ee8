// The knobs' priors and dependencies (priority.h).
#include "tuner/search/priority.h"

#include <algorithm>
#include <map>

namespace tb::engine::search {
namespace {

// The share of each kind of time a knob removes: {loader, h2d, launch, sync, compute, comm}.
struct Removes {
  double loader = 0, h2d = 0, launch = 0, sync = 0, compute = 0, comm = 0;
};
struct Prior {
  Removes cuda, cpu;
};

const std::map<std::string, Prior>& priors() {
  static const std::map<std::string, Prior> m = {
      // The loader. One worker took an H100's JPEG pipeline from 360 to 650 samples/s (loader stall 44%).
      {"workers", {{0.9, 0, 0, 0, 0, 0}, {0.9, 0, 0, 0, 0, 0}}},
      {"fast_decode", {{0.4, 0, 0, 0, 0, 0}, {0.4, 0, 0, 0, 0, 0}}},
      {"fp32_preprocess", {{0.3, 0, 0, 0, 0, 0}, {0.3, 0, 0, 0, 0, 0}}},
      {"persistent_workers", {{0.2, 0, 0, 0, 0, 0}, {0.2, 0, 0, 0, 0, 0}}},
      {"prefetch", {{0.15, 0, 0, 0, 0, 0}, {0.15, 0, 0, 0, 0, 0}}},
      {"pin_memory", {{0.05, 0.5, 0, 0, 0, 0}, {}}},
      {"non_blocking", {{0, 0.8, 0, 0, 0, 0}, {}}},
      // The host's launch path: a ResNet-50 step in LibTorch issues ~3000 ops; an H100 finishes them sooner.
      {"cuda_graphs", {{0, 0, 0.95, 0.5, 0, 0}, {}}},
      {"fused_optimizer", {{0, 0, 0.3, 0, 0.05, 0}, {0, 0, 0, 0, 0.1, 0}}},
      {"conv_bias_before_bn", {{0, 0, 0.2, 0, 0.05, 0}, {0, 0, 0, 0, 0.05, 0}}},
      {"zero_grad_none", {{0, 0, 0.12, 0, 0.02, 0}, {0, 0, 0, 0, 0.03, 0}}},
      {"batch_size", {{0, 0, 0.45, 0.45, 0.05, 0}, {0, 0, 0, 0, 0.1, 0.3}}},
      {"grad_accumulation", {{0, 0, 0.1, 0, 0, 0.5}, {0, 0, 0, 0, 0.02, 0.5}}},
      {"compile", {{0, 0, 0.6, 0, 0.15, 0}, {0, 0, 0, 0, 0.2, 0}}},
      {"sync_free_logging", {{0, 0, 0.05, 0.7, 0, 0}, {0, 0, 0, 0, 0.02, 0}}},
      // The device's arithmetic.
      {"amp", {{0, 0, 0, 0, 0.4, 0}, {0, 0, 0, 0, 0.25, 0}}},
      {"channels_last", {{0, 0, 0, 0, 0.2, 0}, {0, 0, 0, 0, 0.1, 0}}},
      {"tf32", {{0, 0, 0, 0, 0.08, 0}, {}}},
      {"cudnn_benchmark", {{0, 0, 0, 0, 0.08, 0}, {}}},
      {"fused_pointwise", {{0, 0, 0.1, 0, 0.1, 0}, {0, 0, 0, 0, 0.15, 0}}},
      {"intra_op_threads", {{0, 0, 0, 0, 0.01, 0}, {0.1, 0, 0, 0, 0.2, 0}}},
      {"anomaly_detection", {{0, 0, 0.3, 0, 0.3, 0}, {0, 0, 0, 0, 0.3, 0}}},
      // The process and the group.
      {"cpu_allocator", {{0.01, 0, 0, 0, 0.01, 0}, {0.15, 0, 0, 0, 0.15, 0}}},
      {"ranks", {{}, {0, 0, 0, 0, 0.3, 0}}},
      {"bucket_cap_mb", {{0, 0, 0, 0, 0, 0.1}, {0, 0, 0, 0, 0, 0.1}}},
      {"gradient_as_bucket_view", {{0, 0, 0, 0, 0, 0.05}, {0, 0, 0, 0, 0, 0.05}}},
      {"comm_hook", {{0, 0, 0, 0, 0, 0.3}, {0, 0, 0, 0, 0, 0.3}}},
      {"static_graph", {{0, 0, 0, 0, 0, 0.05}, {0, 0, 0, 0, 0, 0.05}}},
      {"broadcast_buffers", {{0, 0, 0, 0, 0, 0.05}, {0, 0, 0, 0, 0, 0.05}}},
  };
  return m;
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

double expected_gain(const std::string& knob, const StepShares& s, bool cuda) {
  auto it = priors().find(knob);
  const Removes r = it == priors().end() ? Removes{0.02, 0.02, 0.02, 0.02, 0.02, 0.02}
                                         : (cuda ? it->second.cuda : it->second.cpu);
  const double removed = r.loader * s.loader + r.h2d * s.h2d + r.launch * s.launch + r.sync * s.sync +
                         r.compute * s.compute + r.comm * s.comm;
  return 1.0 / std::max(0.05, 1.0 - std::min(0.95, removed));
}

std::string kind_of(const std::string& knob, bool cuda) {
  auto it = priors().find(knob);
  if (it == priors().end()) return "";
  const Removes r = cuda ? it->second.cuda : it->second.cpu;
  const std::vector<std::pair<std::string, double>> kinds = {{"loader", r.loader}, {"h2d", r.h2d},   {"launch", r.launch},
                                                             {"sync", r.sync},     {"compute", r.compute}, {"comm", r.comm}};
  auto best = std::max_element(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return best->second > 0 ? best->first : "";
}

double extra_cost_s(const std::string& knob, bool cuda, bool compiled) {
  // Inductor compiling a ResNet-50's forward and backward takes about a minute; a CPU's tiny models seconds.
  const double compile = cuda ? 60.0 : 15.0;
  if (knob == "compile") return compiled ? 0.0 : compile;
  if (compiled && (knob == "amp" || knob == "channels_last")) return compile;
  return 0.0;
}

std::vector<std::string> dependents(const std::string& knob) {
  if (knob == "workers") return {"prefetch", "persistent_workers"};
  if (knob == "pin_memory") return {"non_blocking"};
  return {};
}

std::string depends_on(const std::string& knob) {
  if (knob == "prefetch" || knob == "persistent_workers") return "workers";
  if (knob == "non_blocking") return "pin_memory";
  return "";
}

}  // namespace tb::engine::search
