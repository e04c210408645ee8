#include "models.h"

#include <ATen/CPUGeneratorImpl.h>

#include <atomic>
#include <cmath>
#include <stdexcept>

#include "compat.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace tb::engine {
namespace F = torch::nn::functional;

// =========================================================================================================
// Activation checkpointing
// =========================================================================================================
namespace {
std::atomic<int64_t> g_recomputations{0};

struct RngState {
  torch::Tensor cpu;
#if TUNEBENCH_TORCH_CUDA
  torch::Tensor cuda;
#endif
  static RngState capture() {
    RngState s;
    auto gen = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      s.cpu = gen.get_state();
    }
#if TUNEBENCH_TORCH_CUDA
    if (compat::cuda_available()) {
      auto cg = at::cuda::detail::getDefaultCUDAGenerator();
      std::lock_guard<std::mutex> lock(cg.mutex());
      s.cuda = cg.get_state();
    }
#endif
    return s;
  }
  void restore() const {
    auto gen = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(cpu);
    }
#if TUNEBENCH_TORCH_CUDA
    if (cuda.defined()) {
      auto cg = at::cuda::detail::getDefaultCUDAGenerator();
      std::lock_guard<std::mutex> lock(cg.mutex());
      cg.set_state(cuda);
    }
#endif
  }
};

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor input, int64_t segment_ptr) {
    RngState rng = RngState::capture();
    ctx->saved_data["segment"] = segment_ptr;
    ctx->saved_data["rng_cpu"] = rng.cpu;
#if TUNEBENCH_TORCH_CUDA
    if (rng.cuda.defined()) ctx->saved_data["rng_cuda"] = rng.cuda;
#endif
    ctx->saved_data["ac_cpu"] = compat::autocast_enabled(torch::kCPU);
    ctx->saved_data["ac_cpu_dtype"] = static_cast<int64_t>(compat::autocast_dtype(torch::kCPU));
    ctx->saved_data["ac_cuda"] = compat::autocast_enabled(torch::kCUDA);
    ctx->saved_data["ac_cuda_dtype"] = static_cast<int64_t>(compat::autocast_dtype(torch::kCUDA));
    ctx->save_for_backward({input});
    // Function::apply runs forward with grad mode off: no graph, no saved activations inside the segment.
    const auto* segment = reinterpret_cast<const Segment*>(segment_ptr);
    return (*segment)(input);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto* segment = reinterpret_cast<const Segment*>(ctx->saved_data["segment"].toInt());
    auto saved = ctx->get_saved_variables();
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    // Replay the forward's RNG stream so dropout masks match, then put the current stream back.
    RngState now = RngState::capture();
    RngState then;
    then.cpu = ctx->saved_data["rng_cpu"].toTensor();
#if TUNEBENCH_TORCH_CUDA
    if (ctx->saved_data.count("rng_cuda")) then.cuda = ctx->saved_data["rng_cuda"].toTensor();
#endif
    then.restore();
    torch::Tensor y;
    {
      torch::AutoGradMode grad_on(true);
      compat::AutocastGuard ac_cpu(torch::kCPU, static_cast<torch::ScalarType>(ctx->saved_data["ac_cpu_dtype"].toInt()),
                                   ctx->saved_data["ac_cpu"].toBool());
      compat::AutocastGuard ac_cuda(torch::kCUDA,
                                    static_cast<torch::ScalarType>(ctx->saved_data["ac_cuda_dtype"].toInt()),
                                    ctx->saved_data["ac_cuda"].toBool());
      y = (*segment)(x);
    }
    now.restore();
    g_recomputations.fetch_add(1, std::memory_order_relaxed);
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {x.grad(), torch::Tensor()};
  }
};
}  // namespace

torch::Tensor checkpoint(const Segment* segment, const torch::Tensor& input) {
  if (!torch::GradMode::is_enabled() || !input.requires_grad()) return (*segment)(input);
  return CheckpointFunction::apply(input, reinterpret_cast<int64_t>(segment));
}

