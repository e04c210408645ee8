// Event import (trace_importer.h): each event's fields read, numbers parsed from their text, and the event
// handed to the handler of its phase and category (trace_importer_events.cpp).
#include "trace_importer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tb::prof::import {
namespace {

namespace sj = simdjson;

// ---------- numbers ----------

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

// An integer argument: int64, else uint64 (its low 63 bits), else a finite double in range.
bool arg_int(od::value& av, int64_t& out) {
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
}

// A kernel's grid or block, "[x,y,z]" (at most three integers, up to the first that is not one).
std::string launch_dims(od::array& dims) {
  std::string dst = "[";
  int n = 0;
  for (auto d_r : dims) {
    int64_t dv;
    if (std::move(d_r).get_int64().get(dv) || ++n > 3) break;
    if (n > 1) dst += ',';
    dst += std::to_string(dv);
  }
  dst += ']';
  return dst;
}

// torch.profiler's record_shapes: one dims list per input ("[64,1,28,28], [32,1,3,3], [32]"), kept as the op's
// detail (the timeline's tooltip, the exported trace). Scalars' empty lists at the end go.
std::string input_dims(od::array& inputs) {
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
  return text;
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
  Fields f;
  f.index = event_index++;
  f.offset = offset_of(ev_value);
  od::object obj;
  if (auto err = ev_value.get_object().get(obj); err)
    return fail(where(f.index) + " is not an object (" + std::string(sj::error_message(err)) + ")", f.offset);
  counter_scratch_.clear();
  if (Status s = read_fields(obj, f); !s) return s;
  if (f.ph.empty()) return fail(where(f.index) + ": missing \"ph\"", f.offset);
  if (f.ev_idx >= 0) {
    ++ev_idx_count;
    ev_idx_min = std::min(ev_idx_min, f.ev_idx);
    ev_idx_max = std::max(ev_idx_max, f.ev_idx);
  }
  const char p = f.ph[0];
  const Cat c = classify_cat(f.cat);
  if (c != Cat::Other && c != Cat::Finding && c != Cat::Profiler) saw_kineto = true;
  if (p == 'M') {
    metadata(f);
    return Status::Ok();
  }
  // Flows are rebuilt from the correlation ids, findings by the analysis: neither is read back.
  if (p == 's' || p == 'f' || p == 't' || p == 'F' || c == Cat::Finding) return Status::Ok();
  if (!f.has_ts) {
    if (p == 'X' || p == 'B' || p == 'E' || p == 'i' || p == 'I' || p == 'C' || p == 'n' || p == 'b' || p == 'e')
      return fail(where(f.index) + ": missing \"ts\"", f.offset);
    return Status::Ok();
  }
  Event e = base_event(f);
  switch (p) {
    case 'X': return complete(f, c, e);
    case 'B': begin(f, e); break;
    case 'E': end(f); break;
    case 'i':
    case 'I':
    case 'R':
    case 'n': instant(f, e); break;
    case 'C': counter(f, e); break;
    default: break;  // async/object events etc.: not part of our model
  }
  return Status::Ok();
}

Status Importer::read_fields(od::object& obj, Fields& f) {
  for (auto field_r : obj) {
    od::field field;
    if (auto err = std::move(field_r).get(field); err)
      return fail(where(f.index) + ": " + sj::error_message(err), offset_of(obj));
    std::string_view key;
    if (auto err = field_key(field, key); err) return fail(where(f.index) + ": bad key", offset_of(obj));
    od::value v = field.value();
    auto type_error = [&](const char* what) {
      return fail(where(f.index) + ": \"" + std::string(key) + "\" " + what, offset_of(v));
    };
    if (key == "ph") {
      if (v.get_string().get(f.ph)) return type_error("is not a string");
    } else if (key == "cat") {
      if (v.get_string().get(f.cat)) return type_error("is not a string");
    } else if (key == "name") {
      od::json_type t;
      if (v.type().get(t)) return type_error("is invalid");
      if (t == od::json_type::string) {
        if (v.get_string().get(f.name)) return type_error("is not a string");
      } else if (t == od::json_type::number) {
        std::string_view& name = f.name;
        name = v.raw_json_token();
        while (!name.empty() && (name.back() == ' ' || name.back() == '\n' || name.back() == '\r' || name.back() == '\t'))
          name.remove_suffix(1);
      } else {
        return type_error("is not a string");
      }
    } else if (key == "pid") {
      if (!read_id(v, f.pid)) return type_error("is not a number or string");
    } else if (key == "tid") {
      if (!read_id(v, f.tid)) return type_error("is not a number or string");
    } else if (key == "ts") {
      if (!read_time(v, f.ts)) return type_error("is not a valid timestamp (number of microseconds in range)");
      f.has_ts = true;
    } else if (key == "dur") {
      if (!read_time(v, f.dur)) return type_error("is not a valid duration (number of microseconds in range)");
      if (f.dur < 0) return type_error("is negative");
      f.has_dur = true;
    } else if (key == "s") {
      if (v.get_string().get(f.scope)) f.scope = {};
    } else if (key == "args") {
      od::json_type t;
      if (v.type().get(t)) return type_error("is invalid");
      if (t != od::json_type::object) continue;
      if (Status s = read_args(v, f); !s) return s;
    }
    // Other keys (id, bp, ...) are skipped by On-Demand.
  }
  return Status::Ok();
}

Status Importer::read_args(od::value v, Fields& f) {
  od::object args;
  if (v.get_object().get(args)) return fail(where(f.index) + ": \"args\" is not an object", offset_of(v));
  for (auto af_r : args) {
    od::field af;
    if (auto err = std::move(af_r).get(af); err)
      return fail(where(f.index) + ".args: " + sj::error_message(err), offset_of(args));
    std::string_view ak;
    if (field_key(af, ak)) return fail(where(f.index) + ".args: bad key", offset_of(args));
    od::value av = af.value();
    od::json_type at;
    if (av.type().get(at)) return fail(where(f.index) + ".args." + std::string(ak) + " is invalid", offset_of(av));
    auto as_int = [&](int64_t& out) { return at == od::json_type::number && arg_int(av, out); };
    auto as_string = [&](std::string_view& out) {
      if (at == od::json_type::string && av.get_string().get(out)) out = {};
    };
    if (ak == "correlation") {
      if (!as_int(f.correlation) || f.correlation < 0) f.correlation = 0;
    } else if (ak == "stream") {
      if (!as_int(f.stream)) f.stream = INT64_MIN;
    } else if (ak == "device") {
      if (!as_int(f.device)) f.device = INT64_MIN;
    } else if (ak == "bytes") {
      if (!as_int(f.bytes)) f.bytes = kNoArg;
    } else if (ak == "arg") {
      if (!as_int(f.arg)) f.arg = kNoArg;
    } else if (ak == "tb_kind") {
      as_string(f.tb_kind);
    } else if (ak == "detail") {
      as_string(f.detail);
    } else if (ak == "name" && at == od::json_type::string) {
      as_string(f.meta_name);
    } else if (ak == "labels" && at == od::json_type::string) {
      as_string(f.labels);
    } else if (ak == "sort_index") {
      f.has_sort = as_int(f.sort_index);
    } else if ((ak == "grid" || ak == "block") && at == od::json_type::array) {
      od::array dims;
      if (av.get_array().get(dims)) continue;
      (ak == "grid" ? f.grid : f.block) = launch_dims(dims);
    } else if (ak == "Input Dims" && at == od::json_type::array) {
      od::array inputs;
      if (av.get_array().get(inputs)) continue;
      if (std::string text = input_dims(inputs); !text.empty()) f.shapes = "shapes " + text;
    } else if (ak == "Ev Idx") {
      if (!as_int(f.ev_idx)) f.ev_idx = -1;
    } else if (ak == "wait_on_cuda_event_record_corr_id") {
      if (!as_int(f.wait_record)) f.wait_record = -1;
    } else if (ak == "wait_on_stream") {
      if (!as_int(f.wait_stream)) f.wait_stream = -1;
    } else if (ak == "graph id") {
      if (!as_int(f.graph) || f.graph < 0 || f.graph > UINT32_MAX) f.graph = 0;
    } else if (ak == "graph node id") {
      if (!as_int(f.graph_node) || f.graph_node < 0) f.graph_node = 0;
    } else if (at == od::json_type::number) {
      double d;
      if (!av.get_double().get(d)) counter_scratch_.emplace_back(ak, d);  // views into the parser: no copy
    }
  }
  return Status::Ok();
}

}  // namespace tb::prof::import
