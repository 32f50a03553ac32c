// A tqdm-like progress bar for `retorch train`: redrawn in place on a terminal, plain lines in
// logs.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace retorch::cli {

/// Elapsed/remaining time as "MM:SS", or "H:MM:SS" from an hour on (negative/NaN: "?").
std::string format_interval(double seconds);
/// width cells filled to fraction (clamped to [0, 1]) with full and eighth blocks, space-padded.
std::string format_bar(double fraction, int width);
/// "3512.4 img/s", or "2.50 s/img" below one unit per second ("? img/s" when unknown).
std::string format_rate(double per_second, const std::string& unit);

/// ProgressBar settings; the defaults suit an interactive `retorch train`.
struct ProgressOptions {
  std::string unit = "it";        // what is counted: "img", "batch"...
  int bar_width = 20;             // cells in the bar
  double min_interval = 0.1;      // seconds between terminal redraws (at most 10 per second)
  int log_every_percent = 10;     // not a terminal: one line each time this many percent pass
  std::optional<bool> terminal;   // redraw in place? default: whether stdout is a terminal
  std::ostream* out = nullptr;    // default std::cout
  std::function<double()> clock;  // seconds, monotonic; default std::chrono::steady_clock
};

/// "epoch 2/5  70%|██████▌   | 420/600 [00:12<00:05, 3512.4 img/s] loss=0.4123".
class ProgressBar {
 public:
  /// total <= 0 means unknown: no bar, percentage or remaining time.
  ProgressBar(int64_t total, std::string desc, ProgressOptions options = {});
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Advances by n and redraws if the throttle (terminal) or the next percent step (log) allows.
  void update(int64_t n = 1);
  /// Text shown after the bar, e.g. "loss=0.4123"; set it before update() to show it there.
  void set_postfix(std::string postfix);
  /// Draws the final state and ends the line; later calls do nothing.
  void close();

  /// The line for the current count at the current clock time (no "\r", no newline).
  std::string format_line() const;
  /// Units counted so far.
  int64_t count() const { return n_; }

 private:
  void draw(double now);

  int64_t total_;
  std::string desc_;
  ProgressOptions opt_;
  std::ostream* out_;
  bool terminal_;
  std::string postfix_;
  int64_t n_ = 0;
  double start_;
  double last_draw_ = -1e300;
  size_t last_width_ = 0;    // columns of the last terminal line, to blank leftovers
  int64_t logged_step_ = 0;  // percent steps already logged (log mode)
  bool dirty_ = false;       // state changed since the last line was written
  bool closed_ = false;
};

}  // namespace retorch::cli
