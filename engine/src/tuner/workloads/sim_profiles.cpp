// The built-in simulation profiles (sim_world.h): the world files of engine/profiles/, compiled in
// (engine/embed_profiles.cmake), each read once; and "extends", by which a world is another with changes.
#include <filesystem>
#include <fstream>
#include <map>

#include "tuner/workloads/sim_world.h"

namespace tb::engine {

const std::vector<std::pair<std::string, std::string>>& embedded_profile_files();

namespace {

const std::string* embedded(const std::string& file) {
  for (const auto& [name, text] : embedded_profile_files())
    if (name == file) return &text;
  return nullptr;
}

// The built-in worlds by their names, "extends" resolved; a built-in that does not read is a build's bug,
// said as the profile's error.
const std::map<std::string, Result<nlohmann::json>>& builtins() {
  static const std::map<std::string, Result<nlohmann::json>> all = [] {
    std::map<std::string, Result<nlohmann::json>> out;
    for (const auto& [file, text] : embedded_profile_files()) {
      nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      const std::string name = j.is_object() ? j.value("name", file) : file;
      if (j.is_discarded()) {
        out.emplace(name, Error{"engine/profiles/" + file + ": not JSON"});
        continue;
      }
      auto resolved = resolve_extends(std::move(j), "");
      if (resolved) {
        if (auto m = make_world_model(*resolved); !m) resolved = Error{"engine/profiles/" + file + ": " + m.error().message};
      }
      out.emplace(name, std::move(resolved));
    }
    return out;
  }();
  return all;
}

}  // namespace

Result<nlohmann::json> resolve_extends(nlohmann::json j, const std::string& dir, int depth) {
  if (!j.is_object() || !j.contains("extends")) return j;
  if (!j.at("extends").is_string()) return Error{"world.extends: the file name of the world this one changes"};
  if (depth > 4) return Error{"world.extends: more than 4 worlds deep"};
  const std::string base_name = j.at("extends").get<std::string>();
  nlohmann::json base;
  // A file next to this one, else a built-in profile's file (engine/profiles/).
  const std::filesystem::path beside = dir.empty() ? std::filesystem::path() : std::filesystem::path(dir) / base_name;
  if (!dir.empty() && std::filesystem::exists(beside)) {
    std::ifstream in(beside);
    base = nlohmann::json::parse(in, nullptr, false);
  } else if (const std::string* text = embedded(std::filesystem::path(base_name).filename().string())) {
    base = nlohmann::json::parse(*text, nullptr, false);
  } else {
    return Error{"world.extends: '" + base_name + "' is neither beside it nor a built-in profile's file"};
  }
  if (base.is_discarded()) return Error{"world.extends: '" + base_name + "' is not JSON"};
  auto resolved = resolve_extends(std::move(base), dir, depth + 1);
  if (!resolved) return resolved;
  j.erase("extends");
  resolved->merge_patch(j);  // RFC 7386: objects merged, anything else replaced, null removes
  return resolved;
}

std::optional<nlohmann::json> builtin_profile(const std::string& name) {
  const auto& all = builtins();
  auto it = all.find(name);
  if (it == all.end()) return std::nullopt;
  if (!it->second) throw std::runtime_error(it->second.error().message);
  return *it->second;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> out;
  for (const auto& [name, unused] : builtins()) {
    (void)unused;
    out.push_back(name);
  }
  return out;
}

}  // namespace tb::engine
