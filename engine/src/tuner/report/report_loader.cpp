// The loader verdict's picture in a report (report_loader.h): the GUI's Loader tab (ui/src/loader_view.cpp) laid out
// in SVG. No text is measured here, so every width is an estimate on the generous side (kEm), and what could run
// into its neighbour is shortened to its room (its tooltip has it whole).
#include "tuner/report/report_loader.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tuner/report/report_parts.h"

namespace tb::engine::report_detail {
namespace {

using client::LoaderPicture;

constexpr int kW = 900;           // the pictures' width: the report's column is ~930 px wide at 1000 px
constexpr double kFont = 13;      // a little over the charts' 12: this picture is drawn near its own size, not scaled up
constexpr double kEm = 0.62;      // a character's width in em: DejaVu Sans, Chromium's sans-serif on Linux, is wide
constexpr double kRow = 22;       // a part's or a rate's row
constexpr double kBar = 14;       // a part's or a rate's bar
constexpr double kStack = 18;     // the life bar
constexpr double kLine = 18;      // a legend's or a mark's line of text
constexpr double kTextGap = 6;    // between a bar and its words
constexpr const char* kInk = "#222222";  // the page's text colour (report_css)

size_t code_points(const std::string& s) {
  return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}
double width_of(const std::string& s) { return double(code_points(s)) * kEm * kFont; }

// `s` shortened to `room` px with "..." (not inside a UTF-8 character).
std::string fit(const std::string& s, double room) {
  if (width_of(s) <= room) return s;
  std::string cut = s;
  while (!cut.empty() && width_of(cut + "...") > room) {
    // One whole character off the end: its continuation bytes, then its first.
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80) cut.pop_back();
    if (!cut.empty()) cut.pop_back();
  }
  return cut.empty() ? std::string() : cut + "...";
}

std::string rate_value(double sps) { return client::picture_number(sps, 0) + "/s"; }

std::string cls(const char* c) { return std::string(" class=\"") + c + "\""; }

// The label column, shared by the parts and the rates as in the tab: as wide as the longest label (a rate's with
// its figure at the right), at most a third of the width.
double label_width(const LoaderPicture& pic) {
  double w = 0;
  for (const auto& b : pic.parts) w = std::max(w, width_of(b.label));
  for (const auto& r : pic.rates) w = std::max(w, width_of(r.label) + 12 + width_of(rate_value(r.sps)));
  return std::clamp(w + 10, 60.0, kW / 3.0);
}

// The charts' <svg>, in this picture's font size.
std::string open_svg(int h, const std::string& label) {
  std::string s = svg_open(kW, h, label);
  const std::string charts = "font-size=\"12\"";
  const auto at = s.find(charts);
  return at == std::string::npos ? s : s.replace(at, charts.size(), "font-size=\"" + fmt(kFont, 0) + "\"");
}

std::string section_title(const std::string& t) { return "<p class=\"loader-title\"><strong>" + esc(t) + "</strong></p>\n"; }

std::string svg_parts(const LoaderPicture& pic, double lw) {
  double vw = 0, longest = 0;
  for (const auto& b : pic.parts) vw = std::max(vw, width_of(b.value)), longest = std::max(longest, b.length);
  const double span = std::max(10.0, kW - lw - vw - kTextGap - 2);
  const int h = int(std::ceil(kRow * double(pic.parts.size()) + 4));
  std::string s = open_svg(h, pic.parts_title);
  double y = 0;
  for (const auto& b : pic.parts) {
    // Proportional to a sample's cost; the shortest still shows (as the tab's 2 px).
    const double len = longest > 0 ? std::max(2.0, span * b.length / longest) : 2.0;
    s += svg_text(0, y + 15, fit(b.label, lw - kTextGap), "start", cls("loader-label"));
    s += svg_rect(lw, y + (kRow - kBar) / 2, len, kBar, client::kLoaderPartColour, b.tip, cls("loader-part"));
    s += svg_text(lw + len + kTextGap, y + 15, b.value, "start", cls("loader-label"));
    y += kRow;
  }
  return s + "</svg>\n";
}

std::string svg_time(const LoaderPicture& pic) {
  // The legend first, to know the picture's height: each slice that takes time, wrapping as the width needs.
  struct Item {
    const client::LoaderSlice* slice;
    std::string text;
    double x, y;
  };
  std::vector<Item> legend;
  double lx = 0, ly = kStack + 6;
  for (const auto& sl : pic.time) {
    if (sl.share <= 0) continue;
    const std::string t = sl.label + " " + client::picture_number(100 * sl.share, 0) + "%";
    const double w = 14 + width_of(t) + 14;
    if (lx > 0 && lx + w > kW) lx = 0, ly += kLine;
    legend.push_back({&sl, t, lx, ly});
    lx += w;
  }
  std::string s = open_svg(int(std::ceil(ly + kLine + 2)), pic.time_title);
  // Each slice from the rounded edges of the ones before it: the slices tile the bar exactly.
  double sum = 0, x = 0;
  for (const auto& sl : pic.time) {
    sum += std::max(0.0, sl.share);
    const double next = std::round(10 * kW * std::min(1.0, sum)) / 10;
    if (next > x) s += svg_rect(x, 0, next - x, kStack, sl.colour, sl.tip, cls("loader-slice"));
    x = std::max(x, next);
  }
  s += "<rect x=\"0.5\" y=\"0.5\" width=\"" + fmt(kW - 1, 1) + "\" height=\"" + fmt(kStack - 1, 1) +
       "\" fill=\"none\" stroke=\"#999999\" class=\"loader-life\"/>\n";
  for (const auto& it : legend) {
    s += "<g class=\"loader-legend\"><title>" + esc(it.slice->tip) + "</title>\n";
    s += svg_rect(it.x, it.y + 3, 10, 10, it.slice->colour);
    s += svg_text(it.x + 14, it.y + 12, it.text, "start", cls("loader-label")) + "</g>\n";
  }
  return s + "</svg>\n";
}

// The marks' labels on one line: each centred under its mark, or beside it (right of its line, left of it), so that
// no two touch, none leaves the picture and none lies under another mark's line (which would seem to point at it:
// the model's rate and the run's are often a few pixels apart). The labels' left edges; empty when no choice fits.
std::vector<double> mark_lefts(const std::vector<double>& xs, const std::vector<double>& tws) {
  const size_t n = xs.size();
  if (n == 0 || n > 4) return {};
  size_t choices = 1;
  for (size_t i = 0; i < n; ++i) choices *= 3;
  for (size_t c = 0; c < choices; ++c) {
    std::vector<double> l(n);
    for (size_t i = 0, k = c; i < n; ++i, k /= 3)
      l[i] = k % 3 == 0 ? xs[i] - tws[i] / 2 : k % 3 == 1 ? xs[i] + 4 : xs[i] - 4 - tws[i];
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      ok = l[i] >= 0 && l[i] + tws[i] <= kW;
      for (size_t j = 0; j < n && ok; ++j) {
        if (j == i) continue;
        ok = !(xs[j] > l[i] - 4 && xs[j] < l[i] + tws[i] + 4) && (l[j] >= l[i] + tws[i] + 12 || l[i] >= l[j] + tws[j] + 12);
      }
    }
    if (ok) return l;
  }
  return {};
}

