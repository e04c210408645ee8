// The engine's own loader (torch::data has no pinning or prefetch to the device).
//
// Sample stream: batch k covers positions [start_k, start_k + bs_k) of an endless stream; position p maps to
// epoch p / N and a seeded per-epoch permutation, and its augmentation RNG is seeded from (seed, p). So a batch
// is a pure function of (seed, start, bs), whichever thread loads it: two workers and zero workers produce the
// same batches, and a batch-size change only moves where later batches start.
//
// Tasks (batch index, start, size, options snapshot) are handed out in index order under the mutex; a worker
// assembles its batch straight into a staging buffer (pinned in CUDA builds when pin_memory is on) and parks it
// in `ready` keyed by index. `in_flight` (claimed, not yet consumed) never exceeds depth = max(1,workers) *
// prefetch: the bounded queue. Deterministic mode hands batches out by index (a reorder buffer); otherwise the
// lowest ready index goes first.
//
// Staging buffers are recycled once nobody else references their storage (the trainer dropped the batch,
// autograd released the saved input) and, in CUDA builds, once the async copy out of them has completed.
#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "data/data.h"
#include "profiler/range_names.h"
#include "profiler/recorder.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace tb::engine {
namespace {

namespace names = tb::prof::names;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool pinned_available(const LoaderOptions& o) {
#if TUNEBENCH_TORCH_CUDA
  return o.pin_memory && o.device.is_cuda();
#else
  (void)o;
  return false;  // no CUDA in this LibTorch: nothing to pin for (the knob reports not applicable)
#endif
}

struct Slot {
  torch::Tensor input;   // [bs,C,H,W] float, contiguous or channels_last
  torch::Tensor target;  // [bs] int64
  std::function<void()> wait_before_reuse;  // CUDA: sync on the event of the last async copy out of it
  bool pinned = false;
  bool channels_last = false;
};

// Nobody outside the pool holds the staging tensors: not the same TensorImpl (a Batch handed out shares
// it, so the tensor's own count is checked) and no view of its storage (slices, autograd's saved input).
bool slot_unreferenced(const Slot& s) {
  return s.input.use_count() == 1 && s.target.use_count() == 1 && s.input.storage().use_count() == 1 &&
         s.target.storage().use_count() == 1;
}

struct Task {
  int64_t index = 0;
  int64_t start = 0;
  LoaderOptions options;  // snapshot at claim time: batch_size, channels_last, fp32_preprocess, pin
};

struct Ready {
  int64_t start = 0;  // first stream position (a discarded batch is loaded again from here)
  std::shared_ptr<Slot> slot;
  int64_t samples = 0;
  std::exception_ptr error;
};

}  // namespace

struct Loader::Impl {
  std::shared_ptr<const Dataset> dataset;
  InputSpec spec;
  int64_t n = 0;

  mutable std::mutex mu;
  std::condition_variable cv_work;   // workers: room in the queue, or stop
  std::condition_variable cv_ready;  // consumer: a batch became ready
  LoaderOptions opts;
  std::atomic<int64_t> depth{1};  // written under mu, also read by acquire_slot under pool_mu
  int64_t next_task = 0;   // next batch index to hand out
  int64_t next_start = 0;  // its first stream position
  int64_t next_out = 0;    // deterministic: next index to deliver
  int64_t in_flight = 0;
  std::set<int64_t> loading;  // claimed by a worker, not finished yet
  std::map<int64_t, Ready> ready;
  bool drain = false;  // workers finish their current batch, then exit (reconfigure)
  std::atomic<bool> abort{false};  // workers drop what they are doing and exit (destructor)
  std::vector<std::thread> threads;
  std::vector<int64_t> per_worker;
  int64_t batches = 0, samples = 0, skip_events = 0, discarded = 0;
  std::map<int, LoaderStats::Thread> parts;  // by worker id, -1 the training thread; life_ns holds its start

