// What a step holds in memory, read where the run is (private to the engine): the host's resident set, and on
// a CUDA device the caching allocator's statistics (allocated,
// reserved, the peak since the last read, cudaMalloc retries) and the device's size.
#pragma once

#include <cstdint>

#include "engine/session.h"

namespace tb::engine::session_detail {

// Reads the step's memory; on CUDA it also resets the allocator's peak, so the next read's peak is that step's.
// `cuda_device` < 0: a CPU run (the device fields stay -1).
StepMemory read_step_memory(int cuda_device);

}  // namespace tb::engine::session_detail