std::string svg_rates(const LoaderPicture& pic, double lw) {
  double top = 0;
  for (const auto& r : pic.rates) top = std::max(top, r.sps);
  for (const auto& m : pic.marks) top = std::max(top, m.sps);
  const double span = std::max(10.0, kW - lw - 4);
  auto at = [&](double sps) { return top > 0 ? lw + span * sps / top : lw; };
  std::string bars;
  double y = 0;
  for (const auto& r : pic.rates) {
    const std::string v = rate_value(r.sps);
    bars += svg_text(0, y + 15, fit(r.label, std::max(0.0, lw - kTextGap - width_of(v) - 8)), "start", cls("loader-label"));
    bars += svg_text(lw - kTextGap, y + 15, v, "end", cls("loader-label"));
    bars += svg_rect(lw, y + (kRow - kBar) / 2, std::max(2.0, at(r.sps) - lw), kBar, r.colour, r.tip, cls("loader-rate"));
    y += kRow;
  }
  // The marks run across the bars down to their labels, all on one line where they fit (mark_lefts); else, as the
  // tab does, a label that would touch the one before it goes a line lower.
  std::vector<double> xs, tws;
  for (const auto& m : pic.marks) xs.push_back(at(m.sps)), tws.push_back(width_of(m.label));
  std::vector<double> lefts = mark_lefts(xs, tws);
  const bool one_line = !lefts.empty() || xs.empty();
  std::vector<double> rows;  // each label row's right edge so far
  std::string marks;
  double bottom = y;
  for (size_t i = 0; i < pic.marks.size(); ++i) {
    const auto& m = pic.marks[i];
    const double x = xs[i], tw = tws[i];
    const double left = one_line ? lefts[i] : std::clamp(x - tw / 2, 0.0, std::max(0.0, kW - tw));
    size_t row = 0;
    while (!one_line && row < rows.size() && rows[row] + 12 > left) ++row;
    if (row == rows.size()) rows.push_back(0);
    rows[row] = left + tw;
    const double ly = y + 4 + double(row) * kLine;
    marks += "<g class=\"loader-mark\"><title>" + esc(m.tip) + "</title>\n";
    marks += svg_line(x, 1, x, ly + 2, m.colour.empty() ? kInk : m.colour, 1.5,
                      m.dashed ? " stroke-dasharray=\"4,3\"" : "");
    // A halo: where a lower label's line must cross a label above it, the words stay legible.
    marks += svg_text(left, ly + 14, m.label, "start",
                      cls("loader-label") + " stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"") + "</g>\n";
    bottom = std::max(bottom, ly + kLine);
  }
  return open_svg(int(std::ceil(bottom + 2)), pic.rates_title) + bars + marks + "</svg>\n";
}

std::string advice_html(const client::LoaderVerdict& v) {
  const std::string line = client::loader_advice_line(v);
  // The switch in bold, then why and its bound, as the tab writes it.
  const auto colon = line.find(": ");
  if (colon == std::string::npos) return "<p class=\"loader-advice\">" + esc(line) + "</p>\n";
  return "<p class=\"loader-advice\"><strong>" + esc(line.substr(0, colon)) + "</strong>" + esc(line.substr(colon)) +
         "</p>\n";
}

std::string without_prefix(const std::string& l) { return l.rfind("loader: ", 0) == 0 ? l.substr(8) : l; }

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return o;
}

