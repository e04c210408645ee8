// What the GUI says when an Auto-tune ends: the protocol's tune_done message (engine/report.h
// tune_done_message) as the dialog's text. A tune that ends early says why; a headline comes with its
// interval and how it was measured; no knob kept says so instead of "Speed-up ×1.00".
#pragma once

#include <QJsonObject>
#include <QString>

namespace tb::ui {

struct TuneSummary {
  QString title;   // "×1.47 faster" or "No change beat the baseline"
  QString detail;  // interval, kept knobs, budget used and why it ended, noise
};

TuneSummary tuneSummary(const QJsonObject& tune_done);

}  // namespace tb::ui
