// Loader: workers, deterministic order, reconfigure at a batch boundary, recording, shutdown.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "data/data.h"
#include "engine/make_dataset.h"
#include "profiler/recorder.h"
#include "profiler/trace.h"
#include "test_data_common.h"

namespace tb::engine {
namespace {

using testing::TempDir;
using Clock = std::chrono::steady_clock;

// A dataset whose samples encode (index, augmentation draw) so order and RNG use are checkable, with an
// optional per-sample sleep to make workers slow.
class FakeDataset final : public Dataset {
 public:
  FakeDataset(int64_t n, std::chrono::microseconds delay = std::chrono::microseconds(0)) : n_(n), delay_(delay) {}
  std::string describe() const override { return "fake"; }
  int64_t size() const override { return n_; }
  int64_t num_classes() const override { return 10; }
  InputSpec spec() const override { return InputSpec{2, 3, 4, 10}; }
  bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label) const override {
    if (delay_.count()) std::this_thread::sleep_for(delay_);
    const float draw = float(rng() % 1000);
    for (int i = 0; i < 2 * 3 * 4; ++i) out[i] = float(index) + draw / 1000.f + i * 1e-3f;
    label = index % 10;
    return true;
  }

 private:
  int64_t n_;
  std::chrono::microseconds delay_;
};

std::string make_images(const TempDir& dir, int64_t n) {
  ImageFolderSpec spec;
  spec.out = dir.str();
  spec.images = n;
  spec.width = spec.height = 48;
  spec.classes = 3;
  generate_image_folder(spec);
  return "imagefolder:" + dir.str();
}

int thread_count() {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator("/proc/self/task")) (void)e, ++n;
  return n;
}

// A joined thread can linger in /proc/self/task for a moment after pthread_join returns (longer when the machine
// is busy): poll, up to 10 s (only a count that never settles waits that long).
int thread_count_settled(int want) {
  int n = thread_count();
  for (int i = 0; i < 2000 && n != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = thread_count();
  }
  return n;
}

TEST(DataLoader, TwoWorkersProduceTheSameBatchesAsZeroAndBothWork) {
  TempDir dir;
  auto ds = make_dataset(make_images(dir, 24), InputSpec{3, 32, 32, 10});
  LoaderOptions o;
  o.batch_size = 5;  // 24 images: batches cross epoch boundaries
  o.seed = 42;
  o.workers = 0;
  Loader serial(ds, o);
  o.workers = 2;
  Loader parallel(ds, o);
  for (int i = 0; i < 10; ++i) {
    Batch a = serial.next();
    Batch b = parallel.next();
    ASSERT_EQ(a.index, i);
    ASSERT_EQ(b.index, i);
    ASSERT_TRUE(torch::equal(a.input, b.input)) << "batch " << i;
    ASSERT_TRUE(torch::equal(a.target, b.target)) << "batch " << i;
  }
  // Both worker threads assembled batches. On a loaded machine one thread may start late and the other take
  // the first batches, so keep consuming (bounded) until both have worked.
  LoaderStats s = parallel.stats();
  for (int i = 0; i < 2000 && (s.batches_per_worker.size() < 2 || s.batches_per_worker[0] == 0 ||
                               s.batches_per_worker[1] == 0); ++i) {
    parallel.next();
    s = parallel.stats();
  }
  ASSERT_EQ(s.batches_per_worker.size(), 2u);
  EXPECT_GT(s.batches_per_worker[0], 0);
  EXPECT_GT(s.batches_per_worker[1], 0);
  EXPECT_TRUE(serial.stats().batches_per_worker.empty());
  // Why the loader is slow: each loading thread's samples, batches and time, split into read, decode and
  // augmentation, for the training thread ("main") and each worker. Their parts fit in their busy time.
  auto check_threads = [](const LoaderStats& st, const std::vector<std::string>& who) {
    ASSERT_EQ(st.threads.size(), who.size());
    for (size_t k = 0; k < who.size(); ++k) {
      const auto& th = st.threads[k];
      EXPECT_EQ(th.who, who[k]);
      EXPECT_GT(th.batches, 0);
      EXPECT_EQ(th.samples, 5 * th.batches);
      EXPECT_GT(th.parts.read_ns, 0);
      EXPECT_GT(th.parts.decode_ns, 0);
      EXPECT_GT(th.parts.augment_ns, 0);
      EXPECT_LE(th.parts.read_ns + th.parts.decode_ns + th.parts.augment_ns, th.busy_ns);
      EXPECT_GT(th.cpu_ns, 0);
      EXPECT_GE(th.life_ns, th.busy_ns);
    }
  };
  check_threads(serial.stats(), {"main"});
  check_threads(s, {"worker 0", "worker 1"});
  // A different seed gives a different order/augmentation.
  o.seed = 43;
  Loader other(ds, o);
  Batch first = other.next();
  Loader again(ds, LoaderOptions{.workers = 0, .batch_size = 5, .seed = 42});
  EXPECT_FALSE(torch::equal(first.input, again.next().input));
}

