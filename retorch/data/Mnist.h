// MNIST and Fashion-MNIST datasets read from their IDX files.
#pragma once
#include <string>

#include "retorch/data/Dataset.h"

namespace retorch::data {

/// MNIST-format data in `root`: {train,t10k}-{images-idx3,labels-idx1}-ubyte, plain or .gz.
/// Images are float32 [N, 1, H, W] scaled to [0, 1]; targets are int64 [N].
class MNIST : public TensorDataset {
 public:
  /// Loads the training (train=true) or test split from root.
  explicit MNIST(const std::string& root, bool train = true);

 protected:
  /// hint is appended to the missing-file error (where to get the files).
  MNIST(const std::string& root, bool train, const std::string& what, const std::string& hint);

 private:
  explicit MNIST(Example all) : TensorDataset(std::move(all.data), std::move(all.target)) {}
};

/// Fashion-MNIST (same format); the default root is where Debian's package installs it.
class FashionMNIST : public MNIST {
 public:
  static constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  explicit FashionMNIST(const std::string& root = kDefaultRoot, bool train = true);
};

/// Reads the images and labels of one split of an MNIST-format directory.
Example read_mnist_split(const std::string& root, bool train, const std::string& what = "MNIST",
                         const std::string& hint = "");

}  // namespace retorch::data
