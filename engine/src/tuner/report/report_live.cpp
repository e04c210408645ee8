// The report of an Auto-tune asked of a live serve (engine/report.h write_live_tune_report).
#include <unistd.h>

#include <filesystem>

#include "engine/report.h"

namespace tb::engine {

nlohmann::json write_live_tune_report(const TuneResult& result, const std::string& report_dir,
                                      const std::string& trace_dir, int index) {
  namespace fs = std::filesystem;
  const fs::path dir = !report_dir.empty() ? fs::path(report_dir)
                       : !trace_dir.empty() ? fs::path(trace_dir)
                                            : fs::temp_directory_path() / ("tunebench-tune-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string stem = (dir / ("tune-" + std::to_string(index))).string();
  write_report(result, stem + ".html", stem + ".md", stem + ".json");
  return tune_done_message(result, stem + ".html", stem + ".md", stem + ".json");
}

}  // namespace tb::engine
