// The tuning report (docs/tuning.md): what was slow, what each switch did with its interval, what to keep, and the
// code that keeps it. Three renderings of one TuneResult (engine/tuner.h):
// - HTML: one self-contained file (inline CSS and SVG charts, no scripts, no external resources) that
//   reads on a phone (fluid layout, tables scroll sideways) and prints (light colours, no broken rows). It is
//   well-formed XML (void elements self-closed, every attribute quoted, text escaped) so tools and tests can
//   parse it back.
// - Markdown: the same sections as tables, for pasting into an issue or a chat.
// - JSON: the machine-readable record. Schema (numbers that do not exist are null):
//     {"format":"tunebench-tune", "version":1, "unit":"samples/s", "environment":{...},
//      "baseline_config":{k:v}, "final_config":{k:v}, "changed":{k:v},
//      "speedup":x, "speedup_ci":[lo,hi], "speedup_method":"...", "speedup_fresh_processes":bool,
//      "speedup_in_process":{"ratio","ci"}, "baseline_throughput":x, "final_throughput":x,
//      "noise_floor":{"sd_log","df","pairs","bias","band"}, "noise":{"verdict","text","cv","drift","windows"},
//      "baselines":[{"phase","throughput","windows","at_s"}], "drift_note":"...",
//      "budget_s":x, "elapsed_s":x, "window":n,
//      "trials":[{"phase","knob","value","also","from","reference","before","after","ratio","ci_low","ci_high",
//                 "method","fresh_processes","windows_before":[x],"windows_after":[x],
//                 "accepted","outcome","reason","loss_drift","window","rounds","seconds"}],
//      "skipped":[{"knob","value","reason"}], "waterfall":[{"label","throughput"}],
//      "snapshots":[{"label","throughput","step_ms","bottleneck","worst_stall_ms","worst_stall_kind",
//                    "breakdown_ms":{part:ms}, "findings":[...], "loader":{...} where the loader timed its parts
//                    (client::LoaderVerdict::to_json(); the HTML and Markdown draw the baseline's)}],
//      "code":{"pytorch":"...","libtorch":"..."}, "notes":[...]}
// Torch-free; pure functions of the result except write_report().
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/tuner.h"

namespace tb::engine {

// The headline of a tune, one for every output (the terminal, the HTML and Markdown reports, the GUI's summary
// through tune_done): what the tune can claim. "Too noisy to tune here" is not "No change beat the baseline":
// the first says the trials could not tell, the second that they told and nothing paid.
struct Headline {
  std::string kind;   // "faster", "undecided", "too_noisy", "nothing_measured", "none"
  std::string title;  // "1.54x faster", "Too noisy to tune here: ±159% a trial", "No change beat the baseline"
  bool good = false;  // a confirmed gain (the reports draw it green; everything else neutral)
};
Headline tune_headline(const TuneResult& result);
// The same in a line of the terminal's (and the tuner's last progress message): lower-case first.
std::string headline_line(const TuneResult& result);

std::string report_html(const TuneResult& result);
std::string report_markdown(const TuneResult& result);
nlohmann::json report_json(const TuneResult& result);

// The code that applies the final configuration (only the knobs that differ from the baseline), from the
// knob catalog's snippets with the found values filled in.
std::string final_code_pytorch(const TuneResult& result);
std::string final_code_libtorch(const TuneResult& result);

// What `serve` sends the GUI when an Auto-tune ends (protocol message "tune_done", docs/protocol.md): the
// headline with its interval and how it was measured, the knobs kept, the budget used, and when the tune
// ended well before its budget, why ("every applicable knob was tried ..."), so a dialog can say it.
nlohmann::json tune_done_message(const TuneResult& result, const std::string& html_path,
                                 const std::string& markdown_path, const std::string& json_path);

// An Auto-tune asked of a live `serve` (the engine's or a script's): writes its report as tune-<index>.html,
// .md and .json into `report_dir` (the parent's; it removes it), else `trace_dir`, else
// $TMPDIR/tunebench-tune-<pid>, and returns the tune_done message that names them. Throws like write_report.
nlohmann::json write_live_tune_report(const TuneResult& result, const std::string& report_dir,
                                      const std::string& trace_dir, int index);

// Writes whichever paths are non-empty. Throws std::runtime_error with a one-line message when a file
// cannot be written.
void write_report(const TuneResult& result, const std::string& html_path, const std::string& markdown_path,
                  const std::string& json_path);

}  // namespace tb::engine
