// The loader's model in the analysis's findings (client/loader_findings.h).
#include "client/loader_findings.h"

#include <cstdio>

namespace tb::client {

void apply_loader_verdict(const LoaderVerdict& v, std::vector<prof::Finding>& findings) {
  const LoaderAdvice a = v.advice();
  if (!a.known) return;
  for (prof::Finding& f : findings) {
    if (f.kind != prof::FindingKind::LoaderStall) continue;
    f.knob = a.knob;
    f.value = a.value;
    f.max_speedup = a.at_most;
    f.bounded = true;
    if (a.knob.empty()) f.also.clear();
    else if (!a.also.empty()) f.also = a.also;
    // The measured part of the message stays ("waited for data 63.7% of step time (...)"); what to do and its
    // bound are the verdict's.
    char bound[32];
    std::snprintf(bound, sizeof bound, "%.2fx", a.at_most);
    const size_t arrow = f.message.find(" -> ");
    f.message = (arrow == std::string::npos ? f.message : f.message.substr(0, arrow)) + " -> " +
                (a.knob.empty() ? std::string("no loader switch: ") : a.knob + "=" + a.value + ": ") + a.why +
                " (the loader verdict); at most " + bound;
  }
}

}  // namespace tb::client
