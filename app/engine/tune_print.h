// The tune's text on the terminal: its usage, and its summary on stdout (what to keep and by how much, how it
// was confirmed, a recipe change with and without it, the noise, the budget, why it ended, every trial and
// every skip). cmd_tune.cpp parses and runs; this prints. app/engine only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/tuner.h"

namespace tb::cli {

struct TuneSummaryContext {
  std::string simulated_profile;  // said first when the result is a simulation's
  uint64_t seed = 0;
  double wall_s = 0;              // the tune's own wall time (a simulation's seconds are virtual)
  std::string report, report_markdown, json;  // the files written ("" when none)
};

void print_tune_summary(const engine::TuneResult& r, const TuneSummaryContext& ctx);
// `tunebench-cli tune --help`.
void print_tune_usage(FILE* out);

}  // namespace tb::cli
