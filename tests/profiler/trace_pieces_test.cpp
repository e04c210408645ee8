// A big trace is parsed in pieces (profiler/src/trace_chunks.h): every test here parses the same text in one
// go and in pieces and wants the same trace, down to every event, name, track and flow. Piece sizes are set
// tiny so the cutter meets strings holding "}, {", escaped quotes, nested arrays of objects, a decoy
// "traceEvents" string and keys after the events array.
#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "profiler/trace_io.h"
#include "trace_chunks.h"

namespace tb::prof {
namespace {

std::string gzip(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n;
  while (f && (n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  if (f) gzclose(f);
  return out;
}

// Everything a reader of the trace can see, as text: metadata, tracks, events, flows.
std::string dump(const Trace& t) {
  std::ostringstream o;
  const TraceMetadata& m = t.meta();
  o << "format " << m.source_format << " device " << m.device << " dropped " << m.dropped_records << "\n";
  for (const auto& [k, v] : m.versions) o << "version " << k << "=" << v << "\n";
  for (const auto& [k, v] : m.extra) o << "extra " << k << "=" << v << "\n";
  for (const Track& tr : t.tracks()) {
    o << "track " << to_string(tr.kind()) << " " << tr.pid() << " " << tr.tid() << " '" << tr.name() << "' "
      << tr.sort_index() << "\n";
    for (const Event& e : tr.events()) {
      o << " " << e.start_ns << " " << e.end_ns << " " << t.name(e.name) << " | " << t.name(e.detail) << " "
        << to_string(e.kind) << " d" << int(e.depth) << " f" << e.flags << " a" << e.arg << " c" << e.correlation
        << " v" << e.value << "\n";
    }
  }
  for (const Flow& f : t.flows())
    o << "flow " << f.correlation << " " << f.src_track << ":" << f.src_event << " -> " << f.dst_track << ":"
      << f.dst_event << "\n";
  return o.str();
}

struct Parsed {
  std::string text;  // the dump, or "error: ..." with the offset
  ParseStats stats;
};

Parsed parse(const std::string& json, size_t piece_bytes) {
  Parsed p;
  LoadOptions o;
  o.piece_min = piece_bytes ? 1 : 0;
  o.piece_bytes = piece_bytes ? piece_bytes : 1;
  o.stats = &p.stats;
  auto r = parse_trace(json, "test", o);
  if (!r) p.text = "error: " + r.error().to_string();
  else p.text = dump(*r.value());
  return p;
}

void expect_same_in_pieces(const std::string& json, size_t piece_bytes, size_t min_pieces) {
  const Parsed whole = parse(json, 0);
  const Parsed pieces = parse(json, piece_bytes);
  EXPECT_EQ(whole.stats.pieces, 1u);
  EXPECT_FALSE(pieces.stats.fell_back) << pieces.text.substr(0, 300);
  EXPECT_GE(pieces.stats.pieces, min_pieces);
  EXPECT_EQ(whole.text.rfind("error", 0), std::string::npos) << whole.text;
  EXPECT_EQ(pieces.text, whole.text);
}

TEST(TraceScan, MatchesAByteLoopOnRandomJsonText) {
  // Quotes, backslashes and brackets in every position, across 64-byte blocks, scanned in random slices.
  std::mt19937 rng(7);
  const std::string alphabet = "\"\\{}[]a ,:\"\"\\";
  for (int round = 0; round < 50; ++round) {
    std::string text(3000, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    chunks::ScanState ref, got;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t n = std::min<size_t>(text.size() - pos, 1 + rng() % 200);
      for (size_t i = pos; i < pos + n; ++i) {
        const char c = text[i];
        if (ref.in_string) {
          if (ref.escaped) ref.escaped = false;
          else if (c == '\\') ref.escaped = true;
          else if (c == '"') ref.in_string = false;
        } else if (c == '"') ref.in_string = true;
        else if (c == '{' || c == '[') ++ref.depth;
        else if (c == '}' || c == ']') --ref.depth;
      }
      chunks::scan(text.data() + pos, n, got);
      pos += n;
      ASSERT_EQ(got.in_string, ref.in_string) << "round " << round << " at " << pos;
      ASSERT_EQ(got.escaped, ref.escaped) << "round " << round << " at " << pos;
      ASSERT_EQ(got.depth, ref.depth) << "round " << round << " at " << pos;
    }
  }
}

TEST(TracePieces, RealKinetoTracesAreTheSameInPieces) {
  for (const char* name : {"kineto_alexnet_a100.json.gz", "kineto_event_sync_multistream.json.gz",
                           "kineto_nccl_sampled_rank0.json.gz", "kineto_train_step_rank0.json.gz"}) {
    SCOPED_TRACE(name);
    const std::string json = read_gz(std::string(TB_TESTDATA_DIR) + "/" + name);
    ASSERT_GT(json.size(), 1000u);
    expect_same_in_pieces(json, 4096, 3);
  }
}

TEST(TracePieces, GzipInflatesWhileItsPiecesAreParsed) {
  // The gzip bytes themselves: inflated on a thread while the pieces are parsed, the same trace as in one go.
  const std::string json = read_gz(std::string(TB_TESTDATA_DIR) + "/kineto_train_step_rank0.json.gz");
  const std::string gz = gzip(json);
  expect_same_in_pieces(gz, 4096, 100);
  EXPECT_TRUE(parse(gz, 4096).stats.streamed);
  // A cut-off stream: the same error either way ("corrupt gzip: truncated stream" and where).
  const std::string cut = gz.substr(0, gz.size() / 2) + gz.substr(gz.size() - 8);
  const Parsed whole = parse(cut, 0), pieces = parse(cut, 4096);
  EXPECT_EQ(whole.text.rfind("error: corrupt gzip", 0), 0u) << whole.text;
  EXPECT_EQ(pieces.text, whole.text);
  // Two gzip members (allowed; the trailer then tells the last one's size): inflated first, then in pieces.
  const std::string two = gzip(json.substr(0, 100)) + gzip(json.substr(100));
  expect_same_in_pieces(two, 4096, 100);
  EXPECT_FALSE(parse(two, 4096).stats.streamed);
}

TEST(TracePieces, APlainFileIsReadWhileItsPiecesAreParsed) {
  const std::string json = read_gz(std::string(TB_TESTDATA_DIR) + "/kineto_train_step_rank0.json.gz");
  const std::string path = ::testing::TempDir() + "tb_pieces_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path, std::ios::binary);
    f << json;
  }
  ParseStats stats;
  LoadOptions o;
  o.piece_min = 1;
  o.piece_bytes = 4096;
  o.stats = &stats;
  auto streamed = load_trace(path, o);
  ASSERT_TRUE(streamed.ok()) << streamed.error().to_string();
  EXPECT_TRUE(stats.streamed);
  EXPECT_GE(stats.pieces, 100u);
  LoadOptions one;
  one.piece_min = 0;
  auto whole = load_trace(path, one);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(dump(*streamed.value()), dump(*whole.value()));
  // Cut off mid-event: the same error as read whole.
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << json.substr(0, json.size() / 2);
  }
  auto cut_pieces = load_trace(path, o), cut_whole = load_trace(path, one);
  ASSERT_FALSE(cut_pieces.ok());
  ASSERT_FALSE(cut_whole.ok());
  EXPECT_EQ(cut_pieces.error().to_string(), cut_whole.error().to_string());
  std::remove(path.c_str());
}

// Every event its own piece (piece_bytes 1), in a text written to trip a cutter that guessed.
std::string tricky_events() {
  return R"([
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main \"}, {\" thread"}},
    {"ph": "X", "cat": "cpu_op", "name": "a}, {\"ph\": \"X\"", "pid": 1, "tid": 2, "ts": 10, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "path\\to\\}", "pid": 1, "tid": 2, "ts": 12, "dur": 5,
     "args": {"list": [{"a": 1}, {"b": [2, {"c": "]}"}]}], "correlation": 0}},
    {"ph": "B", "name": "open across pieces", "pid": 1, "tid": 2, "ts": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 21, "dur": 3,
     "args": {"correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "k<{[\"]}>", "pid": 0, "tid": 7, "ts": 30, "dur": 4,
     "args": {"device": 0, "stream": 7, "correlation": 9, "grid": [1, 2, 3]}},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 40},
    {"ph": "C", "name": "mem", "pid": 1, "ts": 41, "args": {"used": 3.5}},
    {"ph": "i", "s": "g", "name": "Iteration Start", "pid": 1, "tid": 2, "ts": 42}
  ])";
}

