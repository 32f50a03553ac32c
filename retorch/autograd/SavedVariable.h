// SavedVariable: a tensor saved for backward, with the version check of Note [Version counter],
// or its packed form under saved-tensor hooks.
#pragma once
#include <memory>
#include <string>

#include "retorch/core/Tensor.h"

namespace retorch::autograd {

struct Node;

/// One saved tensor's pack and unpack hooks (Python's autograd.graph.saved_tensors_hooks): pack
/// runs when the tensor is saved and keeps what the hook returned; unpack gives the tensor back.
class SavedVariableHooks {
 public:
  virtual ~SavedVariableHooks() = default;
  virtual void call_pack_hook(const Tensor& t) = 0;
  virtual Tensor call_unpack_hook() = 0;
};

/// Makes the hooks of each tensor saved while it is the innermost on this thread's stack.
class SavedVariableHooksFactory {
 public:
  virtual ~SavedVariableHooksFactory() = default;
  virtual std::unique_ptr<SavedVariableHooks> make() = 0;
};

/// This thread's stack of saved-tensor hooks: pushing fails with the message given to
/// disable_saved_tensor_hooks while that is in effect (torch's disable_saved_tensors_hooks).
void push_saved_tensor_hooks(std::shared_ptr<SavedVariableHooksFactory> factory);
void pop_saved_tensor_hooks();
void disable_saved_tensor_hooks(std::string message);
void enable_saved_tensor_hooks();

class SavedVariable {
 public:
  SavedVariable() = default;
  /// is_output: t is an output of the node that saves it; saved without its grad_fn to
  /// avoid a reference cycle, and reconnected to the node on unpack. Under saved-tensor hooks
  /// only what the pack hook returned is kept (and no version is checked, as torch's).
  SavedVariable(const Tensor& t, bool is_output);
  /// The saved tensor; errors if it was modified in place or already freed.
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;
  void reset_data();
  bool defined() const { return was_saved_; }

 private:
  Tensor data_;
  std::shared_ptr<SavedVariableHooks> hooks_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool was_saved_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

}  // namespace retorch::autograd
