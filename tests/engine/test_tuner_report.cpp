// The report writer: HTML well-formed (a small XML checker below) and complete, JSON schema, Markdown.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "client/loader_verdict.h"
#include "engine/report.h"
#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"
#include "tuner/workloads/snapshot_fill.h"

using namespace tb::engine;

namespace {

// Checks that `doc` is well-formed XML after an optional <!DOCTYPE ...>: tags balance and nest, attributes
// are quoted, entities are known, no stray '<' or '&'. Returns "" or the first problem.
std::string xml_problem(const std::string& doc, size_t* elements = nullptr) {
  std::vector<std::string> stack;
  size_t i = 0, count = 0;
  bool seen_root = false;
  auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_'; };
  while (i < doc.size()) {
    char c = doc[i];
    if (c == '&') {
      size_t semi = doc.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "bare '&' at " + std::to_string(i);
      std::string ent = doc.substr(i + 1, semi - i - 1);
      if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos" && ent[0] != '#')
        return "unknown entity &" + ent + "; at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (c != '<') {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(c))) return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0) {
      size_t e = doc.find("-->", i);
      if (e == std::string::npos) return "unclosed comment";
      i = e + 3;
      continue;
    }
    if (doc.compare(i, 9, "<!DOCTYPE") == 0) {
      if (seen_root) return "DOCTYPE after the root";
      i = doc.find('>', i) + 1;
      continue;
    }
    const bool closing = doc[i + 1] == '/';
    size_t j = i + (closing ? 2 : 1);
    size_t n0 = j;
    while (j < doc.size() && is_name(doc[j])) ++j;
    std::string name = doc.substr(n0, j - n0);
    if (name.empty()) return "stray '<' at " + std::to_string(i);
    if (closing) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (doc[j] != '>') return "bad closing tag </" + name;
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes <" + (stack.empty() ? std::string("nothing") : stack.back()) + ">";
      stack.pop_back();
      i = j + 1;
      continue;
    }
    // Attributes: name="value" or name='value'.
    bool self_closing = false;
    for (;;) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size()) return "unterminated tag <" + name;
      if (doc[j] == '>') break;
      if (doc[j] == '/' && doc[j + 1] == '>') {
        self_closing = true;
        ++j;
        break;
      }
      size_t a0 = j;
      while (j < doc.size() && is_name(doc[j])) ++j;
      if (a0 == j) return "bad attribute in <" + name + "> at " + std::to_string(j);
      if (doc[j] != '=') return "attribute without value in <" + name + ">";
      ++j;
      char q = doc[j];
      if (q != '"' && q != '\'') return "unquoted attribute in <" + name + ">";
      size_t e = doc.find(q, j + 1);
      if (e == std::string::npos) return "unterminated attribute in <" + name + ">";
      if (doc.substr(j + 1, e - j - 1).find('<') != std::string::npos) return "'<' inside an attribute of <" + name + ">";
      j = e + 1;
    }
    if (stack.empty()) {
      if (seen_root) return "second root element <" + name + ">";
      seen_root = true;
    }
    ++count;
    if (!self_closing) stack.push_back(name);
    i = j + 1;
    // <style> content is CDATA-like in HTML: it must not contain '<' (it does not in ours) but may contain '>'.
    if (name == "style" && !self_closing) {
      size_t e = doc.find("</style>", i);
      if (e == std::string::npos) return "unclosed <style>";
      if (doc.substr(i, e - i).find_first_of("<&") != std::string::npos) return "'<' or '&' in <style>";
      i = e;
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (!seen_root) return "no root element";
  if (elements) *elements = count;
  return "";
}

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TuneResult simulated_result() {
  SimulatedWorkload w(7, 0.03);
  TuneOptions o;
  o.budget_s = 480;
  return run_tune(w, o);
}

}  // namespace

