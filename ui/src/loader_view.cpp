// Painting the Loader tab's picture (ui/loader_view.h): three sections one under the other, each a title and its
// bars, in the time bar's style (the palette's text and base, a mid outline, a legend that wraps). Every bar and
// slice has its exact figures as a tooltip; the words beside a bar are rounded.
#include <QEvent>
#include <QFontMetrics>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "client/loader_picture.h"
#include "ui/loader_view.h"

namespace tb::ui {
namespace {

constexpr int kBarHeight = 14;    // a part's or a rate's bar
constexpr int kStackHeight = 18;  // the time bar, as tall as the analysis panel's
constexpr int kGap = 12;          // between sections
constexpr int kTextGap = 6;       // between a bar and its words
const QColor kPart(tb::client::kLoaderPartColour);  // the timeline's loader-stall red, as the reports draw it

int rowHeight(const QFontMetrics& fm) { return std::max(fm.height(), kBarHeight) + 4; }

QFont boldOf(QFont f) {
  f.setBold(true);
  return f;
}

// A section's title, wrapped to the width (a narrow dock keeps every word); returns the y under it.
int title(QPainter* p, const QWidget& w, const QString& text, int width, int y) {
  const QFont f = boldOf(w.font());
  const QFontMetrics fm(f);
  const QRect r = fm.boundingRect(QRect(0, y, std::max(1, width), 10000), Qt::TextWordWrap, text);
  if (p) {
    p->setFont(f);
    p->setPen(w.palette().text().color());
    p->drawText(QRect(0, y, width, r.height()), Qt::TextWordWrap, text);
    p->setFont(w.font());
  }
  return y + r.height() + 3;
}

// Words beside a bar, elided to their room (a tooltip has them whole).
void words(QPainter* p, const QWidget& w, const QRect& r, const QString& text, Qt::Alignment align) {
  if (!p) return;
  const QFontMetrics fm(w.font());
  p->setPen(w.palette().text().color());
  p->drawText(r, int(align | Qt::AlignVCenter), fm.elidedText(text, Qt::ElideRight, r.width()));
}

QString rateValue(double sps) { return QStringLiteral("%1/s").arg(sps, 0, 'f', 0); }

}  // namespace

LoaderView::LoaderView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  QSizePolicy sp(QSizePolicy::Preferred, QSizePolicy::Preferred);
  sp.setHeightForWidth(true);
  setSizePolicy(sp);
}

void LoaderView::setVerdict(const tb::client::LoaderVerdict& v) {
  picture_ = loaderPicture(v);
  updateGeometry();
  update();
}

// The label column: as wide as the longest label, at most a third of the width (longer ones are elided, and
// their tooltip has them whole).
int LoaderView::labelWidth(int width) const {
  const QFontMetrics fm(font());
  int w = 0;
  for (const auto& b : picture_.parts) w = std::max(w, fm.horizontalAdvance(b.label));
  // A rate's figure stands at the right of its label, clear of the marks that cross the bars.
  for (const auto& r : picture_.rates) w = std::max(w, fm.horizontalAdvance(r.label) + 12 + fm.horizontalAdvance(rateValue(r.sps)));
  return std::clamp(w + 10, 60, std::max(60, width / 3));
}

int LoaderView::drawParts(QPainter* p, int width, int y, std::vector<Hit>* hits) const {
  y = title(p, *this, picture_.parts_title, width, y);
  const QFontMetrics fm(font());
  const int rh = rowHeight(fm), lw = labelWidth(width);
  int vw = 0;
  for (const auto& b : picture_.parts) vw = std::max(vw, fm.horizontalAdvance(b.value));
  const int x0 = lw, span = std::max(10, width - lw - vw - kTextGap - 2);
  double longest = 0;
  for (const auto& b : picture_.parts) longest = std::max(longest, b.length);
  for (const auto& b : picture_.parts) {
    const QRect row(0, y, width, rh);
    const int len = longest > 0 ? std::max(2, int(std::lround(span * b.length / longest))) : 2;
    const QRect bar(x0, y + (rh - kBarHeight) / 2, len, kBarHeight);
    if (p) {
      words(p, *this, QRect(0, y, lw - kTextGap, rh), b.label, Qt::AlignLeft);
      p->fillRect(bar, kPart);
      words(p, *this, QRect(bar.right() + kTextGap, y, width - bar.right() - kTextGap, rh), b.value, Qt::AlignLeft);
    }
    if (hits) hits->push_back({row, bar, b.tip, true});
    y += rh;
  }
  return y;
}

