// Recording a run: the range recorder and, on a CUDA device, the CUPTI collector; the trace they give with the
// run's description in its metadata. One place for `run --trace`, serve's chunks, a group's ranks and the
// tuner's trace snapshots, so they start, stop and label a recording alike.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "profiler/trace.h"

namespace tb::engine {

// Whether a run with this --device option trains on a CUDA device here.
bool trains_on_cuda(const std::string& device_option);

// Starts the range recorder and, when training on a CUDA device, the CUPTI collector, so traces hold the GPU's
// kernels, copies and API calls. TUNEBENCH_CUPTI_OFF=1 keeps the collector off (the profiler-overhead
// comparison of scripts/gpu-check.sh). Returns "" or why the GPU collector did not start (the CPU ranges are
// recorded either way; the caller tells the user).
std::string start_recording(bool cuda);

// The hello's collector line: whether GPU activity will be in the traces, and if not, why (`no_cuda`: why there
// is no CUDA device, environment_info's device.no_cuda).
std::pair<bool, std::string> collector_plan(bool cuda, bool tracing, const std::string& no_cuda = "");

// The recorder's trace (and the CUPTI collector's, when running) with the run's description in its metadata
// (model, data, device, versions, a rank's process name and clock offset, the threads and allocator the host
// findings read, where the measured steps begin); null when the recorder returned none.
std::unique_ptr<prof::Trace> collect_recorded_trace(const nlohmann::json& describe);
// collect_recorded_trace() written as a Chrome trace with `documents` attached (prof::TraceMetadata::documents:
// name -> a JSON object's text, the run's loader verdict): "" or why not.
std::string write_recorded_trace(const std::string& path, const nlohmann::json& describe,
                                 const std::map<std::string, std::string>& documents = {});

// A recording of a few steps (the tuner's trace snapshots) unless someone else is recording already (the GUI
// asked serve for a trace: its records are not taken). finish() returns the trace (null when inactive); a
// Capture that is not finished (an exception) stops and discards what it recorded.
class Capture {
 public:
  explicit Capture(bool cuda);
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  bool active() const { return active_; }
  std::unique_ptr<prof::Trace> finish();

 private:
  bool active_ = false;
  bool cupti_ = false;
};

}  // namespace tb::engine
