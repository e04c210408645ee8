// A simulated job read from a file: a "world" (docs/tuning.md "Simulated worlds"), so that a user can describe
// the job they have (`tune --simulate --profile FILE`) and the tests can run the tuner in worlds it was not
// written against (random_world()). The GPU profiles (gpu, gpu-synthetic, script-gpu) are world files too,
// engine/profiles/, compiled in. Two shapes: "ops" (sim_world_ops.cpp: a step built from its ops, for the
// knobs that act on them) and "parts", the default:
//
// A world names the parts of a step at its baseline, each with its source, and what each knob value does to
// them (factors), with its source:
//   B      = the batch (the batch_size knob's value, else the world's "batch")
//   gpu    = (gpu.ms + gpu.per_sample_ms B) x F(gpu)          device busy time
//   host   = (host.ms + host.per_sample_ms B) x F(host)       the host's launch path, overlapping the device
//   copy   = copy.per_sample_ms B x F(copy)                    host-to-device copy on the training thread
//   sync   = sync.ms x F(sync),  other = other.ms x F(other)  the host blocked on the device; the rest
//   load   = loader.per_sample_ms B x F(loader)                loading a batch on one core
//   train  = copy + max(host, gpu) + sync + other
//   step   = load + train                                      (no loader workers)
//          = max(load / P x (1 + prefetch_gain / prefetch), B / ceiling, train)   (W workers: P = W' / (1 +
//            contention (W' - 1)), W' = min(W, cores))
//   step  x= F(step); peak memory = held_mb + per_sample_mb B x F(memory); loss worsens by the sum of "loss"
// F(part) is the product of the factors of every knob's current value and of every interaction whose
// condition holds. "invalid" lists configurations the job refuses (a trial of one fails, as a real one would).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "tuner/workloads/sim_workload.h"

namespace tb::engine {

// The model of a world document, or the one line that says what is wrong with it (a missing source, an
// unknown knob, a factor that is not a positive number...).
Result<std::unique_ptr<SimModel>> make_world_model(const nlohmann::json& world);
// The noise, drift and start-up a world states (its "noise" and "costs").
SimOptions world_options(const nlohmann::json& world);
// A world file read and checked ("extends" resolved): the document, or "PATH: what is wrong".
Result<nlohmann::json> read_world_file(const std::string& path);
// A world that "extends" another (a file beside it in `dir`, else a built-in profile's file) is that world
// with this one's fields merged in (RFC 7386).
Result<nlohmann::json> resolve_extends(nlohmann::json j, const std::string& dir, int depth = 0);
// A built-in profile's world by its name ("gpu"), or nullopt.
std::optional<nlohmann::json> builtin_profile(const std::string& name);
std::vector<std::string> builtin_profile_names();

// A seeded random world (sim_world_random.cpp): a GPU job whose parts, knob effects (x0.8 to x3 a knob, some
// harmful, some interacting, some invalid together), loader ceiling, noise (2-20% a pair) and start-up (2-40 s)
// are drawn from `seed`. Same seed, same world.
nlohmann::json random_world(uint64_t seed);

}  // namespace tb::engine
