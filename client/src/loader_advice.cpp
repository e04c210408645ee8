// What to change when a loader is slow: the loader knob and its bound (LoaderVerdict::advice), and in a script's
// code (LoaderVerdict::fixes): for each costly part, the change the field knows for that kind of part, at the
// line the launcher found for it, and a bound on its gain.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "client/loader_verdict.h"

namespace tb::client {
namespace {

constexpr double kCostly = 0.10;      // a part this share of the loading or more is worth a change
constexpr double kModerately = 0.05;  // below this wait for batches, the loader is not what holds the step
constexpr size_t kMostFixes = 2;
// A run measuring this share of its cores' bound or more is at it (lines() says the same).
constexpr double kAtBound = 0.95;

std::string sps(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// torchvision's transforms that augment or resize (they can run on the GPU, on the batch, with
// torchvision.transforms.v2) against those that only convert a sample to a tensor.
bool gpu_capable(const std::string& n) {
  static const char* const kNames[] = {"Resize", "CenterCrop", "Normalize", "ColorJitter", "GaussianBlur",
                                       "RandAugment", "AutoAugment", "TrivialAugmentWide", "AugMix", "Grayscale",
                                       "RandomErasing", "ElasticTransform", "Pad", "FiveCrop", "TenCrop"};
  if (starts_with(n, "Random")) return true;
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* k) { return n == k; });
}

bool to_tensor(const std::string& n) {
  return n == "ToTensor" || n == "PILToTensor" || n == "ToImage" || n == "ToDtype" || n == "ConvertImageDtype";
}

// The change for each part the launcher and the engine's own loader (engine/src/session.cpp) name, whatever
// the run: its name, then the change in words.
struct KnownPart {
  const char* name;
  const char* change;
};
constexpr KnownPart kKnownParts[] = {
    {"read + decode (PIL)",
     "decode at the size it is used at (for JPEG, Image.draft(\"RGB\", size) before the resize decodes at 1/2 to 1/8 "
     "scale), store the images at that size, or cache the decoded samples"},
    {"open (PIL)",
     "opening the files is slow (a network or slow disk, many small files): copy the data to a local disk or pack "
     "the samples into fewer, larger files"},
    {"collate",
     "a cheaper collate_fn: stack tensors (torch.stack) rather than building Python lists, pad once per batch, or "
     "let the workers return tensors ready to stack"},
    // The engine's own loader's parts.
    {"decode (JPEG, PNG)",
     "decode JPEGs at the size they are used at (the fast_decode knob: --set fast_decode=on decodes at 1/2 to 1/8 "
     "scale), or store the images at that size"},
    {"read (file)",
     "reading the files is slow (a network or slow disk, many small files): copy the data to a local disk or pack "
     "the samples into fewer, larger files"},
    {"crop + flip + normalize",
     "store the images nearer the model's input size (the resample reads the whole crop box), or keep them decoded"},
    {"staging",
     "the batch's staging copy: the layout the model wants (channels_last interleaves every sample) costs a copy "
     "here"},
    {"dataset code",
     "the dataset's own __getitem__: cache what it computes for a sample (it runs again every epoch) or compute it "
     "once ahead of training"},
};

// The change in words for a part, by what it is. A user's own transform is told by its line being in the
// script's files (not a library's).
std::string change_for(const LoaderPart& p, const LoaderVerdict& v) {
  const double cpu_share = v.cpu_share;
  // Crowded workers wait to run, not on their files: a slow disk is not what a file in the page cache costs.
  if (v.crowded() && (p.name == "open (PIL)" || p.name == "read (file)"))
    return "its time is mostly a wait for a CPU (" + std::to_string(v.workers) + " workers on " +
           std::to_string(v.cores) + " cores), not for the disk: fewer workers";
  for (const KnownPart& k : kKnownParts)
    if (p.name == k.name) return k.change;
  if (to_tensor(p.name))
    return "convert to a uint8 tensor in the loader (transforms.v2.PILToTensor) and to float, scaled, on the GPU "
           "after the copy";
  if (gpu_capable(p.name))
    return "run " + p.name + " on the GPU, on the whole batch after its copy (torchvision.transforms.v2 takes "
           "batched tensors), or store the data already " + (starts_with(p.name, "Random") ? "decoded" : "transformed");
  // The script's own transform: what can be said without reading it.
  return cpu_share < 0.5 ? "it mostly waits (reads, sleeps, a lock): read ahead, cache what it reads, or run "
                           "more workers to overlap the waits"
                         : "make it cheaper, run it on the GPU on the batch, or cache its output when it does not "
                           "change between epochs";
}

}  // namespace

