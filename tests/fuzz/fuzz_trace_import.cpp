// libFuzzer target for the trace importer: any bytes (plain or gzip) must give a Trace or an Error, never a
// crash, hang or sanitizer report. When a trace parses, it must also analyse, export to Chrome JSON, and that
// export must parse again with the same number of events (the round trip the GUI relies on).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profiler/analysis.h"
#include "profiler/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tb::prof::LoadOptions opt;
  opt.max_bytes = size_t(64) << 20;  // keep gzip bombs from eating the fuzzer's memory
  auto r = tb::prof::parse_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", opt);
  if (!r.ok()) {
    const std::string msg = r.error().to_string();
    if (msg.empty() || msg.find('\n') != std::string::npos) std::abort();  // errors are one non-empty line
    return 0;
  }
  const tb::prof::Trace& t = *r.value();
  const auto a = tb::prof::analyze(t);
  // Every idle class together with the busy time covers the window exactly (analysis.h, idle_total).
  if (a.has_gpu && a.gpu_busy_ns + tb::prof::idle_total(a) != a.window.length()) std::abort();
  (void)tb::prof::to_json(a, &t.meta());
  const std::string json = tb::prof::to_chrome_trace_json(t, a.findings);
  auto back = tb::prof::parse_trace(json, "fuzz-roundtrip", opt);
  if (!back.ok()) std::abort();
  if (back.value()->event_count() != t.event_count()) std::abort();
  return 0;
}