  // Known-unreadable samples (skipped without another decode attempt); counted once in `skipped`.
  std::unique_ptr<std::atomic<uint8_t>[]> bad;
  std::atomic<int64_t> skipped{0};

  // Per-epoch permutations, a few recent ones cached.
  std::mutex perm_mu;
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> perms;

  // Staging pool.
  std::mutex pool_mu;
  std::vector<std::shared_ptr<Slot>> pool;

  // Synthetic: one device batch made once (per batch size / layout).
  Batch synthetic;
  bool synthetic_valid = false;

#if TUNEBENCH_TORCH_CUDA
  std::optional<c10::cuda::CUDAStream> copy_stream;
#endif

  std::shared_ptr<const std::vector<int64_t>> permutation(int64_t epoch) {
    std::lock_guard<std::mutex> lock(perm_mu);
    auto it = perms.find(epoch);
    if (it != perms.end()) return it->second;
    auto p = std::make_shared<std::vector<int64_t>>(size_t(n));
    for (int64_t i = 0; i < n; ++i) (*p)[size_t(i)] = i;
    std::mt19937_64 rng(splitmix64(opts_seed ^ splitmix64(uint64_t(epoch) + 0x5151)));
    for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, spelled out so the order is the same everywhere
      const int64_t j = int64_t(rng() % uint64_t(i + 1));
      std::swap((*p)[size_t(i)], (*p)[size_t(j)]);
    }
    perms.emplace(epoch, p);
    while (perms.size() > 3) perms.erase(perms.begin());
    return p;
  }
  uint64_t opts_seed = 0;  // seed the stream was built with (fixed at construction: order must not change)

  // Data parallel shard (LoaderOptions::rank / world_size), fixed at construction.
  int64_t rank = 0, world = 1;
  int64_t shard_len() const { return (n + world - 1) / world; }  // per epoch, padded as DistributedSampler

  // The position in the whole (all ranks') sample stream of this loader's stream position `pos`: epoch e,
  // slot i of this rank's shard -> e * padded + rank + i * world. One process: `pos` itself.
  int64_t global_pos(int64_t pos) const {
    if (world == 1) return pos;
    const int64_t m = shard_len();
    return (pos / m) * m * world + rank + (pos % m) * world;
  }

  int64_t index_at(int64_t pos) {
    const int64_t g = global_pos(pos);
    const int64_t padded = world == 1 ? n : shard_len() * world;
    if (dataset->is_synthetic()) return g % n;  // nominal size, no order to shuffle
    const auto perm = permutation(g / padded);
    return (*perm)[size_t((g % padded) % n)];  // the padding wraps to the epoch's first samples
  }

  std::shared_ptr<Slot> acquire_slot(const LoaderOptions& o) {
    const bool pin = pinned_available(o);
    const int64_t bs = o.batch_size;
    std::shared_ptr<Slot> found;
    {
      std::lock_guard<std::mutex> lock(pool_mu);
      for (auto& s : pool) {
        if (s.use_count() == 1 && slot_unreferenced(*s) && s->pinned == pin && s->channels_last == o.channels_last &&
            s->input.size(0) == bs) {
          found = s;
          break;
        }
      }
      if (!found) {
        // Drop unused slots of another shape, then add a new one (bounded; beyond the cap, unpooled).
        pool.erase(std::remove_if(pool.begin(), pool.end(),
                                  [&](const std::shared_ptr<Slot>& s) {
                                    return s.use_count() == 1 && slot_unreferenced(*s) &&
                                           (s->pinned != pin || s->channels_last != o.channels_last ||
                                            s->input.size(0) != bs);
                                  }),
                   pool.end());
        found = std::make_shared<Slot>();
        auto topt = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(pin);
        if (o.channels_last) topt = topt.memory_format(torch::MemoryFormat::ChannelsLast);
        found->input = torch::empty({bs, spec.channels, spec.height, spec.width}, topt);
        found->target = torch::empty({bs}, torch::TensorOptions().dtype(torch::kInt64).pinned_memory(pin));
        found->pinned = pin;
        found->channels_last = o.channels_last;
        if (int64_t(pool.size()) < depth.load() + 4) pool.push_back(found);
      }
    }
    if (found->wait_before_reuse) {
      found->wait_before_reuse();
      found->wait_before_reuse = nullptr;
    }
    return found;
  }

  // Fills one sample at stream position `pos`; substitutes the next readable sample for a corrupt one.
  void load_sample(int64_t pos, const LoaderOptions& o, float* out, int64_t& label, float* scratch,
                   SampleTimes* times) {
    std::mt19937_64 rng(splitmix64(opts_seed ^ splitmix64(uint64_t(global_pos(pos)))));
    const int64_t first = index_at(pos);
    SampleOptions so;
    so.times = times;
    so.fp32_preprocess = o.fp32_preprocess;
    so.scaled_decode = o.scaled_decode;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = (first + k) % n;
      if (bad[size_t(idx)].load(std::memory_order_relaxed)) continue;
      if (dataset->load(idx, rng, scratch ? scratch : out, label, so)) {
        if (label < 0 || label >= dataset->num_classes())
          throw DataError(dataset->describe() + ": sample " + std::to_string(idx) + " has label " +
                          std::to_string(label) + " out of range");
        return;
      }
      if (bad[size_t(idx)].exchange(1) == 0) skipped.fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(mu);
        ++skip_events;
      }
      if (abort.load(std::memory_order_relaxed)) return;
    }
    throw DataError(dataset->describe() + ": no readable sample left (all " + std::to_string(n) +
                    " failed to decode)");
  }

  static int64_t thread_cpu_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  // Assembles batch `t` into a staging slot on worker `who` (-1: the training thread), and counts its time
  // (LoaderStats::threads). Returns false when aborted.
  bool assemble(const Task& t, Ready& r, int who) {
    const int64_t busy0 = tb::prof::now_ns(), cpu0 = thread_cpu_ns();
    SampleTimes times;
    if (!assemble_into(t, r, &times)) return false;
    const int64_t busy = tb::prof::now_ns() - busy0, cpu = thread_cpu_ns() - cpu0;
    std::lock_guard<std::mutex> lock(mu);
    auto [it, fresh] = parts.try_emplace(who);
    LoaderStats::Thread& th = it->second;
    if (fresh) {
      th.who = who < 0 ? "main" : "worker " + std::to_string(who);
      th.life_ns = busy0;
    }
    th.samples += r.samples;
    ++th.batches;
    th.busy_ns += busy;
    th.cpu_ns += cpu;
    th.parts.read_ns += times.read_ns;
    th.parts.decode_ns += times.decode_ns;
    th.parts.augment_ns += times.augment_ns;
    return true;
  }

  bool assemble_into(const Task& t, Ready& r, SampleTimes* times) {
    TB_RANGE_ARG(names::kLoadBatch, t.index);
    const LoaderOptions& o = t.options;
    r.start = t.start;
    r.slot = acquire_slot(o);
    const int64_t bs = o.batch_size;
    const int64_t C = spec.channels, HW = spec.height * spec.width, chw = C * HW;
    float* base = r.slot->input.data_ptr<float>();
    int64_t* tgt = r.slot->target.data_ptr<int64_t>();
    thread_local std::vector<float> scratch;
    if (o.channels_last) scratch.resize(size_t(chw));
    for (int64_t k = 0; k < bs; ++k) {
      if (abort.load(std::memory_order_relaxed)) return false;
      int64_t label = 0;
      if (!o.channels_last) {
        load_sample(t.start + k, o, base + k * chw, label, nullptr, times);
      } else {
        // NHWC staging: load CHW into scratch, interleave into the batch.
        load_sample(t.start + k, o, nullptr, label, scratch.data(), times);
        float* dst = base + k * chw;
        for (int64_t c = 0; c < C; ++c) {
          const float* src = scratch.data() + c * HW;
          for (int64_t i = 0; i < HW; ++i) dst[i * C + c] = src[i];
        }
      }
      tgt[k] = label;
    }
    r.samples = bs;
    return true;
  }

  Task claim_locked() {
    Task t;
    t.index = next_task++;
    t.start = next_start;
    t.options = opts;
    next_start += opts.batch_size;
    ++in_flight;
    loading.insert(t.index);
    return t;
  }

  void worker(int id) {
    tb::prof::set_thread_name("loader-" + std::to_string(id));
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv_work.wait(lock, [&] { return abort.load() || drain || in_flight < depth; });
      if (abort.load() || drain) return;
      Task t = claim_locked();
      lock.unlock();
      Ready r;
      bool ok = true;
      try {
        ok = assemble(t, r, id);
      } catch (...) {
        r.error = std::current_exception();
        r.slot.reset();
      }
      lock.lock();
      if (!ok) return;  // aborted: the loader is being destroyed
      loading.erase(t.index);
      ready.emplace(t.index, std::move(r));
      if (size_t(id) < per_worker.size()) ++per_worker[size_t(id)];
      tb::prof::Recorder::counter("loader_queue", double(ready.size()));
      cv_ready.notify_all();
    }
  }

  // Called with no worker running (constructor, reconfigure after stop_workers) from the training thread.
  void start_workers() {
    {
      std::lock_guard<std::mutex> lock(mu);  // stats() may read per_worker from another thread
      depth = std::max<int64_t>(1, opts.workers) * std::max<int64_t>(1, opts.prefetch);
      if (dataset->is_synthetic()) return;
      if (per_worker.size() < size_t(opts.workers)) per_worker.resize(size_t(opts.workers), 0);
    }
    for (int i = 0; i < opts.workers; ++i) threads.emplace_back([this, i] { worker(i); });
  }

  // Lets the workers finish the batch they are on and joins them (nothing is lost: finished batches stay
  // in `ready`, unclaimed ones are claimed later by the new workers in the same order).
  void stop_workers(bool aborting) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (aborting) abort = true;
      drain = true;
    }
    cv_work.notify_all();
    for (auto& t : threads) t.join();
    threads.clear();
    std::lock_guard<std::mutex> lock(mu);
    drain = false;
  }

  // Copies a staged batch to the device (CUDA builds); on CPU hands the staging tensors over as they are.
  void to_device(const Ready& r, Batch& b, const LoaderOptions& o) {
    b.input = r.slot->input;
    b.target = r.slot->target;
#if TUNEBENCH_TORCH_CUDA
    if (o.device.is_cuda()) {
      TB_RANGE(names::kH2D);
      const int64_t t0 = tb::prof::now_ns();
      const auto memory_format = o.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
      if (o.non_blocking) {
        // Async copy on a side stream; the compute stream waits on an event instead of the host waiting.
        auto compute = c10::cuda::getCurrentCUDAStream(o.device.index());
        if (!copy_stream) copy_stream = c10::cuda::getStreamFromPool(false, o.device.index());
        auto event = std::make_shared<at::cuda::CUDAEvent>();
        {
          c10::cuda::CUDAStreamGuard guard(*copy_stream);
          // No fence against the compute stream: that would make the copy wait for all queued compute, so it
          // could never overlap. Reuse is safe without it: the destination is allocated on the copy stream,
          // and record_stream below keeps the allocator from handing memory the compute stream still reads
          // to a later copy.
          b.input = r.slot->input.to(o.device, torch::kFloat32, /*non_blocking=*/true, false, memory_format);
          b.target = r.slot->target.to(o.device, torch::kInt64, /*non_blocking=*/true);
          event->record(*copy_stream);
        }
        event->block(compute);
        // Allocated on the copy stream, used on the compute stream: keep the allocator from reusing early.
        b.input.record_stream(compute);
        b.target.record_stream(compute);
        r.slot->wait_before_reuse = [event] { event->synchronize(); };
      } else {
        b.input = r.slot->input.to(o.device, torch::kFloat32, false, false, memory_format);
        b.target = r.slot->target.to(o.device, torch::kInt64, false);
      }
      b.h2d_ns = tb::prof::now_ns() - t0;
    }
#else
    (void)o;
#endif
  }

  void make_synthetic() {
    const LoaderOptions& o = opts;
    Task t;
    t.options = o;
    t.options.pin_memory = false;
    Ready r;
    assemble_into(t, r, nullptr);  // made once: no loading to count
    Batch b;
    to_device(r, b, o);
    // Own copy, detached from the staging pool (it is reused forever).
    synthetic.input = b.input.clone(o.channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous);
    synthetic.target = b.target.clone();
    synthetic.samples = o.batch_size;
    synthetic_valid = true;
  }
};

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options) : impl_(std::make_unique<Impl>()) {
  if (!dataset) throw DataError("loader: no dataset");
  if (options.batch_size < 1) throw DataError("loader: batch_size must be >= 1");
  if (options.workers < 0) throw DataError("loader: workers must be >= 0");
  if (options.prefetch < 1) options.prefetch = 1;
  Impl& m = *impl_;
  m.dataset = std::move(dataset);
  m.spec = m.dataset->spec();
  m.n = m.dataset->size();
  if (m.n < 1) throw DataError(m.dataset->describe() + ": empty dataset");
  m.bad.reset(new std::atomic<uint8_t>[size_t(m.n)]);
  for (int64_t i = 0; i < m.n; ++i) m.bad[size_t(i)].store(0);
  m.opts = options;
  m.opts_seed = options.seed;
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw DataError("loader: rank " + std::to_string(options.rank) + " is outside world size " +
                    std::to_string(options.world_size));
  m.rank = options.rank;
  m.world = options.world_size;
  try {
    m.start_workers();
  } catch (const std::exception& e) {  // e.g. the system refused another thread: join what started
    m.stop_workers(/*aborting=*/true);
    throw DataError(std::string("loader: cannot start worker threads: ") + e.what());
  }
}

