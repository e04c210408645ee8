// The knob catalog (docs/tuning.md): the knob table's engine rows. What a knob does lives in session.cpp.
#include "engine/knobs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "client/inputs.h"
#include "knobs/table.h"

namespace tb::engine {
namespace {

// The engine's knobs: the table's rows that the engine's session has (python/tunebench/knobs.json).
std::vector<KnobInfo> build_catalog() {
  std::vector<KnobInfo> c;
  for (const auto& row : knobs::table()) {
    if (!row.engine) continue;
    const knobs::Surface& s = *row.engine;
    KnobInfo k;
    k.id = row.id;
    k.title = s.title;
    k.description = s.description;
    k.type = s.type == "bool" ? KnobType::Bool : s.type == "int" ? KnobType::Int : KnobType::Enum;
    k.default_value = s.default_value;
    k.recommended_value = s.recommended;
    k.choices = s.type == "int" ? std::vector<std::string>{} : s.choices;
    k.min = s.min;
    k.max = s.max;
    k.seeds = s.seeds;
    k.applies_to = s.applies_to;
    k.changes_numerics = s.numerics;
    k.process_scope = s.process_scope;
    k.pytorch_snippet = s.pytorch;
    k.libtorch_snippet = s.libtorch;
    c.push_back(std::move(k));
  }
  return c;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

const std::vector<KnobInfo>& knob_catalog() {
  static const std::vector<KnobInfo> catalog = build_catalog();
  return catalog;
}

const KnobInfo* find_knob(const std::string& id) {
  for (const auto& k : knob_catalog())
    if (k.id == id) return &k;
  return nullptr;
}

Result<std::string> normalize_knob_value(const std::string& id, const std::string& value) {
  const KnobInfo* k = find_knob(id);
  if (!k) return Error{"unknown knob '" + id + "' (see tunebench-cli knobs)"};
  return normalize_knob_value(*k, value);
}

Result<std::string> normalize_knob_value(const KnobInfo& knob, const std::string& value) {
  const KnobInfo* k = &knob;
  const std::string& id = knob.id;
  std::string v = lower(trim(value));
  switch (k->type) {
    case KnobType::Bool:
      if (v == "on" || v == "true" || v == "1" || v == "yes") return std::string("on");
      if (v == "off" || v == "false" || v == "0" || v == "no") return std::string("off");
      return Error{"bad value '" + value + "' for knob '" + id + "': expected on or off"};
    case KnobType::Int: {
      int64_t n = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (v.empty() || ec != std::errc() || ptr != v.data() + v.size())
        return Error{"bad value '" + value + "' for knob '" + id + "': expected an integer in [" +
                     std::to_string(k->min) + ", " + std::to_string(k->max) + "]"};
      if (n < k->min || n > k->max)
        return Error{"bad value '" + value + "' for knob '" + id + "': out of range [" + std::to_string(k->min) +
                     ", " + std::to_string(k->max) + "]"};
      return std::to_string(n);
    }
    case KnobType::Enum: {
      for (const auto& ch : k->choices)
        if (v == ch) return ch;
      std::string list;
      for (const auto& ch : k->choices) list += (list.empty() ? "" : ", ") + ch;
      return Error{"bad value '" + value + "' for knob '" + id + "': expected one of " + list};
    }
  }
  return Error{"bad knob type"};
}

Config parse_config_list(const std::string& text) {
  // The syntax is every surface's (client/inputs.h); the catalog says what the knobs and values are.
  const auto items = client::inputs::parse_settings(text);
  if (!items) throw std::invalid_argument(items.error().message);
  Config out;
  for (const auto& [id, v] : *items) {
    const auto value = normalize_knob_value(id, v);
    if (!value) throw std::invalid_argument(value.error().message);
    out[id] = *value;
  }
  return out;
}

Config default_config(const Config& overrides) {
  Config c;
  for (const auto& k : knob_catalog()) c[k.id] = k.default_value;
  for (const auto& [id, v] : overrides) {
    const auto value = normalize_knob_value(id, v);
    if (!value) throw std::invalid_argument(value.error().message);
    c[id] = *value;
  }
  return c;
}

}  // namespace tb::engine