TEST(TracePieces, ObjectFormCutsOnlyBetweenEvents) {
  // Decoys before the real key: "traceEvents" inside a string, as a nested key and as a value; an array of
  // objects; keys after the events array.
  const std::string json = std::string(R"({"schemaVersion": 1, "note": "\"traceEvents\": [{\"x\": 1}, {", )") +
                           R"("meta": {"traceEvents": [{"ph": "X", "name": "not an event", "pid": 1, "tid": 1, "ts": 1}]}, )" +
                           R"("list": ["traceEvents", {"traceEvents": []}], )" +
                           R"("deviceProperties": [{"id": 0, "name": "GPU A", "computeMajor": 8, "computeMinor": 0},)" +
                           R"( {"id": 1, "name": "GPU B"}], "traceEvents": )" + tricky_events() +
                           R"(, "traceName": "x}, {y", "displayTimeUnit": "ms"})";
  expect_same_in_pieces(json, 1, 9);
  const Parsed p = parse(json, 1);
  EXPECT_NE(p.text.find("main \"}, {\" thread"), std::string::npos) << p.text;
  EXPECT_NE(p.text.find("extra traceName=x}, {y"), std::string::npos) << p.text;
  EXPECT_NE(p.text.find("device GPU A"), std::string::npos) << p.text;
}

