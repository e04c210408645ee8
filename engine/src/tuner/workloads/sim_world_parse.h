// What every shape of world file shares (sim_world.h): the reading of a checked document, field by field,
// each problem one line naming where it is, and the parts every shape has (the job's name, machine, knobs,
// baseline, what it refuses, the hand configuration, costs, noise).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/workloads/sim_model.h"

namespace tb::engine::world {

// One line naming where in the document the problem is.
struct Bad {
  std::string what;
};

const nlohmann::json& member(const nlohmann::json& j, const std::string& key, const std::string& where);
// `j[key]`, a number in [lo, hi]; `fallback` when missing (NaN: required).
double number(const nlohmann::json& j, const std::string& key, const std::string& where, double fallback,
              double lo = 0, double hi = 1e12);
std::string text(const nlohmann::json& j, const std::string& key, const std::string& where, const std::string& fallback);
// A knob value: a string, an integer or a boolean (on/off).
std::string value_text(const nlohmann::json& v, const std::string& where);
// Every figure names where it comes from: a measurement, or "extrapolated" and why.
void sourced(const nlohmann::json& j, const std::string& where);
// No field outside `known`.
void known_fields(const nlohmann::json& j, const std::set<std::string>& known, const std::string& where);

// A condition on a configuration: knob -> value, or "!value" for any other.
using When = std::map<std::string, std::string>;
When when_of(const nlohmann::json& j, const std::string& where, const Config& knobs);
bool holds(const When& when, const Config& c);

struct Invalid {
  When when;
  std::string why;  // "{knob}" stands for that knob's value
};

// The parts of a world every shape has.
struct Common {
  std::string name, device, kind = "cuda";
  int cores = 8;
  int batch = 32;
  double memory_total_mb = 80.0 * 1024;
  double fed_noise_scale = 1;  // noise.per_pair_with_workers / noise.per_pair
  std::vector<KnobInfo> catalog;
  Config baseline;
  std::vector<std::pair<std::string, std::vector<std::string>>> space;
  std::vector<Invalid> invalid;
  Config hand;
  SimCosts costs;
  std::string identity;  // the world's JSON, as read (SimModel::identity)
};

// format, name, device, kind, cores, batch, memory_total_mb.
void read_header(const nlohmann::json& j, Common& w);
// baseline, invalid, hand, costs, noise: after the knobs.
void read_tail(const nlohmann::json& j, Common& w);
// Why `c` is refused (the first invalid entry that holds, its "{knob}" filled in), or "".
std::string refusal(const std::vector<Invalid>& invalid, const Config& c);

// What every world shape's model answers from its Common fields; a shape adds its step, loss and memory.
template <class W>
class CommonModel : public SimModel {
 public:
  explicit CommonModel(W w) : w_(std::move(w)) {}
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
  std::string identity() const override { return w_.identity; }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override { return w_.space; }
  double window_noise_scale(const Config& c) const override {
    return sim_int(c, "workers", 0) > 0 ? w_.fed_noise_scale : 1.0;
  }
  std::optional<std::string> refuses(const Config& c) const override {
    std::string why = refusal(w_.invalid, complete(c));
    if (why.empty()) return std::nullopt;
    return why;
  }

 protected:
  W w_;
};

// A world of the "ops" shape (sim_world_ops.cpp); throws Bad.
std::unique_ptr<SimModel> make_ops_world_model(const nlohmann::json& j);

}  // namespace tb::engine::world
