// The CUPTI activity records' decoder (profiler/cupti_collector.h CuptiDecoder): one record at a time into
// trace events, on GPU tracks per (device, stream) and CPU tracks per thread, then the second pass that
// attaches our external ids (Kineto's two passes). cupti.h only under TUNEBENCH_HAVE_CUPTI; without it every
// record counts as unknown.
#include "profiler/cupti_collector.h"

#include <cstdint>
#include <string>

#if defined(TUNEBENCH_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace tb::prof {

CuptiDecoder::CuptiDecoder(int64_t pid) : trace_(std::make_unique<Trace>()), pid_(pid) {}

#if defined(TUNEBENCH_HAVE_CUPTI)
namespace {
MemcpyKind memcpy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return MemcpyKind::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return MemcpyKind::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return MemcpyKind::DtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return MemcpyKind::HtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::PtoP;
    default: return MemcpyKind::Unknown;
  }
}
const char* memcpy_name(MemcpyKind k) {
  switch (k) {
    case MemcpyKind::HtoD: return "Memcpy HtoD";
    case MemcpyKind::DtoH: return "Memcpy DtoH";
    case MemcpyKind::DtoD: return "Memcpy DtoD";
    case MemcpyKind::HtoH: return "Memcpy HtoH";
    case MemcpyKind::PtoP: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}
const char* sync_name(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Sync";
  }
}
}  // namespace
#endif

