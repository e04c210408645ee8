// The run protocol's JSON for what a run measures (engine/run_json.h).
#include "engine/run_json.h"

#include <cmath>

#include "measure/stats.h"

namespace tb::engine {

nlohmann::json config_json(const Config& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

nlohmann::json step_json(const StepRecord& r) {
  nlohmann::json j = {{"i", r.index},           {"samples", r.samples}, {"wall_ns", r.wall_ns}, {"minor_faults", r.minor_faults},
                      {"data_wait_ns", r.data_wait_ns}, {"h2d_ns", r.h2d_ns}, {"config_rev", r.config_rev},
                      {"warmup", r.warmup},     {"skipped", r.skipped}, {"optimizer_step", r.optimizer_step},
                      {"t_ns", r.start_ns}};
  if (std::isfinite(r.loss))
    j["loss"] = r.loss;
  else
    j["loss"] = nullptr;
  if (r.loss_scale > 0) j["loss_scale"] = r.loss_scale;
  return j;
}

std::vector<measure::StepTiming> measured_timings(const std::vector<StepRecord>& steps) {
  std::vector<measure::StepTiming> out;
  for (const auto& r : steps)
    if (!r.warmup && r.wall_ns > 0) out.push_back({r.samples, r.start_ns, r.wall_ns, r.data_wait_ns, r.minor_faults});
  return out;
}

nlohmann::json throughput_json(const std::vector<StepRecord>& steps, const measure::SystemLoad& load) {
  const auto timings = measured_timings(steps);
  std::vector<double> rates;
  double samples = 0, seconds = 0, faults = 0;
  for (const auto& t : timings) {
    rates.push_back(double(t.samples) * 1e9 / double(t.wall_ns));
    samples += double(t.samples);
    seconds += double(t.wall_ns) * 1e-9;
    faults += double(t.minor_faults);
  }
  const auto windows = measure::windows_of(timings, kVerdictWindow);
  std::vector<double> wt;
  for (const auto& w : windows) wt.push_back(w.throughput());
  const double overall = seconds > 0 ? samples / seconds : 0.0;
  nlohmann::json j = {{"samples_per_s", overall},
                      {"median", windows.empty() ? overall : measure::median(wt)},
                      {"step_median", rates.empty() ? 0.0 : measure::median(rates)},
                      {"unit", "samples/s"},
                      {"measured_steps", rates.size()},
                      {"window_steps", kVerdictWindow},
                      {"windows", wt},
                      {"page_faults_per_step", rates.empty() ? 0.0 : faults / double(rates.size())}};
  if (!rates.empty()) {
    j["p10"] = measure::quantile(rates, 0.1);
    j["p90"] = measure::quantile(rates, 0.9);
  }
  const auto noise = measure::assess_noise(windows, load);
  j["noise"] = {{"verdict", noise.verdict}, {"text", noise.text}, {"cv", noise.cv}, {"drift", noise.drift},
                {"windows", noise.windows}};
  if (load.readable())
    j["noise"]["load"] = {{"loadavg_1min", std::isfinite(load.loadavg_1min) ? nlohmann::json(load.loadavg_1min) : nlohmann::json()},
                          {"steal_share", std::isfinite(load.steal_share) ? nlohmann::json(load.steal_share) : nlohmann::json()},
                          {"cores", load.cores}};
  return j;
}

nlohmann::json run_document(const Session& session, const nlohmann::json& d, const std::vector<StepRecord>& steps,
                            const measure::SystemLoad& load) {
  nlohmann::json out;
  for (const char* k : {"model", "data", "input", "classes", "device", "versions", "cpu_allocator", "intra_op_threads",
                        "warmup", "optimizer", "drift_checks"})
    out[k] = d.contains(k) ? d[k] : nlohmann::json();
  out["config"] = config_json(session.config());
  out["config_rev"] = session.revision();
  out["throughput"] = throughput_json(steps, load);
  out["counters"] = {{"skipped_steps", d.value("skipped_steps", nlohmann::json())},
                     {"nan_losses", d.value("nan_losses", nlohmann::json())},
                     {"optimizer_steps", d.value("optimizer_steps", nlohmann::json())},
                     {"loader", d.value("loader", nlohmann::json())}};
  nlohmann::json not_applicable = nlohmann::json::array();
  for (const auto& k : session.knobs())
    if (!k.applicability.applicable) not_applicable.push_back({{"id", k.info.id}, {"reason", k.applicability.reason}});
  out["not_applicable"] = not_applicable;
  nlohmann::json steps_json = nlohmann::json::array();
  for (const auto& r : steps) steps_json.push_back(step_json(r));
  out["steps"] = steps_json;
  return out;
}

}  // namespace tb::engine
