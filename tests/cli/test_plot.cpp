// plot_learning_curves tests: a real PNG comes out, and bad input or paths are clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "retorch/core/Error.h"
#include "tools/cli/Plot.h"

using namespace retorch::cli;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("retorch_plot_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

LearningCurves sample(int epochs) {
  LearningCurves c;
  for (int e = 1; e <= epochs; ++e) {
    c.train_loss.push_back(1.6 * std::exp(-0.45 * e) + 0.25);
    c.test_loss.push_back(1.5 * std::exp(-0.4 * e) + 0.32 + 0.004 * e);
    c.train_accuracy.push_back(0.93 - 0.35 * std::exp(-0.5 * e));
    c.test_accuracy.push_back(0.89 - 0.33 * std::exp(-0.5 * e));
  }
  return c;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const retorch::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(PlotTest, WritesAPng) {
  std::string path = temp_path("curves.png");
  plot_learning_curves(path, "Fashion-MNIST, LeNet", sample(10));
  std::string png = read_all(path);
  ASSERT_GT(png.size(), 10000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  // Width and height (big-endian) follow the IHDR tag.
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 1000u);
  EXPECT_EQ(be32(20), 800u);
  std::filesystem::remove(path);
}

TEST(PlotTest, OneEpochAndTrainOnlyCurves) {
  std::string path = temp_path("one.png");
  LearningCurves c;
  c.train_loss = {0.7};
  plot_learning_curves(path, "one epoch", c, 400, 300);
  EXPECT_GT(std::filesystem::file_size(path), 2000u);
  // Repeated plots reuse PLplot streams cleanly.
  plot_learning_curves(path, "again", sample(3), 400, 300);
  EXPECT_GT(std::filesystem::file_size(path), 2000u);
  std::filesystem::remove(path);
}

TEST(PlotTest, BadInputIsAClearError) {
  std::string path = temp_path("bad.png");
  EXPECT_NE(message_of([&] { plot_learning_curves(path, "t", LearningCurves{}); }).find("empty"),
            std::string::npos);
  LearningCurves c = sample(3);
  c.test_loss.pop_back();
  EXPECT_NE(message_of([&] { plot_learning_curves(path, "t", c); }).find("test_loss has 2"),
            std::string::npos);
  c = sample(3);
  c.train_accuracy[1] = NAN;
  EXPECT_NE(message_of([&] { plot_learning_curves(path, "t", c); }).find("epoch 2"),
            std::string::npos);
  std::string msg =
      message_of([&] { plot_learning_curves("/nonexistent-dir/x/curves.png", "t", sample(3)); });
  EXPECT_NE(msg.find("cannot write '/nonexistent-dir/x/curves.png'"), std::string::npos) << msg;
}
