// The figure a tune's patch writes beside a kept knob's edit (private to the tuner's report): its confirmed gain
// and, when it paid a one-time cost (a compile), that cost and the steps after which it pays back.
#pragma once

#include <string>

#include "engine/tuner.h"
#include "measure/interval.h"

namespace tb::engine {

// "1.25x [1.12, 1.38]; 55.0 s once, paid back after ~12,000 steps"; `checked`: the patched script against the
// original in fresh processes, when the patch was checked (else invalid). "" when nothing measured it.
std::string patch_gain(const TuneResult& r, const std::string& knob, const measure::RatioInterval& checked);

}  // namespace tb::engine
