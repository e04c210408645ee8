// A world of the "ops" shape (docs/tuning.md "Simulated worlds"): a GPU training step built from what its
// ops cost, for jobs whose knobs act on the ops themselves (how many are launched, how the optimizer walks its
// parameters, which layout the convolutions run in) rather than by a factor on a part. The built-in "gpu",
// "gpu-synthetic" and "script-gpu" profiles are such files (engine/profiles/); every figure in them names its
// source. The knobs' mechanisms are the code below; their sizes are the file's:
//   host    = ops x op_ms (+ amp_ops more under autocast, conv biases 2 ops each, channels_last's conversions,
//             x compile_ops when compiled) + (zero_grad's ops x op_ms + params x ms_per_param (fused:
//             fused_ms_per_param)) / grad_accumulation (+ fp16's scaler ops); graphs_ms under CUDA graphs;
//   gpu     = per_sample_ms[precision, layout] (x cudnn_benchmark, x compile, x tf32) x B + ms + kernel_ms a
//             kernel (+ channels_last_ms) (+ conv_bias_ms_per_sample x B with conv biases);
//   sync    = sync.ms unless sync_free_logging > 1;  copy = B x sample_bytes at pageable or pinned GB/s
//             (non_blocking_ms when pinned and non-blocking; none when sample_bytes is 0: batches made on the
//             device);
//   load    = loader.per_sample_ms x B on one core; W workers: load / (W / (1 + contention (W - 1))) x
//             (1 + prefetch_gain / prefetch);
//   step    = load + copy + max(host, gpu) + sync, or max(load + copy + host, gpu) sync-free (no workers);
//             max(loader, handoff_ms + copy + max(host, gpu) + sync) (workers);
//   memory  = held_mb + B x (per_sample_mb, amp_per_sample_mb under autocast) (x graphs) (+ cudnn_benchmark_mb).
// A mechanism whose knob the job does not have reads the job's own setting ("job": a script's foreach
// optimizer, its .cuda(non_blocking=True), its batch).
#include <algorithm>
#include <cmath>

#include "tuner/workloads/sim_world_parse.h"
#include "knobs/table.h"

