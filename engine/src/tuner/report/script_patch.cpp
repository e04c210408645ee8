#include "engine/script_patch.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "knobs/table.h"
#include "tuner/report/report_parts.h"
#include "tuner/report/patch_gain.h"
#include "tuner/report/report_script.h"

namespace tb::engine {
namespace fs = std::filesystem;

namespace {

// Replaces `remove` lines from `at` (0-based) with `insert`.
struct LineEdit {
  size_t at = 0;
  size_t remove = 0;
  std::vector<std::string> insert;
};

struct File {
  std::vector<std::string> lines;
  bool ends_with_newline = true;
  std::vector<LineEdit> edits;
};

bool read_lines(const std::string& path, File& f) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  f.ends_with_newline = text.empty() || text.back() == '\n';
  std::string line;
  std::istringstream lines(text);
  while (std::getline(lines, line)) f.lines.push_back(line);
  return true;
}

std::string indent_of(const std::string& line) { return line.substr(0, line.find_first_not_of(" \t")); }

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// The parentheses still open at the end of `text` (strings and comments skipped).
int open_parens(const std::string& text) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    }
  }
  return depth;
}

// The lines [first, last] of the statement that starts at line `at` (its brackets balanced), or false.
bool statement_at(const File& f, size_t at, size_t& last) {
  std::string text;
  for (size_t i = at; i < f.lines.size() && i < at + 40; ++i) {
    text += f.lines[i] + "\n";
    if (open_parens(text) <= 0) {
      last = i;
      return true;
    }
  }
  return false;
}

// A comment line above an edit: what it does and how much it paid.
std::string note_line(const std::string& indent, const std::string& what, const std::string& gain) {
  return indent + "# tunebench: " + what + (gain.empty() ? "" : ": " + gain);
}

std::string py_bool(const std::string& v) { return v == "on" ? "True" : "False"; }


// A call over several lines whose `)` stands on its own line, its arguments one per line ending with a
// comma (the style formatters write): the new keyword arguments go in as lines of their own, in that style.
bool edit_call_lines(const std::vector<std::string>& call, const std::vector<std::pair<std::string, std::string>>& args,
                     std::vector<std::string>& out) {
  if (call.size() < 3 || trim(call.back()).rfind(")", 0) != 0) return false;
  const std::string& last_arg = call[call.size() - 2];
  if (trim(last_arg).empty() || trim(last_arg).back() != ',') return false;
  out.assign(call.begin(), call.end() - 1);
  for (const auto& [name, value] : args) {
    const std::regex existing("^(\\s*" + name + "\\s*=\\s*)[^,]*,\\s*$");
    bool replaced = false;
    for (auto& l : out)
      if (std::regex_match(l, existing)) {
        l = indent_of(l) + name + "=" + value + ",";
        replaced = true;
      }
    if (!replaced) out.push_back(indent_of(last_arg) + name + "=" + value + ",");
  }
  out.push_back(call.back());
  return true;
}

std::string value_in(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it == c.end() ? std::string() : it->second;
}

// The model's variable in an optimizer's construction: "model" of `SGD(model.parameters(), ...)`.
std::string model_of_optimizer(const std::string& code) {
  std::smatch m;
  static const std::regex params(R"(([A-Za-z_][\w.]*)\.parameters\s*\()");
  return std::regex_search(code, m, params) ? m[1].str() : "";
}

// The first call in `code` whose single first argument is a name: {callee, argument} of `model(images)`.
bool model_call_in(const std::string& code, std::string& callee, std::string& arg, size_t& arg_at) {
  static const std::regex call(R"(([A-Za-z_][\w.]*)\(\s*([A-Za-z_][\w.]*(\[[^\]]*\])?)\s*[,)])");
  std::smatch m;
  if (!std::regex_search(code, m, call)) return false;
  callee = m[1].str();
  arg = m[2].str();
  arg_at = static_cast<size_t>(m.position(2));
  return true;
}

