// Recorder hot-path cost: ns per begin/end pair (goal <= 50 ns), recording on and off, one and two threads.
// Plain main printing figures; never run by CI.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "profiler/recorder.h"
#include "profiler/trace.h"

using tb::prof::Recorder;

namespace {

int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Median over rounds of ns per pair, by wall clock and by this thread's CPU time. On a shared, loaded machine
// the wall figure includes time the thread was not scheduled; the CPU-time figure is the cost of the code.
double g_cpu_ns = 0;
double pairs_ns(int rounds, int pairs_per_round, bool on) {
  auto& r = Recorder::instance();
  std::vector<double> per_round, per_round_cpu;
  for (int k = 0; k < rounds; ++k) {
    if (on) r.start();
    const int64_t c0 = thread_cpu_ns();
    const int64_t t0 = tb::prof::now_ns();
    for (int i = 0; i < pairs_per_round; ++i) {
      Recorder::begin("bench_range", i);
      Recorder::end();
    }
    const int64_t t1 = tb::prof::now_ns();
    const int64_t c1 = thread_cpu_ns();
    per_round_cpu.push_back(static_cast<double>(c1 - c0) / pairs_per_round);
    if (on) {
      r.stop();
      (void)r.collect();  // drain (outside the timed loop) so the per-thread cap is never hit
    }
    per_round.push_back(static_cast<double>(t1 - t0) / pairs_per_round);
  }
  std::sort(per_round.begin(), per_round.end());
  std::sort(per_round_cpu.begin(), per_round_cpu.end());
  g_cpu_ns = per_round_cpu[per_round_cpu.size() / 2];
  return per_round[per_round.size() / 2];  // median round
}

}  // namespace

int main() {
  tb::prof::set_thread_name("bench");
  // clock cost for reference
  const int64_t c0 = tb::prof::now_ns();
  int64_t sink = 0;
  for (int i = 0; i < 1000000; ++i) sink += tb::prof::now_ns();
  const double clock_ns = static_cast<double>(tb::prof::now_ns() - c0) / 1e6;
  (void)pairs_ns(1, 200000, true);  // warm-up: allocates the thread's chunks
  const double on = pairs_ns(7, 1000000, true);
  const double on_cpu = g_cpu_ns;
  const double off = pairs_ns(7, 1000000, false);
  const double off_cpu = g_cpu_ns;
  // Two threads at once (no shared state on the hot path: should match one thread).
  double two = 0;
  {
    auto& r = Recorder::instance();
    r.start();
    std::vector<double> res(2);
    std::vector<std::thread> th;
    for (int t = 0; t < 2; ++t) {
      th.emplace_back([t, &res] {
        const int n = 1000000;
        const int64_t t0 = tb::prof::now_ns();
        for (int i = 0; i < n; ++i) {
          Recorder::begin("bench_range");
          Recorder::end();
        }
        res[t] = static_cast<double>(tb::prof::now_ns() - t0) / n;
      });
    }
    for (auto& x : th) x.join();
    r.stop();
    auto trace = r.collect();
    two = (res[0] + res[1]) / 2;
    std::printf("two threads collected %zu events, dropped %llu\n", trace->event_count(),
                static_cast<unsigned long long>(r.dropped()));
  }
  std::printf("now_ns():                        %6.1f ns per call\n", clock_ns);
  std::printf("begin/end pair, recording on:    %6.1f ns wall, %6.1f ns thread CPU time (goal <= 50)\n", on, on_cpu);
  std::printf("begin/end pair, recording off:   %6.1f ns wall, %6.1f ns thread CPU time\n", off, off_cpu);
  std::printf("begin/end pair, 2 threads, on:   %6.1f ns\n", two);
  return sink == 42 ? 1 : 0;
}
