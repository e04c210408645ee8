// Trace import (Kineto / Chrome trace JSON / our own export, plain or gzip) with simdjson On-Demand: the
// bytes come from trace_bytes.cpp, the events are read by trace_importer.cpp, the Chrome trace export is
// trace_export.cpp. Every failure is an Error value; nothing throws (simdjson is used with error codes, zlib
// is C).
#include "profiler/trace_io.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "trace_bytes.h"
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

// `data` holds `len` bytes of JSON followed by at least SIMDJSON_PADDING readable bytes (capacity `cap`).
Status parse_into(Trace& trace, const char* data, size_t len, size_t cap) {
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
  od::parser parser;
  sj::padded_string_view view(data, len, cap);
  od::document doc;
  if (auto err = parser.iterate(view).get(doc); err)
    return Error{std::string("invalid JSON: ") + sj::error_message(err), -1};
  Importer im{trace, data, len};
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
        od::array arr;
        if (v.get_array().get(arr)) continue;
        for (auto d_r : arr) {
          od::object d;
          if (d_r.get_object().get(d)) break;
          std::string_view n;
          if (!d["name"].get_string().get(n) && trace.meta().device.empty()) trace.meta().device = std::string(n);
          // The analyses need the architecture (TF32 needs compute capability 8, Tensor Cores 7).
          int64_t major = 0, minor = 0;
          if (!d["computeMajor"].get_int64().get(major) && !d["computeMinor"].get_int64().get(minor))
            trace.meta().extra["compute_capability"] = std::to_string(major) + "." + std::to_string(minor);
          break;
        }
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
  im.finish();
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Trace>> parse_trace(std::string_view bytes, std::string_view source_name,
                                           const LoadOptions& options) {
  FileBytes text;
  if (is_gzip(bytes)) {
    if (Status s = gunzip(bytes, text, options.max_bytes); !s) return s.error();
  } else {
    if (options.max_bytes && bytes.size() > options.max_bytes)
      return Error{"trace is too large (" + std::to_string(bytes.size()) + " bytes)"};
    text.size = bytes.size();
    text.data = bytes::allocate(text.size + kPad);
    std::memcpy(text.data.get(), bytes.data(), bytes.size());
    std::memset(text.data.get() + text.size, 0, kPad);
  }
  auto trace = std::make_unique<Trace>();
  trace->meta().source_path = std::string(source_name);
  if (Status s = parse_into(*trace, text.data.get(), text.size, text.size + kPad); !s) return s.error();
  trace->finalize();
  return trace;
}

Result<std::unique_ptr<Trace>> load_trace(const std::string& path, const LoadOptions& options) {
  FileBytes raw;
  if (Status s = read_file(path, raw, options.max_bytes); !s) return s.error();
  auto trace = std::make_unique<Trace>();
  trace->meta().source_path = path;
  if (is_gzip(raw.view())) {
    FileBytes text;
    if (Status s = gunzip(raw.view(), text, options.max_bytes); !s) return s.error();
    raw = FileBytes{};
    if (Status s = parse_into(*trace, text.data.get(), text.size, text.size + kPad); !s) return s.error();
  } else {
    if (Status s = parse_into(*trace, raw.data.get(), raw.size, raw.size + kPad); !s) return s.error();
  }
  trace->finalize();
  return trace;
}

}  // namespace tb::prof
