// Containers: Sequential's forward chain and bounds-checked indexing.
#include "retorch/nn/Container.h"

namespace retorch::nn {

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) {
    x = m->forward(x);
    notify_forward(*m, x);  // see Note [Forward observers]
  }
  return x;
}

const std::shared_ptr<Module>& SequentialImpl::operator[](size_t i) const {
  RT_CHECK_INDEX(i < modules_.size(), "Sequential: index ", i, " is out of range (size ",
                 modules_.size(), ")");
  return modules_[i];
}

const std::shared_ptr<Module>& ModuleListImpl::operator[](size_t i) const {
  RT_CHECK_INDEX(i < modules_.size(), "ModuleList: index ", i, " is out of range (size ",
                 modules_.size(), ")");
  return modules_[i];
}

}  // namespace retorch::nn
