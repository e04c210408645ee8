#include "ui/toggles_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QStandardItemModel>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

namespace tb::ui {

TogglesPanel::TogglesPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  header_ = new QLabel(tr("Knobs appear when a run starts (or File ▸ Load knobs)."), this);
  header_->setWordWrap(true);
  outer->addWidget(header_);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* inner = new QWidget(scroll);
  rows_ = new QVBoxLayout(inner);
  rows_->setContentsMargins(0, 0, 0, 0);
  rows_->setSpacing(2);
  rows_->addStretch(1);
  scroll->setWidget(inner);
  outer->addWidget(scroll, 1);
}

static QString tooltipFor(const KnobSpec& k) {
  QString tip = QStringLiteral("<b>%1</b> (<code>%2</code>)<br>%3").arg(k.title.toHtmlEscaped(), k.id, k.description.toHtmlEscaped());
  tip += QStringLiteral("<br>default: <code>%1</code>, recommended: <code>%2</code>").arg(k.default_value, k.recommended);
  if (k.changes_numerics) tip += QStringLiteral("<br>⚠ may change numerics: the loss-drift guard runs");
  if (k.process_scope)
    tip += QStringLiteral("<br>takes effect when a run starts: a running run follows only some changes (the run says "
                          "which in the log); the auto-tuner measures it in fresh processes");
  if (!k.seeds.isEmpty()) tip += QStringLiteral("<br>seeds: %1").arg(k.seeds.join(", "));
  if (!k.applicable) tip += QStringLiteral("<br><b>Not applicable:</b> %1").arg(k.reason.toHtmlEscaped());
  return tip;
}

void TogglesPanel::setKnobs(const std::vector<KnobSpec>& knobs) {
  knobs_ = knobs;
  editors_.clear();
  // Remove old rows (everything but the trailing stretch).
  while (rows_->count() > 1) {
    QLayoutItem* it = rows_->takeAt(0);
    if (it->widget()) it->widget()->deleteLater();
    delete it;
  }
  header_->setText(knobs.empty() ? tr("No knobs.") : tr("%1 knobs — one click each; hover for why.").arg(knobs.size()));
  int idx = 0;
  for (const KnobSpec& k : knobs_) {
    auto* row = new QWidget;
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(2, 1, 2, 1);
    const QString tip = tooltipFor(k);
    QWidget* editor = nullptr;
    if (k.type == KnobSpec::Type::Bool) {
      auto* cb = new QCheckBox(k.title, row);
      cb->setChecked(knobBoolOn(k.value));
      connect(cb, &QCheckBox::toggled, this, [this, id = k.id](bool on) {
        if (!updating_) emit knobChanged(id, on ? "on" : "off");
      });
      h->addWidget(cb, 1);
      editor = cb;
    } else {
      auto* label = new QLabel(k.title, row);
      label->setToolTip(tip);
      label->setEnabled(k.applicable);
      h->addWidget(label, 1);
      if (k.type == KnobSpec::Type::Int) {
        auto* sb = new QSpinBox(row);
        sb->setRange(int(std::max<qint64>(k.min, INT_MIN)), int(std::min<qint64>(k.max, INT_MAX)));
        sb->setValue(k.value.toInt());
        sb->setKeyboardTracking(false);  // one set per committed value, not per keystroke
        connect(sb, &QSpinBox::valueChanged, this, [this, id = k.id](int v) {
          if (!updating_) emit knobChanged(id, QString::number(v));
        });
        editor = sb;
      } else {
        auto* combo = new QComboBox(row);
        combo->addItems(k.choices.isEmpty() ? QStringList{k.value} : k.choices);
        combo->setCurrentText(k.value);
        // Values that cannot take effect here stay visible (the user learns they exist) but cannot be picked.
        if (auto* model = qobject_cast<QStandardItemModel*>(combo->model())) {
          for (const QString& v : k.unavailable) {
            const int i = combo->findText(v);
            if (QStandardItem* item = i >= 0 ? model->item(i) : nullptr) {
              item->setEnabled(false);
              item->setToolTip(k.reason);
            }
          }
        }
        connect(combo, &QComboBox::currentTextChanged, this, [this, id = k.id](const QString& v) {
          if (!updating_) emit knobChanged(id, v);
        });
        editor = combo;
      }
      h->addWidget(editor);
    }
    editor->setObjectName(QStringLiteral("knob_") + k.id);
    editor->setToolTip(tip);
    editor->setEnabled(k.applicable);
    if (!k.applicable) {
      auto* why = new QLabel(QStringLiteral("n/a"), row);
      why->setToolTip(tip);
      why->setStyleSheet("color: palette(mid); font-size: small;");
      h->addWidget(why);
    }
    if (k.recommended != k.default_value && k.applicable) row->setStatusTip(tr("recommended: %1").arg(k.recommended));
    rows_->insertWidget(idx++, row);
    editors_.insert(k.id, editor);
  }
}

void TogglesPanel::setValues(const QHash<QString, QString>& values) {
  updating_ = true;
  for (auto it = values.begin(); it != values.end(); ++it) {
    QWidget* w = editors_.value(it.key());
    for (auto& k : knobs_)
      if (k.id == it.key()) k.value = it.value();
    if (!w) continue;
    QSignalBlocker block(w);
    if (auto* cb = qobject_cast<QCheckBox*>(w)) cb->setChecked(knobBoolOn(it.value()));
    else if (auto* sb = qobject_cast<QSpinBox*>(w)) sb->setValue(it.value().toInt());
    else if (auto* co = qobject_cast<QComboBox*>(w)) co->setCurrentText(it.value());
  }
  updating_ = false;
}

QString TogglesPanel::value(const QString& id) const {
  QWidget* w = editors_.value(id);
  if (auto* cb = qobject_cast<QCheckBox*>(w)) return cb->isChecked() ? "on" : "off";
  if (auto* sb = qobject_cast<QSpinBox*>(w)) return QString::number(sb->value());
  if (auto* co = qobject_cast<QComboBox*>(w)) return co->currentText();
  return {};
}

QWidget* TogglesPanel::editorFor(const QString& id) const { return editors_.value(id); }

void TogglesPanel::setLive(bool live) {
  if (knobs_.empty()) return;
  header_->setText(live ? tr("%1 knobs — a change is applied live at the next step.").arg(knobs_.size())
                        : tr("%1 knobs — changes apply to the next run.").arg(knobs_.size()));
}

}  // namespace tb::ui
