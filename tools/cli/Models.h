// The models `retorch train --model` builds: mlp, lenet, convnet (the default) and resnet.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "retorch/nn/nn.h"

namespace retorch::cli {

/// 784-256-128-10 with ReLUs.
struct MLPImpl : nn::Module {
  MLPImpl();
  Tensor forward(const Tensor& x) override;
  nn::Sequential layers{nullptr};
};
RETORCH_MODULE(MLP);

/// LeNet-5 for 28x28 inputs: conv5(6, pad 2)-relu-maxpool, conv5(16)-relu-maxpool, 120-84-10.
struct LeNetImpl : nn::Module {
  LeNetImpl();
  Tensor forward(const Tensor& x) override;
  nn::Sequential features{nullptr}, classifier{nullptr};
};
RETORCH_MODULE(LeNet);

/// Two conv5x5(16, 32; pad 2)-BatchNorm-ReLU-maxpool2 blocks and a linear layer (7*7*32 -> 10).
struct ConvNetImpl : nn::Module {
  ConvNetImpl();
  Tensor forward(const Tensor& x) override;
  nn::Sequential layer1{nullptr}, layer2{nullptr};
  nn::Linear fc{nullptr};
};
RETORCH_MODULE(ConvNet);

/// conv3x3-BN-ReLU-conv3x3-BN plus the (projected when the shape changes) input, then ReLU.
struct ResidualBlockImpl : nn::Module {
  ResidualBlockImpl(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential downsample{nullptr};
};
RETORCH_MODULE(ResidualBlock);

/// A small ResNet: conv3x3(16)-BN-ReLU, three stages of residual blocks (16, 32, 64 channels;
/// stride 1, 2, 2), global average pooling and a linear classifier.
struct ResNetImpl : nn::Module {
  explicit ResNetImpl(std::vector<int64_t> blocks = {2, 2, 2});
  Tensor forward(const Tensor& x) override;
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Sequential stages{nullptr};
  nn::Linear fc{nullptr};
};
RETORCH_MODULE(ResNet);

/// The model named `name` (mlp, lenet, convnet, resnet); an error lists the choices.
std::shared_ptr<nn::Module> make_model(const std::string& name);
/// The names make_model accepts.
std::vector<std::string> model_names();

}  // namespace retorch::cli
