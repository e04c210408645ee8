#include "tuner/report/report_script.h"

#include <regex>
#include <set>

namespace tb::engine {
namespace {

std::string value_in(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it == c.end() ? std::string() : it->second;
}

std::string py_bool(const std::string& v) { return v == "on" ? "True" : "False"; }

std::string base_name(const std::string& path) {
  const auto s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

}  // namespace

std::string edit_call(const std::string& code, const std::vector<std::pair<std::string, std::string>>& args) {
  const auto open = code.find('(');
  const auto close = code.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return code;
  std::string inner = code.substr(open + 1, close - open - 1);
  for (const auto& [name, value] : args) {
    // name = <one argument: no top-level comma or closing parenthesis>
    const std::regex existing("(\\b" + name + "\\s*=\\s*)([^,()]+(\\([^()]*\\))?)");
    std::smatch m;
    if (std::regex_search(inner, m, existing)) {
      inner = m.prefix().str() + m[1].str() + value + m.suffix().str();
    } else {
      std::string trimmed = inner;
      // A call over several lines may end its arguments with a comma and a newline before the `)`.
      while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == ',' || trimmed.back() == '\n' ||
                                  trimmed.back() == '\t'))
        trimmed.pop_back();
      inner = trimmed + (trimmed.empty() ? "" : ", ") + name + "=" + value;
    }
  }
  return code.substr(0, open + 1) + inner + code.substr(close);
}

bool script_code_lines(const TuneResult& r, std::vector<std::string>& py) {
  const auto& env = r.environment;
  if (!env.is_object() || env.value("model", std::string()).rfind("script:", 0) != 0) return false;
  const Config& f = r.final_config;
  const auto changed = changed_knobs(r.baseline, f);
  auto has = [&](const char* k) { return std::find(changed.begin(), changed.end(), k) != changed.end(); };
  const auto sources = env.value("source", nlohmann::json::array());

  // The DataLoader calls: one edit each, with every kept loader knob.
  std::vector<std::pair<std::string, std::string>> loader_args;
  if (has("workers")) loader_args.push_back({"num_workers", value_in(f, "workers")});
  if (has("pin_memory")) loader_args.push_back({"pin_memory", py_bool(value_in(f, "pin_memory"))});
  if (has("prefetch")) loader_args.push_back({"prefetch_factor", value_in(f, "prefetch")});
  if (has("persistent_workers")) loader_args.push_back({"persistent_workers", py_bool(value_in(f, "persistent_workers"))});
  std::set<std::string> seen;
  if (!loader_args.empty()) {
    bool any = false;
    for (const auto& s : sources) {
      if (s.value("kind", std::string()) != "dataloader") continue;
      const std::string where = s.value("file", std::string("?")) + ":" + std::to_string(s.value("line", 0));
      if (!seen.insert(where).second) continue;
      const std::string code = s.value("code", std::string());
      py.push_back("# " + where + "  (the DataLoader)");
      py.push_back("-    " + code);
      py.push_back("+    " + edit_call(code, loader_args));
      any = true;
    }
    if (!any) {
      std::string args;
      for (const auto& [k, v] : loader_args) args += ", " + k + "=" + v;
      py.push_back("loader = DataLoader(dataset, batch_size=B" + args + ")  # the DataLoader call of the script");
    }
  }
  std::string opt_where;
  for (const auto& s : sources)
    if (s.value("kind", std::string()) == "optimizer")
      opt_where = base_name(s.value("file", std::string("?"))) + ":" + std::to_string(s.value("line", 0));
  for (const auto& k : changed) {
    const std::string v = value_in(f, k);
    if (k == "workers" || k == "pin_memory" || k == "prefetch" || k == "persistent_workers") continue;
    if (k == "intra_op_threads") {
      py.push_back(v == "0" ? "torch.set_num_threads(max(1, os.cpu_count() - num_workers))  # near the top: threads the "
                              "loader workers leave"
                            : "torch.set_num_threads(" + v + ")  # near the top of the script");
    } else if (k == "zero_grad_none") {
      py.push_back("optimizer.zero_grad(set_to_none=" + py_bool(v) + ")  # every zero_grad() call" +
                   (opt_where.empty() ? std::string() : " of the optimizer made at " + opt_where));
    } else if (k == "amp" && v == "bf16") {
      py.push_back("with torch.autocast(device_type, dtype=torch.bfloat16):  # around the forward");
      py.push_back("    output = model(x)");
      py.push_back("loss = criterion(output.float(), y)");
    } else if (k == "anomaly_detection") {
      py.push_back("torch.autograd.set_detect_anomaly(" + py_bool(v) + ")  # remove the script's own call");
    } else if (k == "channels_last" && v == "on") {
      py.push_back("model = model.to(memory_format=torch.channels_last)  # and each batch: "
                   "x = x.to(memory_format=torch.channels_last)");
    } else if (k == "cudnn_benchmark") {
      py.push_back("torch.backends.cudnn.benchmark = " + py_bool(v));
    } else if (k == "tf32") {
      py.push_back("torch.backends.cuda.matmul.allow_tf32 = " + py_bool(v));
    } else {
      py.push_back("# " + k + " = " + v);
    }
  }
  return true;
}

}  // namespace tb::engine
