#include "ui/knob_spec.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace tb::ui {

QString knobValueText(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Bool: return v.toBool() ? QStringLiteral("on") : QStringLiteral("off");
    case QJsonValue::Double: {
      const double d = v.toDouble();
      if (d == double(qint64(d))) return QString::number(qint64(d));
      return QString::number(d);
    }
    case QJsonValue::String: return v.toString();
    default: return {};
  }
}

bool knobBoolOn(const QString& text) {
  const QString t = text.trimmed().toLower();
  return t == "on" || t == "true" || t == "1" || t == "yes";
}

Result<std::vector<KnobSpec>> parseKnobs(const QJsonValue& doc) {
  QJsonArray arr;
  if (doc.isArray()) arr = doc.toArray();
  else if (doc.isObject() && doc.toObject().value("knobs").isArray()) arr = doc.toObject().value("knobs").toArray();
  else return Error{R"(no knob list found (expected an array or an object with "knobs"))"};
  std::vector<KnobSpec> out;
  for (const QJsonValue& v : arr) {
    const QJsonObject o = v.toObject();
    KnobSpec k;
    k.id = o.value("id").toString();
    if (k.id.isEmpty()) continue;
    k.title = o.value("title").toString(k.id);
    k.description = o.value("description").toString();
    const QString type = o.value("type").toString("bool").toLower();
    k.type = type == "int" ? KnobSpec::Type::Int : type == "enum" ? KnobSpec::Type::Enum : KnobSpec::Type::Bool;
    k.default_value = knobValueText(o.value("default"));
    k.recommended = knobValueText(o.value("recommended"));
    k.value = o.contains("value") ? knobValueText(o.value("value")) : k.default_value;
    for (const QJsonValue& c : o.value("choices").toArray()) k.choices << knobValueText(c);
    k.min = qint64(o.value("min").toDouble(0));
    k.max = qint64(o.value("max").toDouble(0));
    if (k.type == KnobSpec::Type::Int && k.max <= k.min) k.max = k.min + 1024;
    k.applicable = o.value("applicable").toBool(true);
    k.reason = o.value("reason").toString();
    for (const QJsonValue& v : o.value("unavailable_values").toArray()) k.unavailable << knobValueText(v);
    if (!k.applicable && k.reason.isEmpty()) k.reason = QStringLiteral("not applicable here (no reason given)");
    k.changes_numerics = o.value("changes_numerics").toBool(false);
    k.process_scope = o.value("process_scope").toBool(false);
    for (const QJsonValue& s : o.value("seeds").toArray()) k.seeds << knobValueText(s);
    out.push_back(std::move(k));
  }
  if (out.empty()) return Error{"the knob list is empty"};
  return out;
}

Result<std::vector<KnobSpec>> parseKnobsJson(const QByteArray& json) {
  QJsonParseError pe;
  const QJsonDocument d = QJsonDocument::fromJson(json, &pe);
  if (pe.error != QJsonParseError::NoError)
    return Error{QStringLiteral("knobs JSON: %1 at offset %2").arg(pe.errorString()).arg(pe.offset).toStdString()};
  return parseKnobs(d.isArray() ? QJsonValue(d.array()) : QJsonValue(d.object()));
}

}  // namespace tb::ui
