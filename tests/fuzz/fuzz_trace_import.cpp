// libFuzzer target for the trace importer: any bytes (plain or gzip) must give a Trace or an Error, never a
// crash, hang or sanitizer report. When a trace parses, it must also analyse, export to Chrome JSON, and that
// export must parse again with the same number of events (the round trip the GUI relies on). Parsed in
// pieces (trace_chunks.h, tiny pieces), valid JSON must give the same trace or the same error; invalid JSON
// need not (simdjson On-Demand reads past some errors in values it skips, and what it skips depends on the
// document around them), but must not crash either.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <simdjson.h>

#include "profiler/analysis.h"
#include "profiler/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tb::prof::LoadOptions opt;
  opt.max_bytes = size_t(64) << 20;  // keep gzip bombs from eating the fuzzer's memory
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto r = tb::prof::parse_trace(bytes, "fuzz", opt);
  tb::prof::LoadOptions in_pieces = opt;
  in_pieces.piece_min = 1;
  in_pieces.piece_bytes = size ? 1 + data[size - 1] % 97 : 1;
  auto p = tb::prof::parse_trace(bytes, "fuzz", in_pieces);
  simdjson::dom::parser strict;
  const bool valid_json = !strict.parse(bytes.data(), bytes.size()).error();
  if (valid_json) {
    if (p.ok() != r.ok()) std::abort();
    if (!r.ok() && p.error().to_string() != r.error().to_string()) std::abort();
    if (r.ok() && (p.value()->event_count() != r.value()->event_count() ||
                   p.value()->tracks().size() != r.value()->tracks().size() ||
                   p.value()->flows().size() != r.value()->flows().size()))
      std::abort();
  }
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
