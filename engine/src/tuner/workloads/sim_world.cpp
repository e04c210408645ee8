// A world file's model (sim_world.h): the document checked once, then a step computed from its parts.
#include "tuner/workloads/sim_world.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace tb::engine {
namespace {

const std::set<std::string> kParts = {"gpu", "host", "copy", "sync", "other", "loader", "step", "memory"};

// What a knob value or an interaction does: a factor per part and a loss change.
struct Effect {
  std::map<std::string, double> factor;
  double loss = 0;
};
// A condition on a configuration: knob -> value, or "!value" for any other.
using When = std::map<std::string, std::string>;
struct Interaction {
  When when;
  Effect effect;
};
struct Invalid {
  When when;
  std::string why;
};

struct World {
  std::string name, device, kind = "cuda";
  int cores = 8;
  int batch = 32;
  double memory_total_mb = 80.0 * 1024;
  double gpu_ms = 0, gpu_per_sample = 0, host_ms = 0, host_per_sample = 0, copy_per_sample = 0, sync_ms = 0,
         other_ms = 0, load_per_sample = 0, contention = 0, prefetch_gain = 0, ceiling = 0;
  double held_mb = 0, per_sample_mb = 0;
  double fed_noise_scale = 1;  // noise.per_pair_with_workers / noise.per_pair
  std::vector<KnobInfo> catalog;
  Config baseline;
  std::map<std::string, std::map<std::string, Effect>> effects;  // knob -> value -> effect
  std::vector<std::pair<std::string, std::vector<std::string>>> space;
  std::vector<Interaction> interactions;
  std::vector<Invalid> invalid;
  Config hand;
  SimCosts costs;
};

// One line naming where in the document the problem is.
struct Bad {
  std::string what;
};

const nlohmann::json& member(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Bad{where + ": '" + key + "' is missing"};
  return j.at(key);
}
double number(const nlohmann::json& j, const std::string& key, const std::string& where, double fallback,
              double lo = 0, double hi = 1e12) {
  if (!j.contains(key)) {
    if (std::isnan(fallback)) throw Bad{where + ": '" + key + "' is missing"};
    return fallback;
  }
  const auto& v = j.at(key);
  if (!v.is_number()) throw Bad{where + "." + key + ": not a number"};
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    std::ostringstream s;
    s << where << "." << key << ": " << x << " is outside [" << lo << ", " << hi << "]";
    throw Bad{s.str()};
  }
  return x;
}
std::string text(const nlohmann::json& j, const std::string& key, const std::string& where, const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_string()) throw Bad{where + "." + key + ": not a string"};
  return j.at(key).get<std::string>();
}
std::string value_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  throw Bad{where + ": a knob value is a string or an integer"};
}
// Every figure names where it comes from: a measurement, or "extrapolated" and why.
void sourced(const nlohmann::json& j, const std::string& where) {
  if (!j.contains("source") || !j.at("source").is_string() || j.at("source").get<std::string>().empty())
    throw Bad{where + ": no 'source' (every figure names where it comes from: a measurement, or 'extrapolated: why')"};
}

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

When when_of(const nlohmann::json& j, const std::string& where, const World& w) {
  if (!j.is_object() || j.empty()) throw Bad{where + ".when: an object of knob: value"};
  When out;
  for (const auto& [k, v] : j.items()) {
    if (!w.baseline.count(k)) throw Bad{where + ".when: '" + k + "' is not one of the world's knobs"};
    out[k] = value_text(v, where + ".when." + k);
  }
  return out;
}