TEST(TracePieces, ArrayFormCutsOnlyBetweenEvents) { expect_same_in_pieces(tricky_events(), 1, 9); }

TEST(TracePieces, WithoutAnEventsKeyTheTextIsOnePiece) {
  const Parsed p = parse(R"({"schemaVersion": 1, "other": [{"a": 1}, {"b": 2}]})", 1);
  EXPECT_EQ(p.stats.pieces, 1u);
  EXPECT_EQ(p.text, parse(R"({"schemaVersion": 1, "other": [{"a": 1}, {"b": 2}]})", 0).text);
  EXPECT_NE(p.text.find("no \"traceEvents\""), std::string::npos) << p.text;
}

TEST(TracePieces, AnErrorInAPieceIsTheWholeTextsError) {
  // A bad value, a JSON syntax error and an unclosed event in the middle of the events: the pieces fail, the
  // whole text is parsed again, and the error (message and byte offset) is the one-go parse's.
  std::string events;
  for (int i = 0; i < 40; ++i)
    events += (i ? "," : "") + std::string(R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": )") +
              std::to_string(i * 10) + R"(, "dur": 5})";
  for (const std::string bad : {R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": "soon", "dur": 5})",
                                R"({"ph": "X", "name" "op", "pid": 1, "tid": 1, "ts": 1, "dur": 5})",
                                R"({"ph": "X", "args": {"a": [1, 2}, "ts": 1})"}) {
    SCOPED_TRACE(bad);
    const std::string json = R"({"traceEvents": [)" + events + "," + bad + "," + events + "]}";
    const Parsed whole = parse(json, 0);
    const Parsed pieces = parse(json, 64);
    ASSERT_EQ(whole.text.rfind("error", 0), 0u) << whole.text;
    EXPECT_TRUE(pieces.stats.fell_back);
    EXPECT_EQ(pieces.text, whole.text);
  }
}

}  // namespace
}  // namespace tb::prof
