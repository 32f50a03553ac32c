// ProgressBar tests: time/rate/bar formatting, percentages, terminal throttling with a fake clock.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "tools/cli/Progress.h"

using namespace retorch::cli;

namespace {

struct FakeClock {
  double now = 100.0;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

ProgressOptions options(FakeClock& clock, std::ostringstream& out, bool terminal) {
  ProgressOptions o;
  o.unit = "img";
  o.bar_width = 10;
  o.terminal = terminal;
  o.out = &out;
  o.clock = clock.fn();
  return o;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST(ProgressFormatTest, Interval) {
  EXPECT_EQ(format_interval(0), "00:00");
  EXPECT_EQ(format_interval(12.9), "00:12");
  EXPECT_EQ(format_interval(65), "01:05");
  EXPECT_EQ(format_interval(3599), "59:59");
  EXPECT_EQ(format_interval(3600), "1:00:00");
  EXPECT_EQ(format_interval(3723), "1:02:03");
  EXPECT_EQ(format_interval(100 * 3600 + 1), "100:00:01");
  EXPECT_EQ(format_interval(-1), "?");
  EXPECT_EQ(format_interval(NAN), "?");
  EXPECT_EQ(format_interval(INFINITY), "?");
}

TEST(ProgressFormatTest, Bar) {
  EXPECT_EQ(format_bar(0.0, 4), "    ");
  EXPECT_EQ(format_bar(1.0, 4), "████");
  EXPECT_EQ(format_bar(0.5, 4), "██  ");
  EXPECT_EQ(format_bar(0.7, 10), "███████   ");
  EXPECT_EQ(format_bar(0.65, 10), "██████▌   ");
  EXPECT_EQ(format_bar(1.0 / 80, 10), "▏         ");
  EXPECT_EQ(format_bar(2.0, 3), "███");
  EXPECT_EQ(format_bar(-1.0, 3), "   ");
}

TEST(ProgressFormatTest, Rate) {
  EXPECT_EQ(format_rate(3512.44, "img"), "3512.4 img/s");
  EXPECT_EQ(format_rate(0.4, "batch"), "2.50 s/batch");
  EXPECT_EQ(format_rate(0, "img"), "? img/s");
}

TEST(ProgressBarTest, LineLikeTqdm) {
  FakeClock clock;
  std::ostringstream out;
  ProgressBar bar(600, "epoch 2/5", options(clock, out, false));
  clock.now += 12.0;
  bar.set_postfix("loss=0.4123");
  bar.update(390);
  // 390 of 600 in 12 s: 65%, 32.5 img/s, 210 left -> 6.46 s.
  EXPECT_EQ(bar.format_line(),
            "epoch 2/5  65%|██████▌   | 390/600 [00:12<00:06, 32.5 img/s] loss=0.4123");
  ProgressBar unknown(0, "eval", options(clock, out, false));
  clock.now += 2.0;
  unknown.update(10);
  EXPECT_EQ(unknown.format_line(), "eval 10 [00:02, 5.0 img/s]");
  ProgressBar fresh(50, "x", options(clock, out, false));
  EXPECT_EQ(fresh.format_line(), "x   0%|          | 0/50 [00:00<?, ? img/s]");
}

TEST(ProgressBarTest, TerminalRedrawsInPlaceAtMostTenTimesPerSecond) {
  FakeClock clock;
  std::ostringstream out;
  {
    ProgressBar bar(1000, "e", options(clock, out, true));
    EXPECT_EQ(count(out.str(), "\r"), 1);  // the initial 0% line
    for (int i = 0; i < 999; ++i) {
      clock.now += 0.001;  // 1000 updates/s
      bar.update();
    }
    // ~1 s of updates at 1 kHz: about 10 redraws, not 999.
    int redraws = count(out.str(), "\r") - 1;
    EXPECT_GE(redraws, 9);
    EXPECT_LE(redraws, 10);
    bar.update();  // completion is always drawn
    EXPECT_NE(out.str().rfind("1000/1000"), std::string::npos);
    EXPECT_EQ(count(out.str(), "\n"), 0);
  }  // destructor closes: ends the line exactly once
  EXPECT_EQ(out.str().back(), '\n');
  EXPECT_EQ(count(out.str(), "\n"), 1);
}

TEST(ProgressBarTest, TerminalBlanksLeftoversOfLongerLines) {
  FakeClock clock;
  std::ostringstream out;
  ProgressBar bar(10, "e", options(clock, out, true));
  bar.set_postfix("loss=123456.789");
  clock.now += 1;
  bar.update();
  bar.set_postfix("");
  clock.now += 1;
  bar.update();
  std::string s = out.str();
  std::string last = s.substr(s.rfind('\r') + 1);
  EXPECT_EQ(last.find("loss"), std::string::npos);
  EXPECT_EQ(last.back(), ' ');  // padded over the old postfix
  bar.close();
  bar.close();  // idempotent
  EXPECT_EQ(count(out.str(), "\n"), 1);
}

TEST(ProgressBarTest, LogModePrintsOneLinePerStep) {
  FakeClock clock;
  std::ostringstream out;
  auto opt = options(clock, out, false);
  opt.log_every_percent = 25;
  ProgressBar bar(100, "epoch 1/1", opt);
  EXPECT_EQ(out.str(), "");
  for (int i = 0; i < 100; ++i) {
    clock.now += 0.01;
    bar.update();
  }
  bar.close();
  std::string s = out.str();
  EXPECT_EQ(count(s, "\n"), 4);  // 25, 50, 75, 100 %
  EXPECT_EQ(count(s, "\r"), 0);
  EXPECT_NE(s.find(" 25%|"), std::string::npos);
  EXPECT_NE(s.find("100%|"), std::string::npos);
}

TEST(ProgressBarTest, LogModeCloseAddsFinalLineWhenStateChanged) {
  FakeClock clock;
  std::ostringstream out;
  ProgressBar bar(100, "e", options(clock, out, false));
  bar.update(55);  // logs 50%
  bar.set_postfix("loss=1.0");
  bar.close();  // stopped early: the final state still gets a line
  std::string s = out.str();
  EXPECT_EQ(count(s, "\n"), 2);
  EXPECT_NE(s.find("55/100"), std::string::npos);
  EXPECT_NE(s.find("loss=1.0"), std::string::npos);
}