TEST(DataLoader, EveryEpochVisitsEverySampleOnce) {
  auto ds = std::make_shared<FakeDataset>(12);
  LoaderOptions o;
  o.batch_size = 4;
  o.workers = 2;
  Loader loader(ds, o);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<int64_t> seen;
    for (int i = 0; i < 3; ++i) {
      Batch b = loader.next();
      for (int k = 0; k < 4; ++k) seen.insert(int64_t(b.input[k][0][0][0].item<float>()));
    }
    std::multiset<int64_t> want;
    for (int64_t k = 0; k < 12; ++k) want.insert(k);
    EXPECT_EQ(seen, want) << "epoch " << epoch;
  }
}

TEST(DataLoader, NonDeterministicModeDeliversEachBatchOnce) {
  auto ds = std::make_shared<FakeDataset>(64, std::chrono::microseconds(200));
  LoaderOptions o;
  o.batch_size = 2;
  o.workers = 2;
  o.deterministic = false;
  Loader loader(ds, o);
  std::set<int64_t> indices;
  for (int i = 0; i < 12; ++i) indices.insert(loader.next().index);
  EXPECT_EQ(indices.size(), 12u);
  // Back to deterministic mid-stream: continues without waiting for a batch that already left.
  o.deterministic = true;
  loader.reconfigure(o);
  int64_t prev = -1;
  for (int i = 0; i < 8; ++i) {
    const int64_t idx = loader.next().index;
    EXPECT_FALSE(indices.count(idx)) << idx;
    EXPECT_GT(idx, prev);
    prev = idx;
    indices.insert(idx);
  }
}

