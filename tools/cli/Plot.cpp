// plot_learning_curves (two PLplot panels: loss, accuracy) and plot_memory_timeline (allocated
// and reserved bytes over time), on the pngcairo device.
#include "tools/cli/Plot.h"

#include <plplot.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "retorch/core/Error.h"

namespace retorch::cli {

namespace {

// cmap0 slots this file sets.
constexpr PLINT kBackground = 0, kInk = 1, kTrainColor = 2, kTestColor = 3, kGrid = 4;

// Note [PLplot errors]: PLplot reports recoverable errors (plabort) by printing to stderr unless a
// stream has an error code/message registered with plsError, and fatal ones (plexit) by calling
// exit() after the user's exit handler. We register plsError on our stream and check it after
// every phase, and we rule out the fatal paths we know of before starting (unwritable file,
// missing device, bad sizes), so that a failure becomes a retorch::Error instead of output on
// stderr or a dead process. PLplot's state is global, hence the mutex.
std::mutex g_plplot_mutex;

bool has_device(const char* name) {
  // plgDevs fills caller-owned arrays of capacity n (and a null terminator).
  std::vector<const char*> m(256, nullptr), d(256, nullptr);
  const char** mp = m.data();
  const char** dp = d.data();
  int n = int(m.size());
  plgDevs(&mp, &dp, &n);
  for (int i = 0; i < n; ++i) {
    if (d[size_t(i)] && std::strcmp(d[size_t(i)], name) == 0) return true;
  }
  return false;
}

// `unit`: what one x value is ("epoch", "event"), for the messages.
void check_series(const char* name, const std::vector<double>& s, size_t n,
                  const char* unit = "epoch") {
  if (s.empty()) return;
  RT_CHECK_VALUE(s.size() == n, "plot: ", name, " has ", s.size(), " values but the x axis has ",
                 n, " (one per ", unit, ")");
  for (size_t i = 0; i < s.size(); ++i) {
    RT_CHECK_VALUE(std::isfinite(s[i]), "plot: ", name, " at ", unit, " ", i + 1,
                   " is not finite (", s[i], ")");
  }
}

struct Range {
  double lo, hi;
};

Range y_range(const std::vector<double>& a, const std::vector<double>& b) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* s : {&a, &b}) {
    for (double v : *s) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  double pad = hi > lo ? 0.08 * (hi - lo) : std::max(0.5, 0.1 * std::abs(hi));
  return {lo - pad, hi + pad};
}

class PlotSession {
 public:
  explicit PlotSession(const std::string& path) : path_(path) {
    plgstrm(&previous_);
    plmkstrm(&stream_);
    RT_CHECK(stream_ >= 0, "plot_learning_curves: PLplot has no free output stream");
    plsError(&code_, message_);
  }
  ~PlotSession() {
    if (!ended_) plend1();
    plsstrm(previous_);
  }
  /// Throws if PLplot recorded an error since the last check.
  void check(const char* phase) {
    RT_CHECK(code_ == 0, "plot_learning_curves: PLplot failed while ", phase, " '", path_,
             "': ", message_);
  }
  void end() {
    plend1();
    ended_ = true;
  }

 private:
  std::string path_;
  PLINT previous_ = 0, stream_ = -1, code_ = 0;
  char message_[1024] = {0};
  bool ended_ = false;
};

void draw_panel(double xmin, double xmax, const std::vector<double>& x,
                const std::vector<double>& train, const std::vector<double>& test, Range yr,
                double vp_bottom, double vp_top, const char* ylabel, const char* xlabel,
                double xtick, PLINT legend_corner, const char* names[2] = nullptr) {
  plvpor(0.11, 0.96, vp_bottom, vp_top);
  plwind(xmin, xmax, yr.lo, yr.hi);
  plcol0(kGrid);
  plwidth(0.5);
  plbox("g", xtick, 0, "g", 0.0, 0);
  plcol0(kInk);
  plwidth(1.0);
  plbox("bcnst", xtick, 1, "bcnstv", 0.0, 0);
  plmtex("l", 4.2, 0.5, 0.5, ylabel);
  if (xlabel) plmtex("b", 3.0, 0.5, 0.5, xlabel);
  struct Series {
    const std::vector<double>* y;
    PLINT color, style;
  };
  for (Series s : {Series{&train, kTrainColor, 1}, Series{&test, kTestColor, 2}}) {
    if (s.y->empty()) continue;
    plcol0(s.color);
    pllsty(s.style);
    plwidth(2.5);
    plline(PLINT(x.size()), x.data(), s.y->data());
    pllsty(1);
    plwidth(1.5);
    // Circles mark each epoch until they would crowd into a thick line.
    if (x.size() <= 30) plpoin(PLINT(x.size()), x.data(), s.y->data(), 4);
  }
  // Legend inside the panel, in the corner the curves usually leave empty.
  const char* text[2] = {names ? names[0] : "train", names ? names[1] : "test"};
  PLINT opts[2] = {PL_LEGEND_LINE, PL_LEGEND_LINE};
  PLINT text_colors[2] = {kInk, kInk};
  PLINT line_colors[2] = {kTrainColor, kTestColor};
  PLINT line_styles[2] = {1, 2};
  PLFLT line_widths[2] = {2.5, 2.5};
  PLINT n = test.empty() ? 1 : 2;
  PLFLT lw = 0, lh = 0;
  pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           PL_POSITION_RIGHT | legend_corner | PL_POSITION_INSIDE, 0.02, 0.03, 0.08, kBackground,
           kInk, 1, 0, 0, n, opts, 1.0, 0.9, 2.0, 0.0, text_colors, text, nullptr, nullptr, nullptr,
           nullptr, line_colors, line_styles, line_widths, nullptr, nullptr, nullptr, nullptr);
}

