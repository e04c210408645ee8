// Trace import + analysis at scale: generates a Kineto-style trace of N events (default 1 M, ~140 MB JSON) in
// /tmp, then measures load_trace (read + parse + finalize), analyze(), and memory per event.
// Goals (docs/cpu-results.md): parse <= 1 s, analyses <= 0.3 s, <= 200 B/event for 1 M events.
// Usage: bench_profiler_io [events] [path] [reuse]. "reuse" keeps an existing file. Wall and process CPU time
// are both printed: on a shared, loaded machine the CPU figure is the cost of the code.
// Plain main printing figures; never run by CI.
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace {

double cpu_secs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// A training-loop shaped trace: per step a ProfilerStep, a DataLoader wait, cpu_ops, one cudaLaunchKernel per
// kernel with a correlation id, kernels on two streams, an HtoD memcpy, an occasional cudaStreamSynchronize.
size_t generate(const std::string& path, size_t target_events) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fputs("{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"Generated GPU\"}],\"traceEvents\":[\n", f);
  const int64_t pid = 4242, main_tid = 4242;
  int64_t ts_ns = 1712195495000000000LL;  // ns
  uint64_t corr = 1000;
  size_t n = 0;
  int64_t step = 0;
  static const char* kOps[] = {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::add_", "aten::linear",
                               "aten::addmm", "aten::max_pool2d", "aten::mul"};
  static const char* kKernels[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >",
      "volta_sgemm_128x64_nn", "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
      "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw", "void at::native::reduce_kernel<512, 1>"};
  auto us = [](int64_t ns, char* buf) {
    std::snprintf(buf, 32, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
    return buf;
  };
  char a[32], b[32];
  bool first = true;
  auto sep = [&]() {
    if (!first) std::fputs(",\n", f);
    first = false;
  };
  while (n < target_events) {
    const int64_t step_start = ts_ns;
    const int kernels_per_step = 400;
    const int64_t step_len = 400LL * 12000 + 300000;
    sep();
    std::fprintf(f, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%lld\",\"pid\":%lld,\"tid\":%lld,\"ts\":%s,\"dur\":%s}",
                 static_cast<long long>(step), static_cast<long long>(pid), static_cast<long long>(main_tid),
                 us(step_start, a), us(step_len, b));
    ++n;
    sep();
    std::fprintf(f, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\",\"pid\":%lld,\"tid\":%lld,\"ts\":%s,\"dur\":%s}",
                 static_cast<long long>(pid), static_cast<long long>(main_tid), us(step_start, a), us(250000, b));
    ++n;
    int64_t host = step_start + 250000;
    int64_t gpu = host + 20000;
    for (int k = 0; k < kernels_per_step && n < target_events; ++k) {
      const char* op = kOps[k % 8];
      sep();
      std::fprintf(f, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"ts\":%s,\"dur\":%s,\"args\":{\"External id\":%llu}}",
                   op, static_cast<long long>(pid), static_cast<long long>(main_tid), us(host, a), us(9000, b),
                   static_cast<unsigned long long>(corr));
      sep();
      std::fprintf(f, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":%lld,\"tid\":%lld,\"ts\":%s,\"dur\":%s,\"args\":{\"correlation\":%llu}}",
                   static_cast<long long>(pid), static_cast<long long>(main_tid), us(host + 2000, a), us(5000, b),
                   static_cast<unsigned long long>(corr));
      // GPU: kernels mostly back to back, every 16th after a launch gap.
      const int64_t start = std::max(gpu, host + 4000);
      const int64_t dur = 7000 + (k % 5) * 1500;
      const int stream = (k % 10 == 0) ? 13 : 7;
      sep();
      std::fprintf(f, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,\"ts\":%s,\"dur\":%s,\"args\":{\"correlation\":%llu,\"stream\":%d,\"device\":0}}",
                   kKernels[k % 5], stream, us(start, a), us(dur, b), static_cast<unsigned long long>(corr), stream);
      n += 3;
      ++corr;
      gpu = start + dur;
      host += (k % 16 == 0) ? 30000 : 11000;
    }
    if (n < target_events) {
      sep();
      std::fprintf(f, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaStreamSynchronize\",\"pid\":%lld,\"tid\":%lld,\"ts\":%s,\"dur\":%s,\"args\":{\"correlation\":%llu}}",
                   static_cast<long long>(pid), static_cast<long long>(main_tid), us(host, a),
                   us(std::max<int64_t>(1000, gpu - host), b), static_cast<unsigned long long>(corr++));
      ++n;
    }
    ts_ns = std::max(step_start + step_len, gpu) + 1000;
    ++step;
  }
  std::fputs("\n]}\n", f);
  std::fclose(f);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t target = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const std::string path = argc > 2 ? argv[2] : "/tmp/tunebench_bench_trace.json";
  auto t0 = std::chrono::steady_clock::now();
  struct stat st{};
  const bool reuse = argc > 3 && std::string(argv[3]) == "reuse" && stat(path.c_str(), &st) == 0;
  const size_t n = reuse ? target : generate(path, target);
  if (n == 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  const long bytes = std::ftell(f);
  std::fclose(f);
  std::printf("generated %zu events, %.1f MB JSON in %.2f s -> %s\n", n, bytes / 1e6, secs_since(t0), path.c_str());

  const long rss0 = max_rss_kb();
  t0 = std::chrono::steady_clock::now();
  double c0 = cpu_secs();
  auto r = tb::prof::load_trace(path);
  const double parse_s = secs_since(t0);
  const double parse_cpu = cpu_secs() - c0;
  if (!r.ok()) {
    std::fprintf(stderr, "load failed: %s\n", r.error().to_string().c_str());
    return 1;
  }
  const tb::prof::Trace& trace = *r.value();
  const long rss1 = max_rss_kb();
  t0 = std::chrono::steady_clock::now();
  c0 = cpu_secs();
  auto a = tb::prof::analyze(trace);
  const double analyze_s = secs_since(t0);
  const double analyze_cpu = cpu_secs() - c0;
  const size_t events = trace.event_count();
  std::printf("load_trace (read+parse+finalize): %.3f s wall, %.3f s CPU (%.0f MB/s of CPU)   goal <= 1 s\n", parse_s,
              parse_cpu, bytes / 1e6 / parse_cpu);
  std::printf("analyze:                          %.3f s wall, %.3f s CPU   goal <= 0.3 s\n", analyze_s, analyze_cpu);
  std::printf("events %zu, flows %zu, tracks %zu\n", events, trace.flows().size(), trace.tracks().size());
  std::printf("trace memory: %.1f B/event (model)   goal <= 200\n", static_cast<double>(trace.memory_bytes()) / events);
  std::printf("peak RSS during load: %.1f MB (input text + trace; the text is freed after parsing)\n",
              (rss1 - rss0) / 1024.0);
  std::printf("result: %zu steps, busy %.1f ms, loader stall %.1f ms (%u), launch gap %.1f ms (%u), sync %u, kernels %llu\n",
              a.steps.size(), a.gpu_busy_ns / 1e6, a.loader_stall_ns / 1e6, a.loader_stall_count,
              a.launch_gap_ns / 1e6, a.launch_gap_count, a.sync_count, static_cast<unsigned long long>(a.kernel_count));
  return 0;
}
