// What the loader picture shows, from the verdict alone (client/loader_picture.h): the bars, their words and their
// exact figures, and the one line of advice above them. The GUI paints it (ui/src/loader_view.cpp), the reports
// write it as SVG (engine/src/tuner/report/report_loader.cpp).
#include "client/loader_picture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace tb::client {
namespace {

// The loading's colours: a short supply in the timeline's loader-stall red, one that feeds the model in compute
// green; the time slices in the time bar's colours for the same kinds of time (compute green for the CPU, sync
// orange for a wait to run).
constexpr const char* kCpu = "#3ca55c";
constexpr const char* kCpuWait = "#e67e22";
constexpr const char* kReads = "#4fa3ff";
constexpr const char* kIdle = "#9096a0";
constexpr const char* kShort = "#d9534f";
constexpr const char* kFeeds = "#3ca55c";
constexpr const char* kUnknown = "#4fa3ff";

bool positive(double x) { return std::isfinite(x) && x > 0; }

std::string num(double v, int decimals) { return picture_number(v, decimals); }
// As lines() writes a part's time: two decimals under 10 ms.
std::string ms(double v) { return num(v, v < 10 ? 2 : 1) + " ms"; }
std::string pct(double share) { return num(100 * share, 0) + "%"; }
std::string pct1(double share) { return num(100 * share, 1) + "%"; }
std::string workers_of(int n) { return n == 1 ? std::string("1 worker") : std::to_string(n) + " workers"; }

void add_parts(const LoaderVerdict& v, LoaderPicture& pic) {
  const double batch = v.samples > 0 && v.batches > 0 ? double(v.samples) / double(v.batches) : 0;
  pic.parts_title = v.workers > 0 ? v.workers == 1 ? "Where a sample's time goes, in the worker"
                                                   : "Where a sample's time goes, in each of " + workers_of(v.workers)
                                  : "Where a sample's time goes, in the training process (num_workers=0)";
  for (const auto& p : v.parts) {
    LoaderPartBar b;
    b.label = p.name;
    b.length = p.per_batch ? (batch > 0 ? p.ms / batch : 0) : p.ms;
    b.value = (p.per_batch ? ms(p.ms) + " a batch" : ms(p.ms)) + " \u00b7 " + pct(p.share);
    b.tip = p.per_batch ? b.label + ": " + num(p.ms, 3) + " ms a batch (" + num(b.length, 3) + " ms a sample at " +
                              num(batch, 1) + " samples a batch), " + pct1(p.share) + " of the loading"
                        : b.label + ": " + num(p.ms, 3) + " ms a sample, " + pct1(p.share) + " of the loading";
    if (!p.where.empty()) b.tip += "\nat " + p.where;
    pic.parts.push_back(b);
  }
}

// Workers: their life, busy (split by what the busy time did) and idle. The training process: its loading
// time only (between loads it trains, which is no idle of the loader's).
void add_time(const LoaderVerdict& v, LoaderPicture& pic) {
  const bool workers = v.workers > 0;
  const double busy = workers ? std::clamp(v.busy_share, 0.0, 1.0) : 1.0;
  const double cpu = std::clamp(v.cpu_share, 0.0, 1.0);
  const double wait = v.cpu_wait_share >= 0 ? std::clamp(v.cpu_wait_share, 0.0, 1.0 - cpu) : -1;
  const std::string of = workers ? "of their life" : "of its loading time";
  auto slice = [&](const std::string& label, double share_of_busy, const char* colour) {
    const double share = busy * share_of_busy;
    std::string tip = label + ": " + pct1(share) + " " + of;
    if (workers) tip += " (" + pct1(share_of_busy) + " of their busy time)";
    pic.time.push_back({label, tip, share, colour});
  };
  pic.time_title = workers ? "What the " + workers_of(v.workers) + " did over their life"
                           : std::string("What the training process's loading time went to");
  slice("on the CPU", cpu, kCpu);
  if (wait >= 0) {
    slice("waiting for a CPU", wait, kCpuWait);
    slice("on reads or sleeps", std::max(0.0, 1 - cpu - wait), kReads);
  } else {
    slice("reads, sleeps or waiting for a CPU", 1 - cpu, kReads);
  }
  if (workers)
    pic.time.push_back({"idle", "idle: " + pct1(1 - busy) + " of their life, waiting for room in the queue or the next pass",
                        1 - busy, kIdle});
}

void add_rates(const LoaderVerdict& v, LoaderPicture& pic) {
  const bool fed_known = positive(v.consume_sps);
  auto colour = [&](double s) { return !fed_known ? kUnknown : s >= v.consume_sps ? kFeeds : kShort; };
  if (positive(v.supply_sps)) {
    // Loading in the training process is no supply beside the model: it loads between steps, so its rate and the
    // model's add up per sample rather than race, and no colour says whether it feeds the model.
    const bool beside = v.workers > 0;
    const std::string who = beside ? workers_of(v.workers) : "num_workers=0";
    const std::string tip = beside ? "what the loaders supply now (" + who + "): " + num(v.supply_sps, 1) + " samples/s"
                                   : "how fast the training process loads, between its steps: " + num(v.supply_sps, 1) +
                                         " samples/s (the training waits while it loads)";
    pic.rates.push_back({"now, " + who, tip, v.supply_sps, beside ? colour(v.supply_sps) : kUnknown});
  }
  if (const double s = advised_supply(v); s > 0) {
    const auto a = v.advice();
    const std::string sw = a.knob + "=" + a.value;
    pic.rates.push_back({"with " + sw,
                         "with " + sw + ", the advised switch: " + num(s, 1) + " samples/s (the figure its advice states)",
                         s, colour(s)});
  }
  if (fed_known)
    pic.marks.push_back({"model takes " + num(v.consume_sps, 0),
                         "what the model takes when it never waits for a batch: " + num(v.consume_sps, 1) + " samples/s",
                         v.consume_sps, "", false});
  if (positive(v.run_sps))
    pic.marks.push_back({"run measured " + num(v.run_sps, 0),
                         "what this run measured, loading included: " + num(v.run_sps, 1) + " samples/s", v.run_sps, "",
                         true});
  if (!pic.rates.empty() || !pic.marks.empty()) pic.rates_title = "Samples/s: what the loaders supply against what the model takes";
}

}  // namespace

