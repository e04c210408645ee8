// The loader verdict drawn in a report (tuner/report/report_loader.h), read back from the HTML the session report
// writes: the one advice line the verdict's advice gives, a bar a part whose length is its cost a sample and whose
// <title> has its exact figures, the workers' life as slices that tile one bar, the rates and the marks on one
// scale, and the sentences collapsed under Details; an invalid verdict draws nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/xml.h"
#include "client/loader_picture.h"
#include "client/loader_verdict.h"
#include "engine/session_report.h"
#include "tuner/report/report_loader.h"

namespace tb::engine {
namespace {

using client::LoaderVerdict;

// One loading process's report (docs/protocol.md, done.summary.loader_parts): its parts as {name, ms a sample
// (collate: a batch)}, `cpu` of the busy time on the CPU, `run_delay` of it waiting for a CPU (< 0: not measured).
nlohmann::json proc(const std::string& who, int samples, int batches, std::vector<std::pair<std::string, double>> parts,
                    double cpu, double run_delay, double life_ms) {
  nlohmann::json p = {{"who", who}, {"pid", 100}, {"samples", samples}, {"batches", batches}};
  double busy = 0;
  for (const auto& [name, ms] : parts) {
    const int n = name == "collate" ? batches : samples;
    p["parts"][name] = {{"ns", int64_t(ms * 1e6 * n)}, {"calls", n}};
    busy += ms * 1e6 * n;
  }
  p["busy_ns"] = int64_t(busy);
  p["cpu_ns"] = int64_t(busy * cpu);
  if (run_delay >= 0) p["run_delay_ns"] = int64_t(busy * run_delay);
  p["life_ns"] = int64_t(life_ms * 1e6);
  p["where"] = {{"SlowBlur", "/home/u/train.py:12"}};
  return p;
}

// Sixteen workers on two cores: each waits 70% of its busy time for a CPU; collate a batch of 16.
LoaderVerdict crowded() {
  nlohmann::json parts = nlohmann::json::array();
  for (int w = 0; w < 16; ++w)
    parts.push_back(proc("worker " + std::to_string(w), 16, 1,
                         {{"open (PIL)", 120.0}, {"RandomResizedCrop", 45.0}, {"ToTensor", 8.0}, {"collate", 16.0}}, 0.15,
                         0.70, 3800));
  return client::loader_verdict(parts, 256, 4'000'000'000, 1'000'000'000, 2, 5.0);
}

// Loading in the training process (num_workers=0), collate a batch of 32, a blur at a line of the script.
LoaderVerdict main_process() {
  const auto parts = nlohmann::json::array(
      {proc("main", 256, 8, {{"SlowBlur", 2.1}, {"RandomResizedCrop", 1.4}, {"collate", 3.0}}, 0.95, -1, 2000)});
  return client::loader_verdict(parts, 256, 2'000'000'000, 700'000'000, 4, 3.0);
}

std::string session_html(const LoaderVerdict& v) {
  nlohmann::json in = {{"format", "tunebench-session-input"}, {"model", "resnet"}, {"data", "imagefolder"}};
  if (v.valid) in["loader"] = v.to_json();
  return session_report_html(in);
}

std::string unescape(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}})
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

struct Bar {
  double x, w;
  std::string title;
};
// The bars of a class in document order, with their tooltips.
std::vector<Bar> bars(const std::string& html, const std::string& cls) {
  const std::regex re("<rect x=\"([-0-9.]+)\" y=\"[-0-9.]+\" width=\"([0-9.]+)\" height=\"[0-9.]+\" fill=\"#[0-9a-f]{6}\" "
                      "class=\"" + cls + "\"><title>([^<]*)</title></rect>");
  std::vector<Bar> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), unescape((*it)[3])});
  return out;
}

// Each mark's x on the rates' scale, with its tooltip.
std::vector<Bar> marks(const std::string& html) {
  const std::regex re("<g class=\"loader-mark\"><title>([^<]*)</title>\\s*<line x1=\"([0-9.]+)\"");
  std::vector<Bar> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[2]), 0, unescape((*it)[1])});
  return out;
}

