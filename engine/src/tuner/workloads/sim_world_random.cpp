// Seeded random worlds (sim_world.h): GPU jobs the tuner was not written against. Each draws its step's parts,
// which knobs exist and what they do, and the machine's noise and start-up, within the ranges the issue that
// asked for them set (a knob from -20% to x3, noise 2-20% a pair, start-up 2-40 s) and shaped like real jobs:
// a loader-bound, a launch-bound or a compute-bound step, knobs acting on the part they act on in PyTorch.
#include <cmath>
#include <random>

#include "tuner/workloads/sim_world.h"

namespace tb::engine {
namespace {

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed * 0x9E3779B97F4A7C15ull + 17) {}
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  // Log-uniform: as likely to halve as to double.
  double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }
  bool chance(double p) { return uniform(0, 1) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng_)];
  }

 private:
  std::mt19937_64 rng_;
};

double round3(double x) { return std::round(x * 1000) / 1000; }
// A list of values (a braced pair of strings would read as an object's member).
nlohmann::json values(std::vector<std::string> v) { return nlohmann::json(std::move(v)); }

}  // namespace

nlohmann::json random_world(uint64_t seed) {
  Draw d(seed);
  const std::string src = "random world " + std::to_string(seed);
  nlohmann::json w = {{"format", "tunebench-world 1"},
                      {"name", "random-" + std::to_string(seed)},
                      {"device", "random GPU world " + std::to_string(seed)},
                      {"kind", "cuda"}};
  const int cores = d.pick(std::vector<int>{4, 8, 16});
  w["cores"] = cores;
  w["batch"] = 32;
  // The step's shape: which part is the bound at the baseline.
  const std::string shape = d.pick(std::vector<std::string>{"loader", "launch", "compute", "mixed"});
  const double gpu_per_sample = d.log_uniform(0.05, 1.5) * (shape == "compute" ? 3 : 1);
  const double host_ms = d.log_uniform(1, 30) * (shape == "launch" ? 4 : 1);
  const double load = shape == "loader" ? d.log_uniform(0.5, 4) : d.chance(0.6) ? d.log_uniform(0.05, 2) : 0.0;
  w["parts"] = {
      {"gpu", {{"ms", round3(d.uniform(0.3, 3))}, {"per_sample_ms", round3(gpu_per_sample)}, {"source", src}}},
      {"host", {{"ms", round3(host_ms)}, {"per_sample_ms", round3(d.uniform(0, 0.05))}, {"source", src}}},
      {"copy", {{"per_sample_ms", round3(d.log_uniform(0.005, 0.15))}, {"source", src}}},
      {"sync", {{"ms", round3(d.chance(0.5) ? d.uniform(0.1, 2) : 0.0)}, {"source", src}}},
      {"other", {{"ms", round3(d.uniform(0.1, 2))}, {"source", src}}},
  };
  if (load > 0) {
    nlohmann::json l = {{"per_sample_ms", round3(load)},
                        {"contention", round3(d.uniform(0, 0.15))},
                        {"prefetch_gain", round3(d.uniform(0, 0.3))},
                        {"source", src}};
    // A loader that stops scaling: a disk, a shared decoder, a network file system.
    if (d.chance(0.5)) l["ceiling_samples_s"] = round3(d.uniform(2, 12) * 1000.0 / load);
    w["parts"]["loader"] = l;
  }
  const double per_sample_mb = d.log_uniform(20, 600);
  w["memory"] = {{"held_mb", 2000}, {"per_sample_mb", round3(per_sample_mb)}, {"source", src}};
  w["memory_total_mb"] = 80 * 1024;

  nlohmann::json knobs = nlohmann::json::object();
  auto effect = [&](nlohmann::json e) {
    e["source"] = src;
    return e;
  };
  // A knob's factor on its part: mostly a gain, sometimes a loss (-20% to x3 on the part it acts on).
  auto factor = [&](double best, double worst) { return round3(d.uniform(best, worst)); };
  if (load > 0) {
    knobs["workers"] = {{"values", values({"0", "1", "2", "4", "8", "16"})}, {"default", "0"}};
    knobs["prefetch"] = {{"values", values({"2", "4", "8"})}, {"default", "2"}};
    if (d.chance(0.8))
      knobs["pin_memory"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"copy", factor(0.3, 1.1)}})}}}};
    if (d.chance(0.5))
      knobs["persistent_workers"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"loader", factor(0.8, 1.05)}})}}}};
  }
  if (d.chance(0.85))
    knobs["amp"] = {{"values", values({"off", "bf16"})},
                    {"effects", {{"bf16", effect({{"gpu", factor(0.33, 1.1)}, {"host", factor(1.0, 1.3)},
                                                  {"memory", 0.6}, {"loss", factor(0, 0.04)}})}}}};
  if (d.chance(0.7))
    knobs["channels_last"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"gpu", factor(0.7, 1.2)}})}}}};
  if (d.chance(0.6))
    knobs["cuda_graphs"] = {{"values", values({"off", "on"})},
                            {"effects", {{"on", effect({{"host", factor(0.05, 0.6)}, {"memory", 1.1}})}}}};
  if (d.chance(0.6))
    knobs["fused_optimizer"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"host", factor(0.5, 1.02)}})}}}};
  if (d.chance(0.6))
    knobs["zero_grad_none"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"host", factor(0.8, 1.02)}})}}}};
  if (d.chance(0.5))
    knobs["tf32"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"gpu", factor(0.8, 1.02)}, {"loss", factor(0, 0.02)}})}}}};
  if (d.chance(0.5))
    knobs["cudnn_benchmark"] = {{"values", values({"off", "on"})}, {"effects", {{"on", effect({{"gpu", factor(0.8, 1.05)}})}}}};
  if (d.chance(0.4))
    knobs["compile"] = {{"values", values({"off", "on"})},
                        {"effects", {{"on", effect({{"gpu", factor(0.6, 1.05)}, {"host", factor(0.2, 0.9)}})}}}};
  if (d.chance(0.4))  // the debugging switch left on: turning it off pays
    knobs["anomaly_detection"] = {{"values", values({"on", "off"})}, {"default", "on"}, {"recommended", "off"},
                                  {"effects", {{"on", effect({{"host", factor(1.1, 2.5)}, {"gpu", factor(1.0, 1.3)}})}}}};
  if (d.chance(0.5))  // a thread count that hurts or helps a little
    knobs["intra_op_threads"] = {{"values", values({"0", "1", std::to_string(cores)})}, {"default", "0"},
                                 {"effects", {{"1", effect({{"step", factor(0.97, 1.2)}})},
                                              {std::to_string(cores), effect({{"step", factor(0.95, 1.1)}})}}}};
  if (d.chance(0.5))
    knobs["cpu_allocator"] = {{"values", values({"glibc", "glibc_tuned"})}, {"default", "glibc"},
                              {"effects", {{"glibc_tuned", effect({{"step", factor(0.9, 1.05)}})}}}};
  // A bigger batch: a recipe change the tuner may try; per-sample memory decides where it stops fitting.
  if (d.chance(0.6)) knobs["batch_size"] = {{"values", values({"32", "64", "128", "256"})}, {"default", "32"}};
  if (knobs.empty()) knobs["amp"] = {{"values", values({"off", "bf16"})}, {"effects", {{"bf16", effect({{"gpu", 0.6}})}}}};
  w["knobs"] = knobs;

  // Interactions: two knobs that pay more (or less) together than apart.
  std::vector<std::string> model_knobs;
  for (const char* k : {"amp", "channels_last", "cuda_graphs", "compile", "fused_optimizer", "tf32", "cudnn_benchmark"})
    if (knobs.contains(k)) model_knobs.push_back(k);
  nlohmann::json inter = nlohmann::json::array();
  if (model_knobs.size() >= 2) {
    const int n = d.chance(0.5) ? 2 : 1;
    for (int i = 0; i < n; ++i) {
      const std::string a = d.pick(model_knobs), b = d.pick(model_knobs);
      if (a == b) continue;
      auto on = [&](const std::string& k) { return k == "amp" ? std::string("bf16") : std::string("on"); };
      const char* part = d.chance(0.5) ? "gpu" : "host";
      inter.push_back({{"when", {{a, on(a)}, {b, on(b)}}}, {"effects", {{part, factor(0.7, 1.3)}, {"source", src}}}});
    }
  }
  w["interactions"] = inter;
  nlohmann::json invalid = nlohmann::json::array();
  if (knobs.contains("prefetch"))
    invalid.push_back({{"when", {{"workers", "0"}, {"prefetch", "!2"}}}, {"why", "prefetch only matters with workers > 0"}});
  if (knobs.contains("compile") && knobs.contains("cuda_graphs") && d.chance(0.5))
    invalid.push_back({{"when", {{"compile", "on"}, {"cuda_graphs", "on"}}},
                       {"why", "CUDA graphs captured around a compiled module failed (simulated)"}});
  w["invalid"] = invalid;
  const double pair = d.uniform(0.02, 0.20);
  w["noise"] = {{"per_step", round3(d.uniform(0.01, 0.05))}, {"per_pair", round3(pair)},
                {"per_process", round3(d.uniform(0, pair / 2))}, {"drift", round3(d.uniform(0, 0.05))},
                {"drift_period_s", 300}, {"breakdown_error", 0.15}, {"source", src}};
  w["costs"] = {{"process_start_s", round3(d.uniform(2, 40))}, {"apply_s", 0.3}, {"workers_apply_s", 0.8},
                {"compile_s", knobs.contains("compile") ? round3(d.uniform(10, 60)) : 0.0}, {"source", src}};
  return w;
}

}  // namespace tb::engine
