// Canonical range names shared by the engine (which records them) and the analyses (which read them).
// Changing one is a trace-format change: old traces keep the old names.
#pragma once

namespace tb::prof::names {
inline constexpr const char* kStep = "step";            // one training step on the training thread (arg: step index)
inline constexpr const char* kDataWait = "data_wait";   // training thread blocked on the loader
inline constexpr const char* kH2D = "h2d";              // host->device copy of a batch (issue + wait)
inline constexpr const char* kForward = "forward";
inline constexpr const char* kBackward = "backward";
inline constexpr const char* kOptimizer = "optimizer";
inline constexpr const char* kSync = "sync";            // host blocked on the device (loss.item(), synchronize)
inline constexpr const char* kLoadBatch = "load_batch"; // a worker assembling one batch (arg: batch index)
inline constexpr const char* kDecode = "decode";        // a worker decoding one image
inline constexpr const char* kAugment = "augment";      // crop/flip/normalize of one sample
inline constexpr const char* kConfigChange = "config_change";  // instant, arg: config revision
inline constexpr const char* kGraphCapture = "cuda_graph_capture";
// Data parallel on the CPU (Gloo): one gradient bucket's all-reduce on the communication thread (arg: bytes),
// and the training thread waiting, after its last gradient was ready, for the all-reduces still in flight:
// the communication backward did not hide (exposed).
inline constexpr const char* kGlooAllReduce = "gloo:allreduce";
inline constexpr const char* kCommWait = "comm_wait";
// Counter: minor page faults of the process during one training step (the allocator-bound finding).
inline constexpr const char* kPageFaults = "page_faults";
// Memory after each step (counters, bytes): the host's resident set, the CUDA caching allocator's allocated
// and reserved bytes and the step's peak allocation.
inline constexpr const char* kHostRss = "memory: host RSS";
inline constexpr const char* kDeviceAllocated = "memory: device allocated";
inline constexpr const char* kDeviceReserved = "memory: device reserved";
inline constexpr const char* kDevicePeak = "memory: device peak";
inline constexpr const char* kDeviceRetries = "memory: cudaMalloc retries";  // the allocator's count so far
inline constexpr const char* kHostAllocated = "memory: host allocated";  // torch's CPU allocator (Kineto's [memory])
// The step lane (profiler/step_lane.h): every step of a script from its step stream, on a pseudo-process's row.
// Names of their own, so that no analysis of the job's threads takes them for its ranges.
inline constexpr const char* kLaneStep = "training step";      // arg: the step's index; detail "detailed" if traced
inline constexpr const char* kLaneDataWait = "waiting for data";
inline constexpr const char* kLaneForward = "forward pass";
inline constexpr const char* kLaneBackward = "backward pass";
inline constexpr const char* kLaneOptimizer = "optimizer update";
inline constexpr const char* kLaneOutside = "outside training";  // detail: "evaluation", "checkpoint" or "other"
inline constexpr const char* kLaneDetailed = "detailed";          // a lane step's detail when it was traced
// The compile lane (profiler/compile_lane.h), on the same pseudo-process.
inline constexpr const char* kLaneCompile = "torch.compile";      // arg: the frame's compile index; detail: frame
inline constexpr const char* kLaneRecompile = "recompile";        // detail: the guard that failed
inline constexpr const char* kLaneGraphBreak = "graph break";     // arg: line; detail: file, newline, reason
inline constexpr const char* kLaneCompileFailed = "compile failed";  // detail: why
inline constexpr const char* kLaneKernel = "compiled kernel";  // detail: the kernel (compiled_kernels.h)
inline constexpr const char* kLaneCompileId = "compile id";  // detail: "F/C", as in "Torch-Compiled Region: F/C"
}  // namespace tb::prof::names
