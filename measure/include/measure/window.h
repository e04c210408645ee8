// A measuring window: consecutive measured steps of one configuration, timed as a whole. Throughput is the
// window's samples over its wall time (docs/protocol.md): a step that is slow for a reason that belongs to
// the configuration (the optimizer step of grad accumulation, an fp16 step whose update was skipped, a
// loader refill) keeps its time, which a median of per-step rates would drop.
#pragma once

#include <cstdint>
#include <vector>

namespace tb::measure {

struct Window {
  int steps = 0;            // measured steps
  int64_t samples = 0;      // samples of those steps
  double wall_s = 0;        // from the start of the first to the end of the last (device synced on CUDA)
  double start_s = 0;       // start on the measuring clock (seconds; for trend tests and drift)
  int warmup_steps = 0;     // unmeasured steps run before it, after the configuration took effect
  int64_t minor_faults = 0; // page faults of the process during the window (getrusage)
  double data_wait_s = 0;   // time the training thread waited for data in the window
  // One-time costs paid while it ran, in its warm-up or its steps (torch.compile's compiles of a script): in no
  // measured step's time above (a step that compiled is not measured), said beside the rate they do not change.
  double one_time_s = 0;
  // What it paid before its first measured step, one-time costs above left out: the change's apply, its warm-up
  // steps, a start-up of its own (loader workers spawned, CUDA graphs captured, cuDNN's algorithm search). In no
  // step's time; -1 where the measurer did not time it (the tuner times its in-process windows).
  double startup_s = -1;
  // The most memory a step of the window held (bytes): the device's peak allocation on CUDA, else the host's
  // resident set; -1 when not measured. held_memory_bytes: what stays allocated between steps on the device
  // (weights, gradients, optimizer state: the part a bigger batch does not grow), -1 unknown.
  // memory_total_bytes: what the device has (-1 unknown).
  int64_t peak_memory_bytes = -1;
  int64_t held_memory_bytes = -1;
  int64_t memory_total_bytes = -1;
  double throughput() const { return wall_s > 0 ? double(samples) / wall_s : 0.0; }
  double mid_s() const { return start_s + 0.5 * wall_s; }
};

// One step as the windowing sees it.
struct StepTiming {
  int64_t samples = 0;
  int64_t start_ns = 0;
  int64_t wall_ns = 0;
  int64_t data_wait_ns = 0;
  int64_t minor_faults = 0;
};

// Splits consecutive measured steps into windows of `size` steps (a last partial window is kept when it
// holds at least half of `size`, else merged into the one before). Each window's wall time is the sum of its
// steps' wall times: the steps are back to back, so this is the window's elapsed time less the few
// microseconds between steps.
std::vector<Window> windows_of(const std::vector<StepTiming>& steps, int size);

// Samples over seconds of all windows together.
double pooled_throughput(const std::vector<Window>& windows);

}  // namespace tb::measure