TEST(TunerReport, XmlCheckerCatchesBrokenDocuments) {
  EXPECT_EQ(xml_problem("<a><b x=\"1\"/>t &amp; u</a>"), "");
  EXPECT_NE(xml_problem("<a><b></a></b>"), "");
  EXPECT_NE(xml_problem("<a><b></a>"), "");
  EXPECT_NE(xml_problem("<a x=1></a>"), "");
  EXPECT_NE(xml_problem("<a>1 < 2</a>"), "");
  EXPECT_NE(xml_problem("<a>R&D</a>"), "");
  EXPECT_NE(xml_problem("<a></a><b></b>"), "");
  EXPECT_NE(xml_problem("<a><br></a>"), "");  // HTML void element not self-closed
}

TEST(TunerReport, HtmlIsWellFormedSelfContainedAndComplete) {
  TuneResult r = simulated_result();
  ASSERT_GT(r.trials.size(), 10u);
  const std::string html = report_html(r);
  size_t elements = 0;
  EXPECT_EQ(xml_problem(html, &elements), "");
  EXPECT_GT(elements, 100u);
  // Self-contained: no scripts, no external resources.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // Charts: waterfall, breakdown, stall, forest plot; phone and print CSS.
  EXPECT_GE(count_of(html, "<svg "), 4u);
  EXPECT_NE(html.find("name=\"viewport\""), std::string::npos);
  EXPECT_NE(html.find("@media print"), std::string::npos);
  EXPECT_NE(html.find("@media (max-width"), std::string::npos);
  // Every trial has a row (the table numbers them) and a point in the forest plot.
  for (size_t i = 0; i < r.trials.size(); ++i) {
    EXPECT_NE(html.find("<td class=\"n\">" + std::to_string(i + 1) + "</td>"), std::string::npos) << "trial " << i + 1;
  }
  size_t valid = 0;
  for (const auto& t : r.trials) valid += t.estimate.valid();
  EXPECT_EQ(count_of(html, "<circle "), valid);
  // Rejected ones with their reasons; the environment; the code.
  EXPECT_NE(html.find("exceeds the 10% tolerance"), std::string::npos);
  // The simulation reports each step's memory: the batch rung that would not fit is refused with its figures
  // (the search's own tests cover an out-of-memory trial), and every trial has its peak beside its speed.
  EXPECT_NE(html.find("would peak at"), std::string::npos);
  EXPECT_NE(html.find("peak memory"), std::string::npos);
  EXPECT_NE(html.find("Memory:"), std::string::npos);
  EXPECT_NE(html.find("not applicable here"), std::string::npos);
  EXPECT_NE(html.find("simulated GPU"), std::string::npos);
  EXPECT_NE(html.find("torch.bfloat16"), std::string::npos);
  EXPECT_NE(html.find("num_workers=2"), std::string::npos);
  EXPECT_NE(html.find("at::kBFloat16"), std::string::npos);
  EXPECT_NE(html.find("session-&gt;apply"), std::string::npos);
}

