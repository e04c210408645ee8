// The Loader tab's picture in Qt's types: the one model the reports draw too (client/loader_picture.h), its texts
// as QString and its colours as QColor. Nothing is computed here, so that the tab and the reports say the same.
#include "ui/loader_view.h"

#include "client/loader_picture.h"

namespace tb::ui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
// "" (a mark) stays an invalid QColor: the painter draws marks in the palette's text colour.
QColor colour(const std::string& hex) { return hex.empty() ? QColor() : QColor(QString::fromStdString(hex)); }

LoaderRate rate(const tb::client::LoaderRate& r) { return {qs(r.label), qs(r.tip), r.sps, colour(r.colour), r.dashed}; }

}  // namespace

double advisedSupply(const tb::client::LoaderVerdict& v) { return tb::client::advised_supply(v); }

LoaderPicture loaderPicture(const tb::client::LoaderVerdict& v) {
  const tb::client::LoaderPicture c = tb::client::loader_picture(v);
  LoaderPicture pic;
  pic.parts_title = qs(c.parts_title);
  pic.time_title = qs(c.time_title);
  pic.rates_title = qs(c.rates_title);
  for (const auto& b : c.parts) pic.parts.push_back({qs(b.label), qs(b.value), qs(b.tip), b.length});
  for (const auto& s : c.time) pic.time.push_back({qs(s.label), qs(s.tip), s.share, colour(s.colour)});
  for (const auto& r : c.rates) pic.rates.push_back(rate(r));
  for (const auto& m : c.marks) pic.marks.push_back(rate(m));
  return pic;
}

QString loaderAdviceLine(const tb::client::LoaderVerdict& v) { return qs(tb::client::loader_advice_line(v)); }

}  // namespace tb::ui
