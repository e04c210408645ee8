// CUPTI activity collector (its record decoder is cupti_decoder.cpp). cupti.h only under
// TUNEBENCH_HAVE_CUPTI; the library is dlopen'ed, never linked.
#include "profiler/cupti_collector.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "profiler/recorder.h"

#if defined(TUNEBENCH_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace tb::prof {

struct CuptiCollector::Impl {
  std::mutex mu;  // guards the fields below (never held while calling CUPTI)
  std::string state;   // "" until start() is first tried: CPU runs that never wanted CUPTI say nothing
  std::string reason;
  bool was_on = false;  // the latest start() succeeded (stays true after stop(): its data is in the trace)
  std::string version;
  bool running = false;
  Options options;
  uint32_t kinds = kCuptiDefault;  // what start() enabled (parse_cupti_kinds)
  std::string settings;  // the buffer settings start() made, for the trace's metadata
  std::deque<std::pair<uint8_t*, size_t>> completed;  // buffers CUPTI handed back, not decoded yet
  std::atomic<size_t> outstanding{0};                 // buffers allocated and not freed
  std::atomic<uint64_t> refused{0};                   // buffer requests refused at the cap
  std::atomic<uint64_t> cupti_dropped{0};
  CuptiDecoder decoder{static_cast<int64_t>(::getpid())};
  std::unique_ptr<ApiCallLog> calls;  // kCuptiCallbacks: the launches and syncs the callback API reported
  std::unique_ptr<Trace> pending;  // decoded since the last collect()
  void* lib = nullptr;

#if defined(TUNEBENCH_HAVE_CUPTI)
  // Resolved entry points.
  CUptiResult (*GetVersion)(uint32_t*) = nullptr;
  CUptiResult (*GetResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*ActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) =
      nullptr;
  CUptiResult (*ActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*ActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*GetTimestamp)(uint64_t*) = nullptr;
  CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult (*PushExternal)(CUpti_ExternalCorrelationKind, uint64_t) = nullptr;
  CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType) = nullptr;
  CUptiResult (*PopExternal)(CUpti_ExternalCorrelationKind, uint64_t*) = nullptr;
  CUptiResult (*EnableRuntimeApi)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult (*EnableDriverApi)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult (*Subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
  CUptiResult (*Finalize)() = nullptr;
  CUptiResult (*SetAttribute)(CUpti_ActivityAttribute, size_t*, void*) = nullptr;
  CUptiResult (*FlushPeriod)(uint32_t) = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  size_t muted = 0;  // API calls whose records mute_queries() turned off
  std::vector<CUpti_ActivityKind> enabled;

  std::string err(const char* what, CUptiResult r) {
    const char* s = nullptr;
    if (GetResultString) GetResultString(r, &s);
    std::string why = s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
    std::string cls;
    switch (r) {
      case CUPTI_ERROR_INVALID_DEVICE: cls = "no device: "; break;
      case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: cls = "insufficient privileges: "; break;
      case CUPTI_ERROR_NOT_INITIALIZED: cls = "no driver: "; break;
      case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: cls = "another CUPTI subscriber: "; break;
      case CUPTI_ERROR_NOT_COMPATIBLE: cls = "version mismatch: "; break;
      case CUPTI_ERROR_UNKNOWN: cls = "no driver or device: "; break;
      default: break;
    }
    return cls + what + " failed: " + why;
  }
#endif

  void sample_clock() {
#if defined(TUNEBENCH_HAVE_CUPTI)
    if (!GetTimestamp) return;
    // Best of 5 brackets: the narrowest bracket has the least scheduling noise.
    int64_t best_w = INT64_MAX, b0 = 0, bc = 0, b1 = 0;
    for (int i = 0; i < 5; ++i) {
      const int64_t m0 = now_ns();
      uint64_t c = 0;
      if (GetTimestamp(&c) != CUPTI_SUCCESS) return;
      const int64_t m1 = now_ns();
      if (m1 - m0 < best_w) {
        best_w = m1 - m0;
        b0 = m0;
        bc = static_cast<int64_t>(c);
        b1 = m1;
      }
    }
    ClockAlignment clk = decoder.clock();
    clk.add_sample(b0, bc, b1);
    decoder.set_clock(clk);
#endif
  }
};

