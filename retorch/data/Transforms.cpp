// Per-sample data transforms.
#include "retorch/data/Transforms.h"

#include <sstream>

#include "retorch/core/Error.h"
#include "retorch/data/Random.h"
#include "retorch/ops/TensorOperators.h"

namespace retorch::data {

namespace {

std::string join(const std::vector<double>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str() + "]";
}

// A [C, 1, ..., 1] tensor of values, shaped to broadcast over x's trailing dims.
Tensor channel_tensor(const std::vector<double>& values, const Tensor& x) {
  Tensor t = make_empty({int64_t(values.size())}, kDouble);
  double* p = t.data_ptr<double>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[0] = int64_t(values.size());
  return t.to(x.dtype()).reshape(shape);
}

}  // namespace

Tensor Transform::operator()(const Tensor& x) const {
  Generator gen(0);
  return apply(x, gen);
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  RT_CHECK(!mean_.empty() && mean_.size() == std_.size(), "Normalize: mean ", join(mean_),
           " and std ", join(std_), " must be non-empty and of equal length");
  for (double s : std_)
    RT_CHECK(s != 0, "Normalize: std ", join(std_), " contains 0 (division by zero)");
}

Tensor Normalize::apply(const Tensor& x, Generator&) const {
  RT_CHECK(x.is_floating_point(), "Normalize expects a floating-point tensor, got ", x.dtype());
  RT_CHECK(x.dim() >= 1, "Normalize expects a [C, ...] tensor, got a 0-dim one");
  RT_CHECK(mean_.size() == 1 || int64_t(mean_.size()) == x.size(0), "Normalize: ", mean_.size(),
           " channel means for a tensor with ", x.size(0), " channels (dim 0)");
  return (x - channel_tensor(mean_, x)) / channel_tensor(std_, x);
}

std::string Normalize::name() const {
  return "Normalize(mean=" + join(mean_) + ", std=" + join(std_) + ")";
}

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding)
    : height_(height), width_(width), padding_(padding) {
  RT_CHECK(height > 0 && width > 0 && padding >= 0, "RandomCrop: size (", height, ", ", width,
           ") must be positive and padding ", padding, " non-negative");
}

Tensor RandomCrop::apply(const Tensor& x, Generator& gen) const {
  RT_CHECK(x.dim() >= 2, "RandomCrop expects a [..., H, W] tensor, got ", x.dim(), " dims");
  Tensor padded = padding_ > 0
                      ? constant_pad_nd(x, {padding_, padding_, padding_, padding_}, 0)
                      : x;
  int64_t h = padded.size(-2), w = padded.size(-1);
  RT_CHECK(h >= height_ && w >= width_, "RandomCrop: crop (", height_, ", ", width_,
           ") is larger than the padded input (", h, ", ", w, ")");
  int64_t top = random_below(gen, h - height_ + 1);
  int64_t left = random_below(gen, w - width_ + 1);
  return padded.narrow(-2, top, height_).narrow(-1, left, width_).contiguous();
}

std::string RandomCrop::name() const {
  return "RandomCrop((" + std::to_string(height_) + ", " + std::to_string(width_) +
         "), padding=" + std::to_string(padding_) + ")";
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  RT_CHECK(p >= 0 && p <= 1, "RandomHorizontalFlip: p=", p, " must be in [0, 1]");
}

Tensor RandomHorizontalFlip::apply(const Tensor& x, Generator& gen) const {
  RT_CHECK(x.dim() >= 1, "RandomHorizontalFlip expects at least one dim");
  return random_uniform(gen) < p_ ? flip(x, {-1}) : x;
}

std::string RandomHorizontalFlip::name() const {
  std::ostringstream os;
  os << "RandomHorizontalFlip(p=" << p_ << ")";
  return os.str();
}

Compose::Compose(std::vector<std::shared_ptr<Transform>> transforms)
    : transforms_(std::move(transforms)) {
  for (const auto& t : transforms_) RT_CHECK(t != nullptr, "Compose: a transform is null");
}

Tensor Compose::apply(const Tensor& x, Generator& gen) const {
  Tensor y = x;
  for (const auto& t : transforms_) y = t->apply(y, gen);
  return y;
}

std::string Compose::name() const {
  std::string out = "Compose(";
  for (size_t i = 0; i < transforms_.size(); ++i)
    out += (i ? ", " : "") + transforms_[i]->name();
  return out + ")";
}

Lambda::Lambda(std::string name, std::function<Tensor(const Tensor&)> fn)
    : name_(std::move(name)), fn_(std::move(fn)) {
  RT_CHECK(fn_ != nullptr, "Lambda transform '", name_, "' has no function");
}

}  // namespace retorch::data
