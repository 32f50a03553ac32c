// ProgressBar: line formatting (time, rate, Unicode eighth blocks) and throttled output.
#include "tools/cli/Progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace retorch::cli {

namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Display columns of a UTF-8 string: count the bytes that start a code point.
size_t display_width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

}  // namespace

std::string format_interval(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  auto total = int64_t(seconds);
  int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  char buf[48];
  if (h > 0) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)s);
  } else {
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld", (long long)m, (long long)s);
  }
  return buf;
}

std::string format_bar(double fraction, int width) {
  // Eighth blocks U+258F..U+2589, from one eighth to seven eighths of a cell.
  static const char* kPartial[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  if (!(fraction > 0)) fraction = 0;
  fraction = std::min(fraction, 1.0);
  auto eighths = int64_t(fraction * double(width) * 8.0);
  int64_t full = eighths / 8, part = eighths % 8;
  std::string out;
  for (int64_t i = 0; i < full; ++i) out += "█";
  int64_t used = full;
  if (part > 0 && used < width) {
    out += kPartial[part];
    ++used;
  }
  out.append(size_t(std::max<int64_t>(0, width - used)), ' ');
  return out;
}

std::string format_rate(double per_second, const std::string& unit) {
  char buf[64];
  if (!(per_second > 0) || !std::isfinite(per_second)) return "? " + unit + "/s";
  if (per_second >= 1.0) {
    std::snprintf(buf, sizeof(buf), "%.1f %s/s", per_second, unit.c_str());
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s/%s", 1.0 / per_second, unit.c_str());
  }
  return buf;
}

ProgressBar::ProgressBar(int64_t total, std::string desc, ProgressOptions options)
    : total_(total), desc_(std::move(desc)), opt_(std::move(options)) {
  if (!opt_.clock) opt_.clock = steady_seconds;
  out_ = opt_.out ? opt_.out : &std::cout;
  terminal_ = opt_.terminal.value_or(out_ == &std::cout && isatty(STDOUT_FILENO));
  opt_.log_every_percent = std::clamp(opt_.log_every_percent, 1, 100);
  start_ = opt_.clock();
  if (terminal_) draw(start_);
}

ProgressBar::~ProgressBar() {
  try {
    close();
  } catch (...) {
    // Output failures at destruction are not worth terminating for.
  }
}

std::string ProgressBar::format_line() const {
  double elapsed = std::max(0.0, opt_.clock() - start_);
  double rate = elapsed > 0 && n_ > 0 ? double(n_) / elapsed : 0.0;
  std::string line = desc_;
  if (total_ > 0) {
    double frac = std::min(1.0, double(n_) / double(total_));
    char pct[16];
    std::snprintf(pct, sizeof(pct), " %3d%%", int(frac * 100.0));
    line += pct;
    line += "|" + format_bar(frac, opt_.bar_width) + "| ";
    line += std::to_string(n_) + "/" + std::to_string(total_);
    double remaining = rate > 0 ? double(std::max<int64_t>(0, total_ - n_)) / rate : NAN;
    line += " [" + format_interval(elapsed) + "<" + format_interval(remaining) + ", ";
  } else {
    line += " " + std::to_string(n_) + " [" + format_interval(elapsed) + ", ";
  }
  line += format_rate(rate, opt_.unit) + "]";
  if (!postfix_.empty()) line += " " + postfix_;
  return line;
}

void ProgressBar::draw(double now) {
  std::string line = format_line();
  if (terminal_) {
    size_t w = display_width(line);
    std::string pad(last_width_ > w ? last_width_ - w : 0, ' ');
    *out_ << '\r' << line << pad << std::flush;
    last_width_ = w;
  } else {
    *out_ << line << '\n' << std::flush;
  }
  last_draw_ = now;
  dirty_ = false;
}

void ProgressBar::update(int64_t n) {
  if (closed_) return;
  n_ += n;
  dirty_ = true;
  double now = opt_.clock();
  bool done = total_ > 0 && n_ >= total_;
  if (terminal_) {
    // Throttled: at most one redraw per min_interval, but always show completion.
    if (done || now - last_draw_ >= opt_.min_interval) draw(now);
    return;
  }
  if (total_ <= 0) return;
  int64_t step = std::min<int64_t>(n_, total_) * 100 / total_ / opt_.log_every_percent;
  if (step > logged_step_) {
    logged_step_ = step;
    draw(now);
  }
}

void ProgressBar::set_postfix(std::string postfix) {
  postfix_ = std::move(postfix);
  dirty_ = true;
}

void ProgressBar::close() {
  if (closed_) return;
  closed_ = true;
  if (terminal_) {
    if (dirty_) draw(opt_.clock());
    *out_ << '\n' << std::flush;
  } else if (dirty_) {
    draw(opt_.clock());
  }
}

}  // namespace retorch::cli
