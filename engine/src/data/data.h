// Data pipeline contract between the datasets/loader and the trainer (private to engine/, includes torch).
//
// Datasets produce one preprocessed sample at a time into caller-owned memory (float CHW, normalized) so
// workers can write straight into a (pinned) staging batch without intermediate tensors. The Loader owns
// the worker threads, the bounded prefetch queue and the staging ring, and hands the trainer whole batches
// already on the training device.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb::engine {

// The input a model declares; datasets must produce exactly this.
struct InputSpec {
  int64_t channels = 3;
  int64_t height = 224;
  int64_t width = 224;
  int64_t num_classes = 1000;
};

// Bad user input (missing folder, unreadable file, unknown dataset kind): message is one line for the user.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where a sample's time went (why the loader is slow, client/loader_verdict.h): a dataset adds each part's
// wall time to it when the loader passes one.
struct SampleTimes {
  int64_t read_ns = 0;     // the file's bytes
  int64_t decode_ns = 0;   // JPEG/PNG decode (its header read first)
  int64_t augment_ns = 0;  // crop, flip, resample and normalize into the batch
};

// Per-call preprocessing switches the loader passes to Dataset::load (extension of the contract; the
// 4-argument load() keeps its meaning: fp32 preprocessing).
struct SampleOptions {
  bool fp32_preprocess = true;  // false: resample + normalize in fp16 (c10::Half) on the CPU, a known slow path
  // true: decode JPEGs at the smallest DCT scale that still covers the crop (what DALI, PIL's draft mode and
  // FFCV do); false: full-size decode, what torchvision's ImageFolder + PIL does by default.
  bool scaled_decode = false;
  SampleTimes* times = nullptr;  // when set, the parts' times are added to it
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string describe() const = 0;  // "imagefolder:/x (1200 images, 10 classes)"
  virtual int64_t size() const = 0;
  virtual int64_t num_classes() const = 0;
  // Writes sample `index` as float CHW (spec().channels x height x width), normalized, into `out`, and its
  // class into `label`. `rng` drives augmentation (crop/flip) so a deterministic loader reproduces batches.
  // Returns false when the sample is unreadable/corrupt (counted and skipped by the loader, never thrown).
  // Thread-safe: called concurrently from workers.
  virtual bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label) const = 0;
  // Same, with preprocessing switches. Default: ignores them (datasets without per-pixel math).
  virtual bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label,
                    const SampleOptions& /*options*/) const {
    return load(index, rng, out, label);
  }
  // The input this dataset produces (the InputSpec it was made for). Every dataset make_dataset() returns
  // overrides it; the default only keeps hand-written test datasets compiling (the loader needs the real one).
  virtual InputSpec spec() const { return InputSpec{}; }
  // True when load() costs nothing on the CPU (synthetic): the loader then reuses one device batch.
  virtual bool is_synthetic() const { return false; }
};

// "synthetic", "imagefolder:DIR", "mnist:DIR". Throws DataError with a clear message. `input` fixes the
// sample shape; its num_classes is not enforced here (the session sizes the model's head to num_classes()).
std::shared_ptr<Dataset> make_dataset(const std::string& spec, const InputSpec& input);

struct LoaderOptions {
  int workers = 0;            // 0: load on the calling (training) thread
  int prefetch = 2;           // batches in flight per worker (bounded queue depth = max(1, workers) * prefetch)
  bool pin_memory = false;    // pinned staging ring (CUDA builds; else reported not applicable)
  bool non_blocking = false;  // async H2D on a copy stream + event (CUDA builds)
  bool deterministic = true;  // batches come out in index order regardless of which worker finished first
  bool fp32_preprocess = true;  // false: preprocessing math in fp16 on the CPU (a known slow naive path)
  bool scaled_decode = false;   // the fast_decode knob: reduced-scale JPEG decode (SampleOptions::scaled_decode)
  bool channels_last = false;   // produce NHWC-strided device tensors
  int64_t batch_size = 32;
  uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  // Data parallel: this loader reads shard `rank` of `world_size`, as torch's DistributedSampler does: every
  // epoch's permutation (the same on all ranks) padded to a multiple of world_size by wrapping, then rank r
  // takes positions r, r + W, r + 2W, ... So the ranks' shards of an epoch are disjoint (but for the padding)
  // and together cover the dataset. Fixed at construction (a reconfigure keeps the loader's shard).
  int rank = 0;
  int world_size = 1;
};

struct Batch {
  torch::Tensor input;   // [N,C,H,W] float on options.device
  torch::Tensor target;  // [N] int64 on options.device
  int64_t samples = 0;
  int64_t index = 0;         // batch sequence number
  int64_t data_wait_ns = 0;  // time the training thread waited for this batch
  int64_t h2d_ns = 0;        // host time spent issuing/waiting for the copy to the device
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t skipped = 0;       // unreadable/corrupt samples skipped
  int64_t queue_depth = 0;   // current prefetched batches
  // Extensions: batches assembled by each worker slot since construction ("loader-N" = index N; batches
  // loaded on the training thread with workers=0 are not counted here) and unreadable-sample events
  // (a corrupt file hit again in a later epoch counts again here, but once in `skipped`).
  std::vector<int64_t> batches_per_worker;
  int64_t skip_events = 0;
  // Batches made under an earlier configuration and dropped at a reconfigure (their samples are loaded
  // again under the new one).
  int64_t discarded = 0;
  // Why the loader is slow: each loading thread ("worker N", or "main": the training thread with workers=0),
  // the samples and batches it made, its wall and CPU time making them, its life since its first batch, and
  // where its samples' time went.
  struct Thread {
    std::string who;
    int64_t samples = 0, batches = 0, busy_ns = 0, cpu_ns = 0, life_ns = 0;
    SampleTimes parts;
  };
  std::vector<Thread> threads;
};

class Loader {
 public:
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  ~Loader();  // joins workers
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Threading: next(), reconfigure() and options() are called from one (training) thread; stats() from any.
  // Blocks until the next batch is ready (records "data_wait" on the calling thread while blocked).
  // Throws DataError when no readable sample is left, or rethrows what a worker hit while loading.
  Batch next();
  // Applies new options at a batch boundary: drains the workers, drops every batch made under the old
  // options (counted in stats().discarded) and restarts from the first undelivered stream position.
  void reconfigure(const LoaderOptions& options);
  const LoaderOptions& options() const;
  LoaderStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tb::engine
