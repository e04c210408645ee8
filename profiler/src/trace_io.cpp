// Trace import (Kineto / Chrome trace JSON / our own export, plain or gzip) with simdjson On-Demand: the
// bytes come from trace_bytes.cpp, the events are read by trace_importer.cpp, the Chrome trace export is
// trace_export.cpp. Every failure is an Error value; nothing throws (simdjson is used with error codes, zlib
// is C).
#include "profiler/trace_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "trace_bytes.h"
#include "trace_chunks.h"
#include "trace_importer.h"

#if __has_include(<simdjson.h>)
#include <simdjson.h>
#else
#error "simdjson is required (libsimdjson-dev)"
#endif

namespace tb::prof {
namespace {

namespace sj = simdjson;
namespace od = simdjson::ondemand;

using bytes::FileBytes;
using import::Importer;
using bytes::gunzip;
using bytes::is_gzip;
using bytes::read_file;
constexpr size_t kPad = bytes::kBytesPad;
static_assert(kPad >= sj::SIMDJSON_PADDING, "the input buffers must carry simdjson's padding");

// Checks of the whole text that give a better message than the parser's first complaint.
Status check_text(const char* data, size_t len) {
  size_t first = 0;
  while (first < len && (data[first] == ' ' || data[first] == '\n' || data[first] == '\r' || data[first] == '\t'))
    ++first;
  if (first == len) return Error{len == 0 ? "empty file" : "empty trace (only whitespace)"};
  if (data[first] != '{' && data[first] != '[')
    return Error{"not a trace: expected a JSON object or array", static_cast<int64_t>(first)};
  // A cut-off file (a copy or a recording that stopped) is the common bad input: say where it ends rather
  // than the parser's first complaint, which has no position.
  size_t last = len;
  while (last > first && (data[last - 1] == ' ' || data[last - 1] == '\n' || data[last - 1] == '\r' ||
                          data[last - 1] == '\t' || data[last - 1] == '\0'))
    --last;
  if (last > first && data[last - 1] != '}' && data[last - 1] != ']')
    return Error{"truncated trace: the JSON stops mid-document at the end of the file", static_cast<int64_t>(last)};
  return Status::Ok();
}

// Kineto's deviceProperties: the first device's name and compute capability (the analyses need the
// architecture: TF32 needs 8.x, Tensor Cores 7.x). Fields are read in order and the first parse error ends the
// document: simdjson's lookup by key must not run on an iterator an error has abandoned (it crashes).
Status device_properties(od::value v, TraceMetadata& meta, Importer& im) {
  od::array arr;
  if (v.get_array().get(arr)) return Status::Ok();
  for (auto d_r : arr) {
    od::object d;
    if (auto err = d_r.get_object().get(d); err) {
      if (err == sj::INCORRECT_TYPE) return Status::Ok();
      return Error{std::string("invalid JSON: ") + sj::error_message(err), im.offset_of(arr)};
    }
    std::string_view name;
    int64_t major = -1, minor = -1;
    for (auto f_r : d) {
      od::field f;
      std::string_view key;
      if (auto err = std::move(f_r).get(f); err)
        return Error{std::string("invalid JSON: ") + sj::error_message(err), im.offset_of(d)};
      if (auto err = f.unescaped_key().get(key); err)
        return Error{std::string("invalid JSON: ") + sj::error_message(err), im.offset_of(d)};
      od::value fv = f.value();
      if (key == "name") {
        if (fv.get_string().get(name)) name = {};
      } else if (key == "computeMajor") {
        if (fv.get_int64().get(major)) major = -1;
      } else if (key == "computeMinor") {
        if (fv.get_int64().get(minor)) minor = -1;
      }
    }
    if (!name.empty() && meta.device.empty()) meta.device = std::string(name);
    if (major >= 0 && minor >= 0) meta.extra["compute_capability"] = std::to_string(major) + "." + std::to_string(minor);
    break;  // the first device describes the trace
  }
  return Status::Ok();
}

// Imports one complete document: `data` holds `len` bytes of JSON followed by at least SIMDJSON_PADDING
// readable bytes (capacity `cap`). Offsets in errors are into `data`.
Status parse_document(Importer& im, od::parser& parser, const char* data, size_t len, size_t cap) {
  sj::padded_string_view view(data, len, cap);
  od::document doc;
  if (auto err = parser.iterate(view).get(doc); err)
    return Error{std::string("invalid JSON: ") + sj::error_message(err), -1};
  im.base = data;
  im.len = len;
  Trace& trace = im.trace;
  od::json_type top;
  if (auto err = doc.type().get(top); err) {
    return Error{std::string("invalid JSON: ") + sj::error_message(err), im.offset_of(doc)};
  }
  auto events = [&](od::array arr) -> Status {
    for (auto ev_r : arr) {
      od::value ev;
      if (auto err = ev_r.get(ev); err) {
        return Error{"traceEvents[" + std::to_string(im.event_index) + "]: invalid JSON: " + sj::error_message(err),
                     im.offset_of(arr)};
      }
      if (Status s = im.event(ev); !s) return s;
    }
    return Status::Ok();
  };
  bool have_events = false;
  if (top == od::json_type::array) {
    od::array arr;
    if (auto err = doc.get_array().get(arr); err) return Error{std::string("invalid JSON: ") + sj::error_message(err), 0};
    if (Status s = events(arr); !s) return s;
    have_events = true;
  } else {
    od::object obj;
    if (auto err = doc.get_object().get(obj); err) return Error{std::string("invalid JSON: ") + sj::error_message(err), 0};
    for (auto f_r : obj) {
      od::field f;
      if (auto err = std::move(f_r).get(f); err) return Error{std::string("invalid JSON: ") + sj::error_message(err), im.offset_of(obj)};
      std::string_view k;
      if (auto err = f.unescaped_key().get(k); err)
        return Error{std::string("invalid JSON: ") + sj::error_message(err), im.offset_of(obj)};
      od::value v = f.value();
      if (k == "traceEvents") {
        od::array arr;
        if (auto err = v.get_array().get(arr); err)
          return Error{std::string("not a trace: \"traceEvents\" is not an array"), im.offset_of(v)};
        if (Status s = events(arr); !s) return s;
        have_events = true;
      } else if (k == "tunebench") {
        if (Status s = im.tunebench_meta(v); !s) return s;
      } else if (k == "deviceProperties") {
        if (Status s = device_properties(v, trace.meta(), im); !s) return s;
        im.saw_kineto = true;
      } else if (k == "schemaVersion") {
        int64_t sv;
        if (!v.get_int64().get(sv)) trace.meta().versions["kineto schema"] = std::to_string(sv);
        im.saw_kineto = true;
      } else {
        od::json_type t;
        if (v.type().get(t)) continue;
        std::string_view s;
        if (t == od::json_type::string && !v.get_string().get(s) && trace.meta().extra.size() < 64)
          trace.meta().extra[std::string(k)] = std::string(s.substr(0, 256));
      }
    }
    if (!have_events) return Error{"not a trace: no \"traceEvents\" array"};
  }
  return Status::Ok();
}

Status parse_pieces(Trace& trace, const char* data, const chunks::Cutter::WaitFn& wait_for, size_t piece_bytes,
                    size_t& pieces) {
  chunks::Cutter cutter(data, wait_for, piece_bytes);
  od::parser parser;
  std::vector<char> buf;
  Importer im{trace, nullptr, 0};
  while (auto p = cutter.next()) {
    const size_t body = p->end - p->begin;
    const size_t n = p->prefix.size() + body + p->suffix.size();
    if (buf.size() < n + kPad) buf.resize(n + n / 4 + kPad);
    char* out = buf.data();
    std::copy(p->prefix.begin(), p->prefix.end(), out);
    std::memcpy(out + p->prefix.size(), data + p->begin, body);
    std::copy(p->suffix.begin(), p->suffix.end(), out + p->prefix.size() + body);
    std::memset(out + n, 0, kPad);
    pieces = cutter.pieces();
    if (Status s = parse_document(im, parser, out, n, n + kPad); !s) return s;
  }
  im.finish();
  return Status::Ok();
}

// Parses `len` bytes at `data` (followed by kPad zero bytes) into `trace`. A big text goes in pieces; if a
// piece fails, the whole text is parsed again in one go into a fresh trace, so an error names its offset in
// the file as it always did.
Status parse_into(std::unique_ptr<Trace>& trace, const char* data, size_t len, const LoadOptions& options) {
  if (Status s = check_text(data, len); !s) return s;
  if (options.piece_min > 0 && len >= options.piece_min) {
    const std::string path = trace->meta().source_path;
    size_t pieces = 0;
    if (parse_pieces(*trace, data, [len](size_t) { return len; }, options.piece_bytes, pieces)) {
      if (options.stats) *options.stats = ParseStats{pieces, false};
      return Status::Ok();
    }
    if (options.stats) options.stats->fell_back = true;
    trace = std::make_unique<Trace>();
    trace->meta().source_path = path;
  }
  od::parser parser;
  Importer im{*trace, data, len};
  if (options.stats) options.stats->pieces = 1;
  if (Status s = parse_document(im, parser, data, len, len + kPad); !s) return s;
  im.finish();
  return Status::Ok();
}

// Parses the pieces of a text as it arrives (bytes::TextStream). Returns false when the stream could not hold
// the text (then `trace` is fresh and the caller reads the text another way); a failed piece is parsed again
// in one go from the whole text, so an error names its offset as it always did.
Result<bool> parse_stream(std::unique_ptr<Trace>& trace, bytes::TextStream& stream, const LoadOptions& options) {
  size_t pieces = 0;
  const Status parsed = parse_pieces(*trace, stream.data(), [&stream](size_t n) { return stream.wait_for(n); },
                                     options.piece_bytes, pieces);
  FileBytes text;
  bool streamed = false;
  if (Status s = stream.finish(text, streamed); !s) return s.error();
  if (streamed && parsed) {
    if (options.stats) *options.stats = ParseStats{pieces, false, true};
    return true;
  }
  const std::string path = trace->meta().source_path;
  trace = std::make_unique<Trace>();
  trace->meta().source_path = path;
  if (!streamed) return false;
  LoadOptions whole = options;
  whole.piece_min = 0;
  if (options.stats) options.stats->fell_back = true;
  if (Status s = parse_into(trace, text.data.get(), text.size, whole); !s) return s.error();
  return true;
}

// A gzip text of piece_min bytes or more inflates on a thread while its pieces are parsed; a stream that
// cannot (several members, a wrong trailer) is inflated first, as is a small one.
Status parse_gzip(std::unique_ptr<Trace>& trace, std::string_view gz, const LoadOptions& options) {
  if (options.piece_min > 0) {
    auto stream = bytes::TextStream::inflate(gz, options.max_bytes);
    if (stream && stream->expected_size() >= options.piece_min) {
      auto done = parse_stream(trace, *stream, options);
      if (!done) return done.error();
      if (done.value()) return Status::Ok();
    }
  }
  FileBytes text;
  if (Status s = gunzip(gz, text, options.max_bytes); !s) return s;
  return parse_into(trace, text.data.get(), text.size, options);
}

// A big plain file is read on a thread while its pieces are parsed. Returns false when the file is not one
// (small, gzip, not a regular file, over the limit): the caller reads it whole.
Result<bool> load_plain_in_pieces(std::unique_ptr<Trace>& trace, const std::string& path, const LoadOptions& options) {
  if (options.piece_min == 0) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // read_file says why
  struct stat st {};
  unsigned char magic[2] = {0, 0};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) < options.piece_min ||
      (options.max_bytes && static_cast<size_t>(st.st_size) > options.max_bytes) || ::pread(fd, magic, 2, 0) != 2 ||
      is_gzip(std::string_view(reinterpret_cast<char*>(magic), 2))) {
    ::close(fd);
    return false;
  }
  auto stream = bytes::TextStream::read(fd, static_cast<size_t>(st.st_size), path);
  return parse_stream(trace, *stream, options);
}

}  // namespace