Loader::~Loader() { impl_->stop_workers(/*aborting=*/true); }

Batch Loader::next() {
  Impl& m = *impl_;
  Batch b;
  if (m.dataset->is_synthetic()) {
    // The GPU upper bound: no loading, no copy; the same device batch every step.
    if (!m.synthetic_valid) {
      TB_RANGE(names::kDataWait);
      const int64_t t0 = tb::prof::now_ns();
      m.make_synthetic();
      b.data_wait_ns = tb::prof::now_ns() - t0;
    }
    b.input = m.synthetic.input;
    b.target = m.synthetic.target;
    b.samples = m.synthetic.samples;
    b.index = m.next_out++;
    std::lock_guard<std::mutex> lock(m.mu);
    ++m.batches;
    m.samples += b.samples;
    return b;
  }

  Ready r;
  LoaderOptions copy_opts;
  {
    TB_RANGE(names::kDataWait);
    const int64_t t0 = tb::prof::now_ns();
    std::unique_lock<std::mutex> lock(m.mu);
    copy_opts = m.opts;
    for (;;) {
      if (m.opts.deterministic) {
        // Indices below next_task that are neither loading nor ready were delivered while the loader was
        // not deterministic: skip them so the reorder buffer never waits for a batch that already left.
        while (m.next_out < m.next_task && !m.ready.count(m.next_out) && !m.loading.count(m.next_out)) ++m.next_out;
      }
      auto it = m.opts.deterministic ? m.ready.find(m.next_out) : m.ready.begin();
      if (it != m.ready.end()) {
        b.index = it->first;
        r = std::move(it->second);
        m.ready.erase(it);
        if (m.opts.deterministic) ++m.next_out;
        --m.in_flight;
        m.cv_work.notify_one();
        break;
      }
      if (m.threads.empty() && m.loading.empty()) {
        // workers = 0 (or the workers of an earlier config were drained): load on this thread. Nothing is
        // loading, so the next unclaimed batch is the next in order.
        Task t = m.claim_locked();
        lock.unlock();
        try {
          m.assemble(t, r, -1);
        } catch (...) {
          lock.lock();
          --m.in_flight;
          m.loading.erase(t.index);
          if (m.opts.deterministic) m.next_out = t.index + 1;
          throw;
        }
        lock.lock();
        --m.in_flight;
        m.loading.erase(t.index);
        b.index = t.index;
        if (m.opts.deterministic) m.next_out = t.index + 1;
        break;
      }
      m.cv_ready.wait(lock);
    }
    ++m.batches;
    b.data_wait_ns = tb::prof::now_ns() - t0;
  }
  if (r.error) std::rethrow_exception(r.error);
  b.samples = r.samples;
  // Options of the batch's own task decide the layout; the device/copy mode is the current one.
  m.to_device(r, b, copy_opts);
  std::lock_guard<std::mutex> lock(m.mu);
  m.samples += b.samples;
  return b;
}

