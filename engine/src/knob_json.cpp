// Knobs as JSON (engine/session.h knob_state_json): one shape for the protocol and `knobs --json`.
#include "engine/session.h"

namespace tb::engine {

nlohmann::json knob_state_json(const KnobState& s) {
  const KnobInfo& k = s.info;
  const char* type = k.type == KnobType::Bool ? "bool" : k.type == KnobType::Int ? "int" : "enum";
  return {{"id", k.id},
          {"title", k.title},
          {"description", k.description},
          {"type", type},
          {"default", k.default_value},
          {"recommended", k.recommended_value},
          {"choices", k.choices},
          {"min", k.min},
          {"max", k.max},
          {"value", s.value},
          {"applicable", s.applicability.applicable},
          {"reason", s.applicability.reason},
          {"unavailable_values", s.applicability.unavailable_values},
          {"changes_numerics", k.changes_numerics},
          {"process_scope", k.process_scope},
          {"seeds", k.seeds},
          {"applies_to", k.applies_to},
          {"pytorch", k.pytorch_snippet},
          {"libtorch", k.libtorch_snippet}};
}

nlohmann::json knob_states_json(const std::vector<KnobState>& states) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : states) out.push_back(knob_state_json(s));
  return out;
}

}  // namespace tb::engine