Result<std::unique_ptr<Trace>> parse_trace(std::string_view bytes, std::string_view source_name,
                                           const LoadOptions& options) {
  auto trace = std::make_unique<Trace>();
  trace->meta().source_path = std::string(source_name);
  if (is_gzip(bytes)) {
    if (Status s = parse_gzip(trace, bytes, options); !s) return s.error();
  } else {
    if (options.max_bytes && bytes.size() > options.max_bytes)
      return Error{"trace is too large (" + std::to_string(bytes.size()) + " bytes)"};
    FileBytes text;
    text.size = bytes.size();
    text.data = bytes::allocate(text.size + kPad);
    std::memcpy(text.data.get(), bytes.data(), bytes.size());
    std::memset(text.data.get() + text.size, 0, kPad);
    if (Status s = parse_into(trace, text.data.get(), text.size, options); !s) return s.error();
  }
  trace->finalize();
  return trace;
}

Result<std::unique_ptr<Trace>> load_trace(const std::string& path, const LoadOptions& options) {
  auto trace = std::make_unique<Trace>();
  trace->meta().source_path = path;
  auto streamed = load_plain_in_pieces(trace, path, options);
  if (!streamed) return streamed.error();
  if (streamed.value()) {
    trace->finalize();
    return trace;
  }
  FileBytes raw;
  if (Status s = read_file(path, raw, options.max_bytes); !s) return s.error();
  if (is_gzip(raw.view())) {
    if (Status s = parse_gzip(trace, raw.view(), options); !s) return s.error();
  } else {
    if (Status s = parse_into(trace, raw.data.get(), raw.size, options); !s) return s.error();
  }
  trace->finalize();
  return trace;
}

