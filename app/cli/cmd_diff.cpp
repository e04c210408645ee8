// tunebench-cli diff A B [--json OUT.json] [--top N] [--min-gap-us N]
// Compares two traces (any format analyze reads): step time, each class of GPU time, the kernels and CPU
// ops added, removed and changed most, and the findings that appeared or disappeared. Per step when both
// traces have steps. Exit 0 ok, 1 cannot write the output, 2 bad input.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "commands.h"
#include "profiler/analysis.h"
#include "profiler/trace_diff.h"
#include "profiler/trace_io.h"

namespace tb::cli {
namespace {

constexpr const char* kUsage = "usage: tunebench-cli diff A B [--json OUT.json] [--top N] [--min-gap-us N]\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

double ms(double ns) { return ns / 1e6; }

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

void print_names(FILE* out, const char* title, const std::vector<prof::NameDelta>& v) {
  if (v.empty()) return;
  std::fprintf(out, "\n%s\n%10s %10s %10s %8s %8s  %s\n", title, "delta ms", "A ms", "B ms", "A n", "B n", "name");
  for (const auto& n : v)
    std::fprintf(out, "%+10.3f %10.3f %10.3f %8.1f %8.1f  %s%s\n", ms(n.delta_ns()), ms(n.a_ns), ms(n.b_ns), n.a_count,
                 n.b_count, n.kernel ? "" : "[op] ", shorten(n.name, 90).c_str());
}

void print(FILE* out, const std::string& pa, const std::string& pb, const prof::TraceDiff& d) {
  std::fprintf(out, "A  %s (%zu steps)\nB  %s (%zu steps)\n\n", pa.c_str(), d.a_steps, pb.c_str(), d.b_steps);
  std::fprintf(out, "%s %.3f ms -> %.3f ms", d.per_step ? "median step" : "window", ms(d.a_step_ns), ms(d.b_step_ns));
  if (d.speedup > 0) std::fprintf(out, "  (B %s: %.2fx)", d.speedup >= 1 ? "faster" : "slower", d.speedup);
  std::fprintf(out, "\n\n%-18s %10s %10s %10s   (ms%s)\n", "", "A", "B", "delta", d.per_step ? " per step" : "");
  for (const auto& c : d.classes)
    std::fprintf(out, "%-18s %10.3f %10.3f %+10.3f\n", c.name.c_str(), ms(c.a_ns), ms(c.b_ns), ms(c.delta_ns()));
  print_names(out, "changed most (time = count x mean)", d.changed);
  print_names(out, "added in B", d.added);
  print_names(out, "removed in B", d.removed);
  std::string app, dis;
  for (const auto& f : d.findings_appeared) app += (app.empty() ? "" : ", ") + f;
  for (const auto& f : d.findings_disappeared) dis += (dis.empty() ? "" : ", ") + f;
  std::fprintf(out, "\nfindings  appeared: %s   disappeared: %s\n", app.empty() ? "none" : app.c_str(),
               dis.empty() ? "none" : dis.c_str());
  for (const auto& n : d.notes) std::fprintf(out, "note: %s\n", n.c_str());
}

}  // namespace

int cmd_diff(int argc, char** argv) {
  std::string paths[2], json_out;
  int npaths = 0;
  prof::DiffOptions dopt;
  prof::AnalysisOptions aopt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto number = [&](double lo, double hi, double& v) -> bool {
      if (i + 1 >= argc) return false;
      const char* s = argv[++i];
      char* end = nullptr;
      errno = 0;
      v = std::strtod(s, &end);
      return end && !*end && end != s && !errno && v >= lo && v <= hi;
    };
    double v = 0;
    if (a == "--json") {
      if (i + 1 >= argc) return usage_error("--json needs a file name (or - for stdout)");
      json_out = argv[++i];
    } else if (a == "--top") {
      if (!number(1, 10000, v)) return usage_error("--top needs a count in [1, 10000]");
      dopt.top = static_cast<size_t>(v);
    } else if (a == "--min-gap-us") {
      if (!number(0, 1e9, v)) return usage_error("--min-gap-us needs microseconds in [0, 1e9]");
      aopt.min_gap_ns = static_cast<int64_t>(v * 1000.0);
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage_error("unknown option '" + a + "'");
    } else if (npaths < 2) {
      paths[npaths++] = a;
    } else {
      return usage_error("more than two traces given");
    }
  }
  if (npaths < 2) return usage_error("diff needs two traces");
  std::unique_ptr<prof::Trace> t[2];
  for (int k = 0; k < 2; ++k) {
    auto loaded = prof::load_trace(paths[k]);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tunebench-cli: error: %s: %s\n", paths[k].c_str(), loaded.error().to_string().c_str());
      return 2;
    }
    t[k] = std::move(loaded.value());
  }
  const prof::AnalysisResult ra = prof::analyze(*t[0], aopt), rb = prof::analyze(*t[1], aopt);
  const prof::TraceDiff d = prof::diff_traces(*t[0], ra, *t[1], rb, dopt);
  const bool json_stdout = json_out == "-";
  print(json_stdout ? stderr : stdout, paths[0], paths[1], d);
  if (json_out.empty()) return 0;
  const std::string json = prof::to_json(d);
  FILE* f = json_stdout ? stdout : std::fopen(json_out.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "tunebench-cli: error: cannot write '%s': %s\n", json_out.c_str(), std::strerror(errno));
    return 1;
  }
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size() && std::fputc('\n', f) != EOF;
  if ((!json_stdout && std::fclose(f) != 0) || !ok) {
    std::fprintf(stderr, "tunebench-cli: error: cannot write '%s'\n", json_out.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tb::cli