int64_t checkpoint_recomputations() { return g_recomputations.load(); }

// =========================================================================================================
// Model base
// =========================================================================================================
torch::Tensor Model::loss(const torch::Tensor& output, const torch::Tensor& target) {
  return F::cross_entropy(output.to(torch::kFloat), target);
}

void Model::set_channels_last(bool on) {
  torch::NoGradGuard no_grad;
  for (auto& t : state_tensors()) {
    if (t.dim() != 4) continue;
    const auto fmt = on ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    t.set_data(t.data().contiguous(fmt));
    // A kept gradient (zero_grad without set_to_none) must follow the parameter's layout, or autograd
    // accumulates through a strided copy (the "gradient layout contract").
    if (t.grad().defined()) t.mutable_grad() = t.grad().contiguous(fmt);
  }
}

namespace {

// A torch::nn::Module-backed model: parameters, buffers, device and train mode come from the module.
template <typename Net>
class ModuleModel : public Model {
 public:
  std::vector<torch::Tensor> state_tensors() override {
    std::vector<torch::Tensor> out;
    for (auto& p : net_->parameters()) out.push_back(p);
    for (auto& b : net_->buffers()) out.push_back(b);
    for (auto& p : extra_params_) out.push_back(p);
    return out;
  }
  void to(torch::Device device) override {
    net_->to(device);
    for (auto& p : extra_params_) p.set_data(p.data().to(device));
  }
  void train(bool on) override { net_->train(on); }

 protected:
  std::shared_ptr<Net> net_;
  std::vector<torch::Tensor> extra_params_;
};

// Conv (no built-in bias) + optional bias parameter + BatchNorm. The bias is registered as a parameter of
// this module but is used and trained only while `use_bias` is on.
struct ConvBNImpl : torch::nn::Module {
  ConvBNImpl(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t padding)
      : stride_(stride), padding_(padding) {
    weight = register_parameter("weight", torch::empty({cout, cin, k, k}));
    torch::nn::init::kaiming_normal_(weight, 0, torch::kFanOut, torch::kReLU);
    bias = register_parameter("conv_bias", torch::zeros({cout}));
    bn = register_module("bn", torch::nn::BatchNorm2d(cout));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::conv2d(x, weight, use_bias ? bias : torch::Tensor(), {stride_, stride_}, {padding_, padding_});
    return bn->forward(y);
  }
  torch::Tensor weight, bias;
  torch::nn::BatchNorm2d bn{nullptr};
  bool use_bias = true;
  int64_t stride_, padding_;
};
TORCH_MODULE(ConvBN);

// Collects the ConvBN modules of a network so the bias knob can be flipped for all of them.
struct ConvBNRegistry {
  std::vector<ConvBN> convs;
  void set(bool on) {
    torch::NoGradGuard no_grad;
    for (auto& c : convs) {
      if (on && !c->use_bias) c->bias.zero_();  // exact: BN subtracts the batch mean
      c->use_bias = on;
    }
  }
  bool uses_bias(const torch::Tensor& p) const {
    for (const auto& c : convs)
      if (c->bias.is_same(p)) return c->use_bias;
    return true;
  }
};

// ---------------------------------------------------------------------------------------------------------
// mnist_cnn: the network of PyTorch's examples/mnist.
struct MnistNetImpl : torch::nn::Module {
  MnistNetImpl(int64_t c, int64_t h, int64_t w, int64_t classes) {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, 32, 3)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
    fc1 = register_module("fc1", torch::nn::Linear(64 * ((h - 4) / 2) * ((w - 4) / 2), 128));
    fc2 = register_module("fc2", torch::nn::Linear(128, classes));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(MnistNet);

class MnistCnn : public ModuleModel<MnistNetImpl> {
 public:
  explicit MnistCnn(const ModelOptions& o) {
    input_ = {o.input_channels ? o.input_channels : 1, o.input_height ? o.input_height : 28,
              o.input_width ? o.input_width : 28, o.num_classes ? o.num_classes : 10};
    if (input_.height < 6 || input_.width < 6) throw std::invalid_argument("mnist_cnn needs an input of at least 6x6");
    net_ = std::make_shared<MnistNetImpl>(input_.channels, input_.height, input_.width, input_.num_classes);
    segment_ = [this](const torch::Tensor& x) { return F::max_pool2d(torch::relu(net_->conv2->forward(x)), F::MaxPool2dFuncOptions(2)); };
  }
  std::string name() const override { return "mnist_cnn"; }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto y = torch::relu(net_->conv1->forward(x));
    y = checkpointing_ ? checkpoint(&segment_, y) : segment_(y);
    y = F::dropout(y, F::DropoutFuncOptions().p(0.25).training(net_->is_training()));
    y = torch::flatten(y, 1);
    y = torch::relu(torch::linear(y, net_->fc1->weight, net_->fc1->bias));
    y = F::dropout(y, F::DropoutFuncOptions().p(0.5).training(net_->is_training()));
    return torch::log_softmax(torch::linear(y, net_->fc2->weight, net_->fc2->bias), 1);
  }
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target) override {
    return F::nll_loss(output.to(torch::kFloat), target);
  }
  std::vector<torch::Tensor> trainable_parameters() override { return net_->parameters(); }
  void set_checkpointing(bool on) override { checkpointing_ = on; }

