// The analysis of the trace on screen, as a profiler user reads it: one line of scope and window, a bar of
// where the GPU time went (busy by class, idle by named cause, with a legend), a per-step table, the top
// kernels with their launch statistics and the host ops by self time. Double-clicking a step shows it on the timeline; double-clicking a
// kernel finds it there. Fed by MainWindow from the loaded trace's AnalysisResult.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "client/loader_verdict.h"
#include "profiler/analysis.h"
#include "profiler/ranks.h"
#include "ui/timeline_model.h"

class QLabel;
class QTableView;
class QTabWidget;
class QToolButton;

namespace tb::ui {

class KeyedTableModel;
class LoaderView;

// One slice of the time bar: a class of the window with its colour.
struct TimeSlice {
  QString label;
  int64_t ns = 0;
  QColor color;
};
// The slices of the window: prof::time_classes (busy classes first then the idle causes, or a CPU-only
// trace's), each in its colour; they sum to the window. Classes of 0 ns are listed; the bar draws none of them.
std::vector<TimeSlice> timeSlices(const tb::prof::AnalysisResult& r);
// The colour of a class of time (prof::time_classes' id), nullopt for one the GUI has none for.
std::optional<QColor> timeClassColor(std::string_view id);

class TimeBar : public QWidget {
 public:
  explicit TimeBar(QWidget* parent = nullptr);
  void setSlices(std::vector<TimeSlice> s, int64_t total);
  QSize sizeHint() const override { return {420, 64}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<TimeSlice> slices_;
  int64_t total_ = 0;
};

class AnalysisPanel : public QWidget {
  Q_OBJECT
 public:
  explicit AnalysisPanel(QWidget* parent = nullptr);
  void setAnalysis(std::shared_ptr<const tb::prof::AnalysisResult> r);
  // The "Ranks" tab (a trace holding several ranks' processes): each rank's step, work, communication wait
  // and data wait, and the straggler line. nullptr removes the tab.
  void setRanks(std::shared_ptr<const tb::prof::RankAnalysis> ranks);
  QTableView* ranksTable() const { return ranks_; }
  QString ranksText() const;
  // The "Loader" tab (a script's trace whose loader was timed: its "loader" document, or a live run's verdict):
  // one line of what to change (the advice's switch, why, and its bound), the verdict as a picture (LoaderView),
  // the lines `run` printed under a collapsed "Details", and its parts costliest first. An invalid verdict
  // removes the tab.
  void setLoader(const tb::client::LoaderVerdict& v);
  const tb::client::LoaderVerdict& loader() const { return loader_verdict_; }
  QString loaderText() const;           // the lines, as `run` printed them (the details)
  QString loaderAdviceText() const;     // the one line above the picture, as plain text
  LoaderView* loaderView() const { return loader_view_; }
  QToolButton* loaderDetailsButton() const { return loader_details_; }
  QTableView* loaderTable() const { return loader_; }
  QWidget* loaderPage() const { return loader_page_; }  // the tab's page (it scrolls)
  void clear();
  // Brings the tab titled `title` (as shown: "Loader", "Steps", ...) to the front; false when there is none.
  bool showTab(const QString& title);
  // The tables are views (sorted through a proxy) of models updated in place: a live run's next chunk
  // removes the steps that left the window, updates what changed and appends the new ones.
  QTableView* stepsTable() const { return steps_; }
  QTableView* kernelsTable() const { return kernels_; }
  QTableView* opsTable() const { return ops_; }
  KeyedTableModel* stepsModel() const { return steps_model_; }
  QString summaryText() const;
  // The "Selection" tab: kernels and ops starting inside [t0, t1] of `data` (the timeline's selection or view).
  void setSelection(const TimelineData& data, int64_t t0, int64_t t1);
  QTableView* selectionTable() const { return selection_; }

 signals:
  void intervalRequested(qint64 t0, qint64 t1);  // a step: show it on the timeline
  void findRequested(const QString& name);       // a kernel: find it on the timeline

 private:
  void buildLoaderPage();

  std::shared_ptr<const tb::prof::AnalysisResult> r_;
  QLabel* summary_ = nullptr;
  TimeBar* bar_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QTableView *steps_ = nullptr, *kernels_ = nullptr, *ops_ = nullptr, *selection_ = nullptr, *ranks_ = nullptr,
             *loader_ = nullptr;
  KeyedTableModel *steps_model_ = nullptr, *kernels_model_ = nullptr, *ops_model_ = nullptr,
                  *selection_model_ = nullptr, *ranks_model_ = nullptr, *loader_model_ = nullptr;
  QWidget* loader_page_ = nullptr;
  QLabel* loader_label_ = nullptr;  // the lines, inside the details
  QLabel* loader_advice_ = nullptr;
  QString loader_advice_text_;
  LoaderView* loader_view_ = nullptr;
  QToolButton* loader_details_ = nullptr;
  tb::client::LoaderVerdict loader_verdict_;
  QLabel* selection_label_ = nullptr;
  QWidget* ranks_page_ = nullptr;
  QLabel* ranks_label_ = nullptr;
};

}  // namespace tb::ui
