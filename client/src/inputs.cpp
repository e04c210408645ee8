// Inputs checked in one place (client/inputs.h).
#include "client/inputs.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tb::client::inputs {

namespace {
std::string seconds_text(double s) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}
}  // namespace

std::optional<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < min || v > max) return std::nullopt;
  return v;
}

Result<int64_t> parse_steps(const std::string& text, int64_t min) {
  if (const auto v = parse_integer(text, min, kStepsMax)) return *v;
  return Error{"--steps needs an integer from " + std::to_string(min) + (min == 0 ? " (until stopped)" : "") + " to " +
               std::to_string(kStepsMax) + (text.empty() ? "" : ", got '" + text + "'")};
}

Result<double> tune_budget(double seconds) {
  if (!std::isfinite(seconds) || seconds < kBudgetMinS || seconds > kBudgetMaxS)
    return Error{"budget must be between " + seconds_text(kBudgetMinS) + " and " + seconds_text(kBudgetMaxS) +
                 " seconds, got " + seconds_text(seconds)};
  return seconds;
}

Result<double> gate_max_time(double seconds) {
  if (!std::isfinite(seconds) || seconds < kGateMaxTimeMinS || seconds > kGateMaxTimeMaxS)
    return Error{"--max-time must be between " + seconds_text(kGateMaxTimeMinS) + " and " +
                 seconds_text(kGateMaxTimeMaxS) + " seconds, got " + seconds_text(seconds)};
  return seconds;
}

Result<double> parse_trace_share(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end == begin || *end != '\0' || !(v >= 0 && v <= kTraceShareMax))
    return Error{"--trace-share needs a share of the run from 0 (trace every step) to " + seconds_text(kTraceShareMax) +
                 ", got '" + text + "'"};
  return v;
}

Result<double> parse_tune_budget(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end == begin || *end != '\0') return Error{"budget needs seconds, got '" + text + "'"};
  return tune_budget(v);
}

Result<std::optional<double>> parse_tune_budget_or_auto(const std::string& text) {
  if (text == "auto") return std::optional<double>();
  const auto b = parse_tune_budget(text);
  if (!b) return b.error();
  return std::optional<double>(*b);
}

Result<Settings> parse_settings(const std::string& text) {
  auto trim = [](const std::string& x) {
    const auto a = x.find_first_not_of(" \t"), b = x.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : x.substr(a, b - a + 1);
  };
  Settings out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;  // "a=1,,b=2" and a trailing comma: nothing there
    const auto eq = item.find('=');
    if (eq == std::string::npos || trim(item.substr(0, eq)).empty())
      return Error{"bad knob setting '" + item + "': expected knob=value"};
    out.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
  }
  return out;
}

}  // namespace tb::client::inputs
