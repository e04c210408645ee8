// A knob as the engine describes it (hello.knobs[] / `tunebench-cli knobs --json`), parsed into a plain
// struct so widgets never poke at JSON. Values travel as text ("on"/"off", "4", "fp16"), like the engine's
// Config; JSON booleans and numbers from the child are converted on parse.
#pragma once

#include <QJsonArray>
#include <QJsonValue>
#include <QString>
#include <QStringList>
#include <vector>

#include "base/result.h"

namespace tb::ui {

struct KnobSpec {
  enum class Type { Bool, Int, Enum };
  QString id, title, description;
  Type type = Type::Bool;
  QString default_value, recommended, value;
  QStringList choices;
  qint64 min = 0, max = 0;
  bool applicable = true;
  QString reason;          // why not applicable (non-empty when !applicable), or why some values are unavailable
  QStringList unavailable; // values that cannot take effect here (shown disabled)
  bool changes_numerics = false;
  bool process_scope = false;  // takes effect when a run starts (cpu_allocator, cudnn_benchmark)
  QStringList seeds;
};

// Text form of a JSON knob value: true -> "on", 4 -> "4", "fp16" -> "fp16".
QString knobValueText(const QJsonValue& v);
bool knobBoolOn(const QString& text);  // "on", "true", "1", "yes"

// Parses an array of knob objects. Accepts a bare array, {"knobs": [...]} or a hello message. Entries without
// an id are skipped; a one-line error when the document is not usable (no list, an empty one, bad JSON).
Result<std::vector<KnobSpec>> parseKnobs(const QJsonValue& doc);
Result<std::vector<KnobSpec>> parseKnobsJson(const QByteArray& json);

}  // namespace tb::ui