std::string picture_number(double v, int decimals) {
  if (v == 0) v = 0;  // -0 reads as 0
  if (std::isfinite(v) && decimals >= 0 && decimals <= 6) {
    // printf rounds an exact tie (12.5 to no decimals) to even; the picture rounds it away from zero. The product
    // and its rounding error are the exact v * 10^decimals: a tie is representable, so it has no error.
    const double scale = std::pow(10.0, decimals), s = v * scale, err = std::fma(v, scale, -s);
    if (err == 0 && std::fabs(s) < 0x1p52 && std::fabs(s - std::trunc(s)) == 0.5)
      v = std::nextafter(v, v > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  }
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

double advised_supply(const LoaderVerdict& v) {
  if (!v.valid) return 0;
  const auto a = v.advice();
  if (a.knob != "workers") return 0;
  // Crowded workers are advised fewer, and their advice states what that many supply; otherwise it states what a
  // run with the advised count should measure (LoaderVerdict::advice).
  const double s = v.crowded() ? v.supply_with(std::atoi(a.value.c_str())) : v.expect_sps;
  return positive(s) ? s : 0;
}

LoaderPicture loader_picture(const LoaderVerdict& v) {
  LoaderPicture pic;
  if (!v.valid) return pic;
  add_parts(v, pic);
  add_time(v, pic);
  add_rates(v, pic);
  return pic;
}

std::string loader_advice_line(const LoaderVerdict& v) {
  if (!v.valid) return {};
  const auto a = v.advice();
  if (!a.known)
    return "no loader switch: the run's rate or a sample's time was not measured, so no switch can be bounded (the "
           "details say what was)";
  const std::string sw = a.knob.empty() ? std::string("no loader switch") : a.knob + "=" + a.value;
  return sw + ": " + a.why + "; at most " + num(a.at_most, 2) + "x this run's throughput";
}

}  // namespace tb::client
