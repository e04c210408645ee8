// Event import (trace_importer.h): numbers parsed from their text, Kineto categories mapped to event kinds.
#include "trace_importer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/cupti_collector.h"
#include "profiler/range_names.h"
#include "profiler/trace_io.h"

namespace tb::prof::import {
namespace {

namespace sj = simdjson;

// ---------- numbers ----------

constexpr int64_t kMaxAbsNs = int64_t(4) * 1000 * 1000 * 1000 * 1000 * 1000 * 1000;  // 4e18 ns (~126 years)

// Parses a JSON number token in microseconds into ns exactly (decimal digits, no double rounding for the
// common "1712195495505543.2" form). Returns false if it is not a number or out of range.
bool parse_us_token(std::string_view tok, int64_t& ns) {
  size_t i = 0;
  bool neg = false;
  if (i < tok.size() && tok[i] == '-') {
    neg = true;
    ++i;
  }
  if (i >= tok.size() || tok[i] < '0' || tok[i] > '9') return false;
  unsigned __int128 ip = 0;
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
    ip = ip * 10 + static_cast<unsigned>(tok[i] - '0');
    if (ip > static_cast<unsigned __int128>(kMaxAbsNs)) return false;
  }
  int64_t frac = 0;
  int fd = 0;
  bool round_up = false;
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    if (i >= tok.size() || tok[i] < '0' || tok[i] > '9') return false;
    for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i, ++fd) {
      if (fd < 3) frac = frac * 10 + (tok[i] - '0');
      else if (fd == 3) round_up = tok[i] >= '5';
    }
    for (int k = std::min(fd, 3); k < 3; ++k) frac *= 10;
  } else {
    frac = 0;
  }
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) {
    // Exponent form: go through a double (rare; precision is whatever the writer gave).
    std::string s(tok);
    char* endp = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &endp);
    if (errno == ERANGE || !std::isfinite(v) || std::fabs(v) * 1000.0 > static_cast<double>(kMaxAbsNs)) return false;
    ns = static_cast<int64_t>(std::llround(v * 1000.0));
    return true;
  }
  if (i != tok.size()) {
    // Trailing whitespace is part of raw tokens in simdjson; anything else is not a number.
    for (; i < tok.size(); ++i)
      if (tok[i] != ' ' && tok[i] != '\t' && tok[i] != '\n' && tok[i] != '\r') return false;
  }
  unsigned __int128 v = ip * 1000 + static_cast<unsigned>(frac) + (round_up ? 1 : 0);
  if (v > static_cast<unsigned __int128>(kMaxAbsNs)) return false;
  ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// ---------- import ----------

enum class Cat : uint8_t { Other, Kernel, Memcpy, Memset, Runtime, Driver, Sync, GpuAnnotation, Finding, Flow, Profiler };

Cat classify_cat(std::string_view c) {
  if (c == "kernel" || c == "Kernel") return Cat::Kernel;
  if (c == "gpu_memcpy" || c == "Memcpy") return Cat::Memcpy;
  if (c == "gpu_memset" || c == "Memset") return Cat::Memset;
  if (c == "cuda_runtime" || c == "Runtime" || c == "cuda_runtime_api") return Cat::Runtime;
  if (c == "cuda_driver" || c == "Driver") return Cat::Driver;
  if (c == "cuda_sync") return Cat::Sync;
  if (c == "gpu_user_annotation") return Cat::GpuAnnotation;
  if (c == "tunebench_finding") return Cat::Finding;
  // TuneBench's own pauses written into a script's trace (the launcher's chunk boundaries), and Kineto's or
  // CUPTI's own overhead records: the profiler's time, not the program's.
  if (c == "tunebench" || c == "overhead" || c == "Overhead") return Cat::Profiler;
  if (c == "ac2g" || c == "fwdbwd") return Cat::Flow;
  return Cat::Other;
}

bool parse_event_kind(std::string_view s, EventKind& k) {
  for (int i = 0; i < kEventKindCount; ++i) {
    if (s == to_string(static_cast<EventKind>(i))) {
      k = static_cast<EventKind>(i);
      return true;
    }
  }
  return false;
}

MemcpyKind memcpy_kind_from_name(std::string_view n) {
  if (n.find("HtoD") != std::string_view::npos) return MemcpyKind::HtoD;
  if (n.find("DtoH") != std::string_view::npos) return MemcpyKind::DtoH;
  if (n.find("DtoD") != std::string_view::npos) return MemcpyKind::DtoD;
  if (n.find("HtoH") != std::string_view::npos) return MemcpyKind::HtoH;
  if (n.find("PtoP") != std::string_view::npos) return MemcpyKind::PtoP;
  return MemcpyKind::Unknown;
}

