// The loader verdict as a picture, for a user who would rather look than read eight sentences: where a sample's
// time goes (a bar a part, costliest first), what the loading processes do with their time (one stacked bar: on
// the CPU, waiting for a CPU, on reads or sleeps, idle), and what the loaders supply now and with the advised
// workers against what the model takes and what the run measured. Above it, one line: the switch
// (LoaderVerdict::advice, the same one every voice gives) and its bound. One model for every renderer: the GUI's
// Loader tab (ui/loader_view.h) and the reports' SVG (engine/src/tuner/report/report_loader.h) draw these bars,
// words and tooltips and compute none of their own. No Qt: texts are UTF-8, colours "#rrggbb".
#pragma once

#include <string>
#include <vector>

#include "client/loader_verdict.h"

namespace tb::client {

// The colour of every part's bar: the timeline's loader-stall red.
inline constexpr const char* kLoaderPartColour = "#d9534f";

// One part's bar. `length` is its cost a sample in ms (collate's time a batch spread over the batch's samples,
// so that every bar shares one scale); `value` is what is written beside it, in the part's own unit.
struct LoaderPartBar {
  std::string label, value, tip;
  double length = 0;
};

// A slice of the loading processes' time, `share` of the bar (the slices sum to 1).
struct LoaderSlice {
  std::string label, tip;
  double share = 0;
  std::string colour;  // "#rrggbb"
};

// A rate in samples/s: a bar (what the loaders supply) or a mark across the bars (what the model takes, what
// the run measured).
struct LoaderRate {
  std::string label, tip;
  double sps = 0;
  std::string colour;   // "#rrggbb" for a bar; "" for a mark, drawn in the text's colour
  bool dashed = false;  // marks only
};

struct LoaderPicture {
  std::string parts_title, time_title, rates_title;
  std::vector<LoaderPartBar> parts;  // the verdict's order: costliest first
  std::vector<LoaderSlice> time;     // empty when the verdict has no busy time to split
  std::vector<LoaderRate> rates;     // supply now, and with the advised workers when the switch is theirs
  std::vector<LoaderRate> marks;     // the model's rate and the run's, where measured
  bool empty() const { return parts.empty() && time.empty() && rates.empty(); }
};

// The picture of a verdict; empty for an invalid one.
LoaderPicture loader_picture(const LoaderVerdict& v);
// What to change, in one line: "workers=2: <why>; at most 1.23x this run's throughput", or "no loader switch:
// <why>; ...". Empty for an invalid verdict.
std::string loader_advice_line(const LoaderVerdict& v);
// What the loaders would supply with the advised switch (samples/s), the figure the advice's `why` states;
// 0 when the switch is not the workers'.
double advised_supply(const LoaderVerdict& v);
// A figure with `decimals` after the point as the picture writes it: ties away from zero, no "-0" (the GUI's
// figures were Qt's, and the reports must say the same digits).
std::string picture_number(double v, int decimals);

}  // namespace tb::client
