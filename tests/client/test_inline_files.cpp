// client/inline_files.h: a file carried in a protocol message arrives byte for byte, the sender's copy is
// removed, and a damaged one is an error, not a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "client/inline_files.h"

namespace fs = std::filesystem;
using namespace tb::client;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

TEST(InlineFiles, BytesSurvivePackAndUnpack) {
  std::mt19937 rng(5);
  for (size_t n : {0u, 1u, 2u, 3u, 4u, 1000u, 100000u}) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = char(rng() % 7 == 0 ? rng() : 'a' + rng() % 3);  // compressible, with binary
    const auto back = unpack_bytes(pack_bytes(bytes));
    ASSERT_TRUE(back) << n << ": " << back.error().message;
    EXPECT_EQ(*back, bytes) << n;
  }
  EXPECT_FALSE(unpack_bytes("not base64!"));
  EXPECT_FALSE(unpack_bytes(pack_bytes(std::string(5000, 'x')).substr(0, 20)));  // truncated
}

TEST(InlineFiles, ATraceChunkTravelsInItsMessageAndLandsOnTheOtherSide) {
  const fs::path dir = fs::temp_directory_path() / ("tb_inline_" + std::to_string(::getpid()));
  fs::create_directories(dir / "server");
  fs::create_directories(dir / "client");
  const std::string chunk = R"({"traceEvents":[{"name":"aten::conv2d","ph":"X","ts":1,"dur":2}]})";
  std::ofstream(dir / "server" / "chunk-3.json") << chunk;
  nlohmann::json msg = {{"type", "trace"}, {"path", (dir / "server" / "chunk-3.json").string()}, {"first_step", 4}};
  EXPECT_TRUE(inline_files(msg).ok());
  EXPECT_TRUE(msg.contains("data"));
  EXPECT_FALSE(fs::exists(dir / "server" / "chunk-3.json")) << "the sender keeps no copy";
  // Through a JSON line, as on the wire.
  nlohmann::json got = nlohmann::json::parse(msg.dump());
  EXPECT_TRUE(restore_files(got, (dir / "client").string(), "7-").ok());
  EXPECT_EQ(got["path"], (dir / "client" / "7-chunk-3.json").string());
  EXPECT_FALSE(got.contains("data"));
  EXPECT_EQ(slurp(got["path"].get<std::string>()), chunk);
  EXPECT_EQ(got["first_step"], 4);
  fs::remove_all(dir);
}

TEST(InlineFiles, ATuneReportCarriesAllThreeFiles) {
  const fs::path dir = fs::temp_directory_path() / ("tb_inline_r_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tune-0.html") << "<html>report</html>";
  std::ofstream(dir / "tune-0.md") << "# report";
  std::ofstream(dir / "tune-0.json") << "{}";
  nlohmann::json msg = {{"type", "tune_done"},
                        {"report_html", (dir / "tune-0.html").string()},
                        {"report_markdown", (dir / "tune-0.md").string()},
                        {"report_json", (dir / "tune-0.json").string()},
                        {"speedup", 1.2}};
  EXPECT_TRUE(inline_files(msg).ok());
  ASSERT_TRUE(msg.contains("files"));
  fs::create_directories(dir / "here");
  EXPECT_TRUE(restore_files(msg, (dir / "here").string(), "").ok());
  EXPECT_EQ(slurp(msg["report_html"].get<std::string>()), "<html>report</html>");
  EXPECT_EQ(slurp(msg["report_markdown"].get<std::string>()), "# report");
  EXPECT_EQ(msg["speedup"], 1.2);
  // Other messages are left alone; a missing file is said, not thrown.
  nlohmann::json step = {{"type", "step"}, {"i", 3}};
  EXPECT_TRUE(inline_files(step).ok());
  EXPECT_EQ(step.dump(), nlohmann::json({{"type", "step"}, {"i", 3}}).dump());
  nlohmann::json gone = {{"type", "trace"}, {"path", (dir / "nope.json").string()}};
  const tb::Status st = inline_files(gone);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cannot read"), std::string::npos);
  fs::remove_all(dir);
}
