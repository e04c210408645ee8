// The knob catalog (docs/tuning.md): metadata only. What a knob does lives in session.cpp.
#include "engine/knobs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "client/inputs.h"

namespace tb::engine {
namespace {

KnobInfo make_bool(std::string id, std::string title, std::string desc, std::string def, std::string rec,
                   std::vector<std::string> seeds, std::string applies, bool numerics, std::string py,
                   std::string cpp) {
  KnobInfo k;
  k.id = std::move(id);
  k.title = std::move(title);
  k.description = std::move(desc);
  k.type = KnobType::Bool;
  k.default_value = std::move(def);
  k.recommended_value = std::move(rec);
  k.choices = {"off", "on"};
  k.min = 0;
  k.max = 1;
  k.seeds = std::move(seeds);
  k.applies_to = std::move(applies);
  k.changes_numerics = numerics;
  k.pytorch_snippet = std::move(py);
  k.libtorch_snippet = std::move(cpp);
  return k;
}

KnobInfo make_int(std::string id, std::string title, std::string desc, int64_t def, int64_t rec, int64_t min,
                  int64_t max, std::vector<std::string> seeds, std::string applies, bool numerics, std::string py,
                  std::string cpp) {
  KnobInfo k = make_bool(std::move(id), std::move(title), std::move(desc), std::to_string(def),
                         std::to_string(rec), std::move(seeds), std::move(applies), numerics, std::move(py),
                         std::move(cpp));
  k.type = KnobType::Int;
  k.choices.clear();
  k.min = min;
  k.max = max;
  return k;
}

std::vector<KnobInfo> build_catalog() {
  std::vector<KnobInfo> c;
  c.push_back(make_int("workers", "Loader worker threads",
                       "Threads that decode and augment batches in parallel with training (0 = load on the training thread)",
                       0, 2, 0, 64, {"000", "001", "003", "004"}, "cpu+cuda", false,
                       "DataLoader(ds, batch_size=B, num_workers=2)",
                       "LoaderOptions opts; opts.workers = 2; loader.reconfigure(opts);"));
  c.push_back(make_bool("pin_memory", "Pinned host memory",
                        "Stage batches in page-locked memory so the host-to-device copy is a fast DMA", "off", "on",
                        {"000", "001", "004"}, "cuda", false, "DataLoader(ds, ..., pin_memory=True)",
                        "opts.pin_memory = true;  // staging ring from at::cuda::getPinnedMemoryAllocator()"));
  c.push_back(make_bool("non_blocking", "Asynchronous H2D copy",
                        "Copy the next batch on a side stream, overlapped with compute (needs pinned memory)", "off",
                        "on", {"001", "004"}, "cuda", false, "x = x.to('cuda', non_blocking=True)",
                        "x = x.to(torch::kCUDA, /*non_blocking=*/true);"));
  c.push_back(make_int("prefetch", "Prefetched batches",
                       "Batches each worker keeps ready ahead of the training loop (bounded queue depth)", 2, 4, 1,
                       64, {"003"}, "cpu+cuda", false, "DataLoader(ds, ..., num_workers=2, prefetch_factor=4)",
                       "opts.prefetch = 4; loader.reconfigure(opts);"));
  {
    // A process knob: PyTorch consults its cache of benchmarked algorithms whatever the flag says, so
    // switching it off after it was on changes nothing for shapes already seen. The tuner measures it in
    // fresh processes; a live run may turn it on, not back off.
    KnobInfo k = make_bool("cudnn_benchmark", "cuDNN autotuner",
                           "Benchmark convolution algorithms once per input shape and keep the fastest", "off", "on",
                           {"000", "001", "003", "004"}, "cuda (at process start; on only, live)", false,
                           "torch.backends.cudnn.benchmark = True", "at::globalContext().setBenchmarkCuDNN(true);");
    k.process_scope = true;
    c.push_back(std::move(k));
  }
  {
    KnobInfo k = make_bool("amp", "Mixed precision",
                           "Autocast matmuls/convs to fp16 (with dynamic loss scaling) or bf16", "off", "fp16",
                           {"001", "002", "003", "004"}, "cuda (fp16, bf16); cpu (bf16)", true,
                           "with torch.autocast('cuda', dtype=torch.float16): loss = model(x)  # + GradScaler",
                           "at::autocast::set_enabled(true); at::autocast::set_autocast_gpu_dtype(at::kHalf);");
    k.type = KnobType::Enum;
    k.choices = {"off", "fp16", "bf16"};
    k.max = 2;
    c.push_back(std::move(k));
  }
  // PyTorch's defaults: cuDNN convolutions already use TF32, cuBLAS matmuls do not. The knob is the matmul
  // switch; the baseline keeps cuDNN's default so it is what stock PyTorch runs.
  c.push_back(make_bool("tf32", "TF32 matmul",
                        "Let cuBLAS use TF32 Tensor Cores for fp32 matmuls (cuDNN convolutions use TF32 by default)",
                        "off", "on", {}, "cuda sm>=80", true, "torch.backends.cuda.matmul.allow_tf32 = True",
                        "at::globalContext().setAllowTF32CuBLAS(true);"));
  c.push_back(make_bool("channels_last", "Channels-last (NHWC)",
                        "Store the model's 4-D weights and the input batches in NHWC memory format", "off", "on", {},
                        "cpu+cuda", false,
                        "model = model.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)",
                        "p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));  // every 4-D param and input"));
  c.push_back(make_int("batch_size", "Batch size",
                       "Samples per step; a bigger batch amortizes launch overhead (probed for out-of-memory, reverts)",
                       32, 64, 1, 4096, {"000", "001", "003", "004"}, "cpu+cuda", true,
                       "DataLoader(ds, batch_size=64)  # scale the learning rate with it",
                       "opts.batch_size = 64; loader.reconfigure(opts);"));
  c.push_back(make_bool("zero_grad_none", "zero_grad(set_to_none)",
                        "Drop gradients instead of filling them with zeros (no memset, backward writes fresh)", "off",
                        "on", {"000", "001", "004"}, "cpu+cuda", false, "optimizer.zero_grad(set_to_none=True)",
                        "for (auto& p : params) p.mutable_grad() = torch::Tensor();"));
  c.push_back(make_bool("conv_bias_before_bn", "Conv bias before BatchNorm",
                        "Keep the bias of convolutions followed by BatchNorm (redundant: BN subtracts the mean)", "on",
                        "off", {"000", "001", "004"}, "models with conv+BN", false,
                        "nn.Conv2d(cin, cout, 3, padding=1, bias=False)  # before nn.BatchNorm2d",
                        "torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, 3).padding(1).bias(false));"));
  c.push_back(make_bool("anomaly_detection", "Autograd anomaly detection",
                        "Debug mode: records a traceback per op and checks every backward output for NaN (slow)",
                        "off", "off", {"000", "004"}, "cpu+cuda", false, "torch.autograd.set_detect_anomaly(False)",
                        "torch::autograd::AnomalyMode::set_enabled(false);"));
  c.push_back(make_bool("fused_pointwise", "Fused pointwise ops",
                        "Bias + GELU + dropout as fused native kernels instead of an op-by-op tanh-GELU chain", "off",
                        "on", {"000", "001", "004"}, "models with a GELU MLP (vit_tiny)", true,
                        "y = F.gelu(F.linear(x, w, b), approximate='tanh')  # or torch.jit.script the chain",
                        "y = at::gelu(torch::nn::functional::linear(x, w, b), \"tanh\");"));
  c.push_back(make_int("grad_accumulation", "Gradient accumulation",
                       "Micro-batches per optimizer step (effective batch = batch_size x N)", 1, 4, 1, 256, {"004"},
                       "cpu+cuda", true, "(loss / N).backward(); if (i + 1) % N == 0: opt.step(); opt.zero_grad()",
                       "(loss / N).backward(); if ((i + 1) % N == 0) { opt.step(); zero_grad(); }"));
  c.push_back(make_bool("checkpointing", "Activation checkpointing",
                        "Keep only segment inputs and recompute activations in backward: ~30% more compute per "
                        "step for the memory to fit a bigger batch",
                        "off", "off", {"000", "004"}, "resnet*, vit_tiny, mnist_cnn", false,
                        "y = torch.utils.checkpoint.checkpoint(segment, x)",
                        "y = CheckpointFunction::apply(x, &segment);  // custom torch::autograd::Function"));
  c.push_back(make_bool("cuda_graphs", "CUDA graphs",
                        "Capture the whole training step once and replay it (no per-kernel CPU launch cost)", "off",
                        "on", {"003"}, "cuda", false,
                        "g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): step(static_x, static_y); g.replay()",
                        "at::cuda::CUDAGraph g; g.capture_begin(); step(static_x, static_y); g.capture_end(); g.replay();"));
  c.push_back(make_int("sync_free_logging", "Loss read interval",
                       "Read the loss on the host (.item(), a device sync) every N steps instead of every step", 1,
                       20, 1, 100000, {"004"}, "cpu+cuda", false,
                       "if step % 20 == 0: print(loss.item())", "if (step % 20 == 0) log(loss.item<float>());"));
  c.push_back(make_bool("fused_optimizer", "Multi-tensor optimizer",
                        "AdamW over all parameters with multi-tensor (_foreach) kernels instead of a per-parameter loop",
                        "off", "on", {"004"}, "cpu+cuda", false, "torch.optim.AdamW(params, lr, foreach=True)",
                        "torch::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);  // ... all params at once"));
  c.push_back(make_bool("fp32_preprocess", "fp32 preprocessing",
                        "Crop/flip/normalize in fp32 on the CPU (fp16 arithmetic on a CPU is emulated and slow)", "on",
                        "on", {"003"}, "decoded datasets (imagefolder, mnist)", true,
                        "transforms.ConvertImageDtype(torch.float32)  # normalize in fp32, cast on the GPU",
                        "opts.fp32_preprocess = true; loader.reconfigure(opts);"));
  // Not in the seeds' list, but the first thing a profile of a JPEG pipeline shows: full-size decode of a photo
  // that is then cropped to 224 (or 28) pixels wastes most of the loader's time.
  c.push_back(make_bool("fast_decode", "Reduced-scale JPEG decode",
                        "Decode JPEGs at the smallest DCT scale (1/2..1/8) that still covers the crop instead of at full "
                        "size (PIL draft mode, DALI, FFCV)",
                        "off", "on", {}, "JPEG datasets (imagefolder)", true,
                        "img = Image.open(path); img.draft('RGB', (crop_w, crop_h))  # before img.convert('RGB')",
                        "tjDecompress2(tj, jpg, n, rgb, TJSCALED(w, f), 0, TJSCALED(h, f), TJPF_RGB, 0);  // f: tjGetScalingFactors"));
  // Not in the seeds either; measured here as the biggest single effect on a CPU run (engine/cpu_allocator.h).
  {
    KnobInfo k = make_bool("cpu_allocator", "CPU memory allocator",
                           "glibc maps and unmaps every large block (tensors) afresh: page faults on every step and a "
                           "speed that changes as the process ages; pinned thresholds or tcmalloc/jemalloc keep the memory",
                           "glibc", "glibc_tuned", {}, "cpu+cuda (at process start)", false,
                           "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=268435456 "
                           "python train.py  # or LD_PRELOAD=libtcmalloc_minimal.so.4",
                           "mallopt(M_MMAP_THRESHOLD, 256 << 20); mallopt(M_TRIM_THRESHOLD, 256 << 20);  // first in main()");
    k.type = KnobType::Enum;
    k.choices = {"glibc", "glibc_tuned", "jemalloc", "tcmalloc"};
    k.max = 3;
    k.process_scope = true;
    c.push_back(std::move(k));
  }
  // Loader threads and intra-op threads share the cores: 2 intra-op threads + 1 loader thread on 2 cores made
  // workers=1 0.85x of workers=0; with one intra-op thread it was 1.29x (docs/cpu-results.md, history). 0 = auto: the cores the
  // loader workers leave (at least 1), as torchrun's OMP_NUM_THREADS=1 per process does for several processes.
  c.push_back(make_int("intra_op_threads", "Intra-op threads",
                       "CPU threads of one op (GEMM, conv); 0 = auto: the cores (shared by the ranks on the machine) "
                       "minus the loader workers, at least 1",
                       0, 0, 0, 256, {}, "cpu+cuda", false, "torch.set_num_threads(os.cpu_count() - num_workers)",
                       "at::set_num_threads(cores - workers);"));
  // Data parallel (DDP over c10d, engine/src/dist/). `ranks` starts the group; the others act only in one.
  {
    KnobInfo k = make_int("ranks", "Data-parallel ranks",
                          "Processes that train the model together (DistributedDataParallel): each reads its own shard "
                          "with its share of the cores, gradients are all-reduced; the global batch is ranks x "
                          "batch_size",
                          1, 2, 1, 64, {"003"}, "cpu+cuda (at process start; on GPUs with NCCL, a GPU per rank)", false,
                          "torchrun --standalone --nproc-per-node 2 train.py  # with DistributedDataParallel and "
                          "DistributedSampler; scale the learning rate with the global batch",
                          "tunebench-cli run --ranks 2 ...  // c10d Gloo (NCCL for CUDA tensors) + c10d::Reducer per process");
    k.process_scope = true;
    c.push_back(std::move(k));
  }
  c.push_back(make_int("bucket_cap_mb", "DDP bucket size (MB)",
                       "Gradients are all-reduced in buckets of this size as backward produces them: smaller buckets "
                       "start communicating earlier, bigger ones send fewer messages",
                       25, 25, 1, 1024, {"003"}, "several ranks", false,
                       "DistributedDataParallel(model, bucket_cap_mb=25)",
                       "c10d::Reducer(params, buckets, limits, pg, sparse, 25 << 20, false, view, names, 1 << 20);"));
  c.push_back(make_bool("gradient_as_bucket_view", "DDP gradients as bucket views",
                        "Let parameter gradients alias the all-reduce buckets (no copy in and out of the buckets, "
                        "less memory)",
                        "off", "on", {}, "several ranks", false,
                        "DistributedDataParallel(model, gradient_as_bucket_view=True)",
                        "c10d::Reducer(..., /*gradient_as_bucket_view=*/true, ...);"));
  {
    KnobInfo k = make_bool("comm_hook", "DDP gradient compression",
                           "Send gradients as fp16 (half the bytes; PyTorch's fp16_compress_hook) instead of fp32",
                           "none", "fp16", {"003"}, "several ranks", true,
                           "model.register_comm_hook(None, default_hooks.fp16_compress_hook)",
                           "reducer.register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);");
    k.type = KnobType::Enum;
    k.choices = {"none", "fp16"};
    k.max = 1;
    c.push_back(std::move(k));
  }
  c.push_back(make_bool("broadcast_buffers", "DDP buffer broadcast",
                        "Copy rank 0's buffers (BatchNorm statistics) to every rank before each forward: one more "
                        "collective per step",
                        "on", "off", {}, "several ranks, models with buffers", false,
                        "DistributedDataParallel(model, broadcast_buffers=False)",
                        "// skip c10d::broadcast_coalesced(pg, buffers, 256 << 10) before forward"));
  c.push_back(make_bool("static_graph", "DDP static graph",
                        "Declare that every step uses the same parameters in the same order, so the Reducer keeps "
                        "its bucket plan and skips per-step bookkeeping",
                        "off", "on", {}, "several ranks", false, "DistributedDataParallel(model, static_graph=True)",
                        "reducer.set_static_graph();"));
  return c;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

const std::vector<KnobInfo>& knob_catalog() {
  static const std::vector<KnobInfo> catalog = build_catalog();
  return catalog;
}

const KnobInfo* find_knob(const std::string& id) {
  for (const auto& k : knob_catalog())
    if (k.id == id) return &k;
  return nullptr;
}

Result<std::string> normalize_knob_value(const std::string& id, const std::string& value) {
  const KnobInfo* k = find_knob(id);
  if (!k) return Error{"unknown knob '" + id + "' (see tunebench-cli knobs)"};
  std::string v = lower(trim(value));
  switch (k->type) {
    case KnobType::Bool:
      if (v == "on" || v == "true" || v == "1" || v == "yes") return std::string("on");
      if (v == "off" || v == "false" || v == "0" || v == "no") return std::string("off");
      return Error{"bad value '" + value + "' for knob '" + id + "': expected on or off"};
    case KnobType::Int: {
      int64_t n = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (v.empty() || ec != std::errc() || ptr != v.data() + v.size())
        return Error{"bad value '" + value + "' for knob '" + id + "': expected an integer in [" +
                     std::to_string(k->min) + ", " + std::to_string(k->max) + "]"};
      if (n < k->min || n > k->max)
        return Error{"bad value '" + value + "' for knob '" + id + "': out of range [" + std::to_string(k->min) +
                     ", " + std::to_string(k->max) + "]"};
      return std::to_string(n);
    }
    case KnobType::Enum: {
      for (const auto& ch : k->choices)
        if (v == ch) return ch;
      std::string list;
      for (const auto& ch : k->choices) list += (list.empty() ? "" : ", ") + ch;
      return Error{"bad value '" + value + "' for knob '" + id + "': expected one of " + list};
    }
  }
  return Error{"bad knob type"};
}

Config parse_config_list(const std::string& text) {
  // The syntax is every surface's (client/inputs.h); the catalog says what the knobs and values are.
  const auto items = client::inputs::parse_settings(text);
  if (!items) throw std::invalid_argument(items.error().message);
  Config out;
  for (const auto& [id, v] : *items) {
    const auto value = normalize_knob_value(id, v);
    if (!value) throw std::invalid_argument(value.error().message);
    out[id] = *value;
  }
  return out;
}

Config default_config(const Config& overrides) {
  Config c;
  for (const auto& k : knob_catalog()) c[k.id] = k.default_value;
  for (const auto& [id, v] : overrides) {
    const auto value = normalize_knob_value(id, v);
    if (!value) throw std::invalid_argument(value.error().message);
    c[id] = *value;
  }
  return c;
}

}  // namespace tb::engine