// The key of a field as a view into the JSON text, without unescaping (keys of trace events are plain
// ASCII); falls back to simdjson's unescaping when the key holds a backslash.
simdjson::error_code field_key(od::field& f, std::string_view& out) {
  const char* p = f.key().raw();
  const char* q = p;
  while (*q != '"' && *q != '\\') ++q;  // stage 1 validated the string: a closing quote exists
  if (*q == '"') {
    out = std::string_view(p, static_cast<size_t>(q - p));
    return simdjson::SUCCESS;
  }
  return f.unescaped_key().get(out);
}

}  // namespace

uint32_t Importer::track(TrackKind kind, int64_t pid, int64_t tid) {
  if (kind == last_kind && pid == last_pid && tid == last_tid) return last_track;
  const size_t before = trace.tracks().size();
  last_track = trace.track_for(kind, pid, tid);
  if (kind == TrackKind::GpuStream && trace.tracks().size() != before) gpu_tracks.emplace_back(last_track, pid);
  last_kind = kind;
  last_pid = pid;
  last_tid = tid;
  return last_track;
}

void Importer::add_counter(int64_t pid, const std::string& name, const Event& e, double value) {
  auto key = std::make_pair(pid, name);
  auto it = counter_tracks.find(key);
  if (it == counter_tracks.end()) {
    const uint32_t t = trace.track_for(TrackKind::Counter, pid, static_cast<int64_t>(counter_tracks.size()), name);
    it = counter_tracks.emplace(std::move(key), t).first;
  }
  Event ce = e;
  ce.kind = EventKind::Counter;
  ce.value = value;
  ce.name = trace.intern(name);
  trace.add_event(it->second, ce);
}

int64_t Importer::string_id(std::string_view s) {
  auto it = string_ids.find(std::string(s));
  if (it != string_ids.end()) return it->second;
  const int64_t id = -1000000 - static_cast<int64_t>(string_ids.size());
  string_ids.emplace(std::string(s), id);
  string_id_names.emplace(id, std::string(s));
  return id;
}

bool Importer::read_id(od::value v, int64_t& out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) {
      out = i;
      return true;
    }
    double d;
    if (v.get_double().get(d) || !std::isfinite(d) || std::fabs(d) > 9e18) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    // Numeric strings are ids too.
    int64_t n = 0;
    bool digits = !s.empty() && s.size() < 18;
    for (char c : s) digits = digits && c >= '0' && c <= '9';
    if (digits) {
      for (char c : s) n = n * 10 + (c - '0');
      out = n;
    } else {
      out = string_id(s);
    }
    return true;
  }
  return false;
}

bool Importer::read_time(od::value v, int64_t& ns) {
  od::json_type t;
  if (v.type().get(t)) return false;
  std::string_view tok;
  if (t == od::json_type::number) {
    tok = v.raw_json_token();
  } else if (t == od::json_type::string) {
    if (v.get_string().get(tok)) return false;
  } else {
    return false;
  }
  return parse_us_token(tok, ns);
}

