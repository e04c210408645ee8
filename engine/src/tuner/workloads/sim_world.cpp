// A world file's model (sim_world.h): the document checked once, then a step computed from its parts.
#include "tuner/workloads/sim_world.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tuner/workloads/sim_world_parse.h"

namespace tb::engine {
namespace {

using namespace world;

const std::set<std::string> kParts = {"gpu", "host", "copy", "sync", "other", "loader", "step", "memory"};

// What a knob value or an interaction does: a factor per part and a loss change.
struct Effect {
  std::map<std::string, double> factor;
  double loss = 0;
};
struct Interaction {
  When when;
  Effect effect;
};

struct World : Common {
  double gpu_ms = 0, gpu_per_sample = 0, host_ms = 0, host_per_sample = 0, copy_per_sample = 0, sync_ms = 0,
         other_ms = 0, load_per_sample = 0, contention = 0, prefetch_gain = 0, ceiling = 0;
  double held_mb = 0, per_sample_mb = 0;
  std::map<std::string, std::map<std::string, Effect>> effects;  // knob -> value -> effect
  std::vector<Interaction> interactions;
};

Effect effect_of(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Bad{where + ": an effect is an object of factors"};
  sourced(j, where);
  Effect e;
  for (const auto& [k, v] : j.items()) {
    if (k == "source") continue;
    if (k == "loss") {
      e.loss = number(j, k, where, 0, -0.5, 10);
      continue;
    }
    if (!kParts.count(k))
      throw Bad{where + ": '" + k + "' is not a part (gpu, host, copy, sync, other, loader, step, memory, loss)"};
    e.factor[k] = number(j, k, where, 1, 1e-3, 1e3);
  }
  return e;
}

void read_knob(World& w, const std::string& id, const nlohmann::json& j) {
  const std::string where = "knobs." + id;
  // The engine's catalog, or a script's (torch.compile is a launcher knob): what the tuner knows how to try.
  const KnobInfo* cat = find_knob(id);
  static const std::unique_ptr<SimModel> script = make_sim_model("script-gpu");
  for (const auto& k : script->catalog())
    if (!cat && k.id == id) cat = &k;
  if (!cat) throw Bad{where + ": not a knob of the catalog (tunebench-cli knobs lists them)"};
  if (!j.is_object()) throw Bad{where + ": an object"};
  KnobInfo k = *cat;
  const auto& values = member(j, "values", where);
  if (!values.is_array() || values.size() < 2) throw Bad{where + ".values: at least two values"};
  std::vector<std::string> vs;
  for (const auto& v : values) vs.push_back(value_text(v, where + ".values"));
  k.default_value = j.contains("default") ? value_text(j.at("default"), where + ".default") : vs.front();
  if (std::find(vs.begin(), vs.end(), k.default_value) == vs.end())
    throw Bad{where + ": its default '" + k.default_value + "' is not one of its values"};
  if (j.contains("recommended")) k.recommended_value = value_text(j.at("recommended"), where + ".recommended");
  k.process_scope = j.value("process", cat->process_scope);
  k.changes_numerics = j.value("numerics", cat->changes_numerics);
  if (k.type == KnobType::Int) {
    int64_t lo = INT64_MAX, hi = 0;
    for (const auto& v : vs) {
      try {
        const int64_t x = std::stoll(v);
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      } catch (...) {
        throw Bad{where + ".values: '" + v + "' is not an integer"};
      }
    }
    if (lo < k.min) throw Bad{where + ".values: " + std::to_string(lo) + " is below the knob's least (" + std::to_string(k.min) + ")"};
    k.max = hi;  // the tuner's ladders stop where the world's values do
    if (id == "batch_size" && k.default_value != std::to_string(w.batch))
      throw Bad{where + ": its default is the world's batch (" + std::to_string(w.batch) + ")"};
  } else {
    k.choices = vs;
    if (k.recommended_value.empty() || std::find(vs.begin(), vs.end(), k.recommended_value) == vs.end())
      k.recommended_value = vs.back();
  }
  if (j.contains("effects")) {
    const auto& eff = j.at("effects");
    if (!eff.is_object()) throw Bad{where + ".effects: an object of value: effect"};
    for (const auto& [v, e] : eff.items()) {
      if (std::find(vs.begin(), vs.end(), v) == vs.end()) throw Bad{where + ".effects: '" + v + "' is not one of its values"};
      w.effects[id][v] = effect_of(e, where + ".effects." + v);
    }
  }
  for (const auto& [key, unused] : j.items()) {
    (void)unused;
    static const std::set<std::string> known = {"values", "default", "recommended", "process", "numerics", "effects"};
    if (!known.count(key)) throw Bad{where + ": unknown field '" + key + "'"};
  }
  w.catalog.push_back(k);
  w.baseline[id] = k.default_value;
  w.space.emplace_back(id, vs);
}

// A world of the "parts" shape (the default): the parts of a step at the baseline and each knob's factors.
World parse(const nlohmann::json& j) {
  World w;
  read_header(j, w);

  const auto& parts = member(j, "parts", "world");
  auto part = [&](const char* name) -> const nlohmann::json& {
    static const nlohmann::json none = nlohmann::json::object();
    if (!parts.contains(name)) return none;
    const auto& p = parts.at(name);
    sourced(p, std::string("parts.") + name);
    return p;
  };
  w.gpu_ms = number(part("gpu"), "ms", "parts.gpu", 0);
  w.gpu_per_sample = number(part("gpu"), "per_sample_ms", "parts.gpu", 0);
  w.host_ms = number(part("host"), "ms", "parts.host", 0);
  w.host_per_sample = number(part("host"), "per_sample_ms", "parts.host", 0);
  w.copy_per_sample = number(part("copy"), "per_sample_ms", "parts.copy", 0);
  w.sync_ms = number(part("sync"), "ms", "parts.sync", 0);
  w.other_ms = number(part("other"), "ms", "parts.other", 0);
  const auto& loader = part("loader");
  w.load_per_sample = number(loader, "per_sample_ms", "parts.loader", 0);
  w.contention = number(loader, "contention", "parts.loader", 0, 0, 10);
  w.prefetch_gain = number(loader, "prefetch_gain", "parts.loader", 0, 0, 10);
  w.ceiling = number(loader, "ceiling_samples_s", "parts.loader", 0);
  for (const auto& [k, unused] : parts.items()) {
    (void)unused;
    if (!kParts.count(k) || k == "step" || k == "memory") throw Bad{"parts: '" + k + "' is not a part (gpu, host, copy, sync, other, loader)"};
  }
  if (w.gpu_ms + w.gpu_per_sample + w.host_ms + w.host_per_sample + w.other_ms <= 0)
    throw Bad{"parts: a step takes no time (give gpu, host or other a time)"};
  if (j.contains("memory")) {
    const auto& m = j.at("memory");
    sourced(m, "memory");
    w.held_mb = number(m, "held_mb", "memory", 0);
    w.per_sample_mb = number(m, "per_sample_mb", "memory", 0);
  }

  const auto& knobs = member(j, "knobs", "world");
  if (!knobs.is_object() || knobs.empty()) throw Bad{"world.knobs: an object of at least one knob"};
  for (const auto& [id, k] : knobs.items()) read_knob(w, id, k);

  if (j.contains("interactions")) {
    if (!j.at("interactions").is_array()) throw Bad{"world.interactions: a list"};
    int i = 0;
    for (const auto& x : j.at("interactions")) {
      const std::string where = "interactions[" + std::to_string(i++) + "]";
      w.interactions.push_back({when_of(member(x, "when", where), where, w.baseline), effect_of(member(x, "effects", where), where + ".effects")});
    }
  }
  read_tail(j, w);
  known_fields(j, {"format", "shape", "name", "device", "kind", "cores", "batch", "memory_total_mb", "parts", "memory",
                   "knobs", "baseline", "interactions", "invalid", "hand", "noise", "costs", "source", "note"},
               "world");
  return w;
}

class WorldModel : public CommonModel<World> {
 public:
  using CommonModel::CommonModel;