// The line after the script's last top-level import before its first definition: where setup goes.
bool setup_line(const File& f, size_t& at) {
  bool found = false;
  for (size_t i = 0; i < f.lines.size(); ++i) {
    const std::string& l = f.lines[i];
    if (l.rfind("def ", 0) == 0 || l.rfind("class ", 0) == 0 || l.rfind("if __name__", 0) == 0) break;
    if (l.rfind("import ", 0) == 0 || l.rfind("from ", 0) == 0) {
      size_t last = i;
      if (!statement_at(f, i, last)) return false;
      at = last + 1;
      found = true;
      i = last;
    }
  }
  return found;
}

bool imports(const File& f, const std::string& module) {
  for (const auto& l : f.lines)
    if (l.rfind("import " + module, 0) == 0 || l.rfind("from " + module + " ", 0) == 0 ||
        l.rfind("from " + module + ".", 0) == 0)
      return true;
  return false;
}

// The diff of one file's edits (sorted, not overlapping). A file without a newline at its end keeps it so:
// its last line, and the last line replacing it, are marked as the format says.
std::string file_diff(const std::string& path, const File& f) {
  if (f.edits.empty()) return "";
  const size_t n = f.lines.size();
  const size_t context = 3;
  std::ostringstream out;
  out << "--- a/" << path << "\n+++ b/" << path << "\n";
  auto emit = [&](char mark, const std::string& text, bool no_newline) {
    out << mark << text << "\n";
    if (no_newline) out << "\\ No newline at end of file\n";
  };
  const bool open_end = !f.ends_with_newline;
  long offset = 0;  // new minus old lines before this hunk
  for (size_t e = 0; e < f.edits.size();) {
    // Edits within 2 * context lines of each other share a hunk.
    size_t last = e;
    while (last + 1 < f.edits.size() &&
           f.edits[last + 1].at <= f.edits[last].at + f.edits[last].remove + 2 * context)
      ++last;
    const size_t from = f.edits[e].at >= context ? f.edits[e].at - context : 0;
    const size_t to = std::min(n, f.edits[last].at + f.edits[last].remove + context);
    long added = 0, removed = 0;
    for (size_t k = e; k <= last; ++k) {
      added += static_cast<long>(f.edits[k].insert.size());
      removed += static_cast<long>(f.edits[k].remove);
    }
    const long old_len = static_cast<long>(to - from);
    const long new_len = old_len - removed + added;
    const long old_start = old_len ? static_cast<long>(from) + 1 : static_cast<long>(from);
    const long new_start = new_len ? static_cast<long>(from) + 1 + offset : static_cast<long>(from) + offset;
    out << "@@ -" << old_start << "," << old_len << " +" << new_start << "," << new_len << " @@\n";
    size_t i = from;
    for (size_t k = e; k <= last; ++k) {
      const LineEdit& ed = f.edits[k];
      for (; i < ed.at; ++i) emit(' ', f.lines[i], open_end && i + 1 == n);
      // Within an edit, the lines it keeps (a call's unchanged arguments) show as context: the longest
      // common subsequence of the removed and the inserted lines.
      const size_t nr = ed.remove, ni = ed.insert.size();
      std::vector<std::vector<uint16_t>> lcs(nr + 1, std::vector<uint16_t>(ni + 1, 0));
      for (size_t x = nr; x-- > 0;)
        for (size_t y = ni; y-- > 0;)
          lcs[x][y] = f.lines[ed.at + x] == ed.insert[y] ? uint16_t(lcs[x + 1][y + 1] + 1)
                                                          : std::max(lcs[x + 1][y], lcs[x][y + 1]);
      const bool replaces_end = open_end && nr > 0 && ed.at + nr == n;
      size_t x = 0, y = 0;
      while (x < nr || y < ni) {
        const bool old_last = ed.at + x + 1 == n;
        if (x < nr && y < ni && f.lines[ed.at + x] == ed.insert[y]) {
          emit(' ', ed.insert[y], replaces_end && old_last && y + 1 == ni);
          ++x, ++y;
        } else if (x < nr && (y == ni || lcs[x + 1][y] >= lcs[x][y + 1])) {
          emit('-', f.lines[ed.at + x], open_end && old_last);
          ++x;
        } else {
          emit('+', ed.insert[y], replaces_end && y + 1 == ni);
          ++y;
        }
      }
      i += nr;
    }
    for (; i < to; ++i) emit(' ', f.lines[i], open_end && i + 1 == n);
    offset += added - removed;
    e = last + 1;
  }
  return out.str();
}

}  // namespace