namespace {
#if defined(TUNEBENCH_HAVE_CUPTI)
CuptiCollector::Impl* g_impl = nullptr;  // the singleton's impl, for CUPTI's C callbacks

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  CuptiCollector::Impl* impl = g_impl;
  if (!impl || impl->outstanding.load() >= impl->options.max_buffers) {
    // Cap reached: no buffer; CUPTI drops records (reported through cuptiActivityGetNumDroppedRecords).
    if (impl) impl->refused.fetch_add(1);
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, CuptiCollector::kBufferBytes));
  *size = *buffer ? CuptiCollector::kBufferBytes : 0;
  if (*buffer) impl->outstanding.fetch_add(1);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CuptiCollector::Impl* impl = g_impl;
  if (!buffer) return;
  if (!impl) {
    std::free(buffer);
    return;
  }
  // Only queue it: decoding calls CUPTI (cuptiActivityGetNextRecord), which must not happen under our lock.
  std::lock_guard<std::mutex> lock(impl->mu);
  impl->completed.emplace_back(buffer, valid);
}

// The state queries PyTorch and the CUDA runtime make around every launch (a device guard's cudaGetDevice,
// the error checks, the driver's context and kernel-name lookups). Each record costs the traced program time
// on the launching thread and tells the analysis nothing; launches, syncs, copies and setup calls stay.
void mute_queries(CuptiCollector::Impl& d) {
  d.muted = 0;
  auto mute = [&](uint32_t kind, CUptiResult (*enable)(CUpti_CallbackId, uint8_t), std::initializer_list<CUpti_CallbackId> ids) {
    if (!(d.kinds & kind) || !enable) return;
    for (CUpti_CallbackId id : ids)
      if (enable(id, 0) == CUPTI_SUCCESS) ++d.muted;
  };
  mute(kCuptiRuntime, d.EnableRuntimeApi, {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020,
                                CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
                                CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010, CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
                                CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030, CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
                                CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
                                CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000});
  mute(kCuptiDriver, d.EnableDriverApi, {CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
                                CUPTI_DRIVER_TRACE_CBID_cuFuncGetName, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress,
                                CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
                                CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
                                CUPTI_DRIVER_TRACE_CBID_cuDeviceGet, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
                                CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion,
                                CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute,
                                CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel, CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
                                CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes, CUPTI_DRIVER_TRACE_CBID_cuGetErrorString,
                                CUPTI_DRIVER_TRACE_CBID_cuGetErrorName, CUPTI_DRIVER_TRACE_CBID_cuCtxGetStreamPriorityRange,
                                CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3_ptsz});
}

const char* kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_RUNTIME: return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER: return "DRIVER";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return "OVERHEAD";
    default: return "?";
  }
}

const char* api_name(bool runtime, uint32_t cbid) {
  CuptiCollector::Impl* impl = g_impl;
  if (!impl || !impl->GetCallbackName) return nullptr;
  const char* n = nullptr;
  if (impl->GetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid, &n) !=
      CUPTI_SUCCESS)
    return nullptr;
  return n;
}

uint64_t cupti_now() {
  CuptiCollector::Impl* impl = g_impl;
  uint64_t t = 0;
  if (impl && impl->GetTimestamp) impl->GetTimestamp(&t);
  return t;
}

void CUPTIAPI api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* impl = static_cast<CuptiCollector::Impl*>(userdata);
  if (!impl || !impl->calls) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
    impl->calls->on_call(domain == CUPTI_CB_DOMAIN_RUNTIME_API, cbid, data);
}

// A size from the environment in MiB, or `fallback`.
size_t env_mib(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const long long n = std::atoll(v);
  return n > 0 ? size_t(n) << 20 : fallback;
}

// Buffer settings, made before the buffer callbacks are registered (CUPTI reads them for the contexts it
// instruments next). A device buffer of 8 MiB and a pool of 4 keep CUPTI from stalling a launch-bound stream
// on a full buffer; records are not zeroed (CUPTI writes every field we read); each thread writes its own
// buffer (no lock shared with another launching thread). TUNEBENCH_CUPTI_DEVICE_BUFFER_MB,
// TUNEBENCH_CUPTI_POOL and TUNEBENCH_CUPTI_FLUSH_MS change them; the trace's metadata says what was set.
std::string configure_buffers(CuptiCollector::Impl& d) {
  if (!d.SetAttribute) return "buffer settings: CUPTI's defaults (cuptiActivitySetAttribute missing)";
  std::string out;
  auto set = [&](CUpti_ActivityAttribute a, auto value, const char* what) {
    size_t size = sizeof value;
    const bool ok = d.SetAttribute(a, &size, &value) == CUPTI_SUCCESS;
    out += std::string(out.empty() ? "" : ", ") + what + (ok ? "" : " (refused)");
  };
  const size_t dev = env_mib("TUNEBENCH_CUPTI_DEVICE_BUFFER_MB", size_t(8) << 20);
  set(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, dev, ("device buffer " + std::to_string(dev >> 20) + " MiB").c_str());
  size_t pool = 4;
  if (const char* v = std::getenv("TUNEBENCH_CUPTI_POOL"); v && std::atoi(v) > 0) pool = size_t(std::atoi(v));
  set(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, pool, ("pool " + std::to_string(pool)).c_str());
  set(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, uint8_t(0), "unzeroed");
  set(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, uint8_t(1), "per-thread");
  if (const char* v = std::getenv("TUNEBENCH_CUPTI_FLUSH_MS"); v && std::atoi(v) > 0 && d.FlushPeriod) {
    const bool ok = d.FlushPeriod(uint32_t(std::atoi(v))) == CUPTI_SUCCESS;
    out += std::string(", flush every ") + v + " ms" + (ok ? "" : " (refused)");
  }
  return out;
}