// Checks the device, then opens a white pngcairo page with this file's colors.
void open_png(PlotSession& session, const std::string& png_path, int width, int height) {
  RT_CHECK(has_device("pngcairo"), "plot: PLplot's pngcairo device is missing ",
           "(install plplot-driver-cairo)");
  plsdev("pngcairo");
  plsfnam(png_path.c_str());
  plspage(0, 0, width, height, 0, 0);
  plscol0(kBackground, 255, 255, 255);
  plscol0(kInk, 20, 20, 20);
  plscol0(kTrainColor, 31, 119, 180);
  plscol0(kTestColor, 214, 39, 40);
  plscol0(kGrid, 215, 215, 215);
  plinit();
  session.check("opening");
  pladv(0);
  plschr(0, 1.0);
}

void probe_writable(const std::string& png_path, const char* what) {
  // See Note [PLplot errors]: an unopenable file would make PLplot prompt or exit.
  std::FILE* probe = std::fopen(png_path.c_str(), "wb");
  RT_CHECK(probe != nullptr, what, ": cannot write '", png_path, "': ", std::strerror(errno));
  std::fclose(probe);
}

}  // namespace

void plot_memory_timeline(const std::string& png_path, const std::string& title,
                          const std::vector<double>& time_ms, const std::vector<double>& allocated_mb,
                          const std::vector<double>& reserved_mb, int width, int height) {
  RT_CHECK_VALUE(!time_ms.empty(), "plot_memory_timeline: no memory events (nothing to plot)");
  check_series("allocated_mb", allocated_mb, time_ms.size(), "event");
  check_series("reserved_mb", reserved_mb, time_ms.size(), "event");
  check_series("time_ms", time_ms, time_ms.size(), "event");
  probe_writable(png_path, "plot_memory_timeline");
  std::lock_guard<std::mutex> lock(g_plplot_mutex);
  PlotSession session(png_path);
  open_png(session, png_path, width, height);
  double t0 = time_ms.front(), t1 = std::max(time_ms.back(), t0 + 1e-3);
  Range yr = y_range(allocated_mb, reserved_mb);
  yr.lo = std::min(yr.lo, 0.0);
  const char* names[2] = {"allocated", "reserved"};
  draw_panel(t0, t1, time_ms, allocated_mb, reserved_mb, yr, 0.12, 0.88, "MB", "time (ms)", 0.0,
             PL_POSITION_TOP, names);
  plcol0(kInk);
  plschr(0, 1.3);
  plmtex("t", 1.5, 0.5, 0.5, title.c_str());
  session.check("drawing");
  session.end();
  session.check("writing");
}

void plot_learning_curves(const std::string& png_path, const std::string& title,
                          const LearningCurves& c, int width, int height) {
  size_t epochs = c.train_loss.size();
  RT_CHECK_VALUE(epochs >= 1, "plot_learning_curves: train_loss is empty (nothing to plot)");
  check_series("test_loss", c.test_loss, epochs);
  check_series("train_loss", c.train_loss, epochs);
  check_series("train_accuracy", c.train_accuracy, epochs);
  check_series("test_accuracy", c.test_accuracy, epochs);
  RT_CHECK_VALUE(width >= 200 && height >= 200 && width <= 10000 && height <= 10000,
                 "plot_learning_curves: image size ", width, "x", height,
                 " is outside 200..10000 pixels");
  probe_writable(png_path, "plot_learning_curves");

  std::lock_guard<std::mutex> lock(g_plplot_mutex);
  PlotSession session(png_path);
  open_png(session, png_path, width, height);

  std::vector<double> x(epochs);
  for (size_t i = 0; i < epochs; ++i) x[i] = double(i + 1);
  // A little room left and right so the first and last markers are not cut by the frame.
  double xpad = epochs == 1 ? 0.5 : std::min(0.5, 0.03 * double(epochs - 1));
  double xmin = 1.0 - xpad, xmax = double(epochs) + xpad;
  double xtick = std::max(1.0, std::ceil(double(epochs) / 10.0));
  draw_panel(xmin, xmax, x, c.train_loss, c.test_loss, y_range(c.train_loss, c.test_loss), 0.56,
             0.92, "loss", nullptr, xtick, PL_POSITION_TOP);
  plcol0(kInk);
  plschr(0, 1.3);
  plmtex("t", 1.5, 0.5, 0.5, title.c_str());
  plschr(0, 1.0);
  if (!c.train_accuracy.empty() || !c.test_accuracy.empty()) {
    draw_panel(xmin, xmax, x, c.train_accuracy, c.test_accuracy,
               y_range(c.train_accuracy, c.test_accuracy), 0.10, 0.46, "accuracy", "epoch", xtick,
               PL_POSITION_BOTTOM);
  }
  session.check("drawing");
  session.end();
  session.check("writing");
}

}  // namespace retorch::cli