  SimStep step(const Config& c, double loader_slowdown = 1.0) const override {
    const Effect f = effects(c);
    auto F = [&](const char* part) {
      auto it = f.factor.find(part);
      return it == f.factor.end() ? 1.0 : it->second;
    };
    const double b = sim_int(c, "batch_size", w_.batch);
    SimStep p;
    p.gpu = (w_.gpu_ms + w_.gpu_per_sample * b) * F("gpu");
    p.launch = (w_.host_ms + w_.host_per_sample * b) * F("host");
    p.h2d = w_.copy_per_sample * b * F("copy");
    p.sync = w_.sync_ms * F("sync");
    const double other = w_.other_ms * F("other");
    const double load = w_.load_per_sample * b * F("loader");
    const double train = p.h2d + std::max(p.launch, p.gpu) + p.sync + other;
    const int workers = sim_int(c, "workers", 0);
    if (workers <= 0) {
      p.data_wait = load;
      p.step = load + train;
    } else {
      const double used = std::min(workers, w_.cores);
      const double parallel = used / (1.0 + w_.contention * (used - 1));
      const int prefetch = std::max(1, sim_int(c, "prefetch", 2));
      double loader = load / parallel * (1.0 + w_.prefetch_gain / prefetch) * loader_slowdown;
      if (w_.ceiling > 0 && load > 0) loader = std::max(loader, 1000.0 * b / w_.ceiling);
      p.data_wait = std::max(0.0, loader - train);
      p.step = std::max(loader, train);
    }
    p.step *= F("step");
    p.held_mb = w_.held_mb;
    p.peak_mb = w_.held_mb + w_.per_sample_mb * b * F("memory");
    return p;
  }
  double loss_penalty(const Config& c) const override { return effects(c).loss; }
  std::optional<std::string> out_of_memory(const Config& c) const override {
    const double peak = step(complete(c)).peak_mb;
    if (peak <= w_.memory_total_mb) return std::nullopt;
    return "out of memory (simulated: batch " + std::to_string(sim_int(complete(c), "batch_size", w_.batch)) + " needs " +
           std::to_string(int64_t(peak)) + " MiB of " + std::to_string(int64_t(w_.memory_total_mb)) + ")";
  }

