// One reader of the `tune` message for serve and serve-script.
#include "engine/tune_request.h"

#include <nlohmann/json.hpp>

#include "client/inputs.h"

namespace tb::engine {

Result<TuneOptions> tune_request(const nlohmann::json& msg, const std::function<bool(const std::string&)>& is_knob) {
  TuneOptions o;
  // Seconds, or "auto" (tune --budget auto: one pass over every applicable knob, finals included, priced after
  // the noise floor; the default plans the calibration). Anything else is refused, never read as the default.
  const nlohmann::json b = msg.value("budget_s", nlohmann::json());
  if (b.is_string() && b.get<std::string>() == "auto") {
    o.budget_auto = true;
    o.budget_s = client::inputs::kBudgetDefaultS;
  } else if (!b.is_null() && !b.is_number()) {
    return Error{"tune: budget_s is seconds or \"auto\", got " + b.dump()};
  } else {
    const auto budget = client::inputs::tune_budget(b.is_number() ? b.get<double>() : client::inputs::kBudgetDefaultS);
    if (!budget) return Error{"tune: " + budget.error().message};
    o.budget_s = *budget;
  }
  const auto knobs = msg.value("knobs", nlohmann::json::array());
  if (!knobs.is_array()) return Error{"tune: knobs is not a list of knob names"};
  for (const auto& k : knobs) {
    if (!k.is_string() || !is_knob(k.get<std::string>()))
      return Error{"tune: unknown knob " + k.dump() + " in knobs (see tunebench-cli knobs)"};
    o.only_knobs.push_back(k.get<std::string>());
  }
  // The user's run length (tune --run-steps): a change whose one-time cost pays back only after more steps is kept
  // by no tune of it.
  if (msg.contains("run_steps") && !msg["run_steps"].is_null()) {
    if (!msg["run_steps"].is_number_integer() || msg["run_steps"].get<int64_t>() < 1)
      return Error{"tune: run_steps is the run's number of steps, a positive integer (got " + msg["run_steps"].dump() + ")"};
    o.run_steps = msg["run_steps"].get<int64_t>();
  }
  // The plan alone (tune --plan): the calibration and the noise floor priced one pass, nothing tried or applied.
  if (msg.contains("plan_only") && !msg["plan_only"].is_null()) {
    if (!msg["plan_only"].is_boolean()) return Error{"tune: plan_only is true or false (got " + msg["plan_only"].dump() + ")"};
    o.plan_only = msg["plan_only"].get<bool>();
  }
  return o;
}

}  // namespace tb::engine
