// tunebench-cli report --session IN.json [--html R.html] [--md R.md] [--json R.json]
// Renders a session document (the GUI's File ▸ Export, engine/session_report.h) as the tuner's report. Without
// an output option it writes all three next to IN.json's stem.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "engine/session_report.h"

namespace tb::cli {

int cmd_report(int argc, char** argv) {
  std::string in, html, md, json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string* out = a == "--session" ? &in : a == "--html" ? &html : a == "--md" ? &md : a == "--json" ? &json : nullptr;
    if (!out || i + 1 >= argc) {
      std::fprintf(stderr, "tunebench-cli: error: report: bad option '%s' (report --session IN.json [--html R.html] "
                   "[--md R.md] [--json R.json])\n", a.c_str());
      return 2;
    }
    *out = argv[++i];
  }
  if (in.empty()) {
    std::fprintf(stderr, "tunebench-cli: error: report: --session IN.json is required\n");
    return 2;
  }
  std::ifstream f(in, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "tunebench-cli: error: report: cannot read '%s'\n", in.c_str());
    return 1;
  }
  std::stringstream text;
  text << f.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) {
    std::fprintf(stderr, "tunebench-cli: error: report: '%s' is not JSON\n", in.c_str());
    return 1;
  }
  if (html.empty() && md.empty() && json.empty()) {
    const std::string stem = in.substr(0, in.rfind('.'));
    html = stem + ".html", md = stem + ".md", json = stem + ".report.json";
  }
  try {
    engine::write_session_report(doc, html, md, json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tunebench-cli: error: report: %s\n", e.what());
    return 1;
  }
  for (const std::string* p : {&html, &md, &json})
    if (!p->empty()) std::printf("%s\n", p->c_str());
  return 0;
}

}  // namespace tb::cli