std::string advice_text(const std::string& html) {
  const auto b = html.find("<p class=\"loader-advice\">"), e = html.find("</p>", b);
  if (b == std::string::npos || e == std::string::npos) return "(none)";
  const std::string inner = html.substr(b, e - b);
  return unescape(std::regex_replace(inner, std::regex("<[^>]*>"), ""));
}

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The picture's markup holds together (the tune report's test checks the whole page's XML): every tag ends before
// the next one starts, and its three <svg> and every group close.
void expect_closed(const std::string& page) {
  const auto from = page.find("<h2>Why the loader is slow</h2>"), to = page.find("</details>", from);
  ASSERT_NE(to, std::string::npos);
  const std::string html = page.substr(from, to - from);
  for (size_t p = html.find('<'); p != std::string::npos; p = html.find('<', p + 1)) {
    const auto next = html.find('<', p + 1);
    ASSERT_LT(html.find('>', p), next) << html.substr(p, 80);
  }
  EXPECT_EQ(count_of(html, "<svg "), 3u);
  EXPECT_EQ(count_of(html, "<svg "), count_of(html, "</svg>"));
  EXPECT_EQ(count_of(html, "<g "), count_of(html, "</g>"));
}

// The line says the verdict's own advice: its switch, why, and its bound.
void expect_advice(const std::string& html, const LoaderVerdict& v) {
  const client::LoaderAdvice a = v.advice();
  ASSERT_TRUE(a.known);
  const std::string line = advice_text(html);
  EXPECT_EQ(line, client::loader_advice_line(v));
  EXPECT_EQ(line.rfind((a.knob.empty() ? "no loader switch" : a.knob + "=" + a.value) + ": " + a.why, 0), 0u) << line;
  EXPECT_NE(line.find("; at most " + client::picture_number(a.at_most, 2) + "x this run's throughput"), std::string::npos)
      << line;
  // Above the picture, and said once.
  EXPECT_LT(html.find("loader-advice"), html.find("loader-picture"));
  EXPECT_EQ(html.find("loader-advice", html.find("loader-advice") + 1), std::string::npos);
}

// A bar a part in the verdict's order, its exact figures in its <title>, its length its cost a sample.
void expect_parts(const std::string& html, const LoaderVerdict& v) {
  const auto got = bars(html, "loader-part");
  ASSERT_EQ(got.size(), v.parts.size()) << html;
  const double batch = double(v.samples) / double(v.batches);
  std::vector<double> cost;
  for (const auto& p : v.parts) cost.push_back(p.per_batch ? p.ms / batch : p.ms);
  size_t longest = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].w > got[longest].w) longest = i;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& p = v.parts[i];
    const std::string figure = p.name + ": " + client::picture_number(p.ms, 3) + (p.per_batch ? " ms a batch (" : " ms a sample, ");
    EXPECT_EQ(got[i].title.rfind(figure, 0), 0u) << got[i].title;
    EXPECT_NE(got[i].title.find(client::picture_number(100 * p.share, 1) + "% of the loading"), std::string::npos) << got[i].title;
    if (!p.where.empty()) EXPECT_NE(got[i].title.find("\nat " + p.where), std::string::npos) << got[i].title;
    EXPECT_EQ(got[i].x, got[0].x) << "every bar starts at the labels' edge";
    const double want = std::max(2.0, got[longest].w * cost[i] / cost[longest]);
    EXPECT_NEAR(got[i].w, want, 0.15) << p.name << ": its bar is not its share of the longest (" << cost[i] << " of "
                                      << cost[longest] << " ms a sample)";
  }
  EXPECT_EQ(longest, 0u) << "the costliest part comes first";
}

// The slices tile the one life bar (900 wide) left to right, each its share of the workers' life.
void expect_life(const std::string& html, const LoaderVerdict& v, std::vector<double> shares) {
  const auto got = bars(html, "loader-slice");
  ASSERT_EQ(got.size(), shares.size()) << html;
  double x = 0, sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].x, x, 0.051) << "slice " << i << " starts where the one before it ends";
    x = got[i].x + got[i].w;
    sum += got[i].w;
    EXPECT_NEAR(got[i].w / 900, shares[i], 0.0005) << got[i].title;
    EXPECT_NE(got[i].title.find(client::picture_number(100 * shares[i], 1) + "% of "), std::string::npos) << got[i].title;
  }
  EXPECT_NEAR(sum, 900, 0.051) << "the slices are 100% of the bar";
  EXPECT_NE(html.find("<rect x=\"0.5\" y=\"0.5\" width=\"899.0\""), std::string::npos) << "the bar's outline";
  (void)v;
}

// The verdict's sentences and its parts table under a closed Details, after the picture.
void expect_details(const std::string& html, const LoaderVerdict& v) {
  const auto open = html.find("<details><summary>Details</summary>"), close = html.find("</details>", open);
  ASSERT_NE(open, std::string::npos);
  ASSERT_NE(close, std::string::npos);
  EXPECT_LT(html.find("loader-picture"), open);
  for (const auto& l : v.lines()) {
    const std::string text = xml_escape(l.rfind("loader: ", 0) == 0 ? l.substr(8) : l);
    const auto at = html.find("<li>" + text + "</li>");
    EXPECT_TRUE(at > open && at < close) << text;
  }
  const auto table = html.find("<th>% of the loading</th>", open);
  EXPECT_TRUE(table < close);
}

