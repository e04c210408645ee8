// analyze()'s passes (profiler/src/analysis_passes.h): the list analyze() runs, in its order, and run one by one
// over one state (as the analysis bench times them) they give analyze()'s result on every real trace of
// tests/testdata, so the bench's figures are the product's.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analysis_passes.h"
#include "analysis_test_util.h"

namespace tb::prof {
namespace {

TEST(AnalysisPasses, AreNamedAndInTheOrderAnalyzeRunsThem) {
  std::vector<std::string> names;
  for (const detail::AnalysisPass& p : detail::analysis_passes()) {
    ASSERT_NE(p.run, nullptr) << p.name;
    names.emplace_back(p.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"scope", "gpu", "steps", "window", "host", "outside", "idle", "per_step",
                                             "stats", "regions", "cuda_graphs", "memory", "findings", "lane",
                                             "notes"}));
}

// A new pass is a row of docs/analysis.md's table of passes too: what a reader of the analysis is told it does.
TEST(AnalysisPasses, EachPassHasItsRowInAnalysisMd) {
  std::ifstream f(std::string(TB_TESTDATA_DIR) + "/../../docs/analysis.md");
  ASSERT_TRUE(f) << "docs/analysis.md";
  const std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (const detail::AnalysisPass& p : detail::analysis_passes())
    EXPECT_NE(doc.find("\n| `" + std::string(p.name) + "` | "), std::string::npos) << p.name << " has no row";
}

TEST(AnalysisPasses, RunOneByOneTheyGiveAnalyzesResultOnEveryRealTrace) {
  for (const char* name : {"kineto_train_step_rank0.json.gz", "kineto_alexnet_a100.json.gz",
                           "kineto_ddp_2rank_rank1.json.gz", "kineto_event_sync_multistream.json.gz",
                           "kineto_nccl_sampled_rank0.json.gz", "kineto_nccl_sampled_rank1.json.gz"}) {
    SCOPED_TRACE(name);
    const auto trace = test_util::load(name);
    ASSERT_TRUE(trace);
    AnalysisOptions opt;
    opt.min_gap_ns = 20000;  // not the default, so an option that a pass dropped would show
    detail::AnalysisState s(*trace, opt);
    for (const detail::AnalysisPass& p : detail::analysis_passes()) p.run(s);
    const AnalysisResult whole = analyze(*trace, opt);
    EXPECT_EQ(to_json(s.r, &trace->meta()), to_json(whole, &trace->meta()));
    EXPECT_TRUE(whole.has_gpu);  // the whole analysis ran, not its CPU-only branch
  }
}

}  // namespace
}  // namespace tb::prof