namespace tb::engine::world {
namespace {

struct Ops {
  // gpu
  double ms_fp32 = 0, ms_fp32_cl = 0, ms_amp = 0, ms_amp_cl = 0, cudnn = 1, compile_gpu = 1, tf32 = 1, fixed_ms = 0,
         kernel_ms = 0, cl_ms = 0, bias_ms_per_sample = 0;
  // host
  double op_ms = 0, model_ops = 0, amp_ops = 1, cl_ops = 0, compile_ops = 1, fp16_ops = 0, graphs_ms = 0;
  // optimizer
  double params = 0, conv_biases = 0, ops_per_conv_bias = 2, ms_per_param = 0, fused_ms_per_param = 0,
         zero_ops_per_param = 2, kernels_per_param = 0, fused_kernels = 0;
  double sync_ms = 0;
  double sample_bytes = 0, pageable_gb_s = 1, pinned_gb_s = 1, non_blocking_ms = 0;
  double load_ms = 0, contention = 0, prefetch_gain = 0, handoff_ms = 0;
  double held_mb = 0, per_sample_mb = 0, amp_per_sample_mb = 0, graphs_memory = 1, cudnn_mb = 0;
};

struct OpsWorld : Common {
  Ops ops;
  Config job;  // the job's own settings of mechanisms it has no knob for
  std::map<std::string, Applicability> applicability;
  std::map<std::string, std::map<std::string, double>> loss;  // knob -> value -> relative worsening
};

const nlohmann::json& section(const nlohmann::json& step, const char* name) {
  const auto& s = member(step, name, "step");
  sourced(s, std::string("step.") + name);
  return s;
}

void read_step(const nlohmann::json& j, Ops& o) {
  const auto& step = member(j, "step", "world");
  const double need = std::nan("");
  {
    const auto& g = section(step, "gpu");
    const auto& ps = member(g, "per_sample_ms", "step.gpu");
    o.ms_fp32 = number(ps, "fp32", "step.gpu.per_sample_ms", need);
    o.ms_fp32_cl = number(ps, "fp32_channels_last", "step.gpu.per_sample_ms", o.ms_fp32);
    o.ms_amp = number(ps, "amp", "step.gpu.per_sample_ms", o.ms_fp32);
    o.ms_amp_cl = number(ps, "amp_channels_last", "step.gpu.per_sample_ms", o.ms_amp);
    known_fields(ps, {"fp32", "fp32_channels_last", "amp", "amp_channels_last"}, "step.gpu.per_sample_ms");
    o.cudnn = number(g, "cudnn_benchmark", "step.gpu", 1, 1e-3, 10);
    o.compile_gpu = number(g, "compile", "step.gpu", 1, 1e-3, 10);
    o.tf32 = number(g, "tf32", "step.gpu", 1, 1e-3, 10);
    o.fixed_ms = number(g, "ms", "step.gpu", 0);
    o.kernel_ms = number(g, "kernel_ms", "step.gpu", 0);
    o.cl_ms = number(g, "channels_last_ms", "step.gpu", 0);
    o.bias_ms_per_sample = number(g, "conv_bias_ms_per_sample", "step.gpu", 0);
    known_fields(g, {"per_sample_ms", "cudnn_benchmark", "compile", "tf32", "ms", "kernel_ms", "channels_last_ms",
                     "conv_bias_ms_per_sample", "source"},
                 "step.gpu");
  }
  {
    const auto& h = section(step, "host");
    o.op_ms = number(h, "op_ms", "step.host", need);
    o.model_ops = number(h, "ops", "step.host", need);
    o.amp_ops = number(h, "amp_ops", "step.host", 1, 1e-3, 100);
    o.cl_ops = number(h, "channels_last_ops", "step.host", 0);
    o.compile_ops = number(h, "compile_ops", "step.host", 1, 1e-3, 100);
    o.fp16_ops = number(h, "fp16_scaler_ops", "step.host", 0);
    o.graphs_ms = number(h, "graphs_ms", "step.host", 0);
    known_fields(h, {"op_ms", "ops", "amp_ops", "channels_last_ops", "compile_ops", "fp16_scaler_ops", "graphs_ms", "source"},
                 "step.host");
  }
  {
    const auto& p = section(step, "optimizer");
    o.params = number(p, "params", "step.optimizer", need);
    o.conv_biases = number(p, "conv_biases", "step.optimizer", 0);
    o.ops_per_conv_bias = number(p, "ops_per_conv_bias", "step.optimizer", 2);
    o.ms_per_param = number(p, "ms_per_param", "step.optimizer", need);
    o.fused_ms_per_param = number(p, "fused_ms_per_param", "step.optimizer", o.ms_per_param);
    o.zero_ops_per_param = number(p, "zero_grad_ops_per_param", "step.optimizer", 2);
    o.kernels_per_param = number(p, "kernels_per_param", "step.optimizer", 0);
    o.fused_kernels = number(p, "fused_kernels", "step.optimizer", 0);
    known_fields(p, {"params", "conv_biases", "ops_per_conv_bias", "ms_per_param", "fused_ms_per_param",
                     "zero_grad_ops_per_param", "kernels_per_param", "fused_kernels", "source"},
                 "step.optimizer");
  }
  {
    const auto& s = section(step, "sync");
    o.sync_ms = number(s, "ms", "step.sync", 0);
    known_fields(s, {"ms", "source"}, "step.sync");
  }
  {
    const auto& c = section(step, "copy");
    o.sample_bytes = number(c, "sample_bytes", "step.copy", need);
    o.pageable_gb_s = number(c, "pageable_gb_s", "step.copy", 8, 1e-3);
    o.pinned_gb_s = number(c, "pinned_gb_s", "step.copy", o.pageable_gb_s, 1e-3);
    o.non_blocking_ms = number(c, "non_blocking_ms", "step.copy", 0);
    known_fields(c, {"sample_bytes", "pageable_gb_s", "pinned_gb_s", "non_blocking_ms", "source"}, "step.copy");
  }
  {
    const auto& l = section(step, "loader");
    o.load_ms = number(l, "per_sample_ms", "step.loader", need);
    o.contention = number(l, "contention", "step.loader", 0, 0, 10);
    o.prefetch_gain = number(l, "prefetch_gain", "step.loader", 0, 0, 10);
    o.handoff_ms = number(l, "handoff_ms", "step.loader", 0);
    known_fields(l, {"per_sample_ms", "contention", "prefetch_gain", "handoff_ms", "source"}, "step.loader");
  }
  {
    const auto& m = section(step, "memory");
    o.held_mb = number(m, "held_mb", "step.memory", need);
    o.per_sample_mb = number(m, "per_sample_mb", "step.memory", need);
    o.amp_per_sample_mb = number(m, "amp_per_sample_mb", "step.memory", o.per_sample_mb);
    o.graphs_memory = number(m, "graphs", "step.memory", 1, 1, 10);
    o.cudnn_mb = number(m, "cudnn_benchmark_mb", "step.memory", 0);
    known_fields(m, {"held_mb", "per_sample_mb", "amp_per_sample_mb", "graphs", "cudnn_benchmark_mb", "source"},
                 "step.memory");
  }
  known_fields(step, {"gpu", "host", "optimizer", "sync", "copy", "loader", "memory"}, "step");
}

KnobType type_of(const std::string& t, const std::string& where) {
  if (t == "bool") return KnobType::Bool;
  if (t == "int") return KnobType::Int;
  if (t == "enum") return KnobType::Enum;
  throw Bad{where + ".type: bool, int or enum"};
}

// "knobs": "engine" (the engine's whole catalog), or a list of knobs, each the engine's ("engine": true), the
// launcher's from the knob table ("script": true), or the job's own (title, type, default, recommended,
// choices, snippet...).
void read_knobs(const nlohmann::json& j, OpsWorld& w) {
  const auto& knobs = member(j, "knobs", "world");
  if (knobs.is_string()) {
    if (knobs.get<std::string>() != "engine") throw Bad{"world.knobs: \"engine\" or a list of knobs"};
    w.catalog = knob_catalog();
  } else {
    if (!knobs.is_array() || knobs.empty()) throw Bad{"world.knobs: \"engine\" or a list of knobs"};
    int i = 0;
    for (const auto& k : knobs) {
      std::string where = "knobs[" + std::to_string(i++) + "]";
      const std::string id = text(k, "id", where, "");
      if (id.empty()) throw Bad{where + ": 'id' is missing"};
      where = "knobs." + id;
      KnobInfo info;
      if (k.value("engine", false)) {
        const KnobInfo* e = find_knob(id);
        if (!e) throw Bad{where + ": not a knob of the engine's catalog (tunebench-cli knobs lists them)"};
        info = *e;
      } else if (k.value("script", false)) {
        // The launcher's knob, from the knob table; its default is the machine's where the table leaves it to
        // the interpreter at start (torch's thread count): the world then says it.
        const tb::knobs::Row* row = tb::knobs::find(id);
        if (!row || !row->script) throw Bad{where + ": not a script knob of the knob table (python/tunebench/knobs.json)"};
        const tb::knobs::Surface& sc = *row->script;
        info.id = id;
        info.title = sc.title;
        info.description = sc.description;
        info.type = type_of(sc.type, where);
        info.default_value = k.contains("default") ? value_text(k.at("default"), where + ".default") : sc.default_value;
        if (info.default_value.empty()) throw Bad{where + ": 'default' is missing (the launcher reads it at start)"};
        info.recommended_value = sc.recommended;
        info.choices = sc.type == "int" ? std::vector<std::string>{} : sc.choices;
        info.min = sc.type == "int" ? sc.min : 0;
        info.max = sc.type == "int" ? sc.max : 0;
        info.pytorch_snippet = sc.snippet;
        info.applies_to = "scripts";
        info.process_scope = sc.process_scope;
        info.changes_numerics = sc.numerics;
      } else {
        info.id = id;
        info.title = text(k, "title", where, "");
        if (info.title.empty()) throw Bad{where + ": 'title' is missing (or \"engine\": true for the engine's knob)"};
        info.type = type_of(text(k, "type", where, ""), where);
        info.default_value = value_text(member(k, "default", where), where + ".default");
        info.recommended_value = k.contains("recommended") ? value_text(k.at("recommended"), where + ".recommended") : "";
        if (k.contains("choices"))
          for (const auto& c : k.at("choices")) info.choices.push_back(value_text(c, where + ".choices"));
        if (info.type == KnobType::Bool && info.choices.empty()) info.choices = {"off", "on"};
        if (info.type == KnobType::Enum && info.choices.empty()) throw Bad{where + ": an enum needs its 'choices'"};
        info.pytorch_snippet = text(k, "snippet", where, "");
        info.applies_to = text(k, "applies_to", where, "");
        info.process_scope = k.value("process", false);
        info.changes_numerics = k.value("numerics", false);
        info.min = static_cast<int64_t>(number(k, "min", where, 0, 0, 1e9));
        info.max = static_cast<int64_t>(number(k, "max", where, 0, 0, 1e9));
      }
      known_fields(k, {"id", "engine", "script", "title", "type", "default", "recommended", "choices", "snippet", "applies_to",
                       "process", "numerics", "min", "max"},
                   where);
      for (const auto& have : w.catalog)
        if (have.id == id) throw Bad{where + ": listed twice"};
      w.catalog.push_back(info);
    }
  }
  for (const auto& k : w.catalog) w.baseline[k.id] = k.default_value;
}

void read_applicability(const nlohmann::json& j, OpsWorld& w) {
  if (j.contains("not_applicable")) {
    const auto& na = j.at("not_applicable");
    if (!na.is_object()) throw Bad{"world.not_applicable: an object of knob: why"};
    for (const auto& [id, why] : na.items()) {
      if (!w.baseline.count(id)) throw Bad{"world.not_applicable: '" + id + "' is not one of the world's knobs"};
      w.applicability[id] = {false, value_text(why, "not_applicable." + id), {}};
    }
  }
  if (j.contains("unavailable")) {
    const auto& un = j.at("unavailable");
    if (!un.is_object()) throw Bad{"world.unavailable: an object of knob: {values, why}"};
    for (const auto& [id, x] : un.items()) {
      const std::string where = "unavailable." + id;
      if (!w.baseline.count(id)) throw Bad{where + ": not one of the world's knobs"};
      Applicability a{true, text(x, "why", where, ""), {}};
      if (a.reason.empty()) throw Bad{where + ": 'why' is missing"};
      for (const auto& v : member(x, "values", where)) a.unavailable_values.push_back(value_text(v, where + ".values"));
      w.applicability[id] = a;
    }
  }
}

void read_space(const nlohmann::json& j, OpsWorld& w) {
  const auto& space = member(j, "search_space", "world");
  if (!space.is_array() || space.empty()) throw Bad{"world.search_space: a list of {knob, values}"};
  int i = 0;
  for (const auto& x : space) {
    const std::string where = "search_space[" + std::to_string(i++) + "]";
    const std::string id = text(x, "knob", where, "");
    if (!w.baseline.count(id)) throw Bad{where + ": '" + id + "' is not one of the world's knobs"};
    std::vector<std::string> values;
    for (const auto& v : member(x, "values", where)) values.push_back(value_text(v, where + ".values"));
    if (values.empty()) throw Bad{where + ".values: at least one value"};
    w.space.emplace_back(id, values);
  }
}

void read_job_and_loss(const nlohmann::json& j, OpsWorld& w) {
  if (j.contains("job")) {
    const auto& job = j.at("job");
    if (!job.is_object()) throw Bad{"world.job: an object of setting: value"};
    sourced(job, "job");
    for (const auto& [k, v] : job.items())
      if (k != "source") {
        if (w.baseline.count(k)) throw Bad{"job." + k + ": a knob of the world (the job's own settings are what it has no knob for)"};
        w.job[k] = value_text(v, "job." + k);
      }
  }
  if (j.contains("loss")) {
    const auto& loss = j.at("loss");
    sourced(loss, "loss");
    for (const auto& [k, values] : loss.items()) {
      if (k == "source") continue;
      if (!w.baseline.count(k)) throw Bad{"loss." + k + ": not one of the world's knobs"};
      for (const auto& [v, x] : values.items()) w.loss[k][v] = number(values, v, "loss." + k, 0, -0.5, 10);
    }
  }
}

bool is_on(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it != c.end() && it->second == "on";
}
std::string value(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it == c.end() ? std::string() : it->second;
}

class OpsModel : public CommonModel<OpsWorld> {
 public:
  using CommonModel::CommonModel;
  Applicability applicability(const KnobInfo& k) const override {
    auto it = w_.applicability.find(k.id);
    return it == w_.applicability.end() ? Applicability{} : it->second;
  }
  double loss_penalty(const Config& c) const override {
    double out = 0;
    for (const auto& [k, values] : w_.loss)
      if (auto it = values.find(value(c, k)); it != values.end()) out += it->second;
    return out;
  }
  std::optional<std::string> out_of_memory(const Config& c) const override {
    const Config full = complete(c);
    const double peak = step(full).peak_mb;
    if (peak <= w_.memory_total_mb) return std::nullopt;
    return "CUDA out of memory (simulated: batch " + std::to_string(sim_int(full, "batch_size", w_.batch)) + " needs " +
           std::to_string(int(peak / 1024)) + " GiB of " + std::to_string(int(w_.memory_total_mb / 1024)) + ")";
  }

