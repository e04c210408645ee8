// Inductor's kernels back to their source ops and the user's lines (profiler/compiled_kernels.h).
#include "profiler/compiled_kernels.h"

#include <algorithm>
#include <iterator>
#include <cctype>
#include <cstdlib>

#include "profiler/range_names.h"
#include "profiler/step_lane.h"

namespace tb::prof {
namespace {

constexpr std::string_view kRange = "range: ", kOps = "ops: ", kAt = "at ";

// ATen ops whose names hold underscores, as Inductor's descriptive names spell them (the op's packet name): a
// name's tokens are joined back where they make one of these. Longest first matters only for prefixes, which
// the longest-match below handles.
constexpr std::string_view kCompoundOps[] = {
    "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "hardtanh_backward", "leaky_relu_backward", "elu_backward", "hardswish_backward", "hardsigmoid_backward",
    "native_layer_norm", "native_layer_norm_backward", "native_group_norm", "native_group_norm_backward",
    "native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training", "native_dropout", "native_dropout_backward", "_softmax",
    "_softmax_backward_data", "_log_softmax", "_log_softmax_backward_data", "embedding_dense_backward",
    "convolution_backward", "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
    "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", "mse_loss",
    "mse_loss_backward", "nll_loss_forward", "nll_loss_backward", "scatter_add", "scatter_reduce", "index_put",
    "index_select", "index_add", "new_zeros", "new_ones", "new_empty", "zeros_like", "ones_like", "full_like",
    "empty_like", "var_mean", "clamp_min", "clamp_max", "masked_fill", "constant_pad_nd", "slice_scatter",
    "select_scatter", "_to_copy", "_unsafe_view", "logical_not", "logical_and", "bitwise_and", "upsample_nearest2d",
    "reflection_pad2d", "_scaled_dot_product_flash_attention", "split_with_sizes"};

bool known_compound(std::string_view s) {
  return std::find(std::begin(kCompoundOps), std::end(kCompoundOps), s) != std::end(kCompoundOps);
}

// "train.py:19  y = relu(y)" -> the line. The file is what comes before the first ":<digits>" that ends the
// text or is followed by two spaces.
std::optional<SourceLine> parse_at(std::string_view s) {
  for (size_t colon = s.find(':'); colon != std::string_view::npos; colon = s.find(':', colon + 1)) {
    size_t end = colon + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == colon + 1) continue;
    if (end != s.size() && s.substr(end, 2) != "  ") continue;
    SourceLine l;
    l.file = std::string(s.substr(0, colon));
    l.line = std::strtoll(std::string(s.substr(colon + 1, end - colon - 1)).c_str(), nullptr, 10);
    if (end < s.size()) l.code = std::string(s.substr(end + 2));
    return l;
  }
  return std::nullopt;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string kernel_marker_detail(const LaneKernel& k) {
  std::string s = k.name;
  if (!k.range.empty() && k.range != k.name) s += "\n" + std::string(kRange) + k.range;
  if (!k.ops.empty()) s += "\n" + std::string(kOps) + join(k.ops);
  for (const SourceLine& l : k.lines) {
    s += "\n" + std::string(kAt) + l.file + ":" + std::to_string(l.line);
    if (!l.code.empty()) s += "  " + l.code;
  }
  return s;
}

std::optional<LaneKernel> parse_kernel_marker(std::string_view detail) {
  LaneKernel k;
  bool first = true;
  while (!detail.empty() || first) {
    const size_t nl = detail.find('\n');
    const std::string_view line = detail.substr(0, nl);
    detail = nl == std::string_view::npos ? std::string_view() : detail.substr(nl + 1);
    if (first) {
      if (line.empty()) return std::nullopt;
      k.name = std::string(line);
      first = false;
    } else if (line.substr(0, kRange.size()) == kRange) {
      k.range = std::string(line.substr(kRange.size()));
    } else if (line.substr(0, kOps.size()) == kOps) {
      std::string_view ops = line.substr(kOps.size());
      while (!ops.empty()) {
        const size_t comma = ops.find(", ");
        if (!ops.substr(0, comma).empty()) k.ops.emplace_back(ops.substr(0, comma));
        ops = comma == std::string_view::npos ? std::string_view() : ops.substr(comma + 2);
      }
    } else if (line.substr(0, kAt.size()) == kAt) {
      if (auto l = parse_at(line.substr(kAt.size()))) k.lines.push_back(std::move(*l));
    }
  }
  if (k.range.empty()) k.range = k.name;
  return k;
}

std::string_view inductor_kernel_name(std::string_view n) {
  // "graph_<G>_": Inductor's prefix of a profiled C++ kernel (G: the AOT graph, its forward's and backward's)
  constexpr std::string_view kGraph = "graph_";
  if (n.substr(0, kGraph.size()) != kGraph) return n;
  size_t i = kGraph.size();
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) ++i;
  if (i == kGraph.size() || i >= n.size() || n[i] != '_') return n;
  return n.substr(i + 1);
}

bool is_inductor_cpu_kernel_name(std::string_view name) {
  const std::string_view n = inductor_kernel_name(name);
  if (n.size() != name.size()) return n.substr(0, 4) == "cpp_" && n.size() > 4;
  return n.substr(0, 10) == "cpp_fused_" && n.size() > 10;
}

bool is_inductor_gpu_kernel_name(std::string_view name) { return name.substr(0, 7) == "triton_" && name.size() > 7; }

bool is_inductor_kernel_name(std::string_view name) {
  return is_inductor_cpu_kernel_name(name) || is_inductor_gpu_kernel_name(name);
}

std::vector<std::string> ops_of_kernel_name(std::string_view name) {
  std::string_view n = inductor_kernel_name(name);
  constexpr std::string_view kFused = "fused_";
  const size_t at = n.find(kFused);
  if (at == std::string_view::npos) return {};
  n = n.substr(at + kFused.size());
  // the kernel's index in its graph
  size_t end = n.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(n[end - 1]))) --end;
  if (end < n.size() && end > 0 && n[end - 1] == '_') n = n.substr(0, end - 1);
  std::vector<std::string> tokens;  // "" where an op's name starts with '_'
  for (size_t i = 0; i <= n.size();) {
    const size_t u = std::min(n.find('_', i), n.size());
    tokens.emplace_back(n.substr(i, u - i));
    i = u + 1;
  }
  std::vector<std::string> ops;
  for (size_t i = 0; i < tokens.size();) {
    size_t take = 1;
    std::string best = tokens[i];
    std::string joined = tokens[i];
    for (size_t j = i + 1; j < tokens.size() && j < i + 8; ++j) {
      joined += "_" + tokens[j];
      if (known_compound(joined)) take = j - i + 1, best = joined;
    }
    if (!best.empty() && std::find(ops.begin(), ops.end(), best) == ops.end()) ops.push_back(best);
    i += take;
  }
  return ops;
}

