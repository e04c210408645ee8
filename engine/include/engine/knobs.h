// The knob catalog (`tunebench-cli knobs` lists it) and a configuration of knob values. Torch-free: the CLI, the
// tuner and the report writer include it; only knobs.cpp / session.cpp know what a knob does.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.h"

namespace tb::engine {

enum class KnobType { Bool, Int, Enum };

struct KnobInfo {
  std::string id;           // "workers"
  std::string title;        // "Loader worker threads"
  std::string description;  // one line: what it changes
  KnobType type = KnobType::Bool;
  std::string default_value;      // what a newcomer writes (PyTorch defaults): "0", "off", "fp32"...
  std::string recommended_value;  // the usual fix
  std::vector<std::string> choices;  // Enum: allowed values; Bool: {"off","on"}
  int64_t min = 0, max = 0;          // Int range
  std::vector<std::string> seeds;    // {"000","001","003"}
  std::string applies_to;            // "cpu+cuda", "cuda", "cuda sm>=80"
  bool changes_numerics = false;     // the loss-drift guard runs when this changes
  // Takes effect when a process starts (cpu_allocator; cudnn_benchmark, whose chosen algorithms stay cached):
  // a running session cannot switch it back and forth, so the tuner measures it in fresh processes and
  // `serve` refuses a live change it cannot make.
  bool process_scope = false;
  std::string pytorch_snippet;       // one line of Python that applies it
  std::string libtorch_snippet;      // one line of C++ that applies it
};

// Whether a knob can act in this process (device, build, model), and why not.
struct Applicability {
  bool applicable = true;
  std::string reason;  // empty when applicable (or why some values are unavailable)
  // Values of an applicable knob that cannot take effect here (amp=fp16 on a CPU LibTorch 1.13): the tuner
  // does not spend trials on them and the GUI greys them out.
  std::vector<std::string> unavailable_values;
};

const std::vector<KnobInfo>& knob_catalog();
const KnobInfo* find_knob(const std::string& id);

// Knob id -> value text. Missing ids mean the default.
using Config = std::map<std::string, std::string>;

// Validates and normalizes one value ("true"/"1"/"on" -> "on"), or says why it is not one.
Result<std::string> normalize_knob_value(const std::string& id, const std::string& value);
// The same against `knob` itself (a simulated world's, whose values and range are its own).
Result<std::string> normalize_knob_value(const KnobInfo& knob, const std::string& value);
// Parses "k=v,k=v" (CLI --set). Throws std::invalid_argument with a one-line message.
Config parse_config_list(const std::string& text);
// Every knob with its default, overridden by `overrides`.
Config default_config(const Config& overrides = {});

}  // namespace tb::engine