// kCuptiCallbacks: the launches and syncs of the domains whose activity kind is off. "" or why not.
std::string subscribe(CuptiCollector::Impl& d) {
  const bool rt = !(d.kinds & kCuptiRuntime), drv = !(d.kinds & kCuptiDriver);
  if (!(d.kinds & kCuptiCallbacks) || (!rt && !drv)) return "";
  if (!d.Subscribe || !d.EnableCallback || !d.Unsubscribe) return "cuptiSubscribe missing";
  if (!d.calls) d.calls = std::make_unique<ApiCallLog>(&cupti_now);
  if (CUptiResult r = d.Subscribe(&d.subscriber, &api_callback, &d); r != CUPTI_SUCCESS) {
    d.subscriber = nullptr;
    return d.err("cuptiSubscribe", r);
  }
  auto enable = [&](CUpti_CallbackDomain dom, const std::vector<uint32_t>& ids) {
    for (uint32_t id : ids) d.EnableCallback(1, d.subscriber, dom, id);
  };
  if (rt) enable(CUPTI_CB_DOMAIN_RUNTIME_API, ApiCallLog::runtime_ids());
  if (drv) enable(CUPTI_CB_DOMAIN_DRIVER_API, ApiCallLog::driver_ids());
  return "";
}
#endif
}  // namespace

CuptiCollector::CuptiCollector() : impl_(std::make_unique<Impl>()) {}
CuptiCollector::~CuptiCollector() = default;

CuptiCollector& CuptiCollector::instance() {
  static CuptiCollector* c = new CuptiCollector();  // leaked: CUPTI may call back during exit
  return *c;
}

bool CuptiCollector::built() {
#if defined(TUNEBENCH_HAVE_CUPTI)
  return true;
#else
  return false;
#endif
}

Status CuptiCollector::start(const Options& options) {
  Impl& d = *impl_;
#if !defined(TUNEBENCH_HAVE_CUPTI)
  (void)options;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.state = "not built";
    d.reason = "built without CUPTI headers (TUNEBENCH_CUPTI=OFF or no CUDA toolkit)";
    d.was_on = false;
  }
  return Error{"CUPTI collector not built: " + d.reason};
