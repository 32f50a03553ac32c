// SummaryWriter: torch.utils.tensorboard.SummaryWriter in C++ (scalars, histograms, text).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "retorch/core/Tensor.h"
#include "retorch/utils/tensorboard/EventFileWriter.h"

namespace retorch::utils::tensorboard {

/// How add_histogram buckets values: TensorBoard's default edges, N equal bins, or given edges.
struct HistogramBins {
  enum class Kind { kTensorflow, kCount, kEdges };
  Kind kind = Kind::kTensorflow;
  int64_t count = 0;
  std::vector<double> edges;

  /// torch's bins="tensorflow" (the default).
  static HistogramBins tensorflow() { return {}; }
  /// n equal-width bins over [min, max] of the values (numpy's bins=n).
  static HistogramBins bins(int64_t n) { return {Kind::kCount, n, {}}; }
  /// Explicit monotonically increasing edges (numpy's bins=[...]).
  static HistogramBins explicit_edges(std::vector<double> e) {
    return {Kind::kEdges, 0, std::move(e)};
  }
};

/// Constructor options, with torch's defaults.
struct SummaryWriterOptions {
  std::string comment;          // appended to the default log_dir
  int max_queue = 10;           // flush after this many pending events
  double flush_secs = 120;      // or after this many seconds
  std::string filename_suffix;  // appended to every event file name
};

/// "runs/<Mon>DD_HH-MM-SS_<hostname><comment>", torch's default log_dir.
std::string default_log_dir(const std::string& comment = "");

/// Writes TensorBoard event files under log_dir; readable by TensorBoard and its Python reader.
class SummaryWriter {
 public:
  /// Creates log_dir (default_log_dir() when empty) and its first event file.
  explicit SummaryWriter(std::string log_dir = "", SummaryWriterOptions options = {});
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  /// Records one scalar (stored as float32 simple_value, as torch does).
  void add_scalar(const std::string& tag, double value, int64_t step = 0,
                  std::optional<double> wall_time = std::nullopt);
  /// Records several scalars under main_tag, each in its own run "<log_dir>/<main_tag>_<key>".
  void add_scalars(const std::string& main_tag, const std::map<std::string, double>& values,
                   int64_t step = 0, std::optional<double> wall_time = std::nullopt);
  /// Records a histogram of a tensor's values (any shape, dtype and device).
  void add_histogram(const std::string& tag, const Tensor& values, int64_t step = 0,
                     const HistogramBins& bins = HistogramBins::tensorflow(),
                     std::optional<double> wall_time = std::nullopt);
  /// Records a histogram of plain values.
  void add_histogram(const std::string& tag, const std::vector<double>& values, int64_t step = 0,
                     const HistogramBins& bins = HistogramBins::tensorflow(),
                     std::optional<double> wall_time = std::nullopt);
  /// Records a text entry (shown by TensorBoard's text plugin as Markdown).
  void add_text(const std::string& tag, const std::string& text, int64_t step = 0,
                std::optional<double> wall_time = std::nullopt);
  /// Pushes everything written so far to disk (main file and add_scalars runs).
  void flush();
  /// Flushes and closes all files; a later add_* opens a new event file.
  void close();

  /// The run directory.
  const std::string& log_dir() const { return log_dir_; }
  /// The current main event file (opens one if closed).
  std::string file_path();
  /// Paths of the add_scalars runs' event files, by run directory.
  std::map<std::string, std::string> scalars_file_paths() const;

 private:
  EventFileWriter& file_writer();

  std::string log_dir_;
  SummaryWriterOptions options_;
  std::unique_ptr<EventFileWriter> writer_;
  std::map<std::string, std::unique_ptr<EventFileWriter>> scalars_writers_;
};

}  // namespace retorch::utils::tensorboard