 private:
  Effect effects(const Config& c) const {
    Effect out;
    auto add = [&](const Effect& e) {
      for (const auto& [k, v] : e.factor) out.factor[k] = (out.factor.count(k) ? out.factor[k] : 1.0) * v;
      out.loss += e.loss;
    };
    for (const auto& [id, values] : w_.effects) {
      auto it = c.find(id);
      const std::string& v = it == c.end() ? w_.baseline.at(id) : it->second;
      if (auto e = values.find(v); e != values.end()) add(e->second);
    }
    for (const auto& x : w_.interactions)
      if (holds(x.when, c)) add(x.effect);
    return out;
  }
};

}  // namespace

Result<std::unique_ptr<SimModel>> make_world_model(const nlohmann::json& world) {
  try {
    const std::string shape = world.is_object() ? text(world, "shape", "world", "parts") : "parts";
    if (shape == "ops") return make_ops_world_model(world);
    if (shape != "parts") throw Bad{"world.shape: \"parts\" (the default) or \"ops\""};
    return std::unique_ptr<SimModel>(std::make_unique<WorldModel>(parse(world)));
  } catch (const Bad& b) {
    return Error{b.what};
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("world: ") + e.what()};
  }
}

SimOptions world_options(const nlohmann::json& world) {
  SimOptions o;
  const nlohmann::json none = nlohmann::json::object();
  const auto& n = world.contains("noise") && world.at("noise").is_object() ? world.at("noise") : none;
  auto num = [&](const char* k, double fallback) {
    return n.contains(k) && n.at(k).is_number() ? n.at(k).get<double>() : fallback;
  };
  o.profile = "world:" + world.value("name", std::string("unnamed"));
  o.noise = num("per_step", 0.03);
  o.phi = num("phi", 0.5);
  // A pair's log ratio is the difference of two windows' own speeds: sd per_pair means sd per_pair / sqrt 2 each.
  o.window_noise = num("per_pair", 0.07) / std::sqrt(2.0);
  o.process_noise = num("per_process", 0.03);
  o.drift_amplitude = num("drift", 0.02);
  o.drift_period_s = num("drift_period_s", 300);
  o.breakdown_error = num("breakdown_error", 0.15);
  o.glibc_fresh = 1.0;  // a world's allocator effects are its knobs' factors
  // The host allocator the job's processes ran under, as a real run says it.
  if (n.contains("allocator") && n.at("allocator").is_string()) o.measurement_allocator = n.at("allocator").get<std::string>();
  o.process_start_s = world.contains("costs") ? world.at("costs").value("process_start_s", 5.0) : 5.0;
  return o;
}

Result<nlohmann::json> read_world_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot be read"};
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Error{path + ": not JSON"};
  auto resolved = resolve_extends(std::move(j), std::filesystem::path(path).has_parent_path()
                                                     ? std::filesystem::path(path).parent_path().string()
                                                     : std::string("."));
  if (!resolved) return Error{path + ": " + resolved.error().message};
  j = std::move(*resolved);
  auto model = make_world_model(j);
  if (!model) return Error{path + ": " + model.error().message};
  return j;
}

}  // namespace tb::engine