 private:
  Segment segment_;
  bool checkpointing_ = false;
};

// ---------------------------------------------------------------------------------------------------------
// ResNet (torchvision architecture: v1.5, stride on the 3x3 of the bottleneck).
struct BlockImpl : torch::nn::Module {
  BlockImpl(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride, ConvBNRegistry& reg)
      : bottleneck_(bottleneck) {
    const int64_t expansion = bottleneck ? 4 : 1;
    auto add = [&](const std::string& n, ConvBN m) {
      reg.convs.push_back(m);
      return register_module(n, m);
    };
    if (bottleneck) {
      c1 = add("c1", ConvBN(inplanes, planes, 1, 1, 0));
      c2 = add("c2", ConvBN(planes, planes, 3, stride, 1));
      c3 = add("c3", ConvBN(planes, planes * expansion, 1, 1, 0));
    } else {
      c1 = add("c1", ConvBN(inplanes, planes, 3, stride, 1));
      c2 = add("c2", ConvBN(planes, planes, 3, 1, 1));
    }
    if (stride != 1 || inplanes != planes * expansion) down = add("down", ConvBN(inplanes, planes * expansion, 1, stride, 0));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(c1->forward(x));
    if (bottleneck_) {
      y = torch::relu(c2->forward(y));
      y = c3->forward(y);
    } else {
      y = c2->forward(y);
    }
    return torch::relu(y + (down ? down->forward(x) : x));
  }
  bool bottleneck_;
  ConvBN c1{nullptr}, c2{nullptr}, c3{nullptr}, down{nullptr};
};
TORCH_MODULE(Block);

struct ResNetImpl : torch::nn::Module {
  ResNetImpl(bool bottleneck, std::vector<int64_t> layers, int64_t channels, int64_t classes, ConvBNRegistry& reg) {
    stem = register_module("stem", ConvBN(channels, 64, 7, 2, 3));
    reg.convs.push_back(stem);
    int64_t inplanes = 64;
    const int64_t expansion = bottleneck ? 4 : 1;
    const int64_t planes[4] = {64, 128, 256, 512};
    for (int s = 0; s < 4; ++s) {
      torch::nn::Sequential stage;
      for (int64_t b = 0; b < layers[s]; ++b) {
        stage->push_back(Block(bottleneck, inplanes, planes[s], (b == 0 && s > 0) ? 2 : 1, reg));
        inplanes = planes[s] * expansion;
      }
      stages.push_back(register_module("layer" + std::to_string(s + 1), stage));
    }
    fc = register_module("fc", torch::nn::Linear(512 * expansion, classes));
  }
  ConvBN stem{nullptr};
  std::vector<torch::nn::Sequential> stages;
  torch::nn::Linear fc{nullptr};
};

