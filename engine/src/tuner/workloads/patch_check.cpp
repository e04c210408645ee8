#include "engine/patch_check.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tb::engine {
namespace fs = std::filesystem;

namespace {

std::string fmt(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// The patched files written to a fresh temporary folder, removed again at the end.
struct Copies {
  fs::path dir;
  std::vector<std::pair<std::string, std::string>> sources;  // original, copy
  explicit Copies(const ScriptPatch& p) {
    std::string tmpl = (fs::temp_directory_path() / "tunebench-patch-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw TrialFailure("cannot make a folder for the patched copies", false);
    dir = tmpl;
    int n = 0;
    for (const auto& [path, text] : p.files) {
      const fs::path copy = dir / (std::to_string(n++) + "_" + fs::path(path).filename().string());
      std::ofstream f(copy, std::ios::binary);
      f << text;
      if (!f) throw TrialFailure("cannot write the patched copy " + copy.string(), false);
      sources.push_back({path, copy.string()});
    }
  }
  ~Copies() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

std::string PatchCheck::text() const {
  const std::string what = "the patched script against the original, each run plainly in fresh processes";
  if (verdict == "failed") return what + ": could not run: " + failure;
  if (verdict.empty()) return what + ": not measured";
  return what + ": " + estimate.text(2) + " (" + std::to_string(pairs) + " alternated pair" + (pairs == 1 ? "" : "s") +
         ", " + fmt(before, 1) + " -> " + fmt(after, 1) + " samples/s): " +
         (verdict == "faster" ? "faster" : verdict == "slower" ? "SLOWER" : "could not decide");
}

PatchCheck check_script_patch(Workload& w, const ScriptPatch& p, const PatchCheckOptions& o) {
  PatchCheck c;
  if (p.files.empty()) return c;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::vector<measure::Window> original, patched;
  try {
    const Copies copies(p);
    for (int i = 0; i < o.max_pairs; ++i) {
      if (i >= o.min_pairs) {
        const auto e = measure::paired_ratio(original, patched, nullptr, o.confidence);
        const bool decided = e.valid() && (e.lo > 1 || e.hi < 1.05);
        if (decided || (o.max_s > 0 && elapsed() + elapsed() / i > o.max_s)) break;
      }
      if (o.progress)
        o.progress("pair " + std::to_string(i + 1) + ": the original and the patched script, fresh processes");
      // AB, BA, ...: a drift of the machine cancels within a pair.
      for (int k = 0; k < 2; ++k) {
        const bool patched_arm = (k == 1) == (i % 2 == 0);
        auto win = w.measure_patched(patched_arm ? copies.sources : std::vector<std::pair<std::string, std::string>>{},
                                     o.steps);
        if (!win) return c;  // not a script
        (patched_arm ? patched : original).push_back(*win);
      }
    }
  } catch (const TrialFailure& f) {
    c.verdict = "failed";
    c.failure = f.what();
    c.seconds = elapsed();
    return c;
  }
  c.pairs = int(std::min(original.size(), patched.size()));
  c.estimate = measure::paired_ratio(original, patched, nullptr, o.confidence);
  c.before = measure::pooled_throughput(original);
  c.after = measure::pooled_throughput(patched);
  c.seconds = elapsed();
  c.verdict = c.estimate.faster() ? "faster" : c.estimate.slower() ? "slower" : "undecided";
  return c;
}

}  // namespace tb::engine