std::map<std::string, LaneKernel, std::less<>> lane_kernels(const Trace& trace) {
  std::map<std::string, LaneKernel, std::less<>> out;
  for (const Track& t : trace.tracks()) {
    if (!is_step_lane(t) || t.kind() != TrackKind::CpuThread || t.name() != kCompileLaneTrackName) continue;
    for (const Event& e : t.events()) {
      if (e.kind != EventKind::Range || e.detail == kNoName || trace.name(e.name) != names::kLaneKernel) continue;
      std::optional<LaneKernel> k = parse_kernel_marker(trace.name(e.detail));
      if (!k) continue;
      auto [it, fresh] = out.try_emplace(k->range, *k);
      if (fresh) continue;
      for (SourceLine& l : k->lines)
        if (std::find(it->second.lines.begin(), it->second.lines.end(), l) == it->second.lines.end())
          it->second.lines.push_back(std::move(l));
    }
  }
  return out;
}

std::string kernel_note(const LaneKernel& k) {
  std::string s = "Inductor kernel " + k.name;
  if (!k.ops.empty()) s += "\nfuses " + join(k.ops);
  else if (auto ops = ops_of_kernel_name(k.name); !ops.empty()) s += "\nfuses " + join(ops) + " (its name's ops)";
  if (k.lines.empty()) s += "\nno user line known (Inductor's provenance was off)";
  for (const SourceLine& l : k.lines) {
    s += "\n" + l.file + ":" + std::to_string(l.line);
    if (!l.code.empty()) s += "  " + l.code;
  }
  return s;
}

}  // namespace tb::prof
