// tunebench-cli knobs [--json]: every knob, its default, the recommended value, and whether it applies here.
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine/knobs.h"
#include "engine/session.h"

namespace tb::cli {
namespace {
const char* type_name(engine::KnobType t) {
  switch (t) {
    case engine::KnobType::Bool: return "bool";
    case engine::KnobType::Int: return "int";
    case engine::KnobType::Enum: return "enum";
  }
  return "?";
}
}  // namespace

int cmd_knobs(int argc, char** argv) {
  bool json = false;
  std::string device = "auto";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = argv[++i];
    } else {
      std::fprintf(stderr, "tunebench-cli: error: knobs: unknown option '%s' (usage: knobs [--json])\n", argv[i]);
      return 2;
    }
  }
  auto states = engine::knob_states_here(device);
  if (json) {
    nlohmann::json doc = engine::environment_info();
    doc["knobs"] = engine::knob_states_json(states);
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  std::printf("%-20s %-13s %-8s %-12s %-5s %s\n", "knob", "type", "default", "recommended", "here", "what / why not");
  for (const auto& s : states) {
    const auto& k = s.info;
    std::string type = type_name(k.type);
    if (k.type == engine::KnobType::Enum) {
      type.clear();
      for (const auto& c : k.choices) type += (type.empty() ? "" : "/") + c;
    }
    std::string why = s.applicability.applicable ? k.description : s.applicability.reason;
    if (s.applicability.applicable && !s.applicability.reason.empty()) why += " (" + s.applicability.reason + ")";
    std::printf("%-20s %-13s %-8s %-12s %-5s %s\n", k.id.c_str(), type.c_str(), k.default_value.c_str(),
                k.recommended_value.c_str(), s.applicability.applicable ? "yes" : "no", why.c_str());
  }
  return 0;
}

}  // namespace tb::cli