Status Importer::event(od::value ev_value) {
  const uint64_t idx = event_index++;
  // Built only when an error is reported (this runs a million times per big trace).
  struct Where {
    uint64_t i;
    operator std::string() const { return "traceEvents[" + std::to_string(i) + "]"; }
  } where{idx};
  auto W = [&]() { return static_cast<std::string>(where); };
  od::object obj;
  const int64_t ev_off = offset_of(ev_value);
  if (auto err = ev_value.get_object().get(obj); err) {
    return fail(W() + " is not an object (" + std::string(sj::error_message(err)) + ")", ev_off);
  }
  std::string_view ph, cat, name, s_scope, tb_kind_s, label_s, meta_name, detail_s;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0, correlation = 0, arg = kNoArg, bytes = kNoArg, sort_index = 0;
  int64_t stream = INT64_MIN, device = INT64_MIN;
  int64_t ev_idx = -1, wait_record = -1, wait_stream = -1;  // Kineto: event number; cuda_sync's wait target
  bool has_ts = false, has_dur = false, has_sort = false;
  auto& counter_values = counter_scratch_;
  counter_values.clear();
  std::string grid, block, shapes;
  for (auto field_r : obj) {
    od::field field;
    if (auto err = std::move(field_r).get(field); err)
      return fail(W() + ": " + sj::error_message(err), offset_of(obj));
    std::string_view key;
    if (auto err = field_key(field, key); err) return fail(W() + ": bad key", offset_of(obj));
    od::value v = field.value();
    auto type_error = [&](const char* what) {
      return fail(W() + ": \"" + std::string(key) + "\" " + what, offset_of(v));
    };
    if (key == "ph") {
      if (v.get_string().get(ph)) return type_error("is not a string");
    } else if (key == "cat") {
      if (v.get_string().get(cat)) return type_error("is not a string");
    } else if (key == "name") {
      od::json_type t;
      if (v.type().get(t)) return type_error("is invalid");
      if (t == od::json_type::string) {
        if (v.get_string().get(name)) return type_error("is not a string");
      } else if (t == od::json_type::number) {
        name = v.raw_json_token();
        while (!name.empty() && (name.back() == ' ' || name.back() == '\n' || name.back() == '\r' || name.back() == '\t'))
          name.remove_suffix(1);
      } else {
        return type_error("is not a string");
      }
    } else if (key == "pid") {
      if (!read_id(v, pid)) return type_error("is not a number or string");
    } else if (key == "tid") {
      if (!read_id(v, tid)) return type_error("is not a number or string");
    } else if (key == "ts") {
      if (!read_time(v, ts)) return type_error("is not a valid timestamp (number of microseconds in range)");
      has_ts = true;
    } else if (key == "dur") {
      if (!read_time(v, dur)) return type_error("is not a valid duration (number of microseconds in range)");
      if (dur < 0) return type_error("is negative");
      has_dur = true;
    } else if (key == "s") {
      if (v.get_string().get(s_scope)) s_scope = {};
    } else if (key == "args") {
      od::json_type t;
      if (v.type().get(t)) return type_error("is invalid");
      if (t != od::json_type::object) continue;
      od::object args;
      if (v.get_object().get(args)) return type_error("is not an object");
      for (auto af_r : args) {
        od::field af;
        if (auto err = std::move(af_r).get(af); err) return fail(W() + ".args: " + sj::error_message(err), offset_of(args));
        std::string_view ak;
        if (field_key(af, ak)) return fail(W() + ".args: bad key", offset_of(args));
        od::value av = af.value();
        od::json_type at;
        if (av.type().get(at)) return fail(W() + ".args." + std::string(ak) + " is invalid", offset_of(av));
        auto as_int = [&](int64_t& out) -> bool {
          if (at != od::json_type::number) return false;
          int64_t i;
          if (!av.get_int64().get(i)) {
            out = i;
            return true;
          }
          uint64_t u;
          if (!av.get_uint64().get(u)) {
            out = static_cast<int64_t>(u & 0x7fffffffffffffffULL);
            return true;
          }
          double d;
          if (!av.get_double().get(d) && std::isfinite(d) && std::fabs(d) < 9e18) {
            out = static_cast<int64_t>(d);
            return true;
          }
          return false;
        };
        if (ak == "correlation") {
          if (!as_int(correlation) || correlation < 0) correlation = 0;
        } else if (ak == "stream") {
          if (!as_int(stream)) stream = INT64_MIN;
        } else if (ak == "device") {
          if (!as_int(device)) device = INT64_MIN;
        } else if (ak == "bytes") {
          if (!as_int(bytes)) bytes = kNoArg;
        } else if (ak == "arg") {
          if (!as_int(arg)) arg = kNoArg;
        } else if (ak == "tb_kind") {
          if (at == od::json_type::string) { if (av.get_string().get(tb_kind_s)) tb_kind_s = {}; }
        } else if (ak == "detail") {
          if (at == od::json_type::string) { if (av.get_string().get(detail_s)) detail_s = {}; }
        } else if (ak == "name" && at == od::json_type::string) {
          { if (av.get_string().get(meta_name)) meta_name = {}; }
        } else if (ak == "labels" && at == od::json_type::string) {
          { if (av.get_string().get(label_s)) label_s = {}; }
        } else if (ak == "sort_index") {
          has_sort = as_int(sort_index);
        } else if ((ak == "grid" || ak == "block") && at == od::json_type::array) {
          od::array dims;
          if (av.get_array().get(dims)) continue;
          std::string& dst = ak == "grid" ? grid : block;
          dst = "[";
          int n = 0;
          for (auto d_r : dims) {
            int64_t dv;
            if (std::move(d_r).get_int64().get(dv) || ++n > 3) break;
            if (n > 1) dst += ',';
            dst += std::to_string(dv);
          }
          dst += ']';
        } else if (ak == "Input Dims" && at == od::json_type::array) {
          // torch.profiler's record_shapes: one dims list per input ("[64,1,28,28], [32,1,3,3], [32]"), kept as
          // the op's detail (the timeline's tooltip, the exported trace). Scalars' empty lists at the end go.
          od::array inputs;
          if (av.get_array().get(inputs)) continue;
          std::string text, pending;
          for (auto in_r : inputs) {
            od::array dims;
            if (std::move(in_r).get_array().get(dims)) break;
            std::string one = "[";
            int n = 0;
            for (auto d_r : dims) {
              int64_t dv;
              if (std::move(d_r).get_int64().get(dv)) break;
              one += (n++ ? "," : "") + std::to_string(dv);
            }
            one += "]";
            pending += (text.empty() && pending.empty() ? "" : ", ") + one;
            if (n > 0) text += pending, pending.clear();
            if (text.size() > 160) break;
          }
          if (!text.empty()) shapes = "shapes " + text;
        } else if (ak == "Ev Idx") {
          if (!as_int(ev_idx)) ev_idx = -1;
        } else if (ak == "wait_on_cuda_event_record_corr_id") {
          if (!as_int(wait_record)) wait_record = -1;
        } else if (ak == "wait_on_stream") {
          if (!as_int(wait_stream)) wait_stream = -1;
        } else if (at == od::json_type::number) {
          double d;
          if (!av.get_double().get(d)) counter_values.emplace_back(ak, d);  // views into the parser: no copy
        }
      }
    }
    // Other keys (id, bp, ...) are skipped by On-Demand.
  }
  if (ph.empty()) return fail(W() + ": missing \"ph\"", ev_off);
  if (ev_idx >= 0) {
    ++ev_idx_count;
    ev_idx_min = std::min(ev_idx_min, ev_idx);
    ev_idx_max = std::max(ev_idx_max, ev_idx);
  }
  const char p = ph[0];
  const Cat c = classify_cat(cat);
  if (c != Cat::Other && c != Cat::Finding && c != Cat::Profiler) saw_kineto = true;
  if (p == 'M') {
    if (name == "process_name") process_names[pid] = std::string(meta_name);
    else if (name == "process_labels") process_labels[pid] = std::string(label_s);
    else if (name == "process_sort_index" && has_sort) process_sort[pid] = sort_index;
    else if (name == "thread_name") thread_names[{pid, tid}] = std::string(meta_name);
    else if (name == "thread_sort_index" && has_sort) thread_sort[{pid, tid}] = sort_index;
    return Status::Ok();
  }
  if (p == 's' || p == 'f' || p == 't' || p == 'F' || c == Cat::Finding) return Status::Ok();  // flows rebuilt
  if (!has_ts) {
    if (p == 'X' || p == 'B' || p == 'E' || p == 'i' || p == 'I' || p == 'C' || p == 'n' || p == 'b' || p == 'e')
      return fail(W() + ": missing \"ts\"", ev_off);
    return Status::Ok();
  }
  Event e;
  e.start_ns = ts;
  e.end_ns = ts;
  e.name = trace.intern(name);
  e.correlation = static_cast<uint64_t>(correlation);
  e.arg = arg;
  if (!detail_s.empty()) {
    e.detail = trace.intern(detail_s);
  } else if (!grid.empty() || !block.empty()) {
    e.detail = trace.intern("grid " + grid + " block " + block);
  } else if (!shapes.empty()) {
    e.detail = trace.intern(shapes);
  }
  switch (p) {
    case 'X': {
      if (!has_dur) dur = 0;
      if (ts > kMaxAbsNs - dur) return fail(W() + ": ts + dur out of range", ev_off);
      e.end_ns = ts + dur;
      break;
    }
    case 'B': {
      e.kind = EventKind::Range;
      open_b[{pid, tid}].push_back(e);
      return Status::Ok();
    }
    case 'E': {
      auto it = open_b.find({pid, tid});
      if (it == open_b.end() || it->second.empty()) return Status::Ok();  // unmatched end: ignored
      Event b = it->second.back();
      it->second.pop_back();
      b.end_ns = std::max(b.start_ns, ts);
      trace.add_event(track(TrackKind::CpuThread, pid, tid), b);
      return Status::Ok();
    }
    case 'i':
    case 'I':
    case 'R':
    case 'n': {
      if (name == "[memory]") {
        // torch.profiler's profile_memory=True: one instant per allocation and free, with the allocator's
        // totals after it. Kept as the memory counters TuneBench's own traces carry (allocated and reserved on
        // the device, allocated on the host), not as thousands of markers.
        double device_type = -1, allocated = -1, reserved = -1;
        for (const auto& [k, val] : counter_values) {
          if (k == "Device Type") device_type = val;
          else if (k == "Total Allocated") allocated = val;
          else if (k == "Total Reserved") reserved = val;
        }
        const bool cuda = device_type == 1;
        auto sample = [&](const char* cname, double value) {
          if (value >= 0) add_counter(pid, cname, e, value);
        };
        sample(cuda ? names::kDeviceAllocated : names::kHostAllocated, allocated);
        if (cuda) sample(names::kDeviceReserved, reserved);
        return Status::Ok();
      }
      e.kind = EventKind::Instant;
      // Global-scope instants ("s": "g", Kineto's "Iteration Start" / "Record Window End") mark the whole
      // trace, not a thread: one markers track instead of an empty row per made-up pid/tid.
      if (s_scope == "g") {
        const int64_t markers = string_id(kGlobalMarkersTrack);
        trace.add_event(track(TrackKind::CpuThread, markers, markers), e);
      } else {
        trace.add_event(track(TrackKind::CpuThread, pid, tid), e);
      }
      return Status::Ok();
    }
    case 'C': {
      for (auto& [k, val] : counter_values) {
        add_counter(pid, counter_values.size() == 1 && k == "value" ? std::string(name)
                                                                    : std::string(name) + "." + std::string(k),
                    e, val);
      }
      return Status::Ok();
    }
    default:
      return Status::Ok();  // async/object events etc.: not part of our model
  }
  // Complete event: kind by category (or our tb_kind).
  bool gpu = false;
  switch (c) {
    case Cat::Kernel: e.kind = EventKind::Kernel; gpu = true; break;
    case Cat::Memcpy:
      e.kind = EventKind::Memcpy;
      e.flags = static_cast<uint16_t>(memcpy_kind_from_name(name));
      e.arg = bytes;
      gpu = true;
      break;
    case Cat::Memset: e.kind = EventKind::Memset; e.arg = bytes; gpu = true; break;
    case Cat::Runtime: e.kind = EventKind::Runtime; break;
    case Cat::Driver: e.kind = EventKind::Driver; break;
    case Cat::Sync:
      e.kind = EventKind::Sync;
      gpu = true;
      e.correlation = 0;
      // "Stream Wait Event": the cudaEventRecord it waits on (its correlation id) and that event's stream.
      if (wait_record >= 0) e.arg = wait_record;
      if (wait_stream >= 0 && e.detail == kNoName)
        e.detail = trace.intern("waits on stream " + std::to_string(wait_stream) + ", event recorded by correlation " +
                                std::to_string(wait_record));
      break;
    case Cat::GpuAnnotation: e.kind = EventKind::Range; gpu = true; e.correlation = 0; break;
    case Cat::Profiler: e.kind = EventKind::Overhead; break;
    default: e.kind = EventKind::Range; break;
  }
  if (!tb_kind_s.empty()) {
    EventKind k;
    if (parse_event_kind(tb_kind_s, k)) e.kind = k;
  }
  if ((e.kind == EventKind::Runtime || e.kind == EventKind::Driver) && is_blocking_sync_api(name))
    e.flags |= kFlagBlockingSync;
  if (e.kind == EventKind::Instant || e.kind == EventKind::Counter) e.end_ns = e.start_ns;
  if (gpu || is_gpu_activity(e.kind)) {
    const int64_t dev = device != INT64_MIN ? device : pid;
    // CUPTI's "no stream" (device-wide sync) arrives as uint32 -1 in args.stream and -1 in tid.
    const int64_t st = stream == INT64_MIN ? tid : stream == 0xFFFFFFFFLL ? -1 : stream;
    trace.add_event(track(TrackKind::GpuStream, dev, st), e);
  } else {
    trace.add_event(track(TrackKind::CpuThread, pid, tid), e);
  }
  return Status::Ok();
}

}  // namespace tb::prof::import
