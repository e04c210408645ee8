// The code a tuning report shows for its result (engine/report.h: final_code_pytorch, final_code_libtorch):
// the catalog's PyTorch and LibTorch lines with the values found, the loader knobs combined into one
// DataLoader call, or a script's own lines as a patch.
#include "engine/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>
#include <set>

#include "engine/cpu_allocator.h"
#include "tuner/report/report_parts.h"
#include "tuner/report/report_script.h"

namespace tb::engine {
namespace {

using namespace report_detail;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// A catalog snippet with the found value: "{value}" filled in; for an int knob whose snippet shows the
// recommended value ("num_workers=2", "opts.workers = 2;"), that number replaced by the found one.
std::string with_value(const std::string& snippet, const KnobInfo& info, const std::string& v) {
  std::string s = replace_all(snippet, "{value}", v);
  if (info.type != KnobType::Int || info.recommended_value.empty() || v == info.recommended_value) return s;
  static const std::regex num_after_eq(R"((=\s*)(\d+)\b)");
  std::string out;
  std::sregex_iterator it(s.begin(), s.end(), num_after_eq), end;
  size_t last = 0;
  for (; it != end; ++it) {
    const auto& m = *it;
    out += s.substr(last, m.position(0) - last);
    out += m[2].str() == info.recommended_value ? m[1].str() + v : m[0].str();
    last = m.position(0) + m.length(0);
  }
  return out + s.substr(last);
}

bool is_cpu(const TuneResult& r) {
  std::string d = jstr(r.environment, "device", "");
  std::transform(d.begin(), d.end(), d.begin(), ::tolower);
  return d.rfind("cpu", 0) == 0;
}

// ----- code ---------------------------------------------------------------------------------------------

struct CodeLines {
  std::vector<std::string> py, cpp;
};

CodeLines code_lines(const TuneResult& r) {
  CodeLines out;
  if (script_code_lines(r, out.py)) {
    if (!out.py.empty()) out.cpp.push_back("// a Python script: the changes are the Python lines above (- old, + new)");
    return out;
  }
  const Config& f = r.final_config;
  const auto changed = changed_knobs(r.baseline, f);
  std::set<std::string> done;
  auto has = [&](const char* k) { return std::find(changed.begin(), changed.end(), k) != changed.end(); };
  const bool cpu = is_cpu(r);
  // The loader knobs combine into one DataLoader call in Python; LibTorch takes the catalog's lines.
  if (has("workers") || has("pin_memory") || has("prefetch") || has("batch_size")) {
    const std::string w = value_in(f, "workers");
    std::string py = "loader = torch.utils.data.DataLoader(dataset, batch_size=" +
                     (value_in(f, "batch_size").empty() ? std::string("32") : value_in(f, "batch_size")) +
                     ", shuffle=True";
    if (!w.empty()) py += ", num_workers=" + w;
    if (value_in(f, "pin_memory") == "on") py += ", pin_memory=True";
    if (has("prefetch") && w != "0" && !w.empty()) py += ", prefetch_factor=" + value_in(f, "prefetch");
    if (w != "0" && !w.empty()) py += ", persistent_workers=True";
    py += ")";
    out.py.push_back(py);
    if (has("batch_size"))
      out.py.push_back("# batch size changed: scale the learning rate with it (linear rule) and check convergence");
    for (const char* k : {"workers", "pin_memory", "prefetch", "batch_size"}) {
      if (!has(k)) continue;
      done.insert(k);
      const KnobInfo* info = info_of(r, k);
      if (info) out.cpp.push_back(with_value(info->libtorch_snippet, *info, value_in(f, k)) + "  // " + k + "=" + value_in(f, k));
    }
  }
  for (const auto& k : changed) {
    if (done.count(k)) continue;
    const std::string v = value_in(f, k);
    const KnobInfo* info = info_of(r, k);
    if (k == "amp" && v != "off") {
      const std::string dev = cpu ? "cpu" : "cuda";
      const std::string dt = v == "bf16" ? "bfloat16" : "float16";
      out.py.push_back("with torch.autocast('" + dev + "', dtype=torch." + dt + "):  # forward + loss only");
      out.py.push_back("    loss = criterion(model(x), y)");
      if (v == "fp16") out.py.push_back("scaler = torch.cuda.amp.GradScaler()  # scaler.scale(loss).backward(); scaler.step(opt); scaler.update()");
      if (cpu)
        out.cpp.push_back("at::autocast::set_cpu_enabled(true); at::autocast::set_autocast_cpu_dtype(at::k" +
                          std::string(v == "bf16" ? "BFloat16" : "Half") + ");");
      else
        out.cpp.push_back("at::autocast::set_enabled(true); at::autocast::set_autocast_gpu_dtype(at::k" +
                          std::string(v == "bf16" ? "BFloat16" : "Half") + ");" +
                          (v == "fp16" ? "  // + dynamic loss scaling" : ""));
      continue;
    }
    if (k == "cpu_allocator") {
      const std::string env_line = cpu_allocator_env(v);
      out.py.push_back("# start the training process with the allocator: " + env_line + " python train.py");
      if (v == "glibc_tuned")
        out.cpp.push_back("mallopt(M_MMAP_THRESHOLD, 256 << 20); mallopt(M_TRIM_THRESHOLD, 256 << 20);  // first thing in "
                          "main(), or start with " + env_line);
      else
        out.cpp.push_back("// start the program with " + env_line + " (or link it)");
      continue;
    }
    if (k == "intra_op_threads") {
      if (v == "0") {
        out.py.push_back("torch.set_num_threads(max(1, os.cpu_count() - num_workers))  # intra-op threads: the cores the loader leaves");
        out.cpp.push_back("at::set_num_threads(std::max(1, cores - workers));");
      } else {
        out.py.push_back("torch.set_num_threads(" + v + ")  # intra_op_threads=" + v);
        out.cpp.push_back("at::set_num_threads(" + v + ");");
      }
      continue;
    }
    if (k == "sync_free_logging") {
      out.py.push_back("if step % " + v + " == 0: print(loss.item())  # read the loss every " + v + " steps");
      out.cpp.push_back("if (step % " + v + " == 0) log(loss.item<float>());");
      continue;
    }
    if (k == "grad_accumulation") {
      out.py.push_back("# gradient accumulation: the effective batch becomes batch_size x " + v +
                       " (like a bigger batch: revisit the learning rate)");
      out.py.push_back("(loss / " + v + ").backward()\nif (i + 1) % " + v + " == 0: opt.step(); opt.zero_grad(set_to_none=True)");
      out.cpp.push_back("(loss / " + v + ").backward(); if ((i + 1) % " + v + " == 0) { opt.step(); zero_grad(); }");
      continue;
    }
    if (!info) {
      out.py.push_back("# " + k + " = " + v);
      out.cpp.push_back("// " + k + " = " + v);
      continue;
    }
    std::string py = info->pytorch_snippet, cpp = info->libtorch_snippet;
    const bool templated = py.find("{value}") != std::string::npos || cpp.find("{value}") != std::string::npos;
    if (templated || v == info->recommended_value || info->type == KnobType::Int) {
      out.py.push_back(with_value(py, *info, v) + "  # " + k + "=" + v);
      out.cpp.push_back(with_value(cpp, *info, v) + "  // " + k + "=" + v);
    } else {
      out.py.push_back("# " + k + " = " + v + " (the catalog's line sets " + info->recommended_value + "): " + py);
      out.cpp.push_back("// " + k + " = " + v + " (the catalog's line sets " + info->recommended_value + "): " + cpp);
    }
  }
  if (!changed.empty()) {
    std::string all = "session->apply({";
    for (size_t i = 0; i < changed.size(); ++i)
      all += std::string(i ? ", " : "") + "{\"" + changed[i] + "\", \"" + value_in(f, changed[i]) + "\"}";
    out.cpp.push_back("// or, with TuneBench's engine (tb::engine::Session), all at once:");
    out.cpp.push_back(all + "});");
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& v, const std::string& empty) {
  if (v.empty()) return empty;
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

}  // namespace

// What the code is when nothing is kept: in the result's own words (a ±515% noise floor found nothing; it did
// not find the baseline fastest).
std::string nothing_kept(const TuneResult& r) {
  if (r.verdict == "undecided") return "nothing is kept: the headline could not confirm the changes";
  if (std::isfinite(r.noise_band) && r.noise_band > kTooNoisyBand) return "nothing is kept: this machine was too noisy to tell";
  return "nothing beat the baseline configuration";
}

Headline tune_headline(const TuneResult& r) {
  const auto changed = r.unconfirmed_config.empty() ? changed_knobs(r.baseline, r.final_config) : unconfirmed_knobs(r);
  char b[160];
  if (r.speedup.valid() && !changed.empty()) {
    if (r.verdict == "undecided") {
      std::snprintf(b, sizeof b, "Could not decide (%.2fx, the interval covers 1)", r.speedup.ratio);
      return {"undecided", b, false};
    }
    std::snprintf(b, sizeof b, "%.2fx faster", r.speedup.ratio);
    return {"faster", b, true};
  }
  if (r.plan_only && r.plan) {
    std::snprintf(b, sizeof b, "Priced: ~%.0f s to try each of the %d knob%s once; nothing was tried", r.plan->pass_s,
                  r.plan->priced, r.plan->priced == 1 ? "" : "s");
    return {"planned", b, false};
  }
  if (r.trials.empty()) return {"nothing_measured", "Nothing was measured: the budget held no trial", false};
  if (std::isfinite(r.noise_band) && r.noise_band > kTooNoisyBand) {
    std::snprintf(b, sizeof b, "Too noisy to tune here: one trial resolves only changes beyond ±%.0f%%",
                  100 * r.noise_band);
    return {"too_noisy", b, false};
  }
  return {"none", "No change beat the baseline", false};
}

std::string headline_line(const TuneResult& r) {
  std::string t = tune_headline(r).title;
  if (!t.empty()) t[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(t[0])));
  return t;
}

std::string final_code_pytorch(const TuneResult& r) {
  return join_lines(code_lines(r).py, "# " + nothing_kept(r) + "\n");
}
std::string final_code_libtorch(const TuneResult& r) {
  return join_lines(code_lines(r).cpp, "// " + nothing_kept(r) + "\n");
}

}  // namespace tb::engine
