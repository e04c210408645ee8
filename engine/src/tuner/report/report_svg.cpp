// The tuning report's SVG charts (report_parts.h): plain SVG text, no scripts, well-formed XML.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tuner/report/report_parts.h"

namespace tb::engine::report_detail {
namespace {

// ----- SVG ----------------------------------------------------------------------------------------------

const char* kColors[] = {"#4e79a7", "#e15759", "#f28e2b", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"};

// TuneBench's own time in the GUI's teal wherever it is drawn; the program's parts in the palette's order.
std::string color_of_part(const std::string& part, size_t i) {
  return part == kProfilerPart ? "#4db6ac" : kColors[i % 9];
}

std::string color_of_outcome(const Trial& t) {
  if (t.accepted) return "#2e7d32";
  if (t.outcome == "slower") return "#c62828";
  if (t.outcome == "drift") return "#ef6c00";
  if (t.outcome == "dropped") return "#ad1457";
  if (t.outcome == "held") return "#2e7d32";
  if (t.outcome == "oom" || t.outcome == "failed") return "#6d4c41";
  return "#757575";
}

}  // namespace

// A label right-aligned at the chart's left edge, shortened to the room there (about 0.55 em a character) so
// that it does not run out of the picture: long ones ("all kept knobs + cpu_allocator=... (fresh processes)",
// a pair of knobs kept together) did. The tables have them whole.
std::string fit_label(std::string lbl, double room_px, double font_size) {
  const size_t room = static_cast<size_t>(room_px / (0.55 * font_size));
  if (lbl.size() <= room || room < 4) return lbl;
  size_t cut = room - 3;
  while (cut > 0 && (static_cast<unsigned char>(lbl[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return lbl.substr(0, cut) + "...";
}

std::string svg_open(int w, int h, const std::string& label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(w) + " " + std::to_string(h) +
         "\" width=\"100%\" role=\"img\" aria-label=\"" + esc(label) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
}

std::string svg_text(double x, double y, const std::string& s, const std::string& anchor, const std::string& extra) {
  return "<text x=\"" + fmt(x, 1) + "\" y=\"" + fmt(y, 1) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + esc(s) +
         "</text>\n";
}

std::string svg_rect(double x, double y, double w, double h, const std::string& fill, const std::string& title,
                     const std::string& extra) {
  std::string s = "<rect x=\"" + fmt(x, 1) + "\" y=\"" + fmt(y, 1) + "\" width=\"" + fmt(std::max(0.0, w), 1) +
                  "\" height=\"" + fmt(h, 1) + "\" fill=\"" + fill + "\"" + extra;
  if (title.empty()) return s + "/>\n";
  return s + "><title>" + esc(title) + "</title></rect>\n";
}

std::string svg_line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                     const std::string& extra) {
  return "<line x1=\"" + fmt(x1, 1) + "\" y1=\"" + fmt(y1, 1) + "\" x2=\"" + fmt(x2, 1) + "\" y2=\"" + fmt(y2, 1) +
         "\" stroke=\"" + stroke + "\" stroke-width=\"" + fmt(width, 1) + "\"" + extra + "/>\n";
}

// Waterfall: baseline, each accepted change (cumulative estimate), final measured.
std::string svg_waterfall(const TuneResult& r) {
  struct Row {
    std::string label;
    double from, to;
    bool total;
  };
  std::vector<Row> rows;
  const double base = r.baseline_throughput;
  if (!std::isfinite(base)) return "<p>No baseline measurement.</p>\n";
  rows.push_back({"baseline", 0, base, true});
  double prev = base;
  for (const auto& [label, tp] : r.waterfall) {
    rows.push_back({"+ " + label, prev, tp, false});
    prev = tp;
  }
  if (std::isfinite(r.final_throughput)) rows.push_back({"final (measured)", 0, r.final_throughput, true});
  double maxv = 0;
  for (const auto& row : rows) maxv = std::max({maxv, row.from, row.to});
  const int W = 640, left = 190, right = 80, rh = 26, top = 10;
  const int H = top + rh * static_cast<int>(rows.size()) + 24;
  const double sx = (W - left - right) / std::max(maxv, 1e-9);
  std::string s = svg_open(W, H, "throughput waterfall from the baseline to the final configuration");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const double y = top + rh * static_cast<double>(i);
    s += svg_text(left - 6, y + 17, fit_label(row.label, left - 8, 12), "end");
    const double a = std::min(row.from, row.to), b = std::max(row.from, row.to);
    const std::string fill = row.total ? "#4e79a7" : (row.to >= row.from ? "#59a14f" : "#e15759");
    s += svg_rect(left + a * sx, y + 4, (b - a) * sx, rh - 8, fill, row.label + ": " + fmt(row.to, 1) + " samples/s");
    s += svg_text(left + b * sx + 4, y + 17, fmt(row.to, 1));
    if (!row.total && i + 1 < rows.size())
      s += svg_line(left + row.to * sx, y + rh - 4, left + row.to * sx, y + rh + 4, "#999999", 1, " stroke-dasharray=\"2,2\"");
  }
  // From the left edge: at the bars' start the caption ran past the picture and was cut.
  s += svg_text(6, H - 6, "samples/s; middle rows: the measured baseline x each kept knob's ratio (estimates); final: measured",
            "start", " fill=\"#555555\" font-size=\"11\"");
  s += "</svg>\n";
  return s;
}

// Every trial's ratio with its interval on a log axis, 1 marked.
std::string svg_forest(const TuneResult& r) {
  std::vector<const Trial*> ts;
  for (const auto& t : r.trials)
    if (t.estimate.valid()) ts.push_back(&t);
  if (ts.empty()) return "<p>No trial produced a measurement.</p>\n";
  double lo = 0.8, hi = 1.25;
  for (auto* t : ts) {
    lo = std::min(lo, t->estimate.lo);
    hi = std::max(hi, t->estimate.hi);
  }
  lo = std::max(lo * 0.95, 0.05);
  hi = hi * 1.05;
  const int W = 640, left = 230, right = 20, rh = 20, top = 10;
  const int H = top + rh * static_cast<int>(ts.size()) + 36;
  const double l0 = std::log(lo), l1 = std::log(hi);
  auto X = [&](double v) { return left + (std::log(std::max(v, 1e-9)) - l0) / (l1 - l0) * (W - left - right); };
  std::string s = svg_open(W, H, "each trial: ratio after/before with its 95% interval");
  // Ticks at least kTickGap apart (a label is ~30 px wide at 10 px): 1 always, then the others by how round they
  // are, each only where it clears the ones drawn (a wide interval squeezed 0.80x 1.00x 1.25x 1.50x into one blot).
  constexpr double kTickGap = 40;
  std::vector<double> drawn;
  for (double tick : {1.0, 0.5, 2.0, 0.25, 5.0, 0.1, 10.0, 0.05, 20.0, 50.0, 100.0, 0.8, 1.25, 1.5, 3.0, 8.0}) {
    if (tick < lo || tick > hi) continue;
    if (std::any_of(drawn.begin(), drawn.end(), [&](double d) { return std::fabs(X(d) - X(tick)) < kTickGap; })) continue;
    drawn.push_back(tick);
    s += svg_line(X(tick), top, X(tick), H - 26, tick == 1.0 ? "#333333" : "#dddddd", tick == 1.0 ? 1.5 : 1);
    s += svg_text(X(tick), H - 12, fmt(tick, 2) + "x", "middle", " class=\"tick\" font-size=\"10\"");
  }
  for (size_t i = 0; i < ts.size(); ++i) {
    const Trial& t = *ts[i];
    const double y = top + rh * static_cast<double>(i) + rh / 2.0;
    const std::string c = color_of_outcome(t);
    s += svg_text(left - 6, y + 4, fit_label(trial_label(t) + " (" + t.phase + ")", left - 8, 11), "end", " font-size=\"11\"");
    s += svg_line(X(t.estimate.lo), y, X(t.estimate.hi), y, c, 2);
    s += "<circle cx=\"" + fmt(X(t.estimate.ratio), 1) + "\" cy=\"" + fmt(y, 1) + "\" r=\"4\" fill=\"" + c +
         "\"><title>" + esc(trial_label(t) + ": " + interval_text(t.estimate) + ", " + t.outcome) + "</title></circle>\n";
  }
  s += "</svg>\n";
  return s;
}

// Per-step breakdown of each snapshot, stacked.
std::string svg_breakdown(const TuneResult& r) {
  if (r.snapshots.empty()) return "<p>No trace was analysed.</p>\n";
  std::vector<std::string> parts;
  double maxv = 0;
  for (const auto& sn : r.snapshots) {
    double sum = 0;
    for (const auto& [p, v] : sn.breakdown_ms) {
      if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
      sum += std::max(0.0, v);
    }
    maxv = std::max({maxv, sum, sn.step_ms});
  }
  const int W = 640, left = 190, right = 70, rh = 26, top = 10;
  const int legend_rows = (static_cast<int>(parts.size()) + 3) / 4;
  const int H = top + rh * static_cast<int>(r.snapshots.size()) + 20 + 18 * legend_rows;
  const double sx = (W - left - right) / std::max(maxv, 1e-9);
  std::string s = svg_open(W, H, "per-step time breakdown at the baseline and after each accepted change");
  for (size_t i = 0; i < r.snapshots.size(); ++i) {
    const auto& sn = r.snapshots[i];
    const double y = top + rh * static_cast<double>(i);
    s += svg_text(left - 6, y + 17, fit_label(sn.label, left - 8, 12), "end");
    double x = left;
    for (const auto& [p, v] : sn.breakdown_ms) {
      size_t ci = std::find(parts.begin(), parts.end(), p) - parts.begin();
      const double w = std::max(0.0, v) * sx;
      s += svg_rect(x, y + 4, w, rh - 8, color_of_part(p, ci), sn.label + ": " + p + " " + fmt(v, 2) + " ms");
      x += w;
    }
    s += svg_text(x + 4, y + 17, fmt(sn.step_ms, 1) + " ms");
  }
  const double ly = top + rh * static_cast<double>(r.snapshots.size()) + 8;
  for (size_t i = 0; i < parts.size(); ++i) {
    const double x = left + 110.0 * static_cast<double>(i % 4);
    const double y = ly + 18.0 * static_cast<double>(i / 4);
    s += svg_rect(x, y, 10, 10, color_of_part(parts[i], i));
    s += svg_text(x + 14, y + 9, parts[i], "start", " font-size=\"11\"");
  }
  s += "</svg>\n";
  return s;
}

std::string svg_stall(const TuneResult& r) {
  if (r.snapshots.empty()) return "";
  const Snapshot& a = r.snapshots.front();
  const Snapshot& b = r.snapshots.back();
  // Nothing to draw for stalls below what the text shows (a "0.0 ms" bar drawn full width, as it was, reads
  // as the biggest stall); the scale starts at 1 ms so that sub-millisecond stalls stay short.
  if (a.worst_stall_ms < 0.05 && b.worst_stall_ms < 0.05)
    return "<p>No stall at the baseline or the final configuration (under 0.05 ms).</p>\n";
  const double maxv = std::max({a.worst_stall_ms, b.worst_stall_ms, 1.0});
  const int W = 640, left = 190, right = 170, top = 10, rh = 28;
  std::string s = svg_open(W, top + 2 * rh + 8, "the worst single stall before and after tuning");
  int i = 0;
  for (const Snapshot* sn : {&a, &b}) {
    const double y = top + rh * i++;
    s += svg_text(left - 6, y + 18, fit_label(i == 1 ? "baseline" : "final (" + sn->label + ")", left - 8, 12), "end");
    const double w = sn->worst_stall_ms / maxv * (W - left - right);
    s += svg_rect(left, y + 4, w, rh - 8, i == 1 ? "#e15759" : "#59a14f");
    s += svg_text(left + w + 4, y + 18, fmt(sn->worst_stall_ms, 1) + " ms " + sn->worst_stall_kind);
  }
  s += "</svg>\n";
  return s;
}

}  // namespace tb::engine::report_detail
