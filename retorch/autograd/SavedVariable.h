// SavedVariable: a tensor saved for backward, with the version check of Note [Version counter].
#pragma once
#include <memory>

#include "retorch/core/Tensor.h"

namespace retorch::autograd {

struct Node;

class SavedVariable {
 public:
  SavedVariable() = default;
  /// is_output: t is an output of the node that saves it; saved without its grad_fn to
  /// avoid a reference cycle, and reconnected to the node on unpack.
  SavedVariable(const Tensor& t, bool is_output);
  /// The saved tensor; errors if it was modified in place or already freed.
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;
  void reset_data();
  bool defined() const { return was_saved_; }

 private:
  Tensor data_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool was_saved_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

}  // namespace retorch::autograd