TEST(DataLoader, ReconfigureChangesWorkersAndBatchSizeAtABoundaryWithoutLosingOrder) {
  auto ds = std::make_shared<FakeDataset>(40);
  // Reference: the sample stream one sample at a time.
  Loader reference(ds, LoaderOptions{.workers = 0, .batch_size = 1, .seed = 9});
  std::vector<torch::Tensor> stream;
  for (int i = 0; i < 80; ++i) stream.push_back(reference.next().input[0].clone());

  torch::ones({1 << 22}).sum();  // start any intra-op thread pool before counting threads
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // threads of earlier tests gone
  const int base = thread_count();
  int64_t pos = 0;
  std::vector<int64_t> sizes;
  {
    LoaderOptions o{.workers = 3, .prefetch = 2, .batch_size = 4, .seed = 9};
    Loader loader(ds, o);
    auto take = [&](int count) {
      for (int i = 0; i < count; ++i) {
        Batch b = loader.next();
        ASSERT_EQ(b.index, int64_t(sizes.size()));
        sizes.push_back(b.samples);
        ASSERT_EQ(b.input.size(0), b.samples);
        for (int64_t k = 0; k < b.samples; ++k, ++pos)
          ASSERT_TRUE(torch::equal(b.input[k], stream[size_t(pos)])) << "batch " << b.index << " sample " << k << " got " << b.input[k][0][0][0].item<float>() << " want " << stream[size_t(pos)][0][0][0].item<float>() << " pos " << pos;
      }
    };
    take(2);
    EXPECT_EQ(thread_count_settled(base + 3), base + 3);
    // Let the workers fill the queue: those batches were made under the old options and must be dropped.
    for (auto until = Clock::now() + std::chrono::seconds(5); loader.stats().queue_depth < 2 && Clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_GE(loader.stats().queue_depth, 2);
    o.workers = 1;
    o.batch_size = 6;
    loader.reconfigure(o);
    EXPECT_EQ(loader.options().workers, 1);
    EXPECT_EQ(thread_count_settled(base + 1), base + 1);  // the other two were joined, none leaked
    take(9);
    o.workers = 0;
    o.batch_size = 3;
    loader.reconfigure(o);
    EXPECT_EQ(thread_count_settled(base), base);
    take(3);
  }
  EXPECT_EQ(thread_count_settled(base), base);
  // A change is a clean boundary: the first batch after it already has the new size (prefetched batches of
  // the old config were dropped and their samples loaded again: the stream above stayed continuous).
  ASSERT_EQ(sizes.size(), 14u);
  EXPECT_EQ(sizes[0], 4);
  EXPECT_EQ(sizes[1], 4);
  for (size_t i = 2; i < 11; ++i) EXPECT_EQ(sizes[i], 6) << i;
  for (size_t i = 11; i < 14; ++i) EXPECT_EQ(sizes[i], 3) << i;
}

// The review's case: workers=2, prefetch=8 fill the queue; then workers=0 and batch 16 must not be served
// from it (before: 16 steps of 32-sample batches with no data wait, 13 of them measured).
TEST(DataLoader, PrefetchedBatchesOfTheOldConfigAreDiscarded) {
  auto ds = std::make_shared<FakeDataset>(200);
  LoaderOptions o{.workers = 2, .prefetch = 8, .batch_size = 32, .seed = 1};
  Loader loader(ds, o);
  loader.next();
  for (auto until = Clock::now() + std::chrono::seconds(5); loader.stats().queue_depth < 8 && Clock::now() < until;)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int64_t queued = loader.stats().queue_depth;
  ASSERT_GE(queued, 8);
  o.workers = 0;
  o.batch_size = 16;
  loader.reconfigure(o);
  // The workers may finish one more batch each between the count above and the drain.
  EXPECT_GE(loader.stats().discarded, queued);
  EXPECT_LE(loader.stats().discarded, 16);
  EXPECT_EQ(loader.stats().queue_depth, 0);
  for (int i = 0; i < 16; ++i) {
    Batch b = loader.next();
    EXPECT_EQ(b.samples, 16) << i;
    EXPECT_GT(b.data_wait_ns, 0) << i;  // loaded on the training thread: it waits for every batch
  }
}

TEST(DataLoader, ChannelsLastAndFp16OptionsReachTheBatch) {
  TempDir dir;
  auto ds = make_dataset(make_images(dir, 6), InputSpec{3, 16, 16, 10});
  Loader a(ds, LoaderOptions{.workers = 1, .batch_size = 3, .seed = 1});
  Loader b(ds, LoaderOptions{.workers = 1, .channels_last = true, .batch_size = 3, .seed = 1});
  Loader c(ds, LoaderOptions{.workers = 0, .fp32_preprocess = false, .batch_size = 3, .seed = 1});
  Batch x = a.next(), y = b.next(), z = c.next();
  EXPECT_TRUE(y.input.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(x.input.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(x.input, y.input));  // same values, NHWC strides
  const float diff = (x.input - z.input).abs().max().item<float>();
  EXPECT_GT(diff, 0.f);
  EXPECT_LT(diff, 0.03f);
}

TEST(DataLoader, DataWaitIsTimedAndRecordedOnTheTrainingThread) {
  auto ds = std::make_shared<FakeDataset>(16, std::chrono::microseconds(2000));
  auto& rec = tb::prof::Recorder::instance();
  tb::prof::set_thread_name("test-train");
  rec.start();
  int64_t wait_ns = 0;
  {
    Loader loader(ds, LoaderOptions{.workers = 2, .prefetch = 1, .batch_size = 4});
    for (int i = 0; i < 3; ++i) wait_ns += loader.next().data_wait_ns;
  }
  rec.stop();
  auto trace = rec.collect();
  ASSERT_TRUE(trace);
  EXPECT_GT(wait_ns, 1'000'000);  // 4 samples x 2 ms per batch with 2 workers: the first wait alone is ~8 ms
  int data_wait = 0, load_batch_tracks = 0;
  for (const auto& t : trace->tracks()) {
    int load_batch = 0;
    for (const auto& e : t.events()) {
      const std::string_view name = trace->name(e.name);
      if (t.name() == "test-train" && name == "data_wait") ++data_wait;
      if (name == "load_batch") ++load_batch;
    }
    if (t.name().rfind("loader-", 0) == 0 && load_batch > 0) ++load_batch_tracks;
  }
  EXPECT_EQ(data_wait, 3);
  // Worker ranges land on tracks named after the workers (which of the two got work is up to the scheduler).
  EXPECT_GE(load_batch_tracks, 1);
}

TEST(DataLoader, DestructorDoesNotHangWithBlockedOrBusyWorkers) {
  // Blocked: the queue is full (nobody consumes), workers wait for room.
  {
    auto ds = std::make_shared<FakeDataset>(100);
    auto t0 = Clock::now();
    {
      Loader loader(ds, LoaderOptions{.workers = 2, .prefetch = 1, .batch_size = 2});
      // Until the workers have filled the queue (how soon is the machine's), then they wait for room.
      const auto until = Clock::now() + std::chrono::seconds(30);
      while (loader.stats().queue_depth < 2 && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ASSERT_EQ(loader.stats().queue_depth, 2);
      t0 = Clock::now();
    }
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  }
  // Busy: each batch would take 200 x 20 ms = 4 s; destruction abandons it between samples.
  {
    auto ds = std::make_shared<FakeDataset>(100, std::chrono::milliseconds(20));
    const auto t0 = Clock::now();
    {
      Loader loader(ds, LoaderOptions{.workers = 2, .prefetch = 2, .batch_size = 200});
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(1500));
  }
}

TEST(DataLoader, BadOptionsAreDataErrors) {
  auto ds = std::make_shared<FakeDataset>(4);
  EXPECT_THROW(Loader(ds, LoaderOptions{.batch_size = 0}), DataError);
  EXPECT_THROW(Loader(ds, LoaderOptions{.workers = -1}), DataError);
  EXPECT_THROW(Loader(nullptr, LoaderOptions{}), DataError);
  Loader ok(ds, LoaderOptions{.batch_size = 2});
  EXPECT_THROW(ok.reconfigure(LoaderOptions{.batch_size = 0}), DataError);
  EXPECT_EQ(ok.next().samples, 2);
}


// DistributedSampler's contract: with 3 ranks over 10 samples each epoch is padded to 12 (4 per rank); the
// ranks' shards of one epoch are disjoint except for the 2 padding positions, which repeat the epoch's
// first samples, and together they cover all 10.
TEST(DataLoader, RanksReadDisjointShardsThatCoverTheEpoch) {
  auto ds = std::make_shared<FakeDataset>(10);
  std::vector<std::vector<int64_t>> shard(3);
  for (int r = 0; r < 3; ++r) {
    LoaderOptions o;
    o.batch_size = 2;
    o.workers = r == 1 ? 2 : 0;  // the shard does not depend on the loader's threads
    o.rank = r;
    o.world_size = 3;
    Loader loader(ds, o);
    for (int i = 0; i < 2; ++i) {  // 4 samples: this rank's whole epoch 0
      Batch b = loader.next();
      for (int k = 0; k < 2; ++k) shard[size_t(r)].push_back(int64_t(b.input[k][0][0][0].item<float>()));
    }
  }
  std::multiset<int64_t> all;
  for (const auto& s : shard) all.insert(s.begin(), s.end());
  ASSERT_EQ(all.size(), 12u);
  std::set<int64_t> distinct(all.begin(), all.end());
  EXPECT_EQ(distinct.size(), 10u) << "the shards cover every sample";
  // Padded positions 10 and 11 are the last of ranks 1 (1 + 3 * 3) and 2 (2 + 3 * 3); they wrap to the epoch's
  // positions 0 and 1, which ranks 0 and 1 read first.
  EXPECT_EQ(shard[1][3], shard[0][0]);
  EXPECT_EQ(shard[2][3], shard[1][0]);
  int repeated = 0;
  for (int64_t v : distinct) repeated += all.count(v) > 1;
  EXPECT_EQ(repeated, 2);
  // One process reads the same epoch in full, and a rank outside the world is refused.
  LoaderOptions bad;
  bad.rank = 2;
  bad.world_size = 2;
  EXPECT_THROW(Loader(ds, bad), DataError);
}

}  // namespace
}  // namespace tb::engine
