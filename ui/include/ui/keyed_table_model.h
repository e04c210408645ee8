// A read-only table model for tables that change while they are watched (the analysis of a live run's latest
// trace chunks). Rows are kept as values and formatted only when a view paints a visible cell. setRows()
// updates in place by key: rows whose key is gone are removed, rows whose values changed are updated, new
// keys are appended, and untouched rows stay as they are. A view sorted through a QSortFilterProxyModel
// keeps its order, selection and scroll position across updates. Filling a QTableWidget cell by cell made a
// header in ResizeToContents mode measure the text of every cell once per cell set, on every trace chunk.
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QStringList>
#include <QVariant>
#include <vector>

namespace tb::ui {

struct KeyedRow {
  QString key;                  // unique in the table: a step number, a kernel's name
  std::vector<QVariant> cells;  // one per column: a double (right-aligned, sorted as a number) or a text
  QVariant user;                // Qt::UserRole of the row's cells: what a double-click acts on
  QString tooltip;              // of the first column ("" = none)
  QColor foreground;            // of the first column; invalid = the palette's
  bool operator==(const KeyedRow& o) const {
    return key == o.key && cells == o.cells && user == o.user && tooltip == o.tooltip && foreground == o.foreground;
  }
};

class KeyedTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  struct Update {
    int removed = 0, changed = 0, inserted = 0, kept = 0;  // rows, by what the last setRows did to them
  };

  explicit KeyedTableModel(const QStringList& headers, QObject* parent = nullptr);
  // Replaces the table's rows (a key given twice gets " #2", " #3" appended, so that keys stay unique).
  void setRows(std::vector<KeyedRow> rows);
  const Update& lastUpdate() const { return last_; }
  const KeyedRow& row(int r) const { return rows_[size_t(r)]; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QStringList headers_;
  std::vector<KeyedRow> rows_;
  Update last_;
};

}  // namespace tb::ui
