// Charts written as PNGs through PLplot: `retorch train`'s learning curves (loss and accuracy
// per epoch) and `retorch profile`'s memory timeline.
#pragma once
#include <string>
#include <vector>

namespace retorch::cli {

/// Per-epoch metrics, one value per finished epoch (epoch 1 first); test series may be empty.
struct LearningCurves {
  std::vector<double> train_loss;
  std::vector<double> test_loss;
  std::vector<double> train_accuracy;
  std::vector<double> test_accuracy;
};

/// Draws loss (top panel) and accuracy (bottom panel) against epoch into png_path via PLplot.
void plot_learning_curves(const std::string& png_path, const std::string& title,
                          const LearningCurves& curves, int width = 1000, int height = 800);

/// Draws allocated and reserved memory (MB) against time (ms) into png_path via PLplot.
void plot_memory_timeline(const std::string& png_path, const std::string& title,
                          const std::vector<double>& time_ms, const std::vector<double>& allocated_mb,
                          const std::vector<double>& reserved_mb, int width = 1000,
                          int height = 500);

}  // namespace retorch::cli