class ResNet : public ModuleModel<ResNetImpl> {
 public:
  ResNet(std::string name, bool bottleneck, std::vector<int64_t> layers, const ModelOptions& o) : name_(std::move(name)) {
    input_ = {o.input_channels ? o.input_channels : 3, o.input_height ? o.input_height : 224,
              o.input_width ? o.input_width : 224, o.num_classes ? o.num_classes : 1000};
    if (input_.height < 32 || input_.width < 32) throw std::invalid_argument(name_ + " needs an input of at least 32x32");
    net_ = std::make_shared<ResNetImpl>(bottleneck, layers, input_.channels, input_.num_classes, convs_);
    for (auto& st : net_->stages) {
      auto stage = st;
      segments_.push_back([stage](const torch::Tensor& x) mutable { return stage->forward(x); });
    }
    convs_.set(o.conv_bias_before_bn);
  }
  std::string name() const override { return name_; }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto y = torch::relu(net_->stem->forward(x));
    y = F::max_pool2d(y, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
    for (auto& seg : segments_) y = checkpointing_ ? checkpoint(&seg, y) : seg(y);
    y = F::adaptive_avg_pool2d(y, F::AdaptiveAvgPool2dFuncOptions(1));
    return torch::linear(torch::flatten(y, 1), net_->fc->weight, net_->fc->bias);
  }
  std::vector<torch::Tensor> trainable_parameters() override {
    std::vector<torch::Tensor> out;
    for (auto& p : net_->parameters())
      if (convs_.uses_bias(p)) out.push_back(p);
    return out;
  }
  std::string conv_bias_reason() const override { return ""; }
  void set_conv_bias_before_bn(bool on) override { convs_.set(on); }
  void set_checkpointing(bool on) override { checkpointing_ = on; }

 private:
  std::string name_;
  ConvBNRegistry convs_;
  std::vector<Segment> segments_;
  bool checkpointing_ = false;
};

// ---------------------------------------------------------------------------------------------------------
// vit_tiny: ViT-Ti/16 (dim 192, depth 12, 3 heads, MLP 768), pre-norm blocks, cls token.
struct VitBlockImpl : torch::nn::Module {
  VitBlockImpl(int64_t dim, int64_t heads, int64_t mlp) : heads_(heads) {
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    qkv = register_module("qkv", torch::nn::Linear(dim, 3 * dim));
    proj = register_module("proj", torch::nn::Linear(dim, dim));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    fc1 = register_module("fc1", torch::nn::Linear(dim, mlp));
    fc2 = register_module("fc2", torch::nn::Linear(mlp, dim));
  }
  torch::Tensor attention(const torch::Tensor& x) {
    const int64_t B = x.size(0), N = x.size(1), C = x.size(2), D = C / heads_;
    auto qkv_ = torch::linear(x, qkv->weight, qkv->bias).reshape({B, N, 3, heads_, D}).permute({2, 0, 3, 1, 4});
    auto q = qkv_[0], k = qkv_[1], v = qkv_[2];
    auto attn = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(D))), -1);
    auto out = torch::matmul(attn, v).transpose(1, 2).reshape({B, N, C});
    return torch::linear(out, proj->weight, proj->bias);
  }
  torch::Tensor mlp(const torch::Tensor& x, bool fused) {
    torch::Tensor h;
    if (fused) {
      // Bias inside the GEMM (addmm), one native tanh-GELU kernel, native fused dropout.
      h = at::gelu(torch::linear(x, fc1->weight, fc1->bias), "tanh");
    } else {
      // What a newcomer writes from the paper formula: every pointwise op is its own kernel and its own
      // saved activation.
      h = torch::linear(x, fc1->weight) + fc1->bias;
      auto inner = (h + 0.044715 * h * h * h) * std::sqrt(2.0 / M_PI);
      h = 0.5 * h * (1.0 + torch::tanh(inner));
    }
    h = F::dropout(h, F::DropoutFuncOptions().p(0.1).training(is_training()));
    return torch::linear(h, fc2->weight, fc2->bias);
  }
  torch::Tensor forward(const torch::Tensor& x, bool fused) {
    auto y = x + attention(ln1->forward(x));
    return y + mlp(ln2->forward(y), fused);
  }
  int64_t heads_;
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  torch::nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(VitBlock);