// Report defects a user met: a zero stall drawn as a full-width bar, the waterfall's
// caption cut, two baselines with nothing to tie them, "no effect no effect: ...".
TEST(TunerReport, NoZeroBarsOneBaselineNoRepeatedVerdict) {
  TuneResult r = simulated_result();
  ASSERT_FALSE(r.snapshots.empty());
  for (auto& sn : r.snapshots) sn.worst_stall_ms = 0.01;  // "0.0 ms" at both ends
  std::string html = report_html(r);
  EXPECT_NE(html.find("No stall at the baseline or the final configuration"), std::string::npos);
  EXPECT_EQ(html.find("the worst single stall before and after tuning"), std::string::npos);  // no chart
  // A real stall is drawn to a scale of at least 1 ms: 0.2 ms is a short bar, not the full width.
  r.snapshots.front().worst_stall_ms = 0.2;
  html = report_html(r);
  const size_t chart = html.find("the worst single stall before and after tuning");
  ASSERT_NE(chart, std::string::npos);
  const size_t w = html.find("width=\"", html.find("<rect ", chart)) + 7;
  EXPECT_LT(std::stod(html.substr(w, 12)), 60.0) << html.substr(chart, 400);  // of 280 px for 1 ms
  // No text runs out of its picture (the waterfall's caption, started at the bars, was cut at the right):
  // each <text>'s extent, estimated at 0.55 em per character, stays inside its SVG's viewBox.
  for (size_t svg = html.find("<svg "); svg != std::string::npos; svg = html.find("<svg ", svg + 1)) {
    const size_t vb = html.find("viewBox=\"0 0 ", svg) + 13;
    const double W = std::stod(html.substr(vb, 8));
    const size_t end = html.find("</svg>", svg);
    for (size_t t = html.find("<text ", svg); t < end; t = html.find("<text ", t + 1)) {
      const std::string tag = html.substr(t, html.find('>', t) - t);
      const double x = std::stod(tag.substr(tag.find("x=\"") + 3));
      double fs = 12;
      if (auto f = tag.find("font-size=\""); f != std::string::npos) fs = std::stod(tag.substr(f + 11));
      const size_t a = html.find('>', t) + 1;
      const std::string body = html.substr(a, html.find("</text>", a) - a);
      const double w = 0.55 * fs * double(body.size());
      const bool end_anchor = tag.find("text-anchor=\"end\"") != std::string::npos;
      const bool mid = tag.find("text-anchor=\"middle\"") != std::string::npos;
      const double lo = end_anchor ? x - w : mid ? x - w / 2 : x, hi = end_anchor ? x : mid ? x + w / 2 : x + w;
      EXPECT_GE(lo, -1.0) << body;
      EXPECT_LE(hi, W + 1.0) << body << " (viewBox width " << W << ")";
    }
  }
  // The headline's baseline is one row of the trust table, said so.
  char head[64];
  std::snprintf(head, sizeof head, "%.1f samples/s", r.baseline_throughput);
  EXPECT_NE(html.find(head), std::string::npos);
  EXPECT_TRUE(html.find("the headline&#39;s baseline") != std::string::npos ||
              html.find("the headline's baseline") != std::string::npos ||
              html.find("baseline, headline") != std::string::npos);
  // A verdict is said once per row.
  for (const char* v : {"no effect", "slower", "kept", "gain"})
    EXPECT_EQ(html.find(std::string("<strong>") + v + "</strong> " + v), std::string::npos) << v;
}

TEST(TunerReport, JsonHoldsEveryTrialWithTheSchema) {
  TuneResult r = simulated_result();
  const std::string text = report_json(r).dump();
  auto j = nlohmann::json::parse(text);  // parses back
  EXPECT_EQ(j["format"], "tunebench-tune");
  EXPECT_EQ(j["unit"], "samples/s");
  ASSERT_TRUE(j["speedup"].is_number());
  EXPECT_NEAR(j["speedup"].get<double>(), r.speedup.ratio, 1e-12);
  ASSERT_TRUE(j["speedup_ci"].is_array());
  EXPECT_LE(j["speedup_ci"][0].get<double>(), j["speedup"].get<double>());
  ASSERT_EQ(j["trials"].size(), r.trials.size());
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const auto& t = j["trials"][i];
    for (const char* k : {"knob", "value", "before", "after", "ratio", "ci_low", "ci_high", "accepted", "reason", "outcome", "phase"})
      EXPECT_TRUE(t.contains(k)) << "trial " << i << " lacks " << k;
    EXPECT_EQ(t["knob"], r.trials[i].knob);
    EXPECT_EQ(t["accepted"], r.trials[i].accepted);
    if (r.trials[i].estimate.valid()) {
      EXPECT_LE(t["ci_low"].get<double>(), t["ratio"].get<double>());
      EXPECT_GE(t["ci_high"].get<double>(), t["ratio"].get<double>());
    } else {
      EXPECT_TRUE(t["ratio"].is_null());  // an OOM trial has no ratio: null, not NaN (invalid JSON)
    }
  }
  for (const auto& [k, v] : r.final_config) EXPECT_EQ(j["final_config"][k], v);
  EXPECT_EQ(j["changed"].size(), changed_knobs(r.baseline, r.final_config).size());
  EXPECT_EQ(j["snapshots"].size(), r.snapshots.size());
  EXPECT_FALSE(j["code"]["pytorch"].get<std::string>().empty());
}

