// The recorder and the CUPTI collector around a run (engine/recording.h).
#include "engine/recording.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "engine/distributed.h"
#include "engine/session.h"
#include "profiler/cupti_collector.h"
#include "profiler/recorder.h"
#include "profiler/trace_io.h"

namespace tb::engine {

bool trains_on_cuda(const std::string& device_option) {
  if (device_option == "cpu") return false;
  return environment_info().value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda";
}

std::string start_recording(bool cuda) {
  std::string why;
  if (cuda && !std::getenv("TUNEBENCH_CUPTI_OFF")) {
    auto& collector = prof::CuptiCollector::instance();
    if (!collector.running())
      if (auto st = collector.start(); !st.ok()) why = "GPU collector (CUPTI) did not start: " + st.error().to_string();
  }
  prof::Recorder::instance().start();
  return why;
}

std::pair<bool, std::string> collector_plan(bool cuda, bool tracing, const std::string& no_cuda) {
  if (!cuda) return {false, "no CUDA device" + (no_cuda.empty() ? "" : ": " + no_cuda) + "; CPU-only timeline"};
  if (std::getenv("TUNEBENCH_CUPTI_OFF")) return {false, "TUNEBENCH_CUPTI_OFF=1 keeps the GPU collector off"};
  if (!tracing) return {false, "not tracing (no --trace-dir)"};
  return {true, ""};
}

std::unique_ptr<prof::Trace> collect_recorded_trace(const nlohmann::json& describe) {
  auto trace = prof::Recorder::instance().collect();
  if (!trace) return nullptr;
  // GPU side: flushed at this chunk boundary. The training step reads the loss (a device sync) unless
  // sync_free_logging defers it, so at most the last step's tail can land in the next chunk.
  auto& collector = prof::CuptiCollector::instance();
  if (collector.running())
    if (auto gpu = collector.collect()) trace->merge(*gpu);
  auto& m = trace->meta();
  m.source_format = "tunebench";
  m.device = describe.value(nlohmann::json::json_pointer("/device/name"), std::string("cpu"));
  if (describe.contains("versions"))
    for (auto& [k, v] : describe["versions"].items())
      if (v.is_string()) m.versions[k] = v.get<std::string>();
  if (m.collector_state.empty()) {
    m.collector_state = "off";
    m.collector_reason = "no CUDA device: CPU-only timeline";
  }
  if (describe.contains("model")) m.extra["model"] = describe["model"].get<std::string>();
  m.extra["tunebench_run"] = "engine";  // the analysis proposes the engine's knobs (not a script's)
  // The device's size, for the headroom the analysis states beside the memory peak.
  if (const auto mem = describe.value(nlohmann::json::json_pointer("/device/memory_bytes"), nlohmann::json());
      mem.is_number() && mem.get<int64_t>() > 0 &&
      describe.value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda")
    m.extra["device_memory_bytes"] = std::to_string(mem.get<int64_t>());
  // A rank of a data-parallel group names its process: merged with the others, the timeline says "rank 1"
  // ("rank 1 on node2" when the group spans hosts). On another host than rank 0's its events move to rank
  // 0's clock (engine/src/dist/ddp.h, RankClock).
  if (describe.contains("distributed") && describe["distributed"].contains("rank")) {
    const auto& d = describe["distributed"];
    m.process_names[static_cast<int64_t>(::getpid())] = rank_process_name(d);
    if (const int64_t offset = d.value("clock_offset_ns", int64_t(0)); offset != 0) {
      // Between the first and the latest measurement the offset is taken to change at a constant rate.
      const auto& samples = d.value("clock_samples", nlohmann::json::array());
      if (samples.size() >= 2) {
        const auto &a = samples.front(), &b = samples.back();
        trace->shift_time(a.value("at_ns", int64_t(0)), a.value("offset_ns", int64_t(0)), b.value("at_ns", int64_t(0)),
                          b.value("offset_ns", int64_t(0)));
        m.extra["clock_offset_first_ns"] = std::to_string(a.value("offset_ns", int64_t(0)));
      } else {
        trace->shift_time(offset);
      }
      m.extra["clock_offset_ns"] = std::to_string(offset);
      m.extra["clock_error_ns"] = std::to_string(d.value("clock_error_ns", int64_t(0)));
    }
  }
  if (describe.contains("data")) m.extra["data"] = describe["data"].get<std::string>();
  // Steps numbered below it were warm-up: the analysis leaves them out of its window (prof::exclude_warmup).
  if (describe.contains("first_measured_step")) m.extra["warmup_steps"] = describe["first_measured_step"].dump();
  // What the host findings read (profiler/src/analysis_cpu.cpp): threads against cores, the allocator.
  for (const char* k : {"intra_op_threads", "loader_workers", "cpu_allocator"})
    if (describe.contains(k))
      m.extra[std::strcmp(k, "loader_workers") == 0 ? "workers" : k] =
          describe[k].is_string() ? describe[k].get<std::string>() : describe[k].dump();
  if (describe.contains("distributed"))
    m.extra["rank"] = std::to_string(describe["distributed"].value("rank", 0));
  trace->finalize();
  return trace;
}

std::string write_recorded_trace(const std::string& path, const nlohmann::json& describe,
                                 const std::map<std::string, std::string>& documents) {
  auto trace = collect_recorded_trace(describe);
  if (!trace) return "the recorder returned no trace";
  for (const auto& [name, text] : documents) trace->meta().documents[name] = text;
  auto st = prof::write_chrome_trace(*trace, path);
  if (!st.ok()) return st.error().to_string();
  return "";
}

Capture::Capture(bool cuda) : active_(!prof::Recorder::instance().enabled()) {
  if (!active_) return;
  if (cuda && !std::getenv("TUNEBENCH_CUPTI_OFF")) cupti_ = prof::CuptiCollector::instance().start().ok();
  prof::Recorder::instance().start();
}

Capture::~Capture() {
  if (!active_) return;
  auto& rec = prof::Recorder::instance();
  rec.stop();
  rec.collect();
  if (cupti_) prof::CuptiCollector::instance().stop();
}

std::unique_ptr<prof::Trace> Capture::finish() {
  if (!active_) return nullptr;
  active_ = false;
  auto& rec = prof::Recorder::instance();
  rec.stop();
  auto trace = rec.collect();
  if (cupti_) {
    auto gpu = prof::CuptiCollector::instance().collect();
    prof::CuptiCollector::instance().stop();
    if (gpu && trace) trace->merge(*gpu);
  }
  return trace;
}

}  // namespace tb::engine
