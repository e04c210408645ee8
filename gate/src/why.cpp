#include "gate/why.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "profiler/analysis.h"
#include "profiler/trace_diff.h"
#include "profiler/trace_io.h"

namespace tb::gate {
namespace fs = std::filesystem;
namespace {

std::string ms(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", ns / 1e6);
  return b;
}

std::string signed_ms(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.2f ms", ns / 1e6);
  return b;
}

std::string shorten(const std::string& s, size_t n = 70) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

std::string name_of(const prof::NameDelta& n) { return (n.kernel ? "kernel " : "") + shorten(n.name); }

// The most memory a side held, from its trace's counters: the device's when it has them, else the host's.
std::string memory_line(const prof::MemorySummary& a, const prof::MemorySummary& b) {
  const bool device = a.device_allocated_peak >= 0 && b.device_allocated_peak >= 0;
  const int64_t pa = device ? a.device_allocated_peak : a.host_rss_peak;
  const int64_t pb = device ? b.device_allocated_peak : b.host_rss_peak;
  if (pa < 0 || pb < 0) return "";
  char line[160];
  std::snprintf(line, sizeof line, "memory peak (%s): %.2f GiB -> %.2f GiB (%+.1f%%)",
                device ? "device, allocated" : "host RSS", double(pa) / (1 << 30), double(pb) / (1 << 30),
                pa > 0 ? 100.0 * double(pb - pa) / double(pa) : 0.0);
  return line;
}

std::vector<std::string> lines_of(const prof::TraceDiff& d, bool gpu) {
  std::vector<std::string> out;
  const std::string per = d.per_step ? " a step" : " in the window";
  char head[160];
  std::snprintf(head, sizeof head, "%s %s -> %s (baseline -> candidate, one traced process each)",
                d.per_step ? "median step" : "window", ms(d.a_step_ns).c_str(), ms(d.b_step_ns).c_str());
  out.push_back(head);
  // Classes of time that moved by at least 3% of the baseline's step (the whole-window class is the step).
  // They divide a GPU's time: a run on the CPU has none of them.
  const double floor_ns = std::max(0.03 * d.a_step_ns, 1e4);
  for (const auto& c : d.classes)
    if (gpu && c.name != "window" && std::fabs(c.delta_ns()) >= floor_ns)
      out.push_back(c.name + " " + signed_ms(c.delta_ns()) + per + " (" + ms(c.a_ns) + " -> " + ms(c.b_ns) + ")");
  size_t k = 0;
  for (const auto& n : d.changed) {
    if (k++ == 4 || std::fabs(n.delta_ns()) < floor_ns) break;
    char calls[64];
    std::snprintf(calls, sizeof calls, ", %.0f -> %.0f calls", n.a_count, n.b_count);
    out.push_back((n.delta_ns() > 0 ? "grew: " : "shrank: ") + name_of(n) + " " + signed_ms(n.delta_ns()) + per + " (" +
                  ms(n.a_ns) + " -> " + ms(n.b_ns) + calls + ")");
  }
  k = 0;
  for (const auto& n : d.added)
    if (k++ < 3 && n.b_ns >= floor_ns) out.push_back("new: " + name_of(n) + " " + ms(n.b_ns) + per);
  k = 0;
  for (const auto& n : d.removed)
    if (k++ < 3 && n.a_ns >= floor_ns) out.push_back("gone: " + name_of(n) + " " + ms(n.a_ns) + per);
  for (const auto& f : d.findings_appeared) out.push_back("finding appeared: " + f);
  for (const auto& f : d.findings_disappeared) out.push_back("finding gone: " + f);
  for (const auto& n : d.notes) out.push_back("note: " + n);
  return out;
}

}  // namespace

bool wants_why(const GateOptions& o, const GateResult& r) {
  return o.why && r.ran &&
         (r.look.verdict == measure::GateVerdict::kRegression || r.look.verdict == measure::GateVerdict::kImprovement);
}

namespace {

// One traced process of each side, in `order` (baseline first or not), into `dir`.
struct TracedPair {
  std::unique_ptr<prof::Trace> trace[2];  // baseline, candidate
  std::string error;
};
TracedPair traced_pair(const GateOptions& o, const std::string& dir, bool baseline_first) {
  TracedPair p;
  const Side* sides[2] = {&o.baseline, &o.candidate};
  for (int n = 0; n < 2; ++n) {
    const int k = baseline_first ? n : 1 - n;
    const std::string sub = dir + "/" + sides[k]->name;
    std::error_code ec;
    fs::create_directories(sub, ec);
    auto chunks = traced_process(o, *sides[k], sub);
    if (!chunks) {
      p.error = chunks.error().message;
      return p;
    }
    // A script's launcher writes chunks; the engine's run one trace of its own.
    auto merged = sides[k]->engine.empty() ? prof::merge_script_chunks(*chunks) : prof::load_trace(chunks->front());
    if (!merged) {
      p.error = sides[k]->name + "'s trace: " + merged.error().message;
      return p;
    }
    p.trace[k] = std::move(*merged);
  }
  return p;
}

}  // namespace

GateWhy explain(const GateOptions& o, double ratio, const std::string& keep_dir) {
  GateWhy why;
  why.tried = true;
  std::string tmpl = (fs::temp_directory_path() / "tunebench-gate-trace-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    why.error = "cannot make a folder for the traces";
    return why;
  }
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove{tmpl};
  // One process of each side is noisy: a traced pair whose step ratio is off the gate's by more than half the
  // change is traced again in the other order, and the pair nearer the gate's figure is the one explained.
  TracedPair best;
  prof::TraceDiff diff;
  bool gpu = false;
  prof::MemorySummary mem_a, mem_b;
  double off = 1e300;
  for (int attempt = 0; attempt < 2; ++attempt) {
    TracedPair p = traced_pair(o, tmpl + "/" + std::to_string(attempt), attempt == 0);
    if (!p.error.empty()) {
      why.error = p.error;
      return why;
    }
    const auto ra = prof::analyze(*p.trace[0]);
    const auto rb = prof::analyze(*p.trace[1]);
    prof::TraceDiff d = prof::diff_traces(*p.trace[0], ra, *p.trace[1], rb);
    const double this_off = d.speedup > 0 ? std::fabs(std::log(d.speedup / ratio)) : 1e300;
    if (this_off < off) {
      off = this_off;
      best = std::move(p);
      diff = std::move(d);
      gpu = ra.has_gpu || rb.has_gpu;
      mem_a = ra.memory;
      mem_b = rb.memory;
    }
    if (off <= 0.5 * std::fabs(std::log(ratio))) break;
  }
  why.lines = lines_of(diff, gpu);
  if (const std::string m = memory_line(mem_a, mem_b); !m.empty()) why.lines.insert(why.lines.begin() + 1, m);
  char note[200];
  if (off > 0.5 * std::fabs(std::log(ratio))) {
    std::snprintf(note, sizeof note,
                  "note: the traced processes (%.3fx) do not show the gate's %.3fx: one process a side is noisy, so "
                  "what grew above may not be why",
                  diff.speedup, ratio);
    why.lines.push_back(note);
  }
  why.diff = nlohmann::json::parse(prof::to_json(diff), nullptr, false);
  if (!keep_dir.empty()) {
    std::error_code ec;
    fs::create_directories(keep_dir, ec);
    for (int k = 0; k < 2; ++k) {
      const std::string path = (fs::path(keep_dir) / (k == 0 ? "baseline.json" : "candidate.json")).string();
      if (auto st = prof::write_chrome_trace(*best.trace[k], path); st) (k == 0 ? why.baseline_trace : why.candidate_trace) = path;
    }
  }
  return why;
}

}  // namespace tb::gate
