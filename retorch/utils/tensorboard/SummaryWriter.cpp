// SummaryWriter: turns add_* calls into Summary events on the main and add_scalars event files.
#include "retorch/utils/tensorboard/SummaryWriter.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "retorch/core/Error.h"
#include "retorch/utils/tensorboard/Summary.h"

namespace retorch::utils::tensorboard {

std::string default_log_dir(const std::string& comment) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%b%d_%H-%M-%S", &local);
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "localhost");
  return (std::filesystem::path("runs") / (std::string(stamp) + "_" + host + comment)).string();
}

SummaryWriter::SummaryWriter(std::string log_dir, SummaryWriterOptions options)
    : log_dir_(log_dir.empty() ? default_log_dir(options.comment) : std::move(log_dir)),
      options_(std::move(options)) {
  RT_CHECK_VALUE(options_.max_queue >= 1, "SummaryWriter: max_queue must be >= 1");
  file_writer();
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (...) {
    // See EventFileWriter::~EventFileWriter: only an explicit close() can report failures.
  }
}

EventFileWriter& SummaryWriter::file_writer() {
  if (!writer_) {
    writer_ = std::make_unique<EventFileWriter>(log_dir_, options_.filename_suffix,
                                                options_.max_queue, options_.flush_secs);
  }
  return *writer_;
}

std::string SummaryWriter::file_path() {
  return file_writer().path();
}

std::map<std::string, std::string> SummaryWriter::scalars_file_paths() const {
  std::map<std::string, std::string> out;
  for (auto& [dir, w] : scalars_writers_) out[dir] = w->path();
  return out;
}

void SummaryWriter::add_scalar(const std::string& tag, double value, int64_t step,
                               std::optional<double> wall_time) {
  file_writer().add_summary(scalar_summary(tag, float(value)), step,
                            wall_time.value_or(unix_time_now()));
}

void SummaryWriter::add_scalars(const std::string& main_tag,
                                const std::map<std::string, double>& values, int64_t step,
                                std::optional<double> wall_time) {
  double t = wall_time.value_or(unix_time_now());
  // torch names each run "<log_dir>/<main_tag with '/' as '_'>_<key>" and tags it main_tag.
  std::string prefix = main_tag;
  std::replace(prefix.begin(), prefix.end(), '/', '_');
  for (auto& [key, value] : values) {
    std::string dir = log_dir_ + "/" + prefix + "_" + key;
    auto& w = scalars_writers_[dir];
    if (!w) {
      w = std::make_unique<EventFileWriter>(dir, options_.filename_suffix, options_.max_queue,
                                            options_.flush_secs);
    }
    w->add_summary(scalar_summary(main_tag, float(value)), step, t);
  }
}

void SummaryWriter::add_histogram(const std::string& tag, const Tensor& values, int64_t step,
                                  const HistogramBins& bins, std::optional<double> wall_time) {
  RT_CHECK_VALUE(values.defined(), "add_histogram: values is an undefined tensor");
  Tensor flat = values.detach().to(Device(kCPU), kDouble).contiguous();
  const double* p = flat.data_ptr<double>();
  add_histogram(tag, std::vector<double>(p, p + flat.numel()), step, bins, wall_time);
}

void SummaryWriter::add_histogram(const std::string& tag, const std::vector<double>& values,
                                  int64_t step, const HistogramBins& bins,
                                  std::optional<double> wall_time) {
  RT_CHECK_VALUE(!values.empty(), "add_histogram: the input has no element");
  Histogram h;
  switch (bins.kind) {
    case HistogramBins::Kind::kTensorflow:
      h = make_histogram(values, default_histogram_edges());
      break;
    case HistogramBins::Kind::kCount: {
      auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      h = make_histogram(values, uniform_histogram_edges(*lo, *hi, bins.count));
      break;
    }
    case HistogramBins::Kind::kEdges:
      h = make_histogram(values, bins.edges);
      break;
  }
  file_writer().add_summary(histogram_summary(tag, h), step, wall_time.value_or(unix_time_now()));
}

void SummaryWriter::add_text(const std::string& tag, const std::string& text, int64_t step,
                             std::optional<double> wall_time) {
  file_writer().add_summary(text_summary(tag, text), step, wall_time.value_or(unix_time_now()));
}

void SummaryWriter::flush() {
  if (writer_) writer_->flush();
  for (auto& [dir, w] : scalars_writers_) w->flush();
}

void SummaryWriter::close() {
  // Close everything even if one close fails, then report the first failure.
  std::exception_ptr first;
  auto close_one = [&](std::unique_ptr<EventFileWriter>& w) {
    try {
      if (w) w->close();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    w.reset();
  };
  close_one(writer_);
  for (auto& [dir, w] : scalars_writers_) close_one(w);
  scalars_writers_.clear();
  if (first) std::rethrow_exception(first);
}

}  // namespace retorch::utils::tensorboard
