// Offscreen paint cost of the timeline: synthetic traces of N events (default 1M; pass 10000000 for 10M),
// rendered at 1920x1080 at several zoom levels. Prints the draw-list build (LOD: binary search + folding) and
// the paint time per frame; the goal is <= 16 ms per paint at any zoom.
//   bench_ui_timeline [events] [repeats]
#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ui/timeline_widget.h"

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const size_t n = argc > 1 ? size_t(std::atoll(argv[1])) : 1'000'000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  QElapsedTimer t;
  t.start();
  auto data = tb::ui::makeSyntheticTimeline(n);
  std::printf("synthetic trace: %zu events, %zu tracks, %.1f ms to generate\n", data->eventCount(), data->tracks.size(),
              double(t.nsecsElapsed()) / 1e6);
  tb::ui::TimelineWidget w;
  w.resize(1920, 1080);
  w.setSynchronous(true);
  w.setData(data);
  const QSize size(1920, 1080);
  QImage img(size, QImage::Format_ARGB32_Premultiplied);
  const double total = double(data->t_max - data->t_min);
  const double mid = double(data->t_min) + total / 2;
  struct Zoom {
    const char* name;
    double span;
  };
  const Zoom zooms[] = {{"fit (whole trace)", total}, {"1/10", total / 10}, {"1/1000", total / 1000},
                        {"1/100000", total / 1e5}, {"100 us", 1e5}};
  std::printf("%-20s %12s %12s %12s %12s %10s\n", "zoom", "build ms", "paint ms", "total ms", "max total", "items");
  bool ok = true;
  for (const Zoom& z : zooms) {
    std::vector<double> build, paint, sum;
    size_t items = 0;
    for (int r = 0; r < reps; ++r) {
      // Shift the view a little each frame, like a pan, so no result is reused.
      const double shift = (r - reps / 2) * z.span * 0.01;
      w.setView(mid - z.span / 2 + shift, mid + z.span / 2 + shift);
      QPainter p(&img);
      w.renderTo(p, size);
      build.push_back(w.lastBuildMs());
      paint.push_back(w.lastPaintMs());
      sum.push_back(w.lastBuildMs() + w.lastPaintMs());
      items = w.drawList().items.size();
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double mx = *std::max_element(sum.begin(), sum.end());
    std::printf("%-20s %12.2f %12.2f %12.2f %12.2f %10zu\n", z.name, med(build), med(paint), med(sum), mx, items);
    if (med(paint) > 16.0) ok = false;
  }
  std::printf("goal <= 16 ms per paint: %s\n", ok ? "met" : "NOT met");
  return 0;
}
