// Per-sample data transforms (torchvision-style): Normalize, RandomCrop, RandomHorizontalFlip, Compose.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "retorch/core/Generator.h"
#include "retorch/core/Tensor.h"

namespace retorch::data {

/// A function of one sample's data; random ones draw only from the Generator they are given.
class Transform {
 public:
  virtual ~Transform() = default;
  /// Transforms x (one sample, e.g. [C, H, W]); see Note [Data randomness] for gen.
  virtual Tensor apply(const Tensor& x, Generator& gen) const = 0;
  /// A stable name for printing, e.g. "RandomCrop(28, padding=4)".
  virtual std::string name() const = 0;
  /// apply(x, gen).
  Tensor operator()(const Tensor& x, Generator& gen) const { return apply(x, gen); }
  /// apply with a Generator seeded 0.
  Tensor operator()(const Tensor& x) const;
};

/// (x - mean[c]) / std[c] per channel (dim 0); one value broadcasts to all channels.
class Normalize : public Transform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor apply(const Tensor& x, Generator& gen) const override;
  std::string name() const override;

 private:
  std::vector<double> mean_, std_;
};

/// Pads the last two dims by `padding` zeros on every side, then crops a random height x width
/// window; draws the top offset, then the left offset.
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0) : RandomCrop(size, size, padding) {}
  RandomCrop(int64_t height, int64_t width, int64_t padding);
  Tensor apply(const Tensor& x, Generator& gen) const override;
  std::string name() const override;

 private:
  int64_t height_, width_, padding_;
};

/// Flips the last dim with probability p (draws one uniform number).
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor apply(const Tensor& x, Generator& gen) const override;
  std::string name() const override;

 private:
  double p_;
};

/// Applies transforms in order, sharing one generator.
class Compose : public Transform {
 public:
  explicit Compose(std::vector<std::shared_ptr<Transform>> transforms);
  Tensor apply(const Tensor& x, Generator& gen) const override;
  std::string name() const override;

 private:
  std::vector<std::shared_ptr<Transform>> transforms_;
};

/// A deterministic user function as a transform.
class Lambda : public Transform {
 public:
  Lambda(std::string name, std::function<Tensor(const Tensor&)> fn);
  Tensor apply(const Tensor& x, Generator& gen) const override { return fn_(x); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::function<Tensor(const Tensor&)> fn_;
};

}  // namespace retorch::data
