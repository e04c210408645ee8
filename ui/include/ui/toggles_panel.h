// One row per knob (from hello.knobs / `tunebench-cli knobs --json`): a checkable switch for bools, a combo
// box for enums, a spin box for ints. Knobs that cannot apply are disabled and carry the engine's reason in
// their tooltip (never silently hidden). User edits emit knobChanged; programmatic updates (setValues, from
// config_applied) do not, so a live run is never echoed its own change.
#pragma once

#include <QHash>
#include <QWidget>
#include <vector>

#include "ui/knob_spec.h"

class QFormLayout;
class QLabel;
class QVBoxLayout;

namespace tb::ui {

class TogglesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TogglesPanel(QWidget* parent = nullptr);
  void setKnobs(const std::vector<KnobSpec>& knobs);
  void setValues(const QHash<QString, QString>& values);  // id -> value text; does not emit
  QString value(const QString& id) const;
  QWidget* editorFor(const QString& id) const;  // for tests
  const std::vector<KnobSpec>& knobs() const { return knobs_; }
  void setLive(bool live);  // shows whether a change is sent to a running child

 signals:
  void knobChanged(const QString& id, const QString& value);

 private:
  std::vector<KnobSpec> knobs_;
  QHash<QString, QWidget*> editors_;
  QVBoxLayout* rows_ = nullptr;
  QLabel* header_ = nullptr;
  bool updating_ = false;
};

}  // namespace tb::ui