client::LoaderVerdict baseline_verdict(const TuneResult& r) {
  return r.snapshots.empty() ? client::LoaderVerdict{} : client::LoaderVerdict::from_json(r.snapshots.front().loader);
}
constexpr const char* kTuneNote =
    "At the baseline, over its snapshot's steps: the loader's timed parts, as the window's Loader tab draws them.";

}  // namespace

std::string loader_picture_html(const LoaderPicture& pic) {
  if (pic.empty()) return {};
  const double lw = label_width(pic);
  std::string h = "<div class=\"loader-picture\">\n";
  if (!pic.parts.empty()) h += section_title(pic.parts_title) + svg_parts(pic, lw);
  if (!pic.time.empty()) h += section_title(pic.time_title) + svg_time(pic);
  if (!pic.rates_title.empty()) h += section_title(pic.rates_title) + svg_rates(pic, lw);
  return h + "</div>\n";
}

std::string loader_section_html(const client::LoaderVerdict& v, const std::string& note) {
  if (!v.valid) return {};
  std::string h = "<h2>Why the loader is slow</h2>\n";
  if (!note.empty()) h += "<p class=\"muted\">" + esc(note) + "</p>\n";
  h += advice_html(v) + loader_picture_html(client::loader_picture(v));
  h += "<details><summary>Details</summary>\n<ul>\n";
  for (const auto& l : v.lines()) h += "<li>" + esc(without_prefix(l)) + "</li>\n";
  h += "</ul>\n<div class=\"scroll\"><table>\n<thead><tr><th>part</th><th>ms</th><th>per</th><th>% of the loading</th>"
       "<th>where</th></tr></thead>\n<tbody>\n";
  for (const auto& p : v.parts)
    h += "<tr><td>" + esc(p.name) + "</td><td class=\"n\">" + esc(fmt(p.ms, 2)) + "</td><td>" +
         (p.per_batch ? "batch" : "sample") + "</td><td class=\"n\">" + esc(fmt(100 * p.share, 1)) + "</td><td>" +
         esc(p.where) + "</td></tr>\n";
  return h + "</tbody></table></div>\n</details>\n";
}

std::string loader_section_markdown(const client::LoaderVerdict& v, const std::string& note) {
  if (!v.valid) return {};
  const LoaderPicture pic = client::loader_picture(v);
  std::string m = "\n## Why the loader is slow\n\n";
  if (!note.empty()) m += note + "\n\n";
  m += client::loader_advice_line(v) + "\n\n";
  m += pic.parts_title + ":\n\n| part | ms | per | % of the loading | where |\n|---|---:|---|---:|---|\n";
  for (const auto& p : v.parts)
    m += "| " + md_cell(p.name) + " | " + fmt(p.ms, 2) + " | " + (p.per_batch ? "batch" : "sample") + " | " +
         fmt(100 * p.share, 1) + " | " + md_cell(p.where) + " |\n";
  if (!pic.time.empty()) {
    m += "\n" + pic.time_title + ":";
    const char* sep = " ";
    for (const auto& s : pic.time) {
      if (s.share <= 0) continue;
      m += sep + s.label + " " + client::picture_number(100 * s.share, 0) + "%";
      sep = " · ";
    }
    m += "\n";
  }
  if (!pic.rates_title.empty()) {
    m += "\n" + pic.rates_title + ":";
    const char* sep = " ";
    for (const auto& r : pic.rates) m += sep + r.label + ": " + rate_value(r.sps), sep = " · ";
    for (const auto& k : pic.marks) m += sep + k.label, sep = " · ";
    m += "\n";
  }
  m += "\n<details><summary>Details</summary>\n\n";
  for (const auto& l : v.lines()) m += "- " + without_prefix(l) + "\n";
  return m + "\n</details>\n";
}

std::string tune_loader_html(const TuneResult& r) { return loader_section_html(baseline_verdict(r), kTuneNote); }
std::string tune_loader_markdown(const TuneResult& r) { return loader_section_markdown(baseline_verdict(r), kTuneNote); }

}  // namespace tb::engine::report_detail
