// Input for `analyze`: traces of 1 MiB and more are mapped, not copied (trace_bytes.cpp). The parser reads up
// to 64 bytes past the end, so the sizes that matter are a file ending just before a page boundary (the
// padding runs into the next page) and one ending exactly on it (the padding is a page of its own).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace tb::prof {
namespace {

// A Kineto-shaped trace of exactly `size` bytes: n kernels, then spaces inside the last event's args to
// reach the size. Returns the kernel count.
int write_trace(const std::string& path, size_t size) {
  std::string s = "{\"traceEvents\":[";
  int n = 0;
  const std::string tail = "]}";
  for (;; ++n) {
    std::string e = std::string(n ? "," : "") + "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":" +
                    std::to_string(1000 + n * 10) + ",\"dur\":5,\"args\":{\"stream\":7}}";
    if (s.size() + e.size() + tail.size() + 64 > size) break;
    s += e;
  }
  s.insert(s.size() - 2, size - s.size() - tail.size(), ' ');  // "...{"stream":7   }}" stays valid JSON
  s += tail;
  EXPECT_EQ(s.size(), size);
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(s.data(), 1, s.size(), f);
  std::fclose(f);
  return n;
}

TEST(AnalysisInput, MappedTracesEndingAtAndNearAPageBoundary) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t base = (size_t(1) << 20) + 64 * page;
  for (size_t size : {base, base - 10, base - 63, base + 1}) {
    const std::string path = testing::TempDir() + "/tb_mapped_" + std::to_string(size) + ".json";
    const int n = write_trace(path, size);
    auto t = load_trace(path);
    ASSERT_TRUE(t.ok()) << size << ": " << t.error().to_string();
    EXPECT_EQ(t.value()->event_count(), static_cast<size_t>(n)) << size;
    const AnalysisResult r = analyze(*t.value());
    EXPECT_EQ(r.kernel_count, static_cast<uint64_t>(n)) << size;
    EXPECT_EQ(r.gpu_busy_ns, int64_t{n} * 5000) << size;  // 5 us kernels every 10 us
    std::remove(path.c_str());
  }
  // A file that does not end the document is still said to be cut off when mapped.
  const std::string path = testing::TempDir() + "/tb_mapped_cut.json";
  write_trace(path, base);
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(base - 5)), 0);
  auto t = load_trace(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().to_string().find("truncated"), std::string::npos) << t.error().to_string();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tb::prof
