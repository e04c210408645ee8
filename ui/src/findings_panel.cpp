#include "ui/findings_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ui/knob_spec.h"

namespace tb::ui {

FindingsPanel::FindingsPanel(QWidget* parent) : QWidget(parent) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  empty_ = new QLabel(tr("No findings yet: open a trace or start a run."), this);
  empty_->setObjectName("findings_empty");
  lay->addWidget(empty_);
  tree_ = new QTreeWidget(this);
  tree_->setColumnCount(4);
  tree_->setHeaderLabels({tr("Finding"), tr("Share"), tr("Up to"), tr("Fix")});
  tree_->setRootIsDecorated(false);
  tree_->setAlternatingRowColors(true);
  tree_->setWordWrap(true);
  tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  tree_->header()->setStretchLastSection(false);
  lay->addWidget(tree_, 1);
  connect(tree_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* it, int) { activate(tree_->indexOfTopLevelItem(it)); });
}

void FindingsPanel::activate(int row) {
  if (row < 0 || size_t(row) >= entries_.size()) return;
  const FindingEntry& e = entries_[size_t(row)];
  tree_->setCurrentItem(tree_->topLevelItem(row));
  if (e.t1 > e.t0) emit evidenceRequested(e.t0, e.t1);
}

void FindingsPanel::setTraceFindings(const std::vector<tb::prof::Finding>& findings) {
  std::erase_if(entries_, [](const FindingEntry& e) { return e.source == "trace"; });
  std::vector<FindingEntry> add;
  for (const auto& f : findings) {
    FindingEntry e;
    e.id = QString::fromStdString(f.id);
    e.message = QString::fromStdString(f.message);
    e.knob = QString::fromStdString(f.knob);
    e.value = QString::fromStdString(f.value);
    e.share = f.share;
    e.max_speedup = f.bounded ? f.max_speedup : 1.0;  // too few steps: no bound shown
    e.t0 = f.evidence.t0;
    e.t1 = f.evidence.t1;
    e.source = "trace";
    add.push_back(e);
  }
  entries_.insert(entries_.begin(), add.begin(), add.end());
  rebuild();
}

void FindingsPanel::addRunFinding(const QJsonObject& m) {
  FindingEntry e;
  e.id = m.value("kind").toString();
  e.message = m.value("message").toString();
  e.knob = m.value("knob").toString();
  e.value = knobValueText(m.value("value"));
  e.share = m.value("share").toDouble();
  e.max_speedup = m.value("max_speedup").toDouble(1);
  e.source = "run";
  // The same finding repeats every trace chunk: replace, don't pile up.
  std::erase_if(entries_, [&](const FindingEntry& x) { return x.source == "run" && x.id == e.id && x.knob == e.knob; });
  entries_.push_back(e);
  rebuild();
}

void FindingsPanel::setTryGate(std::function<QString(const FindingEntry&)> gate) {
  gate_ = std::move(gate);
  rebuild();
}

void FindingsPanel::applyKnobValues(const QHash<QString, QString>& values) {
  std::erase_if(entries_, [&](const FindingEntry& e) {
    return !e.knob.isEmpty() && values.contains(e.knob) && values.value(e.knob) == e.value;
  });
  rebuild();
}

QString FindingsPanel::tryBlockedReason(int row) const {
  if (row < 0 || row >= static_cast<int>(entries_.size()) || entries_[size_t(row)].knob.isEmpty()) return tr("no knob");
  return gate_ ? gate_(entries_[size_t(row)]) : QString();
}

void FindingsPanel::setEmptyText(const QString& text) {
  empty_->setText(text.isEmpty() ? tr("No findings yet: open a trace or start a run.") : text);
  empty_->setWordWrap(true);
}

void FindingsPanel::clearRunFindings() {
  std::erase_if(entries_, [](const FindingEntry& e) { return e.source == "run"; });
  rebuild();
}

void FindingsPanel::rebuild() {
  tree_->clear();
  empty_->setVisible(entries_.empty());
  for (size_t i = 0; i < entries_.size(); ++i) {
    const FindingEntry& e = entries_[i];
    auto* it = new QTreeWidgetItem(tree_);
    it->setText(0, e.message);
    it->setToolTip(0, e.message + (e.t1 > e.t0 ? tr("\n(click: show the evidence on the timeline)") : QString()));
    it->setText(1, QStringLiteral("%1%").arg(e.share * 100, 0, 'f', 1));
    it->setText(2, e.max_speedup > 1.0005 ? QStringLiteral("×%1").arg(e.max_speedup, 0, 'f', 2) : QStringLiteral("–"));
    if (!e.knob.isEmpty()) {
      // "Try" alone: "Try cpu_allocator=glibc_tuned" took the narrow dock's width from the finding's own text
      // (cut to "the ..."); the setting is in the tooltip and in the finding.
      auto* b = new QPushButton(tr("Try"), tree_);
      b->setObjectName(QStringLiteral("try_") + e.knob);
      b->setToolTip(tr("Apply %1=%2 (live when a run is going) and watch the chart").arg(e.knob, e.value));
      if (const QString why = gate_ ? gate_(e) : QString(); !why.isEmpty()) {
        b->setEnabled(false);
        b->setToolTip(why);
      }
      connect(b, &QPushButton::clicked, this, [this, knob = e.knob, value = e.value] { emit tryIt(knob, value); });
      tree_->setItemWidget(it, 3, b);
    }
  }
  tree_->resizeColumnToContents(1);
  tree_->resizeColumnToContents(2);
  tree_->resizeColumnToContents(3);
}

}  // namespace tb::ui