TEST(ReportLoader, CrowdedWorkersAreDrawnAsTheTabDrawsThem) {
  const LoaderVerdict v = crowded();
  ASSERT_TRUE(v.valid);
  ASSERT_TRUE(v.crowded());
  ASSERT_GE(v.cpu_wait_share, 0);
  const std::string html = session_html(v);
  EXPECT_NE(html.find("<h2>Why the loader is slow</h2>"), std::string::npos);
  expect_closed(html);
  expect_advice(html, v);
  EXPECT_EQ(v.advice().knob, "workers");
  expect_parts(html, v);
  const double busy = v.busy_share;
  expect_life(html, v,
              {busy * v.cpu_share, busy * v.cpu_wait_share, busy * (1 - v.cpu_share - v.cpu_wait_share), 1 - busy});
  EXPECT_NE(html.find(">on the CPU 11%<"), std::string::npos) << "the legend's words";
  expect_details(html, v);
  // Supply now and with the advised workers on one scale with the model's rate and the run's.
  const auto rates = bars(html, "loader-rate");
  const auto ms = marks(html);
  ASSERT_EQ(rates.size(), 2u);
  ASSERT_EQ(ms.size(), 2u);
  const double per_sps = rates[0].w / v.supply_sps, x0 = rates[0].x;
  EXPECT_NEAR(rates[1].w, per_sps * client::advised_supply(v), 0.15);
  EXPECT_NEAR(ms[0].x, x0 + per_sps * v.consume_sps, 0.15) << ms[0].title;
  EXPECT_NEAR(ms[1].x, x0 + per_sps * v.run_sps, 0.15) << ms[1].title;
  EXPECT_EQ(ms[0].title, "what the model takes when it never waits for a batch: " + client::picture_number(v.consume_sps, 1) +
                             " samples/s");
  EXPECT_EQ(rates[1].title.rfind("with workers=" + v.advice().value + ", the advised switch: ", 0), 0u) << rates[1].title;
}

TEST(ReportLoader, TheTrainingProcesssLoadingHasNoIdleSlice) {
  const LoaderVerdict v = main_process();
  ASSERT_TRUE(v.valid);
  ASSERT_EQ(v.workers, 0);
  const std::string html = session_html(v);
  expect_closed(html);
  expect_advice(html, v);
  expect_parts(html, v);
  EXPECT_NE(html.find("Where a sample&#39;s time goes, in the training process (num_workers=0)"), std::string::npos);
  EXPECT_NE(html.find("\nat /home/u/train.py:12</title>"), std::string::npos) << "the blur's line in its tooltip";
  // Its loading time only: on the CPU and the rest, no idle.
  expect_life(html, v, {v.cpu_share, 1 - v.cpu_share});
  EXPECT_EQ(html.find("idle: "), std::string::npos);
  expect_details(html, v);
}

TEST(ReportLoader, AnInvalidVerdictDrawsNothing) {
  const LoaderVerdict none;
  EXPECT_EQ(report_detail::loader_section_html(none), "");
  EXPECT_EQ(report_detail::loader_section_markdown(none), "");
  nlohmann::json in = {{"format", "tunebench-session-input"}, {"loader", {{"not", "a verdict"}}}};
  const std::string html = session_report_html(in);
  EXPECT_EQ(html.find("Why the loader is slow"), std::string::npos);
  EXPECT_EQ(html.find("loader-"), std::string::npos);
  EXPECT_EQ(html.find("<details>"), std::string::npos);
}

TEST(ReportLoader, MarkdownSaysTheAdviceThePartsTheLifeAndTheRates) {
  const LoaderVerdict v = crowded();
  const std::string md = report_detail::loader_section_markdown(v);
  const client::LoaderPicture pic = client::loader_picture(v);
  EXPECT_NE(md.find("\n" + client::loader_advice_line(v) + "\n"), std::string::npos) << md;
  for (const auto& p : v.parts) EXPECT_NE(md.find("| " + p.name + " | "), std::string::npos) << p.name;
  EXPECT_NE(md.find(pic.time_title + ": on the CPU 11% · waiting for a CPU 51% · on reads or sleeps 11% · idle 27%"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(pic.rates_title + ": now, 16 workers: 64/s · with workers=4: 64/s · model takes 85 · run measured 64"),
            std::string::npos)
      << md;
  const auto details = md.find("<details><summary>Details</summary>");
  ASSERT_NE(details, std::string::npos);
  for (const auto& l : v.lines()) EXPECT_GT(md.find("- " + l.substr(8)), details) << l;
}

}  // namespace
}  // namespace tb::engine