void Loader::reconfigure(const LoaderOptions& options) {
  Impl& m = *impl_;
  if (options.batch_size < 1) throw DataError("loader: batch_size must be >= 1");
  if (options.workers < 0) throw DataError("loader: workers must be >= 0");
  LoaderOptions o = options;
  if (o.prefetch < 1) o.prefetch = 1;
  // A configuration change is a clean boundary (docs/protocol.md): batches assembled or prefetched under the
  // old options must not be measured under the new ones (their size, layout and preprocessing are the old
  // config's, and a full queue hands the first steps of a new config free batches). The workers finish the
  // batch they are on, everything not yet delivered is dropped, and the stream rewinds to the first position
  // not delivered, so no sample is skipped: the new config loads them again.
  m.stop_workers(/*aborting=*/false);
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.opts.batch_size != o.batch_size || m.opts.channels_last != o.channels_last ||
        m.opts.device != o.device || m.opts.fp32_preprocess != o.fp32_preprocess)
      m.synthetic_valid = false;
    if (!m.ready.empty()) {
      // Deterministic delivery hands batches out in index order, so the lowest ready index is the first
      // undelivered one (nothing is loading after the drain). Out-of-order delivery may have handed out a
      // later index already: rewinding would deliver it twice, so then the ready batches are dropped
      // without a rewind (their samples are skipped this pass; that mode promises no order anyway).
      const auto& first = *m.ready.begin();
      const bool contiguous = int64_t(m.ready.size()) == m.next_task - first.first;
      m.discarded += int64_t(m.ready.size());
      if (contiguous) {
        m.next_task = first.first;
        m.next_start = first.second.start;
      }
      m.in_flight -= int64_t(m.ready.size());
      m.ready.clear();
      m.next_out = m.next_task;
      tb::prof::Recorder::counter("loader_queue", 0.0);
    }
    if (o.deterministic && !m.opts.deterministic) {
      // Entering it: continue from the lowest index not yet delivered (next() skips ones already gone).
      m.next_out = m.next_task;
    }
    o.seed = m.opts_seed;  // the sample order is fixed for the loader's life
    m.opts = o;
    m.depth = std::max<int64_t>(1, o.workers) * std::max<int64_t>(1, o.prefetch);
  }
  try {
    m.start_workers();
  } catch (const std::exception& e) {
    m.stop_workers(/*aborting=*/false);
    throw DataError(std::string("loader: cannot start worker threads: ") + e.what());
  }
  m.cv_work.notify_all();
}

const LoaderOptions& Loader::options() const { return impl_->opts; }

LoaderStats Loader::stats() const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  LoaderStats s;
  s.batches = m.batches;
  s.samples = m.samples;
  s.skipped = m.skipped.load();
  s.queue_depth = int64_t(m.ready.size());
  s.batches_per_worker = m.per_worker;
  s.skip_events = m.skip_events;
  s.discarded = m.discarded;
  const int64_t now = tb::prof::now_ns();
  for (const auto& [who, th] : m.parts) {
    s.threads.push_back(th);
    s.threads.back().life_ns = now - th.life_ns;
  }
  return s;
}

}  // namespace tb::engine