std::string unified_diff(const std::string& path, const std::vector<std::string>& before,
                         const std::vector<std::string>& after) {
  // Equal head and tail, one edit between: enough for the callers that have two versions of one change.
  File f;
  f.lines = before;
  size_t head = 0;
  while (head < before.size() && head < after.size() && before[head] == after[head]) ++head;
  size_t tail = 0;
  while (tail < before.size() - head && tail < after.size() - head &&
         before[before.size() - 1 - tail] == after[after.size() - 1 - tail])
    ++tail;
  if (head == before.size() && head == after.size()) return "";
  LineEdit ed;
  ed.at = head;
  ed.remove = before.size() - head - tail;
  ed.insert.assign(after.begin() + static_cast<long>(head), after.end() - static_cast<long>(tail));
  f.edits.push_back(ed);
  return file_diff(path, f);
}

namespace {

// One patch being made: the tune's result, the script's files as read, the edits placed and the knobs left out.
class Patcher {
 public:
  Patcher(const TuneResult& r, const std::string& base_dir, const measure::RatioInterval& checked)
      : r_(r), f_(r.final_config), base_dir_(base_dir), checked_(checked) {}

  ScriptPatch make() {
    const auto& env = r_.environment;
    if (!env.is_object() || env.value("model", std::string()).rfind("script:", 0) != 0) return p_;
    script_ = env.value("model", std::string()).substr(7);
    changed_ = changed_knobs(r_.baseline, f_);
    if (changed_.empty()) return p_;
    sources_ = env.value("source", nlohmann::json::array());
    device_ = env.value("device", std::string("cpu")).rfind("cuda", 0) == 0 ? "cuda" : "cpu";
    loader_calls();
    forward_and_compile();
    zero_grad();
    settings();
    write_diff();
    return p_;
  }

 private:
  std::string gain(const std::string& knob) const { return patch_gain(r_, knob, checked_); }
  bool has(const char* k) const { return std::find(changed_.begin(), changed_.end(), k) != changed_.end(); }
  const nlohmann::json* first_source(const std::string& kind) const {
    for (const auto& s : sources_)
      if (s.value("kind", std::string()) == kind) return &s;
    return nullptr;
  }
  // A file of the script, read once (by absolute path); nullptr when it cannot be read.
  File* file(const std::string& path) {
    std::error_code ec;
    const std::string key = fs::absolute(path, ec).lexically_normal().string();
    auto it = files_.find(key);
    if (it != files_.end()) return &it->second;
    File fl;
    if (!read_lines(key, fl)) return nullptr;
    return &files_.emplace(key, std::move(fl)).first->second;
  }
  void left_out(const std::string& knob, const std::string& why) {
    p_.unplaced.push_back(knob + "=" + value_in(f_, knob) + ": " + why);
  }
  void add(File& fl, LineEdit ed, const std::string& what) {
    fl.edits.push_back(std::move(ed));
    p_.placed.push_back(what);
  }
  void loader_calls();
  void forward_and_compile();
  void zero_grad();
  void settings();
  void write_diff();