void CuptiDecoder::decode(const void* record) {
  ++stats_.records;
  if (!record) {
    ++stats_.invalid;
    return;
  }
#if defined(TUNEBENCH_HAVE_CUPTI)
  const auto* base = static_cast<const CUpti_Activity*>(record);
  auto valid = [&](uint64_t s, uint64_t e) {
    if (s == 0 || e < s || s > static_cast<uint64_t>(INT64_MAX) || e > static_cast<uint64_t>(INT64_MAX)) {
      ++stats_.invalid;
      return false;
    }
    return true;
  };
  // An event over a record's [start, end], on our clock (after valid() said the times are usable).
  auto span = [&](EventKind kind, uint64_t start, uint64_t end) {
    Event e;
    e.kind = kind;
    e.start_ns = clock_.to_mono(static_cast<int64_t>(start));
    e.end_ns = clock_.to_mono(static_cast<int64_t>(end));
    return e;
  };
  auto gpu_track = [&](uint32_t device, uint32_t stream) {
    return trace_->track_for(TrackKind::GpuStream, device, stream);
  };
  // Kernels, copies and memsets share their record's layout where it matters here (start, end, correlationId,
  // deviceId, streamId): one event over it on its (device, stream) track, `fill` adding what its kind has.
  auto gpu_activity = [&](const auto* r, EventKind kind, uint64_t& count, auto&& fill) {
    if (!valid(r->start, r->end)) return;
    Event e = span(kind, r->start, r->end);
    e.correlation = r->correlationId;
    fill(e);
    trace_->add_event(gpu_track(r->deviceId, r->streamId), e);
    ++count;
  };
  switch (base->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = static_cast<const CUpti_ActivityKernel10*>(record);
      gpu_activity(k, EventKind::Kernel, stats_.kernels, [&](Event& e) {
        e.name = trace_->intern(k->name ? k->name : "kernel");
        char buf[128];
        std::snprintf(buf, sizeof buf, "grid [%d,%d,%d] block [%d,%d,%d] regs %u smem %d", k->gridX, k->gridY,
                      k->gridZ, k->blockX, k->blockY, k->blockZ, static_cast<unsigned>(k->registersPerThread),
                      k->staticSharedMemory + k->dynamicSharedMemory);
        e.detail = trace_->intern(buf);
        // A graph's kernels share their launch's correlation id; the graph and its node tell them apart.
        if (k->graphId) {
          e.graph = k->graphId;
          e.arg = static_cast<int64_t>(std::min<uint64_t>(k->graphNodeId, INT64_MAX));
        }
      });
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = static_cast<const CUpti_ActivityMemcpy6*>(record);
      gpu_activity(m, EventKind::Memcpy, stats_.memcpys, [&](Event& e) {
        const MemcpyKind mk = memcpy_kind(m->copyKind);
        e.flags = static_cast<uint16_t>(mk);
        e.arg = static_cast<int64_t>(std::min<uint64_t>(m->bytes, INT64_MAX));
        e.graph = m->graphId;
        e.name = trace_->intern(memcpy_name(mk));
      });
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = static_cast<const CUpti_ActivityMemset4*>(record);
      gpu_activity(m, EventKind::Memset, stats_.memsets, [&](Event& e) {
        e.arg = static_cast<int64_t>(std::min<uint64_t>(m->bytes, INT64_MAX));
        e.graph = m->graphId;
        e.name = trace_->intern("Memset");
      });
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = static_cast<const CUpti_ActivityAPI*>(record);
      if (!valid(a->start, a->end)) return;
      const bool rt = base->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      Event e = span(rt ? EventKind::Runtime : EventKind::Driver, a->start, a->end);
      e.correlation = a->correlationId;
      std::string name;
      if (api_name_) name = strip_api_version(api_name_(rt, a->cbid));
      if (name.empty()) name = std::string(rt ? "cudaRuntime#" : "cuDriver#") + std::to_string(a->cbid);
      if (is_blocking_sync_api(name)) e.flags |= kFlagBlockingSync;
      e.name = trace_->intern(name);
      const int64_t pid = a->processId ? static_cast<int64_t>(a->processId) : pid_;
      trace_->add_event(trace_->track_for(TrackKind::CpuThread, pid, a->threadId), e);
      if (rt) ++stats_.runtime;
      else ++stats_.driver;
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = static_cast<const CUpti_ActivitySynchronization2*>(record);
      if (!valid(s->start, s->end)) return;
      Event e = span(EventKind::Sync, s->start, s->end);
      e.correlation = 0;  // the API call that caused it carries the correlation; keep the arrow on the kernel
      e.arg = s->correlationId;
      e.name = trace_->intern(sync_name(s->type));
      // Context syncs have no stream (CUPTI uses UINT32_MAX): shown on stream 0's row of device 0.
      const uint32_t stream = s->streamId == UINT32_MAX ? 0 : s->streamId;
      trace_->add_event(gpu_track(0, stream), e);
      ++stats_.syncs;
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* x = static_cast<const CUpti_ActivityExternalCorrelation*>(record);
      external_[x->correlationId] = x->externalId;
      ++stats_.external_correlations;
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = static_cast<const CUpti_ActivityOverhead3*>(record);
      if (!valid(o->start, o->end)) return;
      Event e = span(EventKind::Overhead, o->start, o->end);
      e.name = trace_->intern("CUPTI overhead");
      const int64_t tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
      trace_->add_event(trace_->track_for(TrackKind::CpuThread, pid_, tid), e);
      ++stats_.overhead;
      return;
    }
    default:
      ++stats_.unknown;
      return;
  }
#else
  ++stats_.unknown;
#endif
}

std::unique_ptr<Trace> CuptiDecoder::take() {
  auto t = std::move(trace_);
  trace_ = std::make_unique<Trace>();
  if (!external_.empty()) {
    // Second pass (kineto): attach external ids (our step/op ids) to the API calls that carry them.
    Trace& tr = *t;
    for (uint32_t ti = 0; ti < tr.tracks().size(); ++ti) {
      const Track& track = tr.track(ti);
      if (track.kind() != TrackKind::CpuThread) continue;
      for (Event& e : tr.mutable_events(ti)) {
        if (e.kind != EventKind::Runtime && e.kind != EventKind::Driver) continue;
        auto it = external_.find(static_cast<uint32_t>(e.correlation));
        if (it != external_.end()) e.arg = static_cast<int64_t>(it->second);
      }
    }
    external_.clear();
  }
  t->finalize();
  return t;
}

}  // namespace tb::prof
