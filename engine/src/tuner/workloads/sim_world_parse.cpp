// The reading every world shape shares (sim_world_parse.h).
#include "tuner/workloads/sim_world_parse.h"

#include <cmath>
#include <sstream>

namespace tb::engine::world {

const nlohmann::json& member(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Bad{where + ": '" + key + "' is missing"};
  return j.at(key);
}

double number(const nlohmann::json& j, const std::string& key, const std::string& where, double fallback, double lo,
              double hi) {
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

void sourced(const nlohmann::json& j, const std::string& where) {
  if (!j.contains("source") || !j.at("source").is_string() || j.at("source").get<std::string>().empty())
    throw Bad{where + ": no 'source' (every figure names where it comes from: a measurement, or 'extrapolated: why')"};
}

void known_fields(const nlohmann::json& j, const std::set<std::string>& known, const std::string& where) {
  for (const auto& [k, unused] : j.items()) {
    (void)unused;
    if (!known.count(k)) throw Bad{where + ": unknown field '" + k + "'"};
  }
}

When when_of(const nlohmann::json& j, const std::string& where, const Config& knobs) {
  if (!j.is_object() || j.empty()) throw Bad{where + ".when: an object of knob: value"};
  When out;
  for (const auto& [k, v] : j.items()) {
    if (!knobs.count(k)) throw Bad{where + ".when: '" + k + "' is not one of the world's knobs"};
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

void read_header(const nlohmann::json& j, Common& w) {
  if (!j.is_object()) throw Bad{"a world is a JSON object"};
  if (text(j, "format", "world", "") != "tunebench-world 1") throw Bad{"world: 'format' is not \"tunebench-world 1\""};
  w.name = text(j, "name", "world", "");
  if (w.name.empty()) throw Bad{"world: 'name' is missing"};
  // A world says it is not a measurement, whatever it is fitted to.
  w.device = text(j, "device", "world", "simulated device");
  if (w.device.find("not a measurement") == std::string::npos) w.device += " (a world file, not a measurement)";
  w.kind = text(j, "kind", "world", "cuda");
  if (w.kind != "cuda" && w.kind != "cpu") throw Bad{"world.kind: cuda or cpu"};
  w.cores = static_cast<int>(number(j, "cores", "world", 8, 1, 1024));
  w.batch = static_cast<int>(number(j, "batch", "world", 32, 1, 1 << 20));
  w.memory_total_mb = number(j, "memory_total_mb", "world", 80.0 * 1024, 1);
  w.identity = j.dump();
}

void read_tail(const nlohmann::json& j, Common& w) {
  if (j.contains("baseline")) {
    // The job's own settings where they are not the catalog's defaults (a script's 4 loader workers).
    if (!j.at("baseline").is_object()) throw Bad{"world.baseline: an object of knob: value"};
    for (const auto& [k, v] : j.at("baseline").items()) {
      if (!w.baseline.count(k)) throw Bad{"world.baseline: '" + k + "' is not one of the world's knobs"};
      w.baseline[k] = value_text(v, "baseline." + k);
    }
  }
  if (j.contains("invalid")) {
    if (!j.at("invalid").is_array()) throw Bad{"world.invalid: a list"};
    int i = 0;
    for (const auto& x : j.at("invalid")) {
      const std::string where = "invalid[" + std::to_string(i++) + "]";
      Invalid v{when_of(member(x, "when", where), where, w.baseline), text(x, "why", where, "")};
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
  w.costs.pass_steps = static_cast<int>(number(costs, "pass_steps", "costs", 0, 0, 1e9));
  if (costs.contains("startup_s")) {
    const auto& s = costs.at("startup_s");
    if (!s.is_object()) throw Bad{"world.costs.startup_s: an object of \"knob=value\": seconds"};
    for (const auto& [k, v] : s.items()) {
      const size_t eq = k.find('=');
      if (eq == std::string::npos || !w.baseline.count(k.substr(0, eq)))
        throw Bad{"world.costs.startup_s: '" + k + "' is not knob=value of one of the world's knobs"};
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 3600)
        throw Bad{"world.costs.startup_s." + k + ": a number of seconds in [0, 3600]"};
      w.costs.startup_s[k] = v.get<double>();
    }
  }
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
    text(n, "allocator", "noise", "");
    known_fields(n, {"per_step", "per_pair", "per_pair_with_workers", "per_process", "drift", "drift_period_s",
                     "breakdown_error", "phi", "allocator", "source"},
                 "noise");
  }
}

std::string refusal(const std::vector<Invalid>& invalid, const Config& c) {
  for (const auto& v : invalid) {
    if (!holds(v.when, c)) continue;
    std::string why = v.why;
    for (const auto& [k, value] : c) {
      const std::string key = "{" + k + "}";
      for (size_t at = why.find(key); at != std::string::npos; at = why.find(key, at + value.size()))
        why.replace(at, key.size(), value);
    }
    return why;
  }
  return "";
}

}  // namespace tb::engine::world