#else
  if (d.running) return Status::Ok();
  d.was_on = false;
  d.options = options;
  auto fail = [&](std::string why) -> Status {
    std::lock_guard<std::mutex> lock(d.mu);
    d.state = "off";
    d.reason = why;
    return Error{"CUPTI collector off: " + why};
  };
  {
    const char* names = options.kinds;
    if (const char* env = std::getenv("TUNEBENCH_CUPTI_KINDS"); !names && env) names = env;
    auto kinds = parse_cupti_kinds(names ? names : "");
    if (!kinds) return fail(kinds.error().message + (options.kinds ? "" : " in TUNEBENCH_CUPTI_KINDS"));
    d.kinds = *kinds;
  }
  if (!d.lib) {
    const char* name = options.library ? options.library : "libcupti.so.13";
    if (const char* env = std::getenv("TUNEBENCH_CUPTI_LIBRARY"); env && *env && !options.library) name = env;
    d.lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);  // keep the copy LibTorch/Kineto already loaded
    if (!d.lib) d.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!d.lib && !options.library) {
      for (const char* p : {"/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"}) {
        d.lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        if (d.lib) break;
      }
    }
    if (!d.lib) {
      const char* e = dlerror();
      return fail(std::string("library not found: ") + (e ? e : name));
    }
  }
  auto sym = [&](auto& fn, const char* n) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d.lib, n));
    return fn != nullptr;
  };
  const char* missing = nullptr;
  if (!sym(d.GetVersion, "cuptiGetVersion")) missing = "cuptiGetVersion";
  else if (!sym(d.GetResultString, "cuptiGetResultString")) missing = "cuptiGetResultString";
  else if (!sym(d.ActivityEnable, "cuptiActivityEnable")) missing = "cuptiActivityEnable";
  else if (!sym(d.ActivityDisable, "cuptiActivityDisable")) missing = "cuptiActivityDisable";
  else if (!sym(d.ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks")) missing = "cuptiActivityRegisterCallbacks";
  else if (!sym(d.ActivityFlushAll, "cuptiActivityFlushAll")) missing = "cuptiActivityFlushAll";
  else if (!sym(d.ActivityGetNextRecord, "cuptiActivityGetNextRecord")) missing = "cuptiActivityGetNextRecord";
  else if (!sym(d.ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords")) missing = "cuptiActivityGetNumDroppedRecords";
  else if (!sym(d.GetTimestamp, "cuptiGetTimestamp")) missing = "cuptiGetTimestamp";
  sym(d.GetCallbackName, "cuptiGetCallbackName");  // optional: names fall back to cbid numbers
  sym(d.PushExternal, "cuptiActivityPushExternalCorrelationId");  // optional
  sym(d.PopExternal, "cuptiActivityPopExternalCorrelationId");
  sym(d.SetThreadIdType, "cuptiSetThreadIdType");
  sym(d.EnableRuntimeApi, "cuptiActivityEnableRuntimeApi");  // optional (CUPTI 12.8+): per-call filtering
  sym(d.EnableDriverApi, "cuptiActivityEnableDriverApi");
  sym(d.Subscribe, "cuptiSubscribe");  // optional: without them, launches come from the RUNTIME kind
  sym(d.Unsubscribe, "cuptiUnsubscribe");
  sym(d.EnableCallback, "cuptiEnableCallback");
  sym(d.Finalize, "cuptiFinalize");
  sym(d.SetAttribute, "cuptiActivitySetAttribute");
  sym(d.FlushPeriod, "cuptiActivityFlushPeriod");
  if (missing) return fail(std::string("version mismatch: symbol ") + missing + " missing in libcupti");
  uint32_t ver = 0;
  if (d.GetVersion(&ver) != CUPTI_SUCCESS) return fail("version mismatch: cuptiGetVersion failed");
  d.version = std::to_string(ver);
  if (ver / 100 != CUPTI_API_VERSION / 100) {
    // Record layouts (CUpti_ActivityKernel10, ...) are those of the headers we were built with; they change
    // with the major.minor API version (CUDA 13.0's is 1300xx), not with a patch release of the library.
    return fail("version mismatch: libcupti API " + std::to_string(ver) + ", built against " +
                std::to_string(CUPTI_API_VERSION));
  }
  g_impl = &d;
  d.decoder.set_api_name_fn(&api_name);
  // gettid() thread ids (not pthread_self()), so API calls land on the recorder's thread tracks when merged.
  if (d.SetThreadIdType) d.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  d.settings = configure_buffers(d);
  // Launches and syncs from the callback API; where it cannot subscribe (another subscriber, an old
  // library), from the RUNTIME and DRIVER activity kinds as before, and the trace says so.
  if (std::string why = subscribe(d); !why.empty()) {
    d.kinds = (d.kinds & ~uint32_t(kCuptiCallbacks)) | kCuptiRuntime | kCuptiDriver;
    d.settings += "; launches from activity records: " + why;
  }
  if (CUptiResult r = d.ActivityRegisterCallbacks(&buffer_requested, &buffer_completed); r != CUPTI_SUCCESS)
    return fail(d.err("cuptiActivityRegisterCallbacks", r));
  const std::pair<uint32_t, CUpti_ActivityKind> all_kinds[] = {
      {kCuptiKernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, {kCuptiMemcpy, CUPTI_ACTIVITY_KIND_MEMCPY},
      {kCuptiMemset, CUPTI_ACTIVITY_KIND_MEMSET},            {kCuptiRuntime, CUPTI_ACTIVITY_KIND_RUNTIME},
      {kCuptiDriver, CUPTI_ACTIVITY_KIND_DRIVER},            {kCuptiSync, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
      {kCuptiExternal, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}, {kCuptiOverhead, CUPTI_ACTIVITY_KIND_OVERHEAD}};
  d.enabled.clear();
  for (const auto& [bit, k] : all_kinds) {
    if (!(d.kinds & bit)) continue;
    CUptiResult r = d.ActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
      for (CUpti_ActivityKind e : d.enabled) d.ActivityDisable(e);
      d.enabled.clear();
      const std::string what = std::string("cuptiActivityEnable(") + kind_name(k) + ")";
      // CUPTI reports a missing driver as CUPTI_ERROR_UNKNOWN; say it plainly when libcuda is absent.
      void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
      if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
      if (!cuda) return fail("no driver: libcuda.so.1 not found (" + what + " failed)");
      dlclose(cuda);
      return fail(d.err(what.c_str(), r));
    }
    d.enabled.push_back(k);
  }
  if (!(d.kinds & kCuptiQueries)) mute_queries(d);
  d.sample_clock();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.state = "on";
    d.reason.clear();
    d.running = true;
    d.was_on = true;
  }
  return Status::Ok();
#endif
}

void CuptiCollector::flush() {
  Impl& d = *impl_;
  if (!d.running) return;
#if defined(TUNEBENCH_HAVE_CUPTI)
  d.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  d.sample_clock();
  std::deque<std::pair<uint8_t*, size_t>> bufs;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    bufs.swap(d.completed);
  }
  for (auto& [buf, valid] : bufs) {
    CUpti_Activity* rec = nullptr;
    while (d.ActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) d.decoder.decode(rec);
    std::free(buf);
    d.outstanding.fetch_sub(1);
  }
  if (d.calls) ApiCallLog::replay(d.calls->drain(), static_cast<uint32_t>(::getpid()), d.decoder);
  size_t dropped = 0;
  if (d.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) d.cupti_dropped += dropped;
#endif
}

std::unique_ptr<Trace> CuptiCollector::collect() {
  flush();
  auto t = impl_->decoder.take();
  annotate(t->meta());
  return t;
}

void CuptiCollector::stop() {
  Impl& d = *impl_;
  if (!d.running) return;
  flush();
#if defined(TUNEBENCH_HAVE_CUPTI)
  for (CUpti_ActivityKind k : d.enabled) d.ActivityDisable(k);
  d.enabled.clear();
  if (d.subscriber) {
    d.Unsubscribe(d.subscriber);
    d.subscriber = nullptr;
  }
  // Disabling the kinds leaves CUPTI's instrumentation in the process; cuptiFinalize removes it, so the
  // training after a recording runs at its untraced speed (TUNEBENCH_CUPTI_FINALIZE=0 keeps it). The next
  // start() registers everything again.
  if (const char* f = std::getenv("TUNEBENCH_CUPTI_FINALIZE"); d.Finalize && !(f && std::string(f) == "0")) {
    d.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    d.Finalize();
  }
#endif
  std::lock_guard<std::mutex> lock(d.mu);
  d.running = false;
  d.state = "off";
  d.reason = "stopped";
}

void CuptiCollector::push_external_id(uint64_t id) {
#if defined(TUNEBENCH_HAVE_CUPTI)
  if (impl_->running && impl_->PushExternal) impl_->PushExternal(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, id);
#else
  (void)id;
#endif
}

void CuptiCollector::pop_external_id() {
#if defined(TUNEBENCH_HAVE_CUPTI)
  uint64_t last = 0;
  if (impl_->running && impl_->PopExternal) impl_->PopExternal(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
#endif
}

bool CuptiCollector::running() const { return impl_->running; }
std::string CuptiCollector::state() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->state;
}
std::string CuptiCollector::reason() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->reason;
}
uint64_t CuptiCollector::dropped() const {
  return impl_->cupti_dropped.load() + impl_->refused.load() + (impl_->calls ? impl_->calls->dropped() : 0);
}

void CuptiCollector::annotate(TraceMetadata& meta) const {
  std::string st, why;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->state.empty()) return;  // never asked to run (CPU device): nothing to say
    st = impl_->was_on ? "on" : impl_->state;
    why = impl_->was_on ? "" : impl_->reason;
    // A trace with only some kinds lacks what the others give (launches, syncs): the reader must know.
    if (impl_->was_on && impl_->kinds != kCuptiAll && impl_->kinds != kCuptiDefault)
      why = "activity kinds: " + cupti_kinds_text(impl_->kinds);
    if (impl_->was_on) meta.extra["recording_cupti_kinds"] = cupti_kinds_text(impl_->kinds);
    if (impl_->was_on && !impl_->settings.empty()) meta.extra["recording_cupti_settings"] = impl_->settings;
  }
  meta.collector_state = st;
  meta.collector_reason = why;
  meta.dropped_records += dropped();
  if (!impl_->version.empty()) meta.versions["cupti"] = impl_->version;
}

}  // namespace tb::prof