std::vector<LoaderFix> LoaderVerdict::fixes() const {
  std::vector<LoaderFix> out;
  if (!valid || wait_share < kModerately || !(ms_per_sample > 0) || !(consume_sps > 0)) return out;
  const double now_sps = consume_sps * (1 - wait_share);  // the run's samples over its wall time
  if (!(now_sps > 0)) return out;
  for (const auto& p : parts) {  // costliest first
    if (out.size() >= kMostFixes || p.share < kCostly) break;
    LoaderFix f;
    f.part = p.name;
    f.where = p.where;
    f.ms = p.ms;
    f.share = p.share;
    f.per_batch = p.per_batch;
    f.change = change_for(p, *this);
    // The engine decodes its JPEGs at the size they are used at with a knob: a change the tuner can measure.
    if (p.name == "decode (JPEG, PNG)") f.knob = "fast_decode", f.value = "on";
    // The part made free: each loading process takes that much less a sample, and at most that much less CPU
    // (how much of the part was CPU is not measured: counting all of it keeps the figure an upper bound); what
    // the loaders supply then, and the run bounded by the model's own rate.
    LoaderVerdict without = *this;
    const double part_ms = ms_per_sample * std::min(p.share, 0.99);
    without.ms_per_sample = ms_per_sample - part_ms;
    without.cpu_share = std::clamp((ms_per_sample * cpu_share - part_ms) / without.ms_per_sample, 0.0, 1.0);
    f.supply_sps = without.supply_with(workers);
    // Without workers the training process loads between its steps: the part made free comes off each sample's
    // time and no more (the model's rate when fed overstated it: the ImageNet example's decode, 0.61 of 10.4 ms
    // a sample at 0 workers, read "at most 1.18x" and is 1.06x at most).
    const double left_ms = 1000.0 / now_sps - part_ms;
    const double bound_sps = workers == 0 && left_ms > 0 ? 1000.0 / left_ms : f.supply_sps;
    f.at_most = std::max(1.0, std::min(consume_sps, bound_sps) / now_sps);
    out.push_back(f);
  }
  return out;
}

LoaderAdvice LoaderVerdict::advice() const {
  LoaderAdvice a;
  if (!valid || !(consume_sps > 0) || !(run_sps > 0)) return a;
  // Over the run's measured steps, not the few a trace holds (a pass's first batch can be most of them): a
  // loop that hardly waits needs no figure of a sample to say so.
  if (wait_share < kModerately) {
    a.known = true;
    a.at_most = 1.0 / (1.0 - wait_share);
    a.why = "over the run's measured steps the loop waited for batches " + sps(100 * wait_share) +
            "% of its time: no loader knob speeds the step";
    return a;
  }
  if (!(ms_per_sample > 0)) return a;  // no sample's cost measured: the model cannot say more
  a.known = true;
  const std::string on = std::to_string(cores) + " core" + (cores == 1 ? "" : "s");
  const double bound = std::max(1.0, expect_sps / run_sps);
  if (crowded()) {
    const int fewer = need_workers > 0 && need_workers < workers ? need_workers
                                                                 : std::max(1, std::min(workers - 1, cores));
    a.knob = "workers";
    a.value = std::to_string(fewer);
    a.also = {"persistent_workers"};
    a.at_most = std::max(1.0, std::min(fed_sps, supply_with(fewer)) / run_sps);
    a.why = std::to_string(workers) + " worker processes share " + on + ": each waits " +
            sps(100 * cpu_wait_share) + "% of its busy time for a CPU, not for its files; " + std::to_string(fewer) +
            " supply about " + sps(supply_with(fewer)) + " samples/s (this run " + sps(run_sps) +
            "), with persistent_workers=on so that they start once";
    return a;
  }
  if (cores_bound && run_sps >= kAtBound * expect_sps) {
    a.at_most = bound;
    a.why = "no worker count feeds the model on " + on + ": a sample's CPU (loading and training) bounds the run at " +
            sps(expect_sps) + " samples/s, which this run reaches already (" + sps(run_sps) + ")";
    return a;
  }
  if (need_workers > workers) {
    a.knob = "workers";
    a.value = std::to_string(need_workers);
    a.at_most = bound;
    a.why = std::string(cores_bound ? "the cores bound the run: " : "") + "about " + std::to_string(need_workers) +
            " worker" + (need_workers > 1 ? "s" : "") + " supply " + sps(expect_sps) + " samples/s on " + on +
            " (this run " + sps(run_sps) + ")";
    return a;
  }
  // Enough workers by their cost a sample: the wait comes from elsewhere, which no worker count removes.
  a.at_most = 1.0 / (1.0 - wait_share);
  a.why = std::to_string(workers) + " worker" + (workers == 1 ? "" : "s") + " supply enough by their cost a sample: " +
          "the wait comes from the training process (collate, pinning, the GIL) or workers started again at each " +
          "pass (persistent_workers)";
  return a;
}

}  // namespace tb::client
