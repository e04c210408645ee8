#include "ui/live_loader.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QThread>
#include <algorithm>

namespace tb::ui {

tb::client::LoaderVerdict liveLoaderVerdict(const RunRecord& rec, const QJsonObject& msg) {
  const QByteArray text = QJsonDocument(msg.value("parts").toArray()).toJson(QJsonDocument::Compact);
  const nlohmann::json parts = nlohmann::json::parse(text.constData(), text.constData() + text.size(), nullptr, false);
  int64_t samples = 0, wall = 0, wait = 0, h2d = 0, after_first = 0;
  for (size_t k = 0; k < rec.steps.size(); ++k) {
    const StepSample& s = rec.steps[k];
    if (k > 0) after_first += int64_t(s.samples);
    if (s.warmup || s.traced) continue;
    samples += int64_t(s.samples);
    wall += s.wall_ns;
    wait += s.data_wait_ns;
    h2d += s.h2d_ns;
  }
  const auto cpu_ns = static_cast<int64_t>(msg.value("cpu_ns").toDouble(0));
  auto v = tb::client::loader_verdict_of_run(parts, cpu_ns, samples, wall, wait, after_first,
                                             std::max(1, QThread::idealThreadCount()));
  v.machine_cores = v.cores;
  // The engine's steps time their batches' copies (its message says so); a script's do not.
  if (msg.value("transfer").toBool(false)) v.add_transfer(h2d, wall);
  return v;
}

tb::client::LoaderVerdict loaderVerdictAtEnd(const RunRecord& rec, const QJsonObject& summary) {
  if (!summary.value("loader_parts").isArray()) return {};
  QJsonObject msg{{"parts", summary.value("loader_parts")}};
  if (summary.contains("cpu_ns")) msg["cpu_ns"] = summary.value("cpu_ns");
  return liveLoaderVerdict(rec, msg);
}

}  // namespace tb::ui