TEST(TunerReport, MarkdownHasEveryTrialAndTheCode) {
  TuneResult r = simulated_result();
  const std::string m = report_markdown(r);
  for (size_t i = 0; i < r.trials.size(); ++i) EXPECT_NE(m.find("\n| " + std::to_string(i + 1) + " | "), std::string::npos);
  EXPECT_NE(m.find("```python"), std::string::npos);
  EXPECT_NE(m.find("```cpp"), std::string::npos);
  EXPECT_NE(m.find("x faster"), std::string::npos);
}

TEST(TunerReport, EscapesHostileTextAndHandlesAnEmptyResult) {
  TuneResult r;
  r.environment = {{"model", "<script>alert('x')</script> & co"}, {"device", "cpu \"quoted\""}};
  r.baseline = {{"workers", "0"}};
  r.final_config = r.baseline;
  Trial t;
  t.phase = "screen";
  t.knob = "workers";
  t.value = "1<2";
  t.outcome = "failed";
  t.reason = "a <b>reason</b> & more";
  r.trials.push_back(t);
  r.skipped.push_back({"x&y", "", "why <not>"});
  const std::string html = report_html(r);
  EXPECT_EQ(xml_problem(html), "");
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("No change beat the baseline"), std::string::npos);
  auto j = nlohmann::json::parse(report_json(r).dump());
  EXPECT_EQ(j["trials"].size(), 1u);
  EXPECT_TRUE(j["speedup"].is_null());
}

