// Learning-curve chart for `retorch train`: loss and accuracy per epoch, written as a PNG.
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

}  // namespace retorch::cli