struct VitImpl : torch::nn::Module {
  VitImpl(int64_t channels, int64_t h, int64_t w, int64_t patch, int64_t classes, int64_t dim, int64_t depth,
          int64_t heads, int64_t mlp) {
    embed = register_module("embed", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, dim, patch).stride(patch)));
    const int64_t tokens = (h / patch) * (w / patch) + 1;
    cls = register_parameter("cls", torch::zeros({1, 1, dim}));
    pos = register_parameter("pos", torch::randn({1, tokens, dim}) * 0.02);
    for (int64_t i = 0; i < depth; ++i) blocks.push_back(register_module("block" + std::to_string(i), VitBlock(dim, heads, mlp)));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    head = register_module("head", torch::nn::Linear(dim, classes));
  }
  torch::nn::Conv2d embed{nullptr};
  torch::Tensor cls, pos;
  std::vector<VitBlock> blocks;
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
};

class VitTiny : public ModuleModel<VitImpl> {
 public:
  explicit VitTiny(const ModelOptions& o) {
    input_ = {o.input_channels ? o.input_channels : 3, o.input_height ? o.input_height : 224,
              o.input_width ? o.input_width : 224, o.num_classes ? o.num_classes : 1000};
    const int64_t patch = (input_.height >= 112 && input_.width >= 112) ? 16 : 4;
    if (input_.height < patch || input_.width < patch || input_.height % patch || input_.width % patch)
      throw std::invalid_argument("vit_tiny needs an input that is a multiple of its " + std::to_string(patch) +
                                  "-pixel patch");
    net_ = std::make_shared<VitImpl>(input_.channels, input_.height, input_.width, patch, input_.num_classes, 192, 12, 3, 768);
    for (auto& b : net_->blocks) {
      auto block = b;
      segments_.push_back([block, this](const torch::Tensor& x) mutable { return block->forward(x, fused_); });
    }
  }
  std::string name() const override { return "vit_tiny"; }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto y = net_->embed->forward(x).flatten(2).transpose(1, 2);  // [B, tokens, dim]
    y = torch::cat({net_->cls.expand({y.size(0), 1, y.size(2)}), y}, 1) + net_->pos;
    for (auto& seg : segments_) y = checkpointing_ ? checkpoint(&seg, y) : seg(y);
    y = net_->norm->forward(y.select(1, 0));
    return torch::linear(y, net_->head->weight, net_->head->bias);
  }
  std::vector<torch::Tensor> trainable_parameters() override { return net_->parameters(); }
  std::string fused_pointwise_reason() const override { return ""; }
  void set_fused_pointwise(bool on) override { fused_ = on; }
  void set_checkpointing(bool on) override { checkpointing_ = on; }

 private:
  std::vector<Segment> segments_;
  bool fused_ = false;
  bool checkpointing_ = false;
};

