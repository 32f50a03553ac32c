// TensorBoard record bodies: Event and Summary protos (scalar, histogram, text) and histogram math.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace retorch::utils::tensorboard {

/// TensorBoard's HistogramProto: statistics of all values plus right-edged bucket counts.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // right edge of each bucket
  std::vector<double> bucket;        // count in each bucket
};

/// The "tensorflow" default edges: -1e20..-1e-12, 0, 1e-12..1e20, neighbours a factor 1.1 apart.
const std::vector<double>& default_histogram_edges();
/// bins + 1 equal-width edges over [lo, hi] (widened by 0.5 each way when lo == hi), like numpy.
std::vector<double> uniform_histogram_edges(double lo, double hi, int64_t bins);
/// Counts values into [e_i, e_i+1) buckets (the last one closed) and trims empty ends like torch.
Histogram make_histogram(const std::vector<double>& values, const std::vector<double>& edges);

/// Serialized Summary with one simple_value (how torch writes add_scalar).
std::string scalar_summary(std::string_view tag, float value);
/// Serialized Summary with one HistogramProto.
std::string histogram_summary(std::string_view tag, const Histogram& h);
/// Serialized Summary for the text plugin: a DT_STRING tensor under tag "<tag>/text_summary".
std::string text_summary(std::string_view tag, std::string_view text);

/// Serialized Event carrying a serialized Summary.
std::string summary_event(double wall_time, int64_t step, std::string_view summary);
/// Serialized Event that opens every event file: file_version "brain.Event:2".
std::string file_version_event(double wall_time);

}  // namespace retorch::utils::tensorboard
