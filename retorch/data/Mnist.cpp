// MNIST / Fashion-MNIST loading: find the files, read the IDX tensors, check they agree.
#include "retorch/data/Mnist.h"

#include <filesystem>

#include "retorch/core/Error.h"
#include "retorch/data/Idx.h"

namespace retorch::data {

namespace {

std::string find_file(const std::string& root, const std::string& name, const std::string& what,
                      const std::string& hint) {
  namespace fs = std::filesystem;
  for (const std::string& candidate : {name, name + ".gz"}) {
    fs::path p = fs::path(root) / candidate;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  RT_ERROR(what, ": cannot find '", name, "' or '", name, ".gz' in '", root, "'",
           hint.empty() ? "" : "; ", hint);
}

}  // namespace

Example read_mnist_split(const std::string& root, bool train, const std::string& what,
                         const std::string& hint) {
  std::string prefix = train ? "train" : "t10k";
  std::string image_path = find_file(root, prefix + "-images-idx3-ubyte", what, hint);
  std::string label_path = find_file(root, prefix + "-labels-idx1-ubyte", what, hint);
  Tensor images = read_idx(image_path);
  Tensor labels = read_idx(label_path);
  RT_CHECK(images.dtype() == kByte && images.dim() == 3, what, ": '", image_path,
           "' must hold uint8 images [N, H, W] (magic 0x00000803), got ", images.dtype(), " with ",
           images.dim(), " dims");
  RT_CHECK(labels.dtype() == kByte && labels.dim() == 1, what, ": '", label_path,
           "' must hold uint8 labels [N] (magic 0x00000801), got ", labels.dtype(), " with ",
           labels.dim(), " dims");
  RT_CHECK(images.size(0) == labels.size(0), what, ": '", image_path, "' has ", images.size(0),
           " images but '", label_path, "' has ", labels.size(0), " labels");
  int64_t n = images.size(0), h = images.size(1), w = images.size(2);
  Tensor data = make_empty({n, 1, h, w}, kFloat);
  const uint8_t* src = static_cast<const uint8_t*>(images.data_ptr());
  float* dst = data.data_ptr<float>();
  for (int64_t i = 0, total = n * h * w; i < total; ++i) dst[i] = float(src[i]) / 255.0f;
  return {data, labels.to(kLong)};
}

MNIST::MNIST(const std::string& root, bool train)
    : MNIST(read_mnist_split(root, train, "MNIST", "put the MNIST IDX files there")) {}

MNIST::MNIST(const std::string& root, bool train, const std::string& what,
             const std::string& hint)
    : MNIST(read_mnist_split(root, train, what, hint)) {}

FashionMNIST::FashionMNIST(const std::string& root, bool train)
    : MNIST(root, train, "FashionMNIST",
            "the Debian package dataset-fashion-mnist provides these files (in " +
                std::string(kDefaultRoot) + ")") {}

}  // namespace retorch::data
