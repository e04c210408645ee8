// Runs the built `tunebench-cli analyze` and checks exit codes, the summary and the JSON contract fields.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <zlib.h>

#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace {

struct CliRun {
  int code = -1;
  std::string out;  // stdout + stderr
};

CliRun run(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string("'") + TB_CLI_PATH + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string testdata(const char* name) { return std::string(TB_TESTDATA_DIR) + "/" + name; }

std::string tmp(const char* name) {
  return ::testing::TempDir() + "tb_cli_" + std::to_string(::getpid()) + "_" + name;
}

TEST(CliAnalyze, RealTraceSummaryAndJson) {
  const std::string out = tmp("a.json");
  CliRun r = run("analyze '" + testdata("kineto_train_step_rank0.json.gz") + "' --json '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("per step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("waiting for the data loader"), std::string::npos);
  EXPECT_NE(r.out.find("findings"), std::string::npos);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string j = ss.str();
  for (const char* k : {"\"busy_us\"", "\"idle_us\"", "\"loader_stall\"", "\"launch_gap\"", "\"min_gap_us\":2",
                        "\"sync\"", "\"steps\":{\"count\":5", "\"median_us\"", "\"kernels\":{\"count\":4350",
                        "\"findings\""})
    EXPECT_NE(j.find(k), std::string::npos) << k;
  std::remove(out.c_str());
}

// A script's GPU trace carries the loader verdict its run printed, whose launcher saw no copy to the device;
// the trace did (a real A100 job's pageable and pinned HtoD copies): `analyze` says the input's two parts, the
// copies' share the one the steps' copies give over the trace's own time, as the loader-stall finding counts it.
TEST(CliAnalyze, AScriptsLoaderVerdictTakesItsCopiesFromTheGpuTrace) {
  std::string text;
  gzFile gz = gzopen(testdata("kineto_nccl_sampled_rank0.json.gz").c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  char buf[1 << 16];
  for (int n; (n = gzread(gz, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  gzclose(gz);
  // The "loader" document as `run --script --trace` writes it (client::LoaderVerdict::to_json), no transfer.
  const std::string doc =
      R"j({"tunebench":{"documents":{"loader":{"grade":"moderately input-bound","wait_share":0.12,)j"
      R"j("workers":2,"cores":2,"machine_cores":2,"samples":640,"batches":40,"busy_share":0.9,"cpu_share":0.8,)j"
      R"j("ms_per_sample":3.0,"consume_samples_s":800,"supply_samples_s":600,"transfer_share":-1,)j"
      R"j("parts":[{"name":"read + decode (PIL)","ms":2.0,"per":"sample","share":0.67,"where":"train.py:40"}]}}},)j";
  const std::string path = tmp("script_gpu.json");
  std::ofstream(path) << doc << text.substr(text.find('{') + 1);
  auto loaded = tb::prof::load_trace(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  const tb::prof::AnalysisResult a = tb::prof::analyze(*loaded.value());
  ASSERT_GT(a.input_copy_ns(), 0);
  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", 100.0 * double(a.input_copy_ns()) / double(a.own_ns()));
  CliRun r = run("analyze '" + path + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the loop waited for batches 12% (host) and copied them to the device " + std::string(share) +
                       " (transfer)"), std::string::npos) << r.out;
  // A trace without steps' copies (a CPU run's): the wait alone, as the run printed it.
  const std::string cpu = tmp("script_cpu.json");
  std::ofstream(cpu) << doc << R"("traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,)"
                     << R"("tid":1,"ts":0,"dur":1000}]})";
  r = run("analyze '" + cpu + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loader: moderately input-bound: the loop waited for batches 12% of its step time"),
            std::string::npos) << r.out;
  std::remove(path.c_str());
  std::remove(cpu.c_str());
}

TEST(CliAnalyze, MinGapOptionAndStdoutJson) {
  CliRun r = run("analyze '" + testdata("kineto_alexnet_a100.json.gz") + "' --min-gap-us 5 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"min_gap_us\":5"), std::string::npos);
  EXPECT_NE(r.out.find("\"kernels\":{\"count\":79"), std::string::npos);
}

TEST(CliDiff, TwoRealTracesTextAndJson) {
  const std::string a = testdata("kineto_nccl_sampled_rank0.json.gz"), b = testdata("kineto_train_step_rank0.json.gz");
  CliRun r = run("diff '" + a + "' '" + b + "' --top 3 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* k : {"median step", "changed most", "\"classes\"", "\"added\"", "\"removed\"", "\"speedup\"",
                        "\"steps\":[2,5]"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k;
  EXPECT_EQ(run("diff '" + a + "'").code, 2);
  EXPECT_EQ(run("diff '" + a + "' /nonexistent.json").code, 2);
  EXPECT_EQ(run("diff '" + a + "' '" + b + "' --top 0").code, 2);
}

// Two ranks of a real NCCL job, one file each: every rank's step time and communication wait, side by side.
TEST(CliAnalyze, TwoRankFilesAreComparedAsRanks) {
  CliRun r = run("analyze '" + testdata("kineto_nccl_sampled_rank0.json.gz") + "' '" +
                 testdata("kineto_nccl_sampled_rank1.json.gz") + "' --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* k : {"ranks (2 step numbers common to all)", "kineto_nccl_sampled_rank1.json.gz", "comm wait",
                        "\"ranks\":{\"matched_steps\":2", "\"comm_wait_median_us\"", "too few to name a straggler"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << "\n" << r.out;
  EXPECT_EQ(run("analyze '" + testdata("kineto_nccl_sampled_rank0.json.gz") + "' /nonexistent.json").code, 2);
}

TEST(CliAnalyze, BadInputExitsTwoWithOneLine) {
  CliRun missing = run("analyze /nonexistent/trace.json");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("tunebench-cli: error:"), std::string::npos);
  EXPECT_EQ(missing.out.find('\n'), missing.out.size() - 1) << missing.out;  // exactly one line

  const std::string junk = tmp("junk.json");
  {
    std::ofstream f(junk, std::ios::binary);
    f << "\x1f\x8b garbage that is not gzip";
  }
  CliRun bad = run("analyze '" + junk + "'");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("gzip"), std::string::npos) << bad.out;
  std::remove(junk.c_str());

  EXPECT_EQ(run("analyze").code, 2);
  EXPECT_EQ(run("analyze a b").code, 2);
  EXPECT_EQ(run("analyze '" + testdata("kineto_alexnet_a100.json.gz") + "' --min-gap-us -3").code, 2);
  EXPECT_EQ(run("analyze '" + testdata("kineto_alexnet_a100.json.gz") + "' --bogus").code, 2);
  EXPECT_EQ(run("analyze '" + testdata("kineto_alexnet_a100.json.gz") + "' --json").code, 2);
  EXPECT_EQ(run("analyze '" + testdata("kineto_alexnet_a100.json.gz") + "' --json /nonexistent/dir/x.json").code, 1);
}

}  // namespace
