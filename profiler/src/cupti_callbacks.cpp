// Launches and syncs from CUPTI's callback API (profiler/cupti_collector.h ApiCallLog). cupti.h only under
// TUNEBENCH_HAVE_CUPTI; without it nothing is ever recorded and the id lists are empty.
#include "profiler/cupti_collector.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#if defined(TUNEBENCH_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace tb::prof {

namespace {
uint32_t this_thread() {
  // gettid() once per thread: the callback runs on every recorded launch.
  thread_local const uint32_t tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  return tid;
}
// The correlation id of the runtime call open on this thread (0: none). A runtime call makes its work through
// the driver, and CUPTI reports that driver call with the runtime call's own correlation id: on an H100 every
// cudaLaunchKernel came with a cuLaunchKernel of the same id, each memcpy and sync twice, so launches were
// counted twice (177 705 for 89 723 kernels). The runtime record stands for the call; a driver call with the
// open runtime call's id is that same call and is not kept. An id, not a depth: a subscription that starts or
// stops inside a call cannot leave the thread dropping driver calls (cuBLAS's, Triton's) for good.
thread_local uint32_t open_runtime_call = 0;
}  // namespace

void ApiCallLog::on_call(bool runtime, uint32_t cbid, const void* callback_data) {
#if defined(TUNEBENCH_HAVE_CUPTI)
  const auto* d = static_cast<const CUpti_CallbackData*>(callback_data);
  if (!d) return;
  if (runtime) {
    if (d->callbackSite == CUPTI_API_ENTER) {
      if (open_runtime_call == 0) open_runtime_call = d->correlationId;
    } else if (open_runtime_call == d->correlationId) {
      open_runtime_call = 0;
    }
  } else if (d->correlationId != 0 && d->correlationId == open_runtime_call) {
    return;  // the runtime call's own driver call
  }
  if (!d->correlationData) return;
  if (d->callbackSite == CUPTI_API_ENTER) {
    *d->correlationData = clock_();
    return;
  }
  ApiCall c;
  c.start = *d->correlationData;
  c.end = clock_();
  if (c.start == 0 || c.end < c.start) return;  // the entry was before the subscription
  c.thread = this_thread();
  c.cbid = cbid;
  c.correlation = d->correlationId;
  c.runtime = runtime;
  if (d->functionReturnValue) {
    // cudaError_t and CUresult are both int-sized enums.
    int32_t r = 0;
    std::memcpy(&r, d->functionReturnValue, sizeof r);
    c.result = r;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (calls_.size() >= max_calls_) {
    ++dropped_;
    return;
  }
  calls_.push_back(c);
#else
  (void)runtime;
  (void)cbid;
  (void)callback_data;
#endif
}

std::vector<ApiCall> ApiCallLog::drain() {
  std::vector<ApiCall> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(calls_);
  return out;
}

uint64_t ApiCallLog::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void ApiCallLog::replay(const std::vector<ApiCall>& calls, uint32_t pid, CuptiDecoder& decoder) {
#if defined(TUNEBENCH_HAVE_CUPTI)
  for (const ApiCall& c : calls) {
    CUpti_ActivityAPI a;
    std::memset(&a, 0, sizeof a);
    a.kind = c.runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = c.cbid;
    a.start = c.start;
    a.end = c.end;
    a.processId = pid;
    a.threadId = c.thread;
    a.correlationId = c.correlation;
    a.returnValue = static_cast<uint32_t>(c.result);
    decoder.decode(&a);
  }
#else
  (void)calls;
  (void)pid;
  (void)decoder;
#endif
}

const std::vector<uint32_t>& ApiCallLog::runtime_ids() {
#if defined(TUNEBENCH_HAVE_CUPTI)
  static const std::vector<uint32_t> ids = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
      // A graph's capture and instantiation: made once, a graph costs them once; made again every step, every
      // step pays them (the analysis counts them).
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020};
#else
  static const std::vector<uint32_t> ids;
#endif
  return ids;
}

const std::vector<uint32_t>& ApiCallLog::driver_ids() {
#if defined(TUNEBENCH_HAVE_CUPTI)
  // cuBLAS, cuDNN's runtime-compiled kernels and Triton launch through the driver.
  static const std::vector<uint32_t> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
      CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
      CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
      CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async};
#else
  static const std::vector<uint32_t> ids;
#endif
  return ids;
}

}  // namespace tb::prof
