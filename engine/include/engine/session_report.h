// The GUI's File ▸ Export: the tuner's report (engine/report.h) for a live session - the changes measured live
// (a toggle's before and after, an Auto-tune's own final alternation) and every tune since the window opened,
// each tune's report whole. Three renderings, like the tuner's: HTML (the same stylesheet and charts),
// Markdown and JSON.
//
// Input (the GUI writes it, ui/segments.h comparisonsJson; `tunebench-cli report --session IN.json`):
//   {"format":"tunebench-session-input", "versions", "device", "model", "data",
//    "first_config":{k:v}, "current_config":{k:v},
//    "comparisons":[{"change","changed":{k:v},"previous":{k:v},"source":"toggle"|"auto-tune","before","after",
//                    "ratio","ci95":[lo,hi],"method","verdict","n_before","n_after","data_wait_share_before",
//                    "data_wait_share_after","trust","decision","report_json"}],
//    "segments":[...], "tunes":[{"report_json","report_html","report_markdown"}], "failure"}
// Output JSON: {"format":"tunebench-session","version":1, the input's fields, "tunes":[each tune's report
// JSON (engine/report.h), or {"missing": path}], "code":{"pytorch","libtorch"}}.
// Torch-free.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tb::engine {

// Throws std::invalid_argument with a one-line message when `input` is not a session document.
std::string session_report_html(const nlohmann::json& input);
std::string session_report_markdown(const nlohmann::json& input);
nlohmann::json session_report_json(const nlohmann::json& input);

// Writes whichever paths are non-empty; throws std::runtime_error with a one-line message.
void write_session_report(const nlohmann::json& input, const std::string& html_path, const std::string& markdown_path,
                          const std::string& json_path);

}  // namespace tb::engine
