#include "tuner/report/report_script.h"

#include <map>
#include <regex>
#include <set>

#include "knobs/table.h"

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
  const auto sources = env.value("source", nlohmann::json::array());

  // The DataLoader calls: one edit each, with every kept loader knob.
  std::map<std::string, std::string> changed_values;  // the knob table's dataloader_arg: which knob is which
  for (const auto& k : changed) changed_values[k] = value_in(f, k);
  const auto loader_args = knobs::dataloader_arguments(changed_values);
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
    if (const knobs::Row* row = knobs::find(k); row && row->patch == "dataloader") continue;  // in the call above
    if (k == "zero_grad_none") {
      py.push_back("optimizer.zero_grad(set_to_none=" + py_bool(v) + ")  # every zero_grad() call" +
                   (opt_where.empty() ? std::string() : " of the optimizer made at " + opt_where));
    } else if (k == "amp" && v == "bf16") {
      py.push_back("with torch.autocast(device_type, dtype=torch.bfloat16):  # around the forward");
      py.push_back("    output = model(x)");
      py.push_back("loss = criterion(output.float(), y)");
    } else if (k == "channels_last" && v == "on") {
      py.push_back("model = model.to(memory_format=torch.channels_last)  # and each batch: "
                   "x = x.to(memory_format=torch.channels_last)");
    } else if (const knobs::Row* row = knobs::find(k); row && !row->python_set.empty()) {
      // The process-wide lines: the knob table's, the same the script's patch places (script_patch.cpp).
      const auto lines = knobs::python_lines(*row, v, value_in(f, "workers").empty() ? "0" : value_in(f, "workers"));
      for (const auto& line : lines) py.push_back(line);
      if (lines.empty()) py.push_back("# " + k + " = " + v);
    } else {
      py.push_back("# " + k + " = " + v);
    }
  }
  return true;
}

}  // namespace tb::engine
