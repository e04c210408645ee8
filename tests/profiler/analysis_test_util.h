// What the analysis tests ask of a result (a finding of a kind, a note) and how they load the real Kineto
// traces of tests/testdata. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "profiler/analysis.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"

namespace tb::prof::test_util {

inline const Finding* find(const AnalysisResult& r, FindingKind k) {
  for (const auto& f : r.findings)
    if (f.kind == k) return &f;
  return nullptr;
}

inline bool has_note(const AnalysisResult& r, const std::string& part) {
  for (const auto& n : r.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// A trace from tests/testdata; null (and a failed expectation) when it does not load.
inline std::unique_ptr<Trace> load(const char* name) {
  auto t = load_trace(std::string(TB_TESTDATA_DIR) + "/" + name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return t.ok() ? std::move(t.value()) : nullptr;
}

}  // namespace tb::prof::test_util
