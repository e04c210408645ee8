// The kernel timeline: a custom-painted QWidget (not QGraphicsView). One row per lane (nesting depth) of each
// CPU thread and GPU stream, a time ruler, loader-stall and launch-gap bands with their totals, launch ->
// kernel flow arrows for the hovered/selected event, tooltips with name, category, duration and args.
//
// Interaction: ctrl+wheel / W,S zoom around the cursor; drag / A,D / shift+wheel pan; wheel scrolls rows;
// F fits; shift+drag (or right-drag) selects a time range, Z zooms to it; click selects an event; Esc clears.
//
// Level of detail: the draw list (ui/timeline_model.h: binary search + folding < 3 px) is built on a worker
// thread (QtConcurrent) and handed back by a queued signal; paint re-projects the latest list, so the UI never
// waits for a build. setSynchronous(true) builds inline (tests, bench, PNG export).
#pragma once

#include <QFutureWatcher>
#include <QPointer>
#include <QWidget>
#include <memory>
#include <unordered_map>

#include "ui/timeline_model.h"

namespace tb::ui {

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kRowHeight = 18;
  static constexpr int kMemoryHeight = 3 * kRowHeight;  // the memory strip under the rows, when the trace has one
  static constexpr int kRulerHeight = 26;
  static constexpr int kGutterWidth = 190;

  explicit TimelineWidget(QWidget* parent = nullptr);
  ~TimelineWidget() override;

  // keep_view: live updates append chunks without jumping the view.
  void setData(std::shared_ptr<const TimelineData> data, bool keep_view = false);
  std::shared_ptr<const TimelineData> data() const { return data_; }
  void clear();

  void setSynchronous(bool sync) { sync_ = sync; }
  const TimeMapper& mapper() const { return mapper_; }
  const DrawList& drawList() const { return list_; }

  void fit();
  void zoomToSelection();
  void setView(double t0, double t1);
  // Marks [t0, t1] (an evidence interval) as the selection and brings it into view.
  void selectInterval(int64_t t0, int64_t t1, bool zoom = true);
  // Ctrl+F: selects the next event whose name contains `text` (ignoring case; after the selected event,
  // wrapping around), scrolls its row into view and zooms so it is readable. False when nothing matches.
  bool findNext(const QString& text);
  // True once the user zoomed, panned or selected since the last setData(keep_view=false): live updates then
  // keep the user's view instead of fitting the newest chunk.
  bool userInteracted() const { return user_moved_; }
  bool hasSelection() const { return sel_t1_ > sel_t0_; }
  std::pair<int64_t, int64_t> selection() const { return {sel_t0_, sel_t1_}; }

  // Renders the whole widget into `p` over `size` (PNG export, bench). Builds the draw list first when
  // it does not match the view.
  void renderTo(QPainter& p, const QSize& size);
  QImage toImage(const QSize& size = {});

  // Milliseconds spent in the last draw-list build and paint (status bar, bench).
  double lastBuildMs() const { return build_ms_; }
  double lastPaintMs() const { return paint_ms_; }

  // An event's name as drawn and in its tooltip. Our step ranges carry their absolute index ("arg: 1234"),
  // so a live view that rolls over the last steps names them "step 1234", as the throughput chart counts.
  QString eventLabel(uint32_t track, uint32_t lane, uint32_t index) const;

 signals:
  void viewChanged(double t0, double t1);
  void eventSelected(const QString& description);
  void selectionChanged(int64_t t0, int64_t t1);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  bool event(QEvent*) override;

 private:
  struct Hit {
    bool ok = false;
    uint32_t track = 0, lane = 0, index = 0;
    uint32_t count = 1;
  };
  void requestBuild();
  void applyView();
  // Painting (timeline_paint.cpp): paintAll computes the frame, then one pass per layer.
  struct Frame;
  void paintAll(QPainter& p, const QRect& r);
  void paintRowsAndGrid(QPainter& p, const Frame& f) const;
  void paintBands(QPainter& p, const Frame& f) const;
  void paintEvents(QPainter& p, const Frame& f) const;
  void paintFlow(QPainter& p, const Frame& f) const;
  void paintMarkersAndSelection(QPainter& p, const Frame& f) const;
  void paintRuler(QPainter& p, const Frame& f) const;
  void paintGutter(QPainter& p, const Frame& f) const;
  void paintMemory(QPainter& p, const Frame& f) const;  // timeline_memory.cpp
  int memoryStripHeight() const { return data_ && !data_->memory.empty() ? kMemoryHeight : 0; }
  void paintQueue(QPainter& p, const Frame& f) const;  // timeline_queue.cpp
  int queueStripHeight() const { return data_ && !data_->queue.empty() ? kMemoryHeight : 0; }
  Hit hitTest(const QPoint& pos) const;
  QString describe(const Hit& h) const;
  const std::pair<uint32_t, uint32_t>* findCorr(int64_t corr, const Hit& not_this) const;
  int rowsTop() const { return kRulerHeight; }
  int contentHeight() const;
  double timelineX(double t) const { return kGutterWidth + mapper_.toPx(t); }

  std::shared_ptr<const TimelineData> data_;
  std::vector<RowInfo> rows_;
  TimeMapper mapper_;
  DrawList list_;
  uint64_t generation_ = 0;
  bool build_pending_ = false, sync_ = false;
  QFutureWatcher<DrawList>* watcher_ = nullptr;
  int scroll_y_ = 0;
  // Interaction state.
  QPoint press_pos_, last_pos_;
  bool dragging_ = false, selecting_ = false;
  int64_t sel_t0_ = 0, sel_t1_ = 0;
  Hit hover_, selected_;
  double build_ms_ = 0, paint_ms_ = 0;
  bool user_moved_ = false;
  // correlation id -> (row, event index) of each event carrying it; built lazily for flows.
  mutable std::unordered_multimap<int64_t, std::pair<uint32_t, uint32_t>> corr_index_;
  mutable bool corr_built_ = false;
};

}  // namespace tb::ui
