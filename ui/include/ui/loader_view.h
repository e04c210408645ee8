// The Loader tab's verdict as a picture (client/loader_picture.h says what it shows: a bar a part, the loading
// processes' time split, supply against demand, and one line of advice above them). The model is the client's,
// which the reports draw too; here it is in Qt's types (loaderPicture) so that what the tab shows is tested apart
// from its pixels.
#pragma once

#include <QColor>
#include <QRect>
#include <QString>
#include <QWidget>
#include <vector>

#include "client/loader_verdict.h"

namespace tb::ui {

// One part's bar. `length` is its cost a sample in ms (collate's time a batch spread over the batch's samples,
// so that every bar shares one scale); `value` is what is written beside it, in the part's own unit.
struct LoaderPartBar {
  QString label, value, tip;
  double length = 0;
};

// A slice of the loading processes' time, `share` of the bar (the slices sum to 1).
struct LoaderSlice {
  QString label, tip;
  double share = 0;
  QColor color;
};

// A rate in samples/s: a bar (what the loaders supply) or a mark across the bars (what the model takes, what
// the run measured).
struct LoaderRate {
  QString label, tip;
  double sps = 0;
  QColor color;
  bool dashed = false;  // marks only
};

struct LoaderPicture {
  QString parts_title, time_title, rates_title;
  std::vector<LoaderPartBar> parts;  // the verdict's order: costliest first
  std::vector<LoaderSlice> time;     // empty when the verdict has no busy time to split
  std::vector<LoaderRate> rates;     // supply now, and with the advised workers when the switch is theirs
  std::vector<LoaderRate> marks;     // the model's rate and the run's, where measured
  bool empty() const { return parts.empty() && time.empty() && rates.empty(); }
};

// The picture of a verdict (client::loader_picture in Qt's types); empty for an invalid one.
LoaderPicture loaderPicture(const tb::client::LoaderVerdict& v);
// What to change, in one line: "workers=2: <why>; at most 1.23x this run's throughput", or "no loader switch:
// <why>; ...". Empty for an invalid verdict.
QString loaderAdviceLine(const tb::client::LoaderVerdict& v);
// What the loaders would supply with the advised switch (samples/s), the figure the advice's `why` states;
// 0 when the switch is not the workers'.
double advisedSupply(const tb::client::LoaderVerdict& v);

class LoaderView : public QWidget {
 public:
  explicit LoaderView(QWidget* parent = nullptr);
  void setVerdict(const tb::client::LoaderVerdict& v);
  const LoaderPicture& picture() const { return picture_; }
  // Where the part bars are drawn at the current width, in the picture's order (empty: none drawn).
  std::vector<QRect> partBarRects() const;
  // The exact figures under a point, as its tooltip shows them ("" where there is nothing).
  QString toolTipAt(QPoint p) const;

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int w) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent*) override;
  bool event(QEvent* e) override;

 private:
  struct Hit {
    QRect rect;  // where its tooltip answers
    QRect bar;   // the bar drawn, for a part
    QString tip;
    bool part = false;
  };
  // Lays the picture out at `width` and, given a painter, draws it; returns the height it takes. One routine for
  // painting, measuring and hit-testing, so that the three never disagree.
  int layout(int width, QPainter* p, std::vector<Hit>* hits) const;
  int drawParts(QPainter* p, int width, int y, std::vector<Hit>* hits) const;
  int drawTime(QPainter* p, int width, int y, std::vector<Hit>* hits) const;
  int drawRates(QPainter* p, int width, int y, std::vector<Hit>* hits) const;
  int labelWidth(int width) const;

  LoaderPicture picture_;
};

}  // namespace tb::ui