bool holds(const When& when, const Config& c) {
  for (const auto& [k, v] : when) {
    auto it = c.find(k);
    const std::string have = it == c.end() ? "" : it->second;
    if (!v.empty() && v[0] == '!' ? have == v.substr(1) : have != v) return false;
  }
  return true;
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

World parse(const nlohmann::json& j) {
  if (!j.is_object()) throw Bad{"a world is a JSON object"};
  if (text(j, "format", "world", "") != "tunebench-world 1")
    throw Bad{"world: 'format' is not \"tunebench-world 1\""};
  World w;
  w.name = text(j, "name", "world", "");
  if (w.name.empty()) throw Bad{"world: 'name' is missing"};
  w.device = text(j, "device", "world", "simulated device") + " (a world file, not a measurement)";
  w.kind = text(j, "kind", "world", "cuda");
  if (w.kind != "cuda" && w.kind != "cpu") throw Bad{"world.kind: cuda or cpu"};
  w.cores = static_cast<int>(number(j, "cores", "world", 8, 1, 1024));
  w.batch = static_cast<int>(number(j, "batch", "world", 32, 1, 1 << 20));
  w.memory_total_mb = number(j, "memory_total_mb", "world", 80.0 * 1024, 1);

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
      w.interactions.push_back({when_of(member(x, "when", where), where, w), effect_of(member(x, "effects", where), where + ".effects")});
    }
  }
  if (j.contains("invalid")) {
    if (!j.at("invalid").is_array()) throw Bad{"world.invalid: a list"};
    int i = 0;
    for (const auto& x : j.at("invalid")) {
      const std::string where = "invalid[" + std::to_string(i++) + "]";
      Invalid v{when_of(member(x, "when", where), where, w), text(x, "why", where, "")};
      if (v.why.empty()) throw Bad{where + ": 'why' is missing (what the job says when it refuses)"};
      if (holds(v.when, w.baseline)) throw Bad{where + ": the baseline itself is invalid"};
      w.invalid.push_back(v);
    }
  }
  if (j.contains("hand")) {
    if (!j.at("hand").is_object()) throw Bad{"world.hand: an object of knob: value"};
    w.hand = w.baseline;
    for (const auto& [k, v] : j.at("hand").items()) {
      if (!w.baseline.count(k)) throw Bad{"world.hand: '" + k + "' is not one of the world's knobs"};
      w.hand[k] = value_text(v, "hand." + k);
    }
  }
  const auto& costs = j.contains("costs") ? j.at("costs") : nlohmann::json::object();
  if (!costs.empty()) sourced(costs, "costs");
  w.costs.process_start_s = number(costs, "process_start_s", "costs", 5, 0, 3600);
  w.costs.apply_s = number(costs, "apply_s", "costs", 0.2, 0, 600);
  w.costs.workers_apply_s = number(costs, "workers_apply_s", "costs", 0.5, 0, 600);
  w.costs.first_step_factor = number(costs, "first_step_factor", "costs", 3, 1, 1000);
  w.costs.compile_s = number(costs, "compile_s", "costs", 0, 0, 3600);
  if (j.contains("noise")) {
    const auto& n = j.at("noise");
    sourced(n, "noise");
    for (const char* k : {"per_step", "per_pair", "per_process", "drift", "breakdown_error"}) number(n, k, "noise", 0, 0, 2);
    // A worker-fed step's pairs, when they vary otherwise than the baseline's.
    const double pair = number(n, "per_pair", "noise", 0.07, 0, 2);
    const double fed = number(n, "per_pair_with_workers", "noise", pair, 0, 2);
    w.fed_noise_scale = pair > 0 ? fed / pair : 1.0;
    number(n, "phi", "noise", 0, 0, 0.99);
    number(n, "drift_period_s", "noise", 300, 1);
  }
  for (const auto& [k, unused] : j.items()) {
    (void)unused;
    static const std::set<std::string> known = {"format", "name", "device", "kind", "cores", "batch", "memory_total_mb",
                                                "parts", "memory", "knobs", "interactions", "invalid", "hand", "noise",
                                                "costs", "source", "note"};
    if (!known.count(k)) throw Bad{"world: unknown field '" + k + "'"};
  }
  return w;
}

class WorldModel : public SimModel {
 public:
  explicit WorldModel(World w) : w_(std::move(w)) {}
  std::string name() const override { return w_.name; }
  std::string device() const override { return w_.device; }
  std::string kind() const override { return w_.kind; }
  const std::vector<KnobInfo>& catalog() const override { return w_.catalog; }
  Config baseline() const override { return w_.baseline; }
  int default_batch() const override { return w_.batch; }
  int cores() const override { return w_.cores; }
  SimCosts costs() const override { return w_.costs; }
  Config hand_config() const override { return w_.hand; }
  double memory_total_mb() const override { return w_.memory_total_mb; }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override { return w_.space; }
  double window_noise_scale(const Config& c) const override {
    return sim_int(c, "workers", 0) > 0 ? w_.fed_noise_scale : 1.0;
  }

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
  std::optional<std::string> refuses(const Config& c) const override {
    for (const auto& v : w_.invalid)
      if (holds(v.when, complete(c))) return v.why;
    return std::nullopt;
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
      const std::string v = it == c.end() ? w_.baseline.at(id) : it->second;
      if (auto e = values.find(v); e != values.end()) add(e->second);
    }
    for (const auto& x : w_.interactions)
      if (holds(x.when, c)) add(x.effect);
    return out;
  }
  World w_;
};

}  // namespace

Result<std::unique_ptr<SimModel>> make_world_model(const nlohmann::json& world) {
  try {
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
  o.process_start_s = world.contains("costs") ? world.at("costs").value("process_start_s", 5.0) : 5.0;
  return o;
}

Result<nlohmann::json> read_world_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot be read"};
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Error{path + ": not JSON"};
  auto model = make_world_model(j);
  if (!model) return Error{path + ": " + model.error().message};
  return j;
}

}  // namespace tb::engine