  const TuneResult& r_;
  const Config& f_;
  const std::string& base_dir_;
  const measure::RatioInterval& checked_;
  ScriptPatch p_;
  std::string script_, device_;
  std::vector<std::string> changed_;
  nlohmann::json sources_;
  std::map<std::string, File> files_;  // by absolute path
};

void Patcher::loader_calls() {
  // --- the DataLoader calls: every kept loader knob as its keyword argument.
  // (The knob table's dataloader_arg: which knob is which argument.)
  std::map<std::string, std::string> changed_values;
  std::vector<std::string> loader_knobs;
  for (const auto& row : knobs::table())
    if (!row.dataloader_arg.empty() && has(row.id.c_str())) {
      changed_values[row.id] = value_in(f_, row.id);
      loader_knobs.push_back(row.id);
    }
  const auto loader_args = knobs::dataloader_arguments(changed_values);
  if (!loader_args.empty()) {
    std::string what, gains;
    for (size_t i = 0; i < loader_knobs.size(); ++i) {
      what += (i ? ", " : "") + loader_args[i].first + "=" + loader_args[i].second;
      const std::string g = gain(loader_knobs[i]);
      if (!g.empty()) gains += (gains.empty() ? "" : "; ") + loader_knobs[i] + " " + g;
    }
    bool any = false;
    std::vector<std::string> seen;
    for (const auto& s : sources_) {
      if (s.value("kind", std::string()) != "dataloader") continue;
      const std::string where = s.value("file", std::string()) + ":" + std::to_string(s.value("line", 0));
      if (std::find(seen.begin(), seen.end(), where) != seen.end()) continue;
      seen.push_back(where);
      File* fl = file(s.value("file", std::string()));
      const size_t at = size_t(std::max(1, s.value("line", 1))) - 1;
      size_t last = at;
      if (!fl || at >= fl->lines.size() || !statement_at(*fl, at, last) ||
          fl->lines[at].find("DataLoader") == std::string::npos)
        continue;
      const std::vector<std::string> call(fl->lines.begin() + static_cast<long>(at),
                                          fl->lines.begin() + static_cast<long>(last) + 1);
      LineEdit ed{at, last - at + 1, {note_line(indent_of(fl->lines[at]), "DataLoader(" + what + ")", gains)}};
      std::vector<std::string> edited;
      if (edit_call_lines(call, loader_args, edited)) {
        ed.insert.insert(ed.insert.end(), edited.begin(), edited.end());
      } else {
        std::string text;
        for (size_t i = at; i <= last; ++i) text += (i > at ? "\n" : "") + fl->lines[i];
        std::istringstream lines(edit_call(text, loader_args));
        for (std::string l; std::getline(lines, l);) ed.insert.push_back(l);
      }
      add(*fl, std::move(ed), where + ": DataLoader(" + what + ")");
      any = true;
    }
    if (!any)
      for (const auto& k : loader_knobs) left_out(k, "no DataLoader(...) call of the script's own was found to edit");
  }

}

void Patcher::forward_and_compile() {
  // --- the model's training forward: autocast around it, channels_last inputs.
  const nlohmann::json* fwd = first_source("forward");
  const nlohmann::json* opt = first_source("optimizer");
  const std::string model_var = opt ? model_of_optimizer(opt->value("code", std::string())) : "";
  std::vector<std::string> after_optimizer;  // lines to insert after the optimizer's construction
  std::string after_optimizer_what;
  const bool amp = has("amp"), cl = has("channels_last") && value_in(f_, "channels_last") == "on";
  if (amp && value_in(f_, "amp") == "fp16") {
    left_out("amp", "fp16 autocast needs a torch.amp.GradScaler in the training step; edit it in by hand");
  }
  const bool bf16 = amp && value_in(f_, "amp") == "bf16";
  if (bf16 || cl) {
    File* fl = fwd ? file(fwd->value("file", std::string())) : nullptr;
    const size_t at = fwd ? size_t(std::max(1, fwd->value("line", 1))) - 1 : 0;
    size_t last = at;
    if (!fl || at >= fl->lines.size() || !statement_at(*fl, at, last) || last != at) {
      if (bf16) left_out("amp", "the model's forward call was not found on one line");
      if (cl) left_out("channels_last", "the model's forward call was not found on one line");
    } else {
      std::string stmt = fl->lines[at];
      const std::string ind = indent_of(stmt);
      std::vector<std::string> notes;
      if (cl) {
        std::string callee, arg;
        size_t arg_at = 0;
        if (model_call_in(stmt, callee, arg, arg_at)) {
          stmt.replace(arg_at, arg.size(), arg + ".contiguous(memory_format=torch.channels_last)");
          after_optimizer.push_back((model_var.empty() ? callee : model_var) +
                                    ".to(memory_format=torch.channels_last)  # tunebench: channels_last weights");
          after_optimizer_what += "channels_last weights";
          notes.push_back(note_line(ind, "channels_last inputs", gain("channels_last")));
        } else {
          left_out("channels_last", "no model(input) call on the forward's line");
        }
      }
      LineEdit ed{at, 1, notes};
      if (bf16) {
        ed.insert.push_back(ind + "with torch.autocast(\"" + device_ + "\", dtype=torch.bfloat16):  # tunebench: amp=bf16: " +
                            gain("amp"));
        ed.insert.push_back(ind + "    " + trim(stmt));
      } else {
        ed.insert.push_back(stmt);
      }
      if (ed.insert.size() > 1 || ed.insert[0] != fl->lines[at])
        add(*fl, std::move(ed),
            fwd->value("file", std::string()) + ":" + std::to_string(at + 1) + ": " +
                (bf16 ? std::string("autocast(bfloat16) around the forward") : std::string()) +
                (bf16 && cl ? ", " : "") + (cl ? "channels_last inputs" : ""));
    }
  }
  if (has("compile") && value_in(f_, "compile") == "on") {
    if (model_var.empty()) left_out("compile", "the model was not found in the optimizer's construction");
    else after_optimizer.push_back(model_var + ".compile()  # tunebench: compile=on: " + gain("compile"));
  }
  if (!after_optimizer.empty()) {
    File* fl = opt ? file(opt->value("file", std::string())) : nullptr;
    const size_t at = opt ? size_t(std::max(1, opt->value("line", 1))) - 1 : 0;
    size_t last = at;
    if (!fl || at >= fl->lines.size() || !statement_at(*fl, at, last)) {
      if (has("compile")) left_out("compile", "the optimizer's construction was not found");
      if (cl) left_out("channels_last", "the optimizer's construction was not found (the weights' format goes there)");
    } else {
      const std::string ind = indent_of(fl->lines[at]);
      LineEdit ed{last + 1, 0, {}};
      for (const auto& l : after_optimizer) ed.insert.push_back(ind + l);
      add(*fl, std::move(ed), opt->value("file", std::string()) + ":" + std::to_string(last + 2) + ": " +
                                  (has("compile") ? "model.compile()" : "") +
                                  (has("compile") && !after_optimizer_what.empty() ? ", " : "") + after_optimizer_what);
    }
  }

}

void Patcher::zero_grad() {
  // --- zero_grad(set_to_none=...) at every call in the files that made an optimizer.
  if (has("zero_grad_none")) {
    bool any = false;
    const std::string v = py_bool(value_in(f_, "zero_grad_none"));
    for (const auto& s : sources_) {
      if (s.value("kind", std::string()) != "optimizer") continue;
      File* fl = file(s.value("file", std::string()));
      if (!fl) continue;
      for (size_t i = 0; i < fl->lines.size(); ++i) {
        const std::string& l = fl->lines[i];
        const auto z = l.find(".zero_grad(");
        if (z == std::string::npos || l.find('(') != z + 10 ||
            std::any_of(fl->edits.begin(), fl->edits.end(), [&](const LineEdit& e) { return e.at == i && e.remove; }))
          continue;
        add(*fl, LineEdit{i, 1, {note_line(indent_of(l), "zero_grad(set_to_none=" + v + ")", gain("zero_grad_none")),
                                 edit_call(l, {{"set_to_none", v}})}},
            s.value("file", std::string()) + ":" + std::to_string(i + 1) + ": zero_grad(set_to_none=" + v + ")");
        any = true;
      }
    }
    if (!any) left_out("zero_grad_none", "no optimizer.zero_grad() call was found");
  }

}

void Patcher::settings() {
  // --- process-wide settings, after the script's imports.
  std::vector<std::string> setup;
  File* main_file = file(script_);
  for (const auto& k : changed_) {
    const std::string v = value_in(f_, k);
    const std::string g = gain(k);
    const knobs::Row* row = knobs::find(k);
    if (!row || row->patch != "python_set") {
      // Placed by a rule above (the DataLoader's arguments, zero_grad, autocast, channels_last, compile), or by
      // none: the table says why.
      if (!row || row->patch.empty())
        left_out(k, row && !row->patch_left_out.empty() ? row->patch_left_out : "no edit of the script's code sets it");
      continue;
    }
    const auto lines = knobs::python_lines(*row, v, value_in(f_, "workers").empty() ? "0" : value_in(f_, "workers"));
    if (lines.empty()) {
      std::string why = row->patch_left_out.empty() ? "no line of the script sets " + k + "=" + v : row->patch_left_out;
      for (size_t at = why.find("{value}"); at != std::string::npos; at = why.find("{value}")) why.replace(at, 7, v);
      left_out(k, why);
      continue;
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      // What each line is for, on its first: the knob, its value and the figure measured for it.
      setup.push_back(i == 0 ? lines[i] + "  # tunebench: " + k + "=" + v + ": " + g : lines[i]);
      if (lines[i].find("os.") != std::string::npos && main_file && !imports(*main_file, "os") &&
          std::find(setup.begin(), setup.end(), "import os") == setup.end())
        setup.insert(setup.begin(), "import os");
    }
  }
  if (!setup.empty()) {
    size_t at = 0;
    if (!main_file || !setup_line(*main_file, at) || !imports(*main_file, "torch")) {
      p_.unplaced.push_back("settings after the imports (" + std::to_string(setup.size()) +
                           " lines): the script's top-level `import torch` was not found");
    } else {
      add(*main_file, LineEdit{at, 0, setup}, script_ + ":" + std::to_string(at + 1) + ": " + trim(setup.back()));
    }
  }

}

void Patcher::write_diff() {
  // --- the diff, file by file; edits in line order, one edit per place.
  for (auto& [path, fl] : files_) {
    std::sort(fl.edits.begin(), fl.edits.end(), [](const LineEdit& a, const LineEdit& b) { return a.at < b.at; });
    std::vector<LineEdit> kept;
    for (auto& e : fl.edits) {
      if (!kept.empty() && e.at < kept.back().at + kept.back().remove) {
        p_.unplaced.push_back("an edit at " + path + ":" + std::to_string(e.at + 1) + " overlaps another");
        continue;
      }
      kept.push_back(std::move(e));
    }
    fl.edits = std::move(kept);
    std::error_code ec;
    std::string shown = fs::relative(path, fs::absolute(base_dir_, ec), ec).string();
    if (ec || shown.empty() || shown.rfind("..", 0) == 0) shown = path;
    p_.diff += file_diff(shown, fl);
    if (fl.edits.empty()) continue;
    // The file as the patch leaves it: edits from the last, so earlier line numbers stay true.
    std::vector<std::string> lines = fl.lines;
    for (auto e = fl.edits.rbegin(); e != fl.edits.rend(); ++e) {
      lines.erase(lines.begin() + long(e->at), lines.begin() + long(e->at + e->remove));
      lines.insert(lines.begin() + long(e->at), e->insert.begin(), e->insert.end());
    }
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) text += lines[i] + (i + 1 < lines.size() || fl.ends_with_newline ? "\n" : "");
    p_.files.push_back({path, std::move(text)});
  }
}

}  // namespace

ScriptPatch script_patch(const TuneResult& r, const std::string& base_dir, const measure::RatioInterval& checked) {
  return Patcher(r, base_dir, checked).make();
}

}  // namespace tb::engine
