// Planning of the tuner's search (search.h): the ladders of the int knobs, the candidates of a rung, the
// values worth screening, the revisit order and the budget each trial needs.
#include "tuner/search.h"

namespace tb::engine::search {

namespace {

// Knobs that address each kind of bottleneck, tried first in the revisit phase (the analysis' findings name them: docs/analysis.md).
const std::map<std::string, std::vector<std::string>>& remedies() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"loader", {"workers", "prefetch", "pin_memory", "non_blocking", "fp32_preprocess", "intra_op_threads"}},
      {"h2d", {"pin_memory", "non_blocking", "prefetch"}},
      {"launch", {"cuda_graphs", "batch_size", "fused_pointwise", "fused_optimizer", "zero_grad_none"}},
      {"sync", {"sync_free_logging", "cuda_graphs"}},
      {"comm", {"bucket_cap_mb", "comm_hook", "gradient_as_bucket_view", "grad_accumulation", "static_graph",
                "broadcast_buffers"}},
      {"compute", {"amp", "tf32", "channels_last", "cudnn_benchmark", "anomaly_detection", "fused_pointwise",
                   "conv_bias_before_bn", "batch_size", "intra_op_threads"}},
  };
  return m;
}

}  // namespace

Ladder Tuner::ladder_of(const KnobInfo& info) {
  if (info.type != KnobType::Int) return Ladder::None;
  if (info.id == "workers") return Ladder::Workers;
  if (info.id == "batch_size" || info.id == "prefetch") return Ladder::Doubling;
  return Ladder::None;
}

// Next value above `from` on the knob's ladder, or nullopt at the end.
std::optional<std::string> Tuner::ladder_next(const KnobInfo& info, const std::string& from) {
  int64_t v = 0;
  if (!parse_int(from, v)) return std::nullopt;
  int64_t next = 0, cap = 0;
  if (info.id == "workers") {
    cap = std::max(1, w_.cpu_cores());
    if (v < 1) next = 1;
    else {
      next = 1;
      while (next <= v) next *= 2;
      if (next > cap && v < cap) next = cap;  // the last rung is the core count itself
    }
  } else {
    cap = info.id == "batch_size" ? o_.max_batch_size : 64;
    next = v < 1 ? 1 : v * 2;
  }
  if (info.max > 0) cap = std::min(cap, info.max);
  if (next > cap || next < info.min) return std::nullopt;
  if (oom_floor_.count(info.id) && next >= oom_floor_[info.id]) return std::nullopt;
  return std::to_string(next);
}

// The candidates of one ladder rung from `ref`. Loader workers and intra-op threads share the cores, so a
// workers rung is tried with the threads it leaves (auto) and, where that differs, with every core.
std::vector<Change> Tuner::rung(const Config& ref, const std::string& id, const std::string& next) {
  std::vector<Change> out;
  Change c;
  c.delta[id] = next;
  c.knob = id;
  c.value = next;
  // The first workers also keep their processes between epochs: without it every epoch starts (forks) its
  // workers again, which on a short epoch costs more than the parallel decoding gains (measured on a script
  // with 8 steps per epoch: workers=1 alone 0.55x). It costs nothing else (the workers' memory stays).
  if (id == "workers" && value_in(ref, "workers") == "0" && has_knob("persistent_workers") &&
      value_in(ref, "persistent_workers") != "on") {
    c.delta["persistent_workers"] = "on";
    c.also = "persistent_workers=on";
  }
  const std::string first = c.also;
  auto also = [&](const std::string& more) { return first.empty() ? more : first + " + " + more; };
  if (id == "workers" && has_knob("intra_op_threads")) {
    c.delta["intra_op_threads"] = "0";
    if (value_in(ref, "intra_op_threads") != "0") c.also = also("intra_op_threads=0 (auto)");
    out.push_back(c);
    int64_t w = 0;
    parse_int(next, w);
    const int cores = std::max(1, w_.cpu_cores());
    if (std::max<int64_t>(1, cores - w) != cores) {
      Change all = c;
      all.delta["intra_op_threads"] = std::to_string(cores);
      all.also = also("intra_op_threads=" + std::to_string(cores));
      out.push_back(all);
    }
    return out;
  }
  out.push_back(c);
  return out;
}

