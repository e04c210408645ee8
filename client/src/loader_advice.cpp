// What to change in a script's code when its loader is slow (LoaderVerdict::fixes): for each costly part, the
// change the field knows for that kind of part, at the line the launcher found for it, and a bound on its gain.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "client/loader_verdict.h"

namespace tb::client {
namespace {

constexpr double kCostly = 0.10;      // a part this share of the loading or more is worth a change
constexpr double kModerately = 0.05;  // below this wait for batches, the loader is not what holds the step
constexpr size_t kMostFixes = 2;

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

// The change in words for a part, by what it is. A user's own transform is told by its line being in the
// script's files (not a library's).
std::string change_for(const LoaderPart& p, double cpu_share) {
  if (p.name == "read + decode (PIL)")
    return "decode at the size it is used at (for JPEG, Image.draft(\"RGB\", size) before the resize decodes at "
           "1/2 to 1/8 scale), store the images at that size, or cache the decoded samples";
  if (p.name == "open (PIL)")
    return "opening the files is slow (a network or slow disk, many small files): copy the data to a local disk "
           "or pack the samples into fewer, larger files";
  if (p.name == "collate")
    return "a cheaper collate_fn: stack tensors (torch.stack) rather than building Python lists, pad once per "
           "batch, or let the workers return tensors ready to stack";
  // The engine's own loader's parts (engine/src/session.cpp).
  if (p.name == "decode (JPEG, PNG)")
    return "decode JPEGs at the size they are used at (the fast_decode knob: --set fast_decode=on decodes at 1/2 "
           "to 1/8 scale), or store the images at that size";
  if (p.name == "read (file)")
    return "reading the files is slow (a network or slow disk, many small files): copy the data to a local disk or "
           "pack the samples into fewer, larger files";
  if (p.name == "crop + flip + normalize")
    return "store the images nearer the model's input size (the resample reads the whole crop box), or keep them "
           "decoded";
  if (p.name == "staging")
    return "the batch's staging copy: the layout the model wants (channels_last interleaves every sample) costs "
           "a copy here";
  if (p.name == "dataset code")
    return "the dataset's own __getitem__: cache what it computes for a sample (it runs again every epoch) or "
           "compute it once ahead of training";
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
    f.change = change_for(p, cpu_share);
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

}  // namespace tb::client
