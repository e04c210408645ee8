// Reads the compiled-in knob table (knobs.json) once and checks that every row is whole.
#include "knobs/table.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tb::knobs {
namespace detail {
extern const char* const kTableText;
}

namespace {

using nlohmann::json;

const std::set<std::string> kTypes = {"bool", "int", "enum"};
const std::set<std::string> kLadders = {"none", "workers", "doubling"};
const std::set<std::string> kCosts = {"plain", "compiles", "recompiles_under_compile"};
const std::set<std::string> kPatchRules = {"", "python_set", "dataloader", "zero_grad", "autocast", "channels_last",
                                           "compile"};

std::string str(const json& j, const char* key, const std::string& dflt = "") {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? dflt : it->get<std::string>();
}

// The row's common fields with the surface object's over them.
Surface surface(const std::string& id, const json& row, const json& own) {
  auto pick = [&](const char* key) -> const json* {
    if (own.contains(key)) return &own.at(key);
    if (row.contains(key)) return &row.at(key);
    return nullptr;
  };
  auto text = [&](const char* key) {
    const json* j = pick(key);
    return j && !j->is_null() ? j->get<std::string>() : std::string();
  };
  auto flag = [&](const char* key) {
    const json* j = pick(key);
    return j && j->get<bool>();
  };
  Surface s;
  s.type = text("type");
  if (!kTypes.count(s.type)) throw std::runtime_error(id + ": type '" + s.type + "' is not bool, int or enum");
  s.title = text("title");
  s.description = text("description");
  if (s.title.empty() || s.description.empty()) throw std::runtime_error(id + ": no title or description");
  const json* d = pick("default");
  if (!d) throw std::runtime_error(id + ": no default");
  s.default_at_start = d->is_null();
  if (!d->is_null()) s.default_value = d->get<std::string>();
  s.recommended = text("recommended");
  if (s.type == "bool") {
    s.choices = {"off", "on"};
  } else if (s.type == "enum") {
    const json* c = pick("choices");
    if (!c || c->empty()) throw std::runtime_error(id + ": an enum without choices");
    s.choices = c->get<std::vector<std::string>>();
    s.max = static_cast<int64_t>(s.choices.size()) - 1;
  } else {
    const json* lo = pick("min");
    const json* hi = pick("max");
    if (!lo || !hi) throw std::runtime_error(id + ": an int without min and max");
    s.min = lo->get<int64_t>();
    s.max = hi->get<int64_t>();
  }
  s.numerics = flag("numerics");
  s.process_scope = flag("process_scope");
  if (const json* j = pick("seeds")) s.seeds = j->get<std::vector<std::string>>();
  s.applies_to = text("applies_to");
  s.pytorch = text("pytorch");
  s.libtorch = text("libtorch");
  s.snippet = text("snippet");
  auto is_value = [&](const std::string& v) {
    if (s.type != "int") {
      for (const auto& c : s.choices)
        if (c == v) return true;
      return false;
    }
    try {
      size_t used = 0;
      const long long n = std::stoll(v, &used);
      return used == v.size() && n >= s.min && n <= s.max;
    } catch (const std::exception&) {
      return false;
    }
  };
  if (!s.default_at_start && !is_value(s.default_value))
    throw std::runtime_error(id + ": default '" + s.default_value + "' is not one of its values");
  if (!is_value(s.recommended)) throw std::runtime_error(id + ": recommended '" + s.recommended + "' is not one of its values");
  return s;
}

Shares shares(const json& t, const char* key) {
  Shares s{};
  auto it = t.find(key);
  if (it == t.end() || it->is_null()) return s;
  if (!it->is_array() || it->size() != 6) throw std::runtime_error(std::string("tuner.") + key + " is not 6 shares");
  for (size_t i = 0; i < 6; ++i) s[i] = it->at(i).get<double>();
  return s;
}

Row row_of(const json& j) {
  Row r;
  r.id = j.at("id").get<std::string>();
  try {
    if (j.contains("engine")) r.engine = surface(r.id, j, j.at("engine"));
    if (j.contains("script")) r.script = surface(r.id, j, j.at("script"));
    r.script_env = str(j, "script_env");
    r.not_for_scripts = str(j, "not_for_scripts");
    if (!r.engine && !r.script) throw std::runtime_error("neither the engine nor a script has it");
    if (!r.script && r.script_env.empty() && r.not_for_scripts.empty())
      throw std::runtime_error("no script knob and no not_for_scripts saying why");
    const json& t = j.at("tuner");
    r.tuner.cuda = shares(t, "cuda");
    r.tuner.cpu = shares(t, "cpu");
    r.tuner.needs = str(t, "needs");
    r.tuner.ladder = str(t, "ladder", "none");
    r.tuner.model_level = t.value("model_level", false);
    r.tuner.recipe = t.value("recipe", false);
    r.tuner.cost = str(t, "cost", "plain");
    if (!kLadders.count(r.tuner.ladder)) throw std::runtime_error("tuner.ladder '" + r.tuner.ladder + "'");
    if (!kCosts.count(r.tuner.cost)) throw std::runtime_error("tuner.cost '" + r.tuner.cost + "'");
    if (j.contains("python_set"))
      r.python_set = j.at("python_set").get<std::map<std::string, std::vector<std::string>>>();
    r.patch = str(j, "patch");
    r.patch_left_out = str(j, "patch_left_out");
    if (!kPatchRules.count(r.patch)) throw std::runtime_error("patch rule '" + r.patch + "'");
    if (r.patch == "python_set" && r.python_set.empty()) throw std::runtime_error("patch python_set without lines");
    r.dataloader_arg = str(j, "dataloader_arg");
    if ((r.patch == "dataloader") != !r.dataloader_arg.empty())
      throw std::runtime_error("patch \"dataloader\" and dataloader_arg go together");
  } catch (const std::exception& e) {
    throw std::runtime_error("knob '" + r.id + "': " + e.what());
  }
  return r;
}

std::vector<Row> read() {
  std::vector<Row> rows;
  std::set<std::string> ids;
  const json doc = json::parse(detail::kTableText);  // held: a range-for over a temporary's member dangles
  for (const auto& j : doc.at("knobs")) {
    rows.push_back(row_of(j));
    if (!ids.insert(rows.back().id).second) throw std::runtime_error("knob '" + rows.back().id + "' has two rows");
  }
  for (const auto& r : rows)
    if (!r.tuner.needs.empty() && !ids.count(r.tuner.needs))
      throw std::runtime_error("knob '" + r.id + "' needs an unknown knob '" + r.tuner.needs + "'");
  return rows;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

}  // namespace

const std::vector<Row>& table() {
  static const std::vector<Row> rows = [] {
    try {
      return read();
    } catch (const std::exception& e) {
      // The build's own file: a bad one is a bug of this build, found by its first test.
      std::fprintf(stderr, "tunebench: the knob table (python/tunebench/knobs.json) is bad: %s\n", e.what());
      std::abort();
    }
  }();
  return rows;
}

const Row* find(std::string_view id) {
  for (const auto& r : table())
    if (r.id == id) return &r;
  return nullptr;
}

bool script_has(const Row& r) { return r.script.has_value() || !r.script_env.empty(); }

std::vector<std::pair<std::string, std::string>> dataloader_arguments(
    const std::map<std::string, std::string>& changed) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : table()) {
    auto it = changed.find(r.id);
    if (r.dataloader_arg.empty() || it == changed.end()) continue;
    const auto& s = r.script ? *r.script : *r.engine;
    out.push_back({r.dataloader_arg, s.type == "bool" ? (it->second == "on" ? "True" : "False") : it->second});
  }
  return out;
}

std::vector<std::string> python_lines(const Row& r, const std::string& value, const std::string& workers) {
  auto it = r.python_set.find(value);
  if (it == r.python_set.end()) it = r.python_set.find("*");
  if (it == r.python_set.end()) return {};
  std::vector<std::string> out = it->second;
  for (auto& line : out) {
    replace_all(line, "{value}", value);
    replace_all(line, "{True}", value == "on" ? "True" : "False");
    replace_all(line, "{workers}", workers.empty() ? "0" : workers);
  }
  return out;
}

}  // namespace tb::knobs