// Values to screen alone for a non-ladder knob.
std::vector<std::string> Tuner::plain_values(const KnobState& k, const std::string& from) {
  const KnobInfo& info = k.info;
  const auto& unavailable = k.applicability.unavailable_values;
  std::vector<std::string> out;
  if (info.id == "intra_op_threads") {
    // Fewer threads than auto gives (the loader or another process needs the cores) and all of them.
    const int cores = std::max(1, w_.cpu_cores());
    int64_t workers = 0;
    parse_int(value_in(current_.empty() ? baseline_ : current_, "workers"), workers);
    const std::string auto_eq = std::to_string(std::max<int64_t>(1, cores - workers));
    for (int t : {1, cores / 2, cores}) {
      const std::string v = std::to_string(t);
      if (t >= 1 && v != from && v != auto_eq && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
  }
  if (info.id == "bucket_cap_mb") {
    // No size is right for every model and link: a fifth (communication starts earlier in backward) and four
    // times (fewer, bigger messages) of the current one.
    int64_t v = 0;
    if (!parse_int(from, v)) return out;
    for (int64_t t : {v / 5, v * 4}) {
      t = std::clamp<int64_t>(t, info.min, info.max);
      if (t != v && std::find(out.begin(), out.end(), std::to_string(t)) == out.end()) out.push_back(std::to_string(t));
    }
    return out;
  }
  if (info.type == KnobType::Int) {
    if (!info.recommended_value.empty() && info.recommended_value != from) out.push_back(info.recommended_value);
    return out;
  }
  std::vector<std::string> choices = info.choices;
  if (choices.empty() && info.type == KnobType::Bool) choices = {"off", "on"};
  // Mixed precision on a CPU: bf16 first. Most CPUs have bf16 kernels but no fp16 arithmetic (fp16 measured
  // 0.085x here), and a tight budget spent on fp16 left bf16 (1.3-1.5x) untried.
  if (info.id == "amp" && res_.environment.value(nlohmann::json::json_pointer("/device_info/kind"), std::string()) == "cpu") {
    auto bf16 = std::find(choices.begin(), choices.end(), "bf16"), fp16 = std::find(choices.begin(), choices.end(), "fp16");
    if (bf16 != choices.end() && fp16 != choices.end() && fp16 < bf16) std::iter_swap(bf16, fp16);
  }
  for (const auto& c : choices)
    if (c != from && std::find(unavailable.begin(), unavailable.end(), c) == unavailable.end()) out.push_back(c);
  return out;
}

// Why a knob is not worth a trial in configuration `c` (nullopt: worth one). Saves budget for trials that
// can pay: a switch already at its recommended value, a queue depth with no worker to fill it, and
// activation checkpointing, which trades speed for memory and only pays by enabling a bigger batch.
std::optional<std::string> Tuner::not_worth(const KnobInfo& info, const Config& c) {
  if (info.type == KnobType::Bool && !info.recommended_value.empty() && value_in(c, info.id) == info.recommended_value)
    return "already at the recommended value (" + info.recommended_value + ")";
  if ((info.id == "prefetch" || info.id == "persistent_workers") && knobs_.count("workers") &&
      value_in(c, "workers") == "0")
    return info.id + " only matters with workers > 0" +
           (info.process_scope ? std::string() : std::string(" (tried again once workers are kept)"));
  if (info.id == "checkpointing") return "trades speed for memory; it pays only through a batch size that does not fit";
  return std::nullopt;
}

// Knobs ordered by how well they address the last bottleneck, then catalog order.
std::vector<std::string> Tuner::revisit_order() {
  std::vector<std::string> out;
  auto it = remedies().find(last_bottleneck_);
  if (it != remedies().end())
    for (const auto& id : it->second)
      if (knobs_.count(id)) out.push_back(id);
  for (const auto& id : order_)
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  return out;
}

double Tuner::trial_cost_s(const std::string& knob) {
  double c = 2.0 * o_.rounds * window_cost_s();
  if (numerics(knob)) c += probe_s_ > 0 ? probe_s_ : o_.probe_steps * step_cost_s() * 2;
  return c;
}

// The final alternation: baseline, final and final-without-each-kept-knob arms, `rounds` times, and the
// fresh-process headline when a process knob is kept.
double Tuner::final_cost_s(int extra_arms) {
  const int arms = 2 + static_cast<int>(kept_.size()) + extra_arms;
  double c = arms * o_.rounds * window_cost_s();
  return c + fresh_headline_cost_s();
}

// The fresh-process headline, when there will be one. Under another allocator than the user's it may need a
// second fresh trial (with the measurement allocator) when the kept knobs lose their gain in a fresh start.
double Tuner::fresh_headline_cost_s() {
  if (!fresh_headline()) return 0;
  return (measured_under_other_allocator() && !process_choice_.count("cpu_allocator") ? 2 : 1) * fresh_trial_cost_s();
}

// A process-knob trial and the fresh-process headline it would add to the final.
bool Tuner::fits_fresh(const std::string& knob, const std::string& value) {
  // Once a fresh process has shown what it costs here: a trial that cannot finish its pairs within its share.
  if (start_cost_seen_ && fresh_trial_cost_s() > o_.max_trial_share * o_.budget_s) {
    res_.skipped.push_back({knob, value, "budget: a fresh-process trial needs ~" + fmt(fresh_trial_cost_s(), 0) +
                                             " s here, more than " + fmt(o_.max_trial_share * 100, 0) +
                                             "% of the budget"});
    progress(phase_, "skipped " + label(knob, value) + " (budget)");
    return false;
  }
  const double need = 2 * fresh_trial_cost_s() + final_cost_s();
  if (need <= left()) return true;
  res_.skipped.push_back({knob, value, "budget: fresh-process trials need ~" + fmt(2 * fresh_trial_cost_s(), 0) +
                                           " s with their final check, " +
                                           fmt(std::max(0.0, left() - final_cost_s()), 0) + " s left"});
  progress(phase_, "skipped " + label(knob, value) + " (budget)");
  return false;
}

bool Tuner::fits(const std::string& knob, const std::string& value) {
  double need = trial_cost_s(knob) + final_cost_s();
  if (need <= left()) return true;
  res_.skipped.push_back({knob, value, "budget: needs ~" + fmt(trial_cost_s(knob), 0) + " s, " +
                                            fmt(std::max(0.0, left() - final_cost_s()), 0) +
                                            " s left before the final alternation"});
  progress(phase_, "skipped " + label(knob, value) + " (budget)");
  return false;
}

}  // namespace tb::engine::search
