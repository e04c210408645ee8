// What a CI reads of a gate (docs/ci.md): the verdict in lines for a log, Markdown for a pull-request comment,
// JUnit XML for a test tab, JSON for anything else. One result, one figure everywhere: the last look's ratio
// and interval, the noise floor and the run count beside it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gate/runner.h"

namespace tb::gate {

// The log's lines, ending in the verdict line "gate: regression: ...".
std::string gate_text(const GateOptions& o, const GateResult& r);
std::string gate_markdown(const GateOptions& o, const GateResult& r);
std::string gate_junit(const GateOptions& o, const GateResult& r);
nlohmann::json gate_json(const GateOptions& o, const GateResult& r);

// The verdict in words: "regression: the candidate is 12.9% slower (0.871x [0.842, 0.901])" and the like.
std::string verdict_line(const GateOptions& o, const GateResult& r);

}  // namespace tb::gate