  SimStep step(const Config& config, double loader_slowdown = 1.0) const override {
    Config c = w_.job;
    for (const auto& [k, v] : config) c[k] = v;
    const Ops& o = w_.ops;
    SimStep p;
    const int batch = sim_int(c, "batch_size", w_.batch);
    const std::string amp = value(c, "amp").empty() ? "off" : value(c, "amp");
    const bool amp_on = amp != "off";
    const bool cl = is_on(c, "channels_last");
    const bool bias = is_on(c, "conv_bias_before_bn");
    const bool zero_none = is_on(c, "zero_grad_none");
    const bool fused = is_on(c, "fused_optimizer");
    const bool graphs = is_on(c, "cuda_graphs");
    const bool compiled = is_on(c, "compile");
    const bool cudnn = is_on(c, "cudnn_benchmark");
    const int accumulate = std::max(1, sim_int(c, "grad_accumulation", 1));
    const bool sync_free = sim_int(c, "sync_free_logging", 1) > 1;
    const int workers = sim_int(c, "workers", 0);
    const int prefetch = std::max(1, sim_int(c, "prefetch", 2));
    const bool pinned = is_on(c, "pin_memory");
    const bool non_blocking = is_on(c, "non_blocking");
    const double params = o.params + (bias ? o.conv_biases : 0);

    double model_ops = o.model_ops * (amp_on ? o.amp_ops : 1.0) + (bias ? o.ops_per_conv_bias * o.conv_biases : 0) +
                       (cl ? o.cl_ops : 0);
    const double zero_ops = zero_none ? 0 : o.zero_ops_per_param * params;
    const double optimizer_ms = params * (fused ? o.fused_ms_per_param : o.ms_per_param);
    if (compiled) model_ops *= o.compile_ops;
    p.launch = model_ops * o.op_ms + (zero_ops * o.op_ms + optimizer_ms) / accumulate +
               (amp == "fp16" ? o.fp16_ops * o.op_ms : 0);
    const double kernels = model_ops + (zero_ops + (fused ? o.fused_kernels : o.kernels_per_param * params)) / accumulate;
    if (graphs) p.launch = o.graphs_ms;
    const double per_sample = (amp_on ? (cl ? o.ms_amp_cl : o.ms_amp) : (cl ? o.ms_fp32_cl : o.ms_fp32)) * (cudnn ? o.cudnn : 1.0);
    p.gpu = per_sample * batch * (compiled ? o.compile_gpu : 1.0) * (is_on(c, "tf32") ? o.tf32 : 1.0) + o.fixed_ms +
            kernels * o.kernel_ms + (cl ? o.cl_ms : 0.0) + (bias ? batch * o.bias_ms_per_sample : 0.0);
    p.sync = sync_free ? 0 : o.sync_ms;
    const double load = o.load_ms * batch;
    const double batch_mb = batch * o.sample_bytes / 1e6;
    p.h2d = o.sample_bytes <= 0 ? 0.0 : pinned ? (non_blocking ? o.non_blocking_ms : batch_mb / o.pinned_gb_s) : batch_mb / o.pageable_gb_s;
    const double device = std::max(p.launch, p.gpu);
    if (workers <= 0) {
      p.data_wait = load;
      p.step = sync_free ? std::max(load + p.h2d + p.launch, p.gpu) : load + p.h2d + device + p.sync;
    } else {
      const double parallel = workers / (1.0 + o.contention * (workers - 1));
      const double loader = load / parallel * (1.0 + o.prefetch_gain / prefetch) * loader_slowdown;
      const double train = o.handoff_ms + p.h2d + device + p.sync;
      p.data_wait = std::max(0.0, loader - train);
      p.step = std::max(loader, train);
    }
    p.held_mb = o.held_mb;
    p.peak_mb = o.held_mb + batch * (amp_on ? o.amp_per_sample_mb : o.per_sample_mb) * (graphs ? o.graphs_memory : 1.0) +
                (cudnn ? o.cudnn_mb : 0);
    return p;
  }
};

}  // namespace

std::unique_ptr<SimModel> make_ops_world_model(const nlohmann::json& j) {
  OpsWorld w;
  read_header(j, w);
  read_knobs(j, w);
  read_applicability(j, w);
  read_space(j, w);
  read_job_and_loss(j, w);
  read_step(j, w.ops);
  read_tail(j, w);
  known_fields(j, {"format", "shape", "name", "note", "source", "device", "kind", "cores", "batch", "memory_total_mb",
                   "knobs", "baseline", "not_applicable", "unavailable", "search_space", "job", "loss", "step",
                   "invalid", "hand", "costs", "noise"},
               "world");
  return std::make_unique<OpsModel>(std::move(w));
}

}  // namespace tb::engine::world