int LoaderView::drawTime(QPainter* p, int width, int y, std::vector<Hit>* hits) const {
  y = title(p, *this, picture_.time_title, width, y);
  const QRect bar(0, y, width - 1, kStackHeight);
  double x = 0;
  if (p) p->fillRect(bar, palette().base());
  for (const auto& s : picture_.time) {
    const double w = bar.width() * std::max(0.0, s.share);
    const QRectF r(x, y, w, bar.height());
    if (p && w > 0) p->fillRect(r, s.color);
    if (hits && w > 0) hits->push_back({r.toAlignedRect(), {}, s.tip, false});
    x += w;
  }
  if (p) {
    p->setPen(palette().mid().color());
    p->drawRect(bar);
  }
  // The legend: each slice that takes time, wrapping on as many lines as the width needs.
  const QFontMetrics fm(font());
  int lx = 0, ly = y + bar.height() + 4;
  for (const auto& s : picture_.time) {
    if (s.share <= 0) continue;
    const QString t = QStringLiteral("%1 %2%").arg(s.label).arg(100.0 * s.share, 0, 'f', 0);
    const int w = 14 + fm.horizontalAdvance(t) + 14;
    if (lx > 0 && lx + w > width) lx = 0, ly += fm.height() + 2;
    if (p) {
      p->fillRect(QRect(lx, ly + (fm.height() - 10) / 2, 10, 10), s.color);
      p->setPen(palette().text().color());
      p->drawText(QPoint(lx + 14, ly + fm.ascent()), t);
    }
    if (hits) hits->push_back({QRect(lx, ly, w, fm.height()), {}, s.tip, false});
    lx += w;
  }
  return ly + fm.height();
}

int LoaderView::drawRates(QPainter* p, int width, int y, std::vector<Hit>* hits) const {
  y = title(p, *this, picture_.rates_title, width, y);
  const QFontMetrics fm(font());
  const int rh = rowHeight(fm), lw = labelWidth(width);
  double top = 0;
  for (const auto& r : picture_.rates) top = std::max(top, r.sps);
  for (const auto& m : picture_.marks) top = std::max(top, m.sps);
  // A mark at the top of the scale stays inside the widget.
  const int x0 = lw, span = std::max(10, width - lw - 4);
  auto at = [&](double s) { return x0 + int(std::lround(span * s / top)); };
  const int bars_top = y;
  for (const auto& r : picture_.rates) {
    const QRect bar(x0, y + (rh - kBarHeight) / 2, std::max(2, at(r.sps) - x0), kBarHeight);
    if (p) {
      const int vw = fm.horizontalAdvance(rateValue(r.sps));
      words(p, *this, QRect(0, y, std::max(0, lw - kTextGap - vw - 8), rh), r.label, Qt::AlignLeft);
      words(p, *this, QRect(0, y, lw - kTextGap, rh), rateValue(r.sps), Qt::AlignRight);
      p->fillRect(bar, r.color);
    }
    if (hits) hits->push_back({QRect(0, y, width, rh), bar, r.tip, false});
    y += rh;
  }
  // The marks run across the bars down to their labels; a label that would touch the one before it goes a line
  // lower (the model's rate and the run's are close when the loader is not what holds the run).
  std::vector<int> rows;  // each label row's right edge so far
  const int labels_top = y + 2;
  int bottom = y;
  for (const auto& m : picture_.marks) {
    const int x = at(m.sps), tw = fm.horizontalAdvance(m.label);
    const int left = std::clamp(x - tw / 2, 0, std::max(0, width - tw));
    size_t row = 0;
    while (row < rows.size() && rows[row] + 12 > left) ++row;
    if (row == rows.size()) rows.push_back(0);
    rows[row] = left + tw;
    const int ly = labels_top + int(row) * (fm.height() + 2);
    if (p) {
      QPen pen(palette().text().color(), 1.5, m.dashed ? Qt::DashLine : Qt::SolidLine);
      p->setPen(pen);
      p->drawLine(x, bars_top + 1, x, ly);
      p->setPen(palette().text().color());
      p->drawText(QPoint(left, ly + fm.ascent()), m.label);
    }
    if (hits) hits->push_back({QRect(std::min(left, x - 3), bars_top, std::max(tw, 6), ly + fm.height() - bars_top), {}, m.tip, false});
    bottom = std::max(bottom, ly + fm.height());
  }
  return bottom;
}

int LoaderView::layout(int width, QPainter* p, std::vector<Hit>* hits) const {
  if (picture_.empty()) return 0;
  int y = 0;
  if (!picture_.parts.empty()) y = drawParts(p, width, y, hits) + kGap;
  if (!picture_.time.empty()) y = drawTime(p, width, y, hits) + kGap;
  if (!picture_.rates_title.isEmpty()) y = drawRates(p, width, y, hits) + kGap;
  return y;
}

int LoaderView::heightForWidth(int w) const { return layout(w, nullptr, nullptr); }
QSize LoaderView::sizeHint() const { return {520, heightForWidth(520)}; }
QSize LoaderView::minimumSizeHint() const { return {240, heightForWidth(std::max(240, width()))}; }

std::vector<QRect> LoaderView::partBarRects() const {
  std::vector<Hit> hits;
  layout(width(), nullptr, &hits);
  std::vector<QRect> out;
  for (const auto& h : hits)
    if (h.part) out.push_back(h.bar);
  return out;
}

QString LoaderView::toolTipAt(QPoint pt) const {
  std::vector<Hit> hits;
  layout(width(), nullptr, &hits);
  // The last hit first: a mark is listed after the bars it crosses, and its tooltip is the one under the cursor.
  for (auto it = hits.rbegin(); it != hits.rend(); ++it)
    if (it->rect.contains(pt)) return it->tip;
  return {};
}

void LoaderView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  layout(width(), &p, nullptr);
}

bool LoaderView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const QString tip = toolTipAt(he->pos());
    if (tip.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(he->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(e);
}

}  // namespace tb::ui
