// The knobs' tuner facts, one row each, and what the search reads from them (priority.h).
#include "tuner/search/priority.h"

#include <algorithm>

#include "knobs/table.h"

namespace tb::engine::search {
namespace {

Removes removes(const knobs::Shares& s) { return Removes{s[0], s[1], s[2], s[3], s[4], s[5]}; }

// The tuner's facts of every knob, from the knob table's rows (python/tunebench/knobs.json, "tuner"): what it
// removes on a GPU and a CPU (the priors, measured: the table's notes and priority.h say where), what it needs,
// its ladder, whether it is model-level or a recipe change, and what its trial costs.
const std::vector<KnobFacts>& table() {
  static const std::vector<KnobFacts> t = [] {
    std::vector<KnobFacts> out;
    for (const auto& row : knobs::table()) {
      const knobs::Tuner& f = row.tuner;
      out.push_back(KnobFacts{row.id, removes(f.cuda), removes(f.cpu), f.needs,
                              f.ladder == "workers" ? Ladder::Workers : f.ladder == "doubling" ? Ladder::Doubling : Ladder::None,
                              f.model_level, f.recipe,
                              f.cost == "compiles" ? TrialCost::Compiles
                              : f.cost == "recompiles_under_compile" ? TrialCost::RecompilesUnderCompile
                                                                     : TrialCost::Plain});
    }
    return out;
  }();
  return t;
}

}  // namespace

StepShares shares_of(const std::vector<std::pair<std::string, double>>& breakdown_ms, double step_ms) {
  if (breakdown_ms.empty()) return {};
  double total = 0;
  for (const auto& [k, v] : breakdown_ms) total += std::max(0.0, v);
  const double step = step_ms > 0 ? std::max(step_ms, total) : total;
  if (!(step > 0)) return {};
  StepShares s{0, 0, 0, 0, 0, 0};
  for (const auto& [k, v] : breakdown_ms) {
    const double x = std::max(0.0, v) / step;
    if (k == "loader stall" || k == "data wait") s.loader += x;
    else if (k == "h2d") s.h2d += x;
    else if (k == "launch gaps") s.launch += x;
    else if (k == "GPU busy" || k == "forward" || k == "backward" || k == "optimizer" || k == "compute") s.compute += x;
    else if (k == "comm wait") s.comm += x;
    else if (k == "other idle") {
      // A GPU idle outside loader stalls and launch gaps: the host blocked on it, or a copy on its thread.
      s.sync += x;
      s.h2d += x;
    }
  }
  return s;
}

const std::vector<KnobFacts>& knob_facts() { return table(); }

const KnobFacts* facts_of(const std::string& id) {
  for (const auto& f : table())
    if (f.id == id) return &f;
  return nullptr;
}

double expected_gain(const std::string& knob, const StepShares& s, bool cuda) {
  const KnobFacts* f = facts_of(knob);
  const Removes r = !f ? Removes{0.02, 0.02, 0.02, 0.02, 0.02, 0.02} : (cuda ? f->cuda : f->cpu);
  const double removed = r.loader * s.loader + r.h2d * s.h2d + r.launch * s.launch + r.sync * s.sync +
                         r.compute * s.compute + r.comm * s.comm;
  return 1.0 / std::max(0.05, 1.0 - std::min(0.95, removed));
}

std::string kind_of(const std::string& knob, bool cuda) {
  const KnobFacts* f = facts_of(knob);
  if (!f) return "";
  const Removes r = cuda ? f->cuda : f->cpu;
  const std::vector<std::pair<std::string, double>> kinds = {{"loader", r.loader}, {"h2d", r.h2d},   {"launch", r.launch},
                                                             {"sync", r.sync},     {"compute", r.compute}, {"comm", r.comm}};
  auto best = std::max_element(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return best->second > 0 ? best->first : "";
}

double extra_cost_s(const std::string& knob, bool cuda, bool compiled) {
  // Inductor compiling a ResNet-50's forward and backward takes about a minute; a CPU's tiny models seconds.
  const double compile = cuda ? 60.0 : 15.0;
  const KnobFacts* f = facts_of(knob);
  if (!f) return 0.0;
  if (f->cost == TrialCost::Compiles) return compiled ? 0.0 : compile;
  if (compiled && f->cost == TrialCost::RecompilesUnderCompile) return compile;
  return 0.0;
}

std::map<std::string, double> caps_of(const Snapshot& s) {
  std::map<std::string, double> out;
  auto cap = [&](const std::string& knob, double at_most) {
    if (!(at_most > 0)) return;
    auto [it, fresh] = out.emplace(knob, at_most);
    if (!fresh) it->second = std::min(it->second, at_most);
  };
  for (const auto& sw : s.switches) cap(sw.knob, sw.at_most);
  for (const auto& [knob, at_most] : s.caps) {
    cap(knob, at_most);
    for (const auto& d : dependents(knob)) cap(d, at_most);
  }
  return out;
}

std::vector<std::string> dependents(const std::string& knob) {
  std::vector<std::string> out;
  for (const auto& f : table())
    if (f.needs == knob) out.push_back(f.id);
  return out;
}

std::string depends_on(const std::string& knob) {
  const KnobFacts* f = facts_of(knob);
  return f ? f->needs : std::string();
}

}  // namespace tb::engine::search
