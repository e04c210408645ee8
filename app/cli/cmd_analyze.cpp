// tunebench-cli analyze TRACE [TRACE ...] [--json OUT.json] [--min-gap-us N] [--device N]
// Several files, or one file holding several processes with steps: the ranks of a data-parallel job, compared
// after the first one's analysis (profiler/ranks.h: each rank's step time, the straggler).
// Reads our traces, Chrome trace JSON and Kineto traces (.json / .json.gz), prints a readable summary and
// optionally the analysis as JSON ("-" = stdout). Exit 0 ok, 1 cannot write the output, 2 bad input.
#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "analyze_print.h"
#include "client/loader_findings.h"
#include "client/loader_verdict.h"
#include "commands.h"
#include "profiler/analysis.h"
#include "profiler/ranks.h"
#include "profiler/trace_io.h"

namespace tb::cli {
namespace {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  std::fprintf(stderr, "usage: tunebench-cli analyze TRACE [TRACE...] [--json OUT.json] [--min-gap-us N] [--device N]\n");
  return 2;
}

std::string basename_of(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

int cmd_analyze(int argc, char** argv) {
  std::string path, json_out;
  std::vector<std::string> more;  // the other ranks' files
  prof::AnalysisOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      if (i + 1 >= argc) return usage_error("--json needs a file name (or - for stdout)");
      json_out = argv[++i];
    } else if (a == "--min-gap-us") {
      if (i + 1 >= argc) return usage_error("--min-gap-us needs a number");
      const char* v = argv[++i];
      char* end = nullptr;
      errno = 0;
      const double us = std::strtod(v, &end);
      if (!end || *end || end == v || errno || !std::isfinite(us) || us < 0 || us > 1e9)
        return usage_error(std::string("--min-gap-us: not a number of microseconds in [0, 1e9]: '") + v + "'");
      opt.min_gap_ns = static_cast<int64_t>(std::llround(us * 1000.0));
    } else if (a == "--device") {
      if (i + 1 >= argc) return usage_error("--device needs a GPU device number");
      const char* v = argv[++i];
      char* end = nullptr;
      errno = 0;
      const long long d = std::strtoll(v, &end, 10);
      if (!end || *end || end == v || errno || d < 0 || d > 1000000)
        return usage_error(std::string("--device: not a device number: '") + v + "'");
      opt.device = d;
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: tunebench-cli analyze TRACE [TRACE...] [--json OUT.json] [--min-gap-us N] [--device N]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage_error("unknown option '" + a + "'");
    } else if (path.empty()) {
      path = a;
    } else {
      more.push_back(a);
    }
  }
  if (path.empty()) return usage_error("no trace given");
  auto loaded = prof::load_trace(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "tunebench-cli: error: %s: %s\n", path.c_str(), loaded.error().to_string().c_str());
    return 2;
  }
  const prof::Trace& trace = *loaded.value();
  prof::AnalysisResult r = prof::analyze(trace, opt);
  const bool json_stdout = json_out == "-";
  // A script's run traced with its loader timed: the verdict it printed, as it printed it; its model is what the
  // loader-stall finding says too (client/loader_findings.h).
  const auto loader_doc = trace.meta().documents.find("loader");
  client::LoaderVerdict loader =
      client::LoaderVerdict::from_text(loader_doc == trace.meta().documents.end() ? "" : loader_doc->second);
  loader.add_trace_transfer(r.input_copy_ns(), r.own_ns());  // a trace written before runs took it from theirs
  client::apply_loader_verdict(loader, r.findings);
  print_summary(trace, r, json_stdout ? stderr : stdout);
  for (const std::string& line : loader.lines()) std::fprintf(json_stdout ? stderr : stdout, "%s\n", line.c_str());
  // The ranks: other files, else the other processes of this one.
  std::vector<prof::AnalysisResult> per_rank;
  std::vector<std::string> labels;
  if (!more.empty()) {
    per_rank.push_back(r);
    labels.push_back(basename_of(path));
    for (const std::string& p : more) {
      auto other = prof::load_trace(p);
      if (!other.ok()) {
        std::fprintf(stderr, "tunebench-cli: error: %s: %s\n", p.c_str(), other.error().to_string().c_str());
        return 2;
      }
      per_rank.push_back(prof::analyze(*other.value(), opt));
      labels.push_back(basename_of(p));
    }
  } else if (const auto pids = prof::processes_with_steps(trace); pids.size() > 1) {
    for (int64_t pid : pids) {
      prof::AnalysisOptions o = opt;
      o.pid = pid;
      per_rank.push_back(prof::analyze(trace, o));
      labels.push_back(prof::process_label(trace.meta(), pid));
    }
  }
  std::string ranks_json;
  if (!per_rank.empty()) {
    const prof::RankAnalysis ra = prof::analyze_ranks(per_rank, labels, opt);
    print_ranks(ra, json_stdout ? stderr : stdout);
    ranks_json = prof::to_json(ra);
  }
  if (!json_out.empty()) {
    std::string json = prof::to_json(r, &trace.meta());
    if (!ranks_json.empty() && !json.empty() && json.back() == '}') json.insert(json.size() - 1, ",\"ranks\":" + ranks_json);
    if (loader.valid && !json.empty() && json.back() == '}') json.insert(json.size() - 1, ",\"loader\":" + loader.to_json().dump());
    if (json_stdout) {
      std::fwrite(json.data(), 1, json.size(), stdout);
      std::fputc('\n', stdout);
    } else {
      FILE* f = std::fopen(json_out.c_str(), "wb");
      if (!f) {
        std::fprintf(stderr, "tunebench-cli: error: cannot write '%s': %s\n", json_out.c_str(), std::strerror(errno));
        return 1;
      }
      const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size() && std::fputc('\n', f) != EOF;
      if (std::fclose(f) != 0 || !ok) {
        std::fprintf(stderr, "tunebench-cli: error: cannot write '%s'\n", json_out.c_str());
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace tb::cli