void ChunkMerger::add(std::unique_ptr<Trace> part) {
  auto& extra = part->meta().extra;
  const auto clock = extra.find("tunebench_clock");
  if (clock != extra.end() && clock->second == "monotonic") {
    extra.erase(clock);
    waiting_.push_back(std::move(part));
  } else {
    if (const auto off = extra.find("tunebench_clock_offset_us"); off != extra.end() && !have_offset_) {
      char* end = nullptr;
      const double us = std::strtod(off->second.c_str(), &end);
      if (end && *end == '\0' && std::isfinite(us)) {
        have_offset_ = true;
        offset_ns_ = static_cast<int64_t>(std::llround(us * 1000.0));
      }
    }
    if (merged_->event_count() == 0 && merged_->tracks().empty()) merged_->meta() = part->meta();
    merged_->merge(*part);
  }
  if (!have_offset_) return;
  for (auto& w : waiting_) {
    w->shift_time(offset_ns_);
    merged_->merge(*w);
  }
  waiting_.clear();
}

std::unique_ptr<Trace> ChunkMerger::take() {
  unplaced_ += waiting_.size();
  waiting_.clear();
  return std::move(merged_);
}

Result<std::unique_ptr<Trace>> merge_script_chunks(const std::vector<std::string>& chunks,
                                                   std::span<const LaneStep> steps,
                                                   std::span<const LaneOutside> outside,
                                                   std::span<const LaneCompile> compiles) {
  if (chunks.empty()) return Error{"the script wrote no trace chunk (no step was traced)"};
  ChunkMerger merger;
  for (const auto& c : chunks) {
    auto t = load_trace(c);
    if (!t) return Error{"trace chunk " + c + ": " + t.error().to_string()};
    merger.add(std::move(t.value()));
  }
  auto merged = merger.take();
  merged->meta().extra.erase("tunebench_clock_offset_us");
  merged->meta().extra["tunebench_run"] = "script";
  // After the merge: the lane's pseudo-process is no chunk's, and its times need the offset the chunks state.
  if (const auto offset = merger.offset_ns(); offset && (!steps.empty() || !outside.empty() || !compiles.empty())) {
    add_step_lane(*merged, steps, outside, *offset);
    add_compile_lane(*merged, compiles, *offset);
  }
  merged->finalize();
  return merged;
}

}  // namespace tb::prof
