// Encodes TensorBoard's Event/Summary messages by field number and builds torch-style histograms.
#include "retorch/utils/tensorboard/Summary.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "retorch/core/Error.h"
#include "retorch/utils/tensorboard/ProtoEncoder.h"

namespace retorch::utils::tensorboard {

namespace {

// Field numbers from tensorboard/compat/proto/{event,summary,tensor,tensor_shape,types}.proto.
enum EventField { kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5 };
enum SummaryField { kSummaryValue = 1 };
enum ValueField {
  kValueTag = 1,
  kValueSimple = 2,
  kValueHisto = 5,
  kValueTensor = 8,
  kValueMeta = 9
};
enum HistoField {
  kHistoMin = 1,
  kHistoMax,
  kHistoNum,
  kHistoSum,
  kHistoSumSq,
  kHistoLimit,
  kHistoBucket
};
enum MetaField { kMetaPluginData = 1 };
enum PluginField { kPluginName = 1 };
enum TensorField { kTensorDtype = 1, kTensorShape = 2, kTensorStringVal = 8 };
enum ShapeField { kShapeDim = 2 };
enum DimField { kDimSize = 1 };
constexpr int kDtString = 7;  // DataType.DT_STRING

// See Note [Proto3 defaults]: zero doubles (by bit pattern, so -0.0 is kept) are left out.
void double_unless_zero(ProtoEncoder& e, int field, double v) {
  if (std::bit_cast<uint64_t>(v) != 0) e.double_field(field, v);
}

std::string wrap_value(const ProtoEncoder& value) {
  ProtoEncoder summary;
  summary.message_field(kSummaryValue, value);
  return summary.release();
}

}  // namespace

const std::vector<double>& default_histogram_edges() {
  static const std::vector<double> edges = [] {
    std::vector<double> pos;
    for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
    std::vector<double> out;
    out.reserve(2 * pos.size() + 1);
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) out.push_back(-*it);
    out.push_back(0.0);
    out.insert(out.end(), pos.begin(), pos.end());
    return out;
  }();
  return edges;
}

std::vector<double> uniform_histogram_edges(double lo, double hi, int64_t bins) {
  RT_CHECK_VALUE(bins >= 1, "add_histogram: bins must be a positive integer, got ", bins);
  RT_CHECK_VALUE(std::isfinite(lo) && std::isfinite(hi), "add_histogram: autodetected range of [",
                 lo, ", ", hi, "] is not finite");
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  std::vector<double> edges(size_t(bins) + 1);
  double step = (hi - lo) / double(bins);
  for (int64_t i = 0; i < bins; ++i) edges[size_t(i)] = lo + double(i) * step;
  edges[size_t(bins)] = hi;
  return edges;
}

Histogram make_histogram(const std::vector<double>& values, const std::vector<double>& edges) {
  RT_CHECK_VALUE(!values.empty(), "add_histogram: the input has no element");
  RT_CHECK_VALUE(edges.size() >= 2, "add_histogram: need at least 2 bin edges, got ", edges.size());
  RT_CHECK_VALUE(std::is_sorted(edges.begin(), edges.end()),
                 "add_histogram: bin edges must increase monotonically");
  Histogram h;
  h.min = values[0];
  h.max = values[0];
  h.num = double(values.size());
  size_t nbins = edges.size() - 1;
  std::vector<double> counts(nbins, 0.0);
  for (double v : values) {
    RT_CHECK_VALUE(std::isfinite(v), "add_histogram: values must be finite, found ", v);
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.sum += v;
    h.sum_squares += v * v;
    if (v < edges.front() || v > edges.back()) continue;
    size_t i = size_t(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin()) - 1;
    counts[std::min(i, nbins - 1)] += 1;  // the last bucket includes its right edge
  }
  // TensorBoard reads only right edges, so keep one (empty) bucket left of the first non-empty one
  // to carry its left edge, and drop empty buckets past the last non-empty one.
  size_t first = 0;
  while (first < nbins && counts[first] == 0) ++first;
  RT_CHECK_VALUE(first < nbins, "add_histogram: no value lies within the bin edges [",
                 edges.front(), ", ", edges.back(), "]");
  size_t last = nbins - 1;
  while (counts[last] == 0) --last;
  if (first == 0) {
    h.bucket.push_back(0.0);
    h.bucket_limit.push_back(edges[0]);
  } else {
    --first;  // the empty bucket whose right edge is the left edge of the first non-empty one
  }
  for (size_t i = first; i <= last; ++i) {
    h.bucket.push_back(counts[i]);
    h.bucket_limit.push_back(edges[i + 1]);
  }
  return h;
}

std::string scalar_summary(std::string_view tag, float value) {
  ProtoEncoder v;
  v.bytes_field(kValueTag, tag);
  if (std::bit_cast<uint32_t>(value) != 0) v.float_field(kValueSimple, value);
  return wrap_value(v);
}

std::string histogram_summary(std::string_view tag, const Histogram& h) {
  ProtoEncoder histo;
  double_unless_zero(histo, kHistoMin, h.min);
  double_unless_zero(histo, kHistoMax, h.max);
  double_unless_zero(histo, kHistoNum, h.num);
  double_unless_zero(histo, kHistoSum, h.sum);
  double_unless_zero(histo, kHistoSumSq, h.sum_squares);
  if (!h.bucket_limit.empty()) histo.packed_doubles_field(kHistoLimit, h.bucket_limit);
  if (!h.bucket.empty()) histo.packed_doubles_field(kHistoBucket, h.bucket);
  ProtoEncoder v;
  v.bytes_field(kValueTag, tag);
  v.message_field(kValueHisto, histo);
  return wrap_value(v);
}

std::string text_summary(std::string_view tag, std::string_view text) {
  ProtoEncoder dim;
  dim.varint_field(kDimSize, 1);
  ProtoEncoder shape;
  shape.message_field(kShapeDim, dim);
  ProtoEncoder tensor;
  tensor.varint_field(kTensorDtype, kDtString);
  tensor.message_field(kTensorShape, shape);
  tensor.bytes_field(kTensorStringVal, text);
  // The text plugin's content (TextPluginData{version: 0}) serializes to no bytes at all.
  ProtoEncoder plugin;
  plugin.bytes_field(kPluginName, "text");
  ProtoEncoder meta;
  meta.message_field(kMetaPluginData, plugin);
  ProtoEncoder v;
  v.bytes_field(kValueTag, std::string(tag) + "/text_summary");
  v.message_field(kValueTensor, tensor);
  v.message_field(kValueMeta, meta);
  return wrap_value(v);
}

std::string summary_event(double wall_time, int64_t step, std::string_view summary) {
  ProtoEncoder e;
  double_unless_zero(e, kEventWallTime, wall_time);
  if (step != 0) e.varint_field(kEventStep, uint64_t(step));
  e.bytes_field(kEventSummary, summary);
  return e.release();
}

std::string file_version_event(double wall_time) {
  ProtoEncoder e;
  double_unless_zero(e, kEventWallTime, wall_time);
  e.bytes_field(kEventFileVersion, "brain.Event:2");
  return e.release();
}

}  // namespace retorch::utils::tensorboard
