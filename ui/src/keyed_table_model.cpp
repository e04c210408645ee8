#include "ui/keyed_table_model.h"

#include <QHash>

namespace tb::ui {

KeyedTableModel::KeyedTableModel(const QStringList& headers, QObject* parent)
    : QAbstractTableModel(parent), headers_(headers) {}

void KeyedTableModel::setRows(std::vector<KeyedRow> rows) {
  last_ = {};
  QHash<QString, int> seen;
  for (KeyedRow& r : rows)
    if (const int n = ++seen[r.key]; n > 1) r.key += QStringLiteral(" #%1").arg(n);
  QHash<QString, size_t> incoming;
  incoming.reserve(qsizetype(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) incoming.insert(rows[i].key, i);

  // Gone: removed in runs of adjacent rows, from the back so that earlier positions stay valid.
  for (int end = int(rows_.size()); end > 0;) {
    if (incoming.contains(rows_[size_t(end) - 1].key)) {
      --end;
      continue;
    }
    int begin = end - 1;
    while (begin > 0 && !incoming.contains(rows_[size_t(begin) - 1].key)) --begin;
    beginRemoveRows({}, begin, end - 1);
    rows_.erase(rows_.begin() + begin, rows_.begin() + end);
    endRemoveRows();
    last_.removed += end - begin;
    end = begin;
  }
  // Still there: updated where a value differs (the views repaint that row, nothing else).
  std::vector<bool> placed(rows.size(), false);
  for (size_t r = 0; r < rows_.size(); ++r) {
    const size_t i = incoming.value(rows_[r].key);
    placed[i] = true;
    if (rows_[r] == rows[i]) {
      ++last_.kept;
      continue;
    }
    rows_[r] = std::move(rows[i]);
    ++last_.changed;
    emit dataChanged(index(int(r), 0), index(int(r), columnCount() - 1));
  }
  // New: appended in the order given.
  std::vector<KeyedRow> add;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!placed[i]) add.push_back(std::move(rows[i]));
  if (!add.empty()) {
    beginInsertRows({}, int(rows_.size()), int(rows_.size() + add.size()) - 1);
    for (auto& r : add) rows_.push_back(std::move(r));
    endInsertRows();
    last_.inserted = int(add.size());
  }
}

int KeyedTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

int KeyedTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(headers_.size()); }

QVariant KeyedTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || size_t(index.row()) >= rows_.size()) return {};
  const KeyedRow& r = rows_[size_t(index.row())];
  const QVariant cell = size_t(index.column()) < r.cells.size() ? r.cells[size_t(index.column())] : QVariant();
  switch (role) {
    case Qt::DisplayRole: return cell;  // a double stays a double: the delegate formats what it paints
    case Qt::TextAlignmentRole:
      return cell.typeId() == QMetaType::Double ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::UserRole: return r.user;
    case Qt::ToolTipRole: return index.column() == 0 && !r.tooltip.isEmpty() ? QVariant(r.tooltip) : QVariant();
    case Qt::ForegroundRole: return index.column() == 0 && r.foreground.isValid() ? QVariant(r.foreground) : QVariant();
    default: return {};
  }
}

QVariant KeyedTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < headers_.size())
    return headers_[section];
  return QAbstractTableModel::headerData(section, orientation, role);
}

}  // namespace tb::ui