// ---------------------------------------------------------------------------------------------------------
// torchscript:PATH — a user's scripted model. Its input comes from the module's `input_shape` ([C,H,W]) and
// `num_classes` attributes when it has them, else from the options (CLI flags).
class ScriptedModel : public Model {
 public:
  ScriptedModel(const std::string& path, const ModelOptions& o) : path_(path) {
    try {
      module_ = torch::jit::load(path);
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw std::invalid_argument("cannot load TorchScript model '" + path + "': " + what.substr(0, what.find('\n')));
    }
    input_ = {o.input_channels, o.input_height, o.input_width, o.num_classes};
    try {
      if (module_.hasattr("input_shape")) {
        auto shape = module_.attr("input_shape").toIntVector();
        if (shape.size() == 3) input_ = {shape[0], shape[1], shape[2], input_.num_classes};
      }
      if (module_.hasattr("num_classes")) input_.num_classes = module_.attr("num_classes").toInt();
    } catch (const std::exception&) {
      // Attributes of another type: fall back to the flags.
    }
    if (input_.channels <= 0 || input_.height <= 0 || input_.width <= 0)
      throw std::invalid_argument("TorchScript model '" + path +
                                  "' does not declare its input; pass --input C,H,W (and --classes K)");
    if (trainable_parameters().empty())
      throw std::invalid_argument("TorchScript model '" + path + "' has no trainable parameters");
    // Probe batch: the model must map [2,C,H,W] to [2,K] logits.
    torch::Tensor out;
    try {
      torch::NoGradGuard no_grad;
      module_.eval();
      auto r = module_.forward({torch::zeros({2, input_.channels, input_.height, input_.width})});
      if (!r.isTensor()) throw std::runtime_error("forward did not return a tensor");
      out = r.toTensor();
      module_.train(true);
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw std::invalid_argument("TorchScript model '" + path + "' fails a probe batch of shape [2," +
                                  std::to_string(input_.channels) + "," + std::to_string(input_.height) + "," +
                                  std::to_string(input_.width) + "]: " + what.substr(0, what.find('\n')));
    }
    if (out.dim() != 2 || out.size(0) != 2 || (input_.num_classes > 0 && out.size(1) != input_.num_classes))
      throw std::invalid_argument("TorchScript model '" + path + "' returns shape " + shape_text(out) +
                                  " for a probe batch of 2; expected [2, classes] logits");
    if (input_.num_classes <= 0) input_.num_classes = out.size(1);
  }
  std::string name() const override { return "torchscript:" + path_; }
  torch::Tensor forward(const torch::Tensor& x) override { return module_.forward({x}).toTensor(); }
  std::vector<torch::Tensor> trainable_parameters() override {
    std::vector<torch::Tensor> out;
    for (const auto& p : module_.parameters())
      if (p.requires_grad()) out.push_back(p);
    return out;
  }
  std::vector<torch::Tensor> state_tensors() override {
    std::vector<torch::Tensor> out;
    for (const auto& p : module_.parameters()) out.push_back(p);
    for (const auto& b : module_.buffers()) out.push_back(b);
    return out;
  }
  void to(torch::Device device) override { module_.to(device); }
  void train(bool on) override { module_.train(on); }
  std::string conv_bias_reason() const override {
    return "a TorchScript model's layers cannot be rewritten (no BatchNorm information)";
  }
  std::string fused_pointwise_reason() const override { return "a TorchScript model's ops are fixed by its file"; }
  std::string checkpointing_reason() const override {
    return "a TorchScript model cannot be split into checkpoint segments";
  }

 private:
  static std::string shape_text(const torch::Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "," : "") + std::to_string(t.size(i));
    return s + "]";
  }
  std::string path_;
  torch::jit::Module module_;
};

}  // namespace

std::unique_ptr<Model> make_model(const std::string& spec, const ModelOptions& options) {
  torch::manual_seed(options.seed);
  if (spec == "mnist_cnn") return std::make_unique<MnistCnn>(options);
  if (spec == "resnet18") return std::make_unique<ResNet>("resnet18", false, std::vector<int64_t>{2, 2, 2, 2}, options);
  if (spec == "resnet50") return std::make_unique<ResNet>("resnet50", true, std::vector<int64_t>{3, 4, 6, 3}, options);
  if (spec == "vit_tiny") return std::make_unique<VitTiny>(options);
  if (spec.rfind("torchscript:", 0) == 0) {
    std::string path = spec.substr(12);
    if (path.empty()) throw std::invalid_argument("torchscript: needs a file path (torchscript:PATH)");
    return std::make_unique<ScriptedModel>(path, options);
  }
  throw std::invalid_argument("unknown model '" + spec + "' (mnist_cnn, resnet18, resnet50, vit_tiny, torchscript:PATH)");
}

}  // namespace tb::engine
