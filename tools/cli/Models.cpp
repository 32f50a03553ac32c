// The CLI's models, written with the nn modules the way a libtorch user would write them.
#include "tools/cli/Models.h"

#include "retorch/ops/TensorOperators.h"

namespace retorch::cli {

MLPImpl::MLPImpl() : nn::Module("MLP") {
  layers = register_module("layers", nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(),
                                                    nn::Linear(256, 128), nn::ReLU(),
                                                    nn::Linear(128, 10)));
}

Tensor MLPImpl::forward(const Tensor& x) { return layers(x); }

LeNetImpl::LeNetImpl() : nn::Module("LeNet") {
  features = register_module(
      "features",
      nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2)), nn::ReLU(),
                     nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(6, 16, 5)), nn::ReLU(),
                     nn::MaxPool2d(2)));
  classifier = register_module(
      "classifier", nn::Sequential(nn::Flatten(), nn::Linear(16 * 5 * 5, 120), nn::ReLU(),
                                   nn::Linear(120, 84), nn::ReLU(), nn::Linear(84, 10)));
}

Tensor LeNetImpl::forward(const Tensor& x) { return classifier(features(x)); }

ConvNetImpl::ConvNetImpl() : nn::Module("ConvNet") {
  layer1 = register_module(
      "layer1", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 5).stride(1).padding(2)),
                               nn::BatchNorm2d(16), nn::ReLU(), nn::MaxPool2d(2)));
  layer2 = register_module(
      "layer2", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(16, 32, 5).stride(1).padding(2)),
                               nn::BatchNorm2d(32), nn::ReLU(), nn::MaxPool2d(2)));
  fc = register_module("fc", nn::Linear(7 * 7 * 32, 10));
}

Tensor ConvNetImpl::forward(const Tensor& x) { return fc(layer2(layer1(x)).flatten(1)); }

ResidualBlockImpl::ResidualBlockImpl(int64_t in, int64_t out, int64_t stride)
    : nn::Module("ResidualBlock") {
  conv1 = register_module(
      "conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
  bn1 = register_module("bn1", nn::BatchNorm2d(out));
  conv2 = register_module("conv2",
                          nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
  bn2 = register_module("bn2", nn::BatchNorm2d(out));
  if (stride != 1 || in != out) {
    downsample = register_module(
        "downsample",
        nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                       nn::BatchNorm2d(out)));
  }
}

Tensor ResidualBlockImpl::forward(const Tensor& x) {
  Tensor out = relu(bn1(conv1(x)));
  out = bn2(conv2(out));
  return relu(out + (downsample ? downsample(x) : x));
}

ResNetImpl::ResNetImpl(std::vector<int64_t> blocks) : nn::Module("ResNet") {
  conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1).bias(false)));
  bn = register_module("bn", nn::BatchNorm2d(16));
  stages = register_module("stages", nn::Sequential());
  int64_t in = 16;
  const int64_t widths[] = {16, 32, 64};
  for (size_t s = 0; s < blocks.size() && s < 3; ++s) {
    for (int64_t b = 0; b < blocks[s]; ++b) {
      int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      stages->push_back(ResidualBlock(in, widths[s], stride));
      in = widths[s];
    }
  }
  fc = register_module("fc", nn::Linear(in, 10));
}

Tensor ResNetImpl::forward(const Tensor& x) {
  Tensor h = stages(relu(bn(conv(x))));
  return fc(adaptive_avg_pool2d(h, {1, 1}).flatten(1));
}

std::vector<std::string> model_names() { return {"mlp", "lenet", "convnet", "resnet"}; }

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "mlp") return MLP().ptr();
  if (name == "lenet") return LeNet().ptr();
  if (name == "convnet") return ConvNet().ptr();
  if (name == "resnet") return ResNet().ptr();
  RT_CHECK(false, "unknown model '", name, "'; choose one of mlp, lenet, convnet, resnet");
}

}  // namespace retorch::cli