TEST(TunerReport, WriteReportWritesFilesAndFailsCleanly) {
  TuneResult r = simulated_result();
  const auto dir = std::filesystem::temp_directory_path() / ("tb_tuner_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string html = (dir / "r.html").string(), md = (dir / "r.md").string(), js = (dir / "r.json").string();
  write_report(r, html, md, js);
  for (const auto& p : {html, md, js}) EXPECT_GT(std::filesystem::file_size(p), 1000u) << p;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["trials"].size(), r.trials.size());
  EXPECT_THROW(write_report(r, (dir / "no/such/dir/r.html").string(), "", ""), std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST(TunerReport, CodeFillsInTheFoundValues) {
  TuneResult r;
  KnobState w;
  w.info.id = "workers";
  w.info.type = KnobType::Int;
  w.info.recommended_value = "2";
  w.info.libtorch_snippet = "LoaderOptions opts; opts.workers = 2; loader.reconfigure(opts);";
  w.info.pytorch_snippet = "DataLoader(ds, batch_size=B, num_workers=2)";
  KnobState s;
  s.info.id = "sync_free_logging";
  s.info.type = KnobType::Int;
  r.knobs = {w, s};
  r.environment = {{"device", "cpu: test"}};
  r.baseline = {{"workers", "0"}, {"sync_free_logging", "1"}, {"amp", "off"}};
  r.final_config = {{"workers", "8"}, {"sync_free_logging", "50"}, {"amp", "bf16"}};
  const std::string py = final_code_pytorch(r), cpp = final_code_libtorch(r);
  EXPECT_NE(py.find("num_workers=8"), std::string::npos) << py;
  EXPECT_NE(cpp.find("opts.workers = 8;"), std::string::npos) << cpp;
  EXPECT_NE(py.find("step % 50 == 0"), std::string::npos) << py;
  EXPECT_NE(py.find("torch.autocast('cpu', dtype=torch.bfloat16)"), std::string::npos) << py;
  EXPECT_NE(cpp.find("set_autocast_cpu_dtype(at::kBFloat16)"), std::string::npos) << cpp;
}

// A GPU snapshot's parts are the steps' classes of time (prof::time_classes) in the four parts the tuner's
// search reads, each a mean per step: busy whole; loader stall; launch gaps; after syncs, runtime calls,
// cross-stream waits and other idle together. Launch overhead and the edges are no part; the profiler's own
// time is its own part.
TEST(TunerReport, AGpuSnapshotsPartsAreTheStepsClassesOfTime) {
  tb::prof::AnalysisResult a;
  a.has_gpu = true;
  for (int i = 0; i < 2; ++i) {
    tb::prof::StepBreakdown st;
    st.index = i;
    st.start_ns = i * 200'000'000;
    st.end_ns = st.start_ns + 200'000'000;
    const int64_t ms = 1'000'000, k = i + 1;  // the second step's figures are twice the first's
    st.gpu_busy_ns = 50 * ms * k;
    st.compute_ns = 40 * ms * k;
    st.comm_exposed_ns = 4 * ms * k;
    st.loader_stall_ns = 7 * ms * k;
    st.sync_idle_ns = 3 * ms * k;
    st.runtime_idle_ns = 2 * ms * k;
    st.launch_gap_ns = 11 * ms * k;
    st.launch_overhead_ns = 13 * ms * k;
    st.edge_idle_ns = 17 * ms * k;
    st.event_wait_ns = 19 * ms * k;
    st.other_idle_ns = 23 * ms * k;
    a.steps.push_back(st);
  }
  a.profiler_ns = 6'000'000;
  Snapshot s;
  fill_snapshot(s, a);
  const std::vector<std::pair<std::string, double>> want = {
      {"GPU busy", 75.0}, {"loader stall", 10.5}, {"launch gaps", 16.5}, {"other idle", (3 + 2 + 19 + 23) * 1.5},
      {kProfilerPart, 3.0}};
  ASSERT_EQ(s.breakdown_ms.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s.breakdown_ms[i].first, want[i].first);
    EXPECT_DOUBLE_EQ(s.breakdown_ms[i].second, want[i].second) << want[i].first;
  }
}

// TuneBench's own time is a part of its own in a snapshot (its pauses between steps included, out of "other"
// for what fell inside a step) and is drawn in the GUI's teal in the report's breakdown.
TEST(TunerReport, TheProfilersOwnTimeIsAPartOfItsOwn) {
  tb::prof::AnalysisResult a;
  for (int i = 0; i < 2; ++i) {
    tb::prof::StepBreakdown st;
    st.index = i;
    st.start_ns = i * 20'000'000;
    st.end_ns = st.start_ns + 10'000'000;  // 10 ms steps, 10 ms apart: a pause between them
    st.forward_ns = 4'000'000;
    st.backward_ns = 3'000'000;
    st.profiler_ns = 1'000'000;  // inside the step
    a.steps.push_back(st);
  }
  a.profiler_ns = 12'000'000;  // 1 + 1 inside the steps, 10 between them
  Snapshot s;
  fill_snapshot(s, a);
  ASSERT_GE(s.breakdown_ms.size(), 2u);
  EXPECT_EQ(s.breakdown_ms.back().first, kProfilerPart);
  EXPECT_DOUBLE_EQ(s.breakdown_ms.back().second, 6.0);
  const auto& other = s.breakdown_ms[s.breakdown_ms.size() - 2];
  EXPECT_EQ(other.first, "other");
  EXPECT_DOUBLE_EQ(other.second, 10.0 - 4.0 - 3.0 - 1.0);

  TuneResult r = simulated_result();
  ASSERT_FALSE(r.snapshots.empty());
  EXPECT_EQ(report_html(r).find("#4db6ac"), std::string::npos);  // the simulation has no own time
  r.snapshots[0].breakdown_ms.push_back({kProfilerPart, 6.0});
  const std::string html = report_html(r);
  EXPECT_EQ(xml_problem(html), "");
  EXPECT_NE(html.find("#4db6ac"), std::string::npos);
  EXPECT_NE(html.find("profiler (TuneBench)"), std::string::npos);
}

// One headline for every output: a tune too noisy to tell anything is said so, in a neutral colour, in the HTML,
// the Markdown, the terminal's words (tune_headline) and the GUI's tune_done; "No change beat the baseline" is
// only for trials that told. An image-classification trainer's tune printed "too noisy to tune here: ±159%" on the
// terminal and "No change beat the baseline" in large green type in its report.
TEST(TunerReport, TheHeadlineIsWhatTheTuneCanClaimInEveryOutput) {
  TuneResult r;
  r.environment = {{"model", "script:train.py"}, {"device", "cpu"}};
  r.baseline = {{"workers", "16"}};
  r.final_config = r.baseline;
  r.verdict = "none";
  r.baseline_throughput = 52.0;
  Trial t;
  t.phase = "screen";
  t.knob = "workers";
  t.value = "2";
  t.outcome = "no effect";
  r.trials.push_back(t);
  r.noise_band = 1.59;
  const Headline noisy = tune_headline(r);
  EXPECT_EQ(noisy.kind, "too_noisy");
  EXPECT_FALSE(noisy.good);
  EXPECT_NE(noisy.title.find("±159%"), std::string::npos) << noisy.title;
  for (const std::string& out : {report_html(r), report_markdown(r), tune_done_message(r, "r.html", "r.md", "r.json").dump()}) {
    EXPECT_NE(out.find("Too noisy to tune here"), std::string::npos) << out.substr(0, 400);
    EXPECT_EQ(out.find("No change beat the baseline"), std::string::npos) << out.substr(0, 400);
  }
  EXPECT_EQ(tune_done_message(r, "r.html", "r.md", "r.json")["headline"]["kind"], "too_noisy");
  EXPECT_NE(report_html(r).find("<div class=\"headline\">Too noisy"), std::string::npos);  // neutral, not green
  // Trials that resolved what they tried: nothing paid.
  r.noise_band = 0.04;
  EXPECT_EQ(tune_headline(r).kind, "none");
  EXPECT_NE(report_html(r).find("<div class=\"headline\">No change beat the baseline</div>"), std::string::npos);
  // A confirmed gain, and only it, is green.
  r.final_config = {{"workers", "2"}};
  r.verdict = "faster";
  r.speedup.ratio = 1.25;
  r.speedup.lo = 1.1;
  r.speedup.hi = 1.4;
  r.speedup.pairs = 6;
  ASSERT_TRUE(r.speedup.valid());
  EXPECT_EQ(tune_headline(r).kind, "faster");
  EXPECT_NE(report_html(r).find("<div class=\"headline good\">1.25x faster</div>"), std::string::npos);
  EXPECT_NE(report_markdown(r).find("**1.25x faster**"), std::string::npos);
  // Nothing tried at all.
  r.trials.clear();
  r.final_config = r.baseline;
  r.speedup = {};
  EXPECT_EQ(tune_headline(r).kind, "nothing_measured");
}

// A tune whose baseline snapshot had the loader's verdict (Snapshot::loader) draws it as the session report does,
// in well-formed XHTML, and keeps it in the JSON where the snapshots are; a tune without one has no such section.
TEST(TunerReport, TheBaselinesLoaderVerdictIsDrawn) {
  TuneResult r = simulated_result();
  ASSERT_GE(r.snapshots.size(), 1u);
  EXPECT_EQ(report_html(r).find("Why the loader is slow"), std::string::npos);
  EXPECT_FALSE(report_json(r)["snapshots"][0].contains("loader"));
  nlohmann::json parts = nlohmann::json::array();
  for (const char* who : {"worker 0", "worker 1"})
    parts.push_back({{"who", who}, {"samples", 32}, {"batches", 4}, {"busy_ns", 160'000'000}, {"cpu_ns", 150'000'000},
                     {"run_delay_ns", 5'000'000}, {"life_ns", 400'000'000},
                     {"parts", {{"SlowBlur", {{"ns", 134'400'000}}}, {"read + decode (PIL)", {{"ns", 25'600'000}}}}}});
  const tb::client::LoaderVerdict v = tb::client::loader_verdict(parts, 64, 1'000'000'000, 600'000'000, 2);
  ASSERT_TRUE(v.valid);
  r.snapshots.front().loader = v.to_json();
  const std::string html = report_html(r), md = report_markdown(r);
  EXPECT_EQ(xml_problem(html), "");
  EXPECT_EQ(count_of(html, "<h2>Why the loader is slow</h2>"), 1u);
  EXPECT_EQ(count_of(html, "class=\"loader-part\""), v.parts.size());
  EXPECT_EQ(count_of(html, "<details><summary>Details</summary>"), 1u);
  EXPECT_NE(md.find("## Why the loader is slow"), std::string::npos);
  const nlohmann::json j = report_json(r);
  EXPECT_EQ(j["snapshots"][0]["loader"], v.to_json());
  for (size_t i = 1; i < j["snapshots"].size(); ++i) EXPECT_FALSE(j["snapshots"][i].contains("loader"));
}
