// The tuning report's shared pieces (private to the tuner): number and text formatting used by the HTML,
// Markdown and JSON writers (report.cpp) and the SVG charts (report_svg.cpp), and the charts themselves.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/xml.h"
#include "engine/tuner.h"

namespace tb::engine::report_detail {

// A string field of `j` ("unknown" when missing or not a string).
inline std::string jstr(const nlohmann::json& j, const char* key, const std::string& dflt = "unknown") {
  if (j.is_object() && j.contains(key)) {
    const auto& v = j[key];
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_null()) return v.dump();
  }
  return dflt;
}

// The catalog entry of a knob the tune screened (nullptr when it screened no such knob).
inline const KnobInfo* info_of(const TuneResult& r, const std::string& id) {
  for (const auto& k : r.knobs)
    if (k.info.id == id) return &k.info;
  return nullptr;
}

// A knob's value in `c` ("" when unset).
// A figure for the JSON outputs: null where it is not a number (never NaN, which JSON has not).
inline nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

inline std::string value_in(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it == c.end() ? std::string() : it->second;
}

inline std::string fmt(double v, int prec = 2) {
  if (!std::isfinite(v)) return "n/a";
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(prec);
  s << v;
  return s.str();
}

// Escaped for XML text and attribute values (base/xml.h).
inline std::string esc(const std::string& s) { return xml_escape(s); }
// Escaped, with a break opportunity (<wbr/>) after each `=`, `_` and `,`: a configuration's knob names are long
// words ("anomaly_detection=off,") that would hold a table column wide.
inline std::string breakable(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += esc(std::string(1, c));
    if (c == '=' || c == '_' || c == ',') out += "<wbr/>";
  }
  return out;
}

inline std::string trial_label(const Trial& t) {
  if (t.phase == "noise floor") return "A/A (baseline vs baseline)";
  if (t.knob.empty()) return std::string("final vs baseline") + (t.fresh_processes ? " (fresh processes)" : "");
  return t.knob + "=" + t.value + (t.also.empty() ? "" : " + " + t.also);
}

inline std::string interval_text(const RatioEstimate& e) { return e.text(3); }

inline std::string gib_text(int64_t b) { return fmt(double(b) / double(int64_t(1) << 30), 2); }

// A trial's peak memory per step, before → after ("9.81 → 5.20 GiB"; one side when only one was measured,
// "" when neither): what a change costs in memory beside what it gains in speed.
inline std::string memory_text(const Trial& t) {
  if (t.peak_before < 0 && t.peak_after < 0) return "";
  if (t.peak_after < 0) return gib_text(t.peak_before) + " GiB → ?";
  if (t.peak_before < 0) return "? → " + gib_text(t.peak_after) + " GiB";
  return gib_text(t.peak_before) + " → " + gib_text(t.peak_after) + " GiB";
}

// The headline's memory: "peak per step 9.81 GiB (baseline) → 5.20 GiB (final) of 79.10 GiB" from the last
// final-vs-baseline trial that measured both sides; "" when none did.
inline std::string memory_headline(const TuneResult& r) {
  for (auto it = r.trials.rbegin(); it != r.trials.rend(); ++it) {
    if (!it->knob.empty() || it->phase == "noise floor" || it->peak_before < 0 || it->peak_after < 0) continue;
    return "peak per step " + gib_text(it->peak_before) + " GiB (baseline) → " + gib_text(it->peak_after) +
           " GiB (final)" + (it->memory_total > 0 ? " of the device's " + gib_text(it->memory_total) + " GiB" : "");
  }
  return "";
}

// The tuning report's stylesheet and its UTC time stamp (report.cpp): the session report (report_session.cpp)
// looks the same.
const char* report_css();
std::string report_time_utc();
// "workers=2, amp=bf16": the knobs of `c` that differ from `base`, or "(the baseline)".
std::string config_text_of(const Config& base, const Config& c);
// Writes `content` to `path` ("" : nothing); throws std::runtime_error with a one-line message.
void write_report_file(const std::string& path, const std::string& content);

// The charts' SVG pieces (report_svg.cpp), for every picture a report draws. A label shortened to `room_px` at
// about 0.55 em a character, with "..." (a table or a tooltip has it whole).
std::string fit_label(std::string lbl, double room_px, double font_size);
std::string svg_open(int w, int h, const std::string& label);
std::string svg_text(double x, double y, const std::string& s, const std::string& anchor = "start",
                     const std::string& extra = "");
// A filled rectangle; with a `title`, the browser's tooltip over it; `extra`: more attributes (" class=\"...\"").
std::string svg_rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "",
                     const std::string& extra = "");
std::string svg_line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
                     const std::string& extra = "");

// The report's charts, each one self-contained <svg> (or a one-line <p> when there is nothing to draw).
std::string svg_waterfall(const TuneResult& r);  // baseline, each kept knob (estimated), final (measured)
std::string svg_forest(const TuneResult& r);     // every trial's ratio with its interval, log axis
std::string svg_breakdown(const TuneResult& r);  // per-step time split of each snapshot
std::string svg_stall(const TuneResult& r);      // the worst stall at the baseline and the final

}  // namespace tb::engine::report_detail
