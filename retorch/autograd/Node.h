// Node: one backward function in the autograd graph, with edges to the nodes of its inputs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "retorch/core/AutogradMeta.h"
#include "retorch/core/Tensor.h"

namespace retorch::autograd {

using variable_list = std::vector<Tensor>;
struct Node;

/// Where a gradient goes: input `input_nr` of `function`.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool valid() const { return function != nullptr; }
};

/// False only while the engine runs a task that computes gradients for chosen inputs and the
/// edge leads to none of them (Engine.cpp's Note [Gradients nobody asked for]).
bool edge_needed(const Edge& e);

/// Shape, dtype and device of one forward output, so backward can check its gradient.
struct InputMetadata {
  DimVector shape;
  ScalarType dtype = kFloat;
  Device device;
};

struct Node : std::enable_shared_from_this<Node> {
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Stable name for printing, profiles and errors: "MulBackward0".
  virtual std::string name() const = 0;
  /// Gradients of the forward outputs in; gradients of the forward inputs out.
  virtual variable_list apply(variable_list&& grads) = 0;
  /// Frees saved tensors once backward has used them (unless retain_graph).
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  void set_next_edges(std::vector<Edge> e) { next_edges_ = std::move(e); }
  size_t num_outputs() const { return next_edges_.size(); }
  size_t num_inputs() const { return input_metadata_.size(); }
  uint32_t add_input_metadata(const Tensor& t);
  const InputMetadata& input_metadata(size_t i) const { return input_metadata_[i]; }
  /// Whether backward must produce the gradient of forward input i: its edge leads somewhere,
  /// and (in autograd.grad or backward(inputs=...)) to a node on a path to a requested input.
  bool should_compute_output(size_t i) const {
    return i < next_edges_.size() && next_edges_[i].valid() && edge_needed(next_edges_[i]);
  }
  bool any_output_needed(size_t off, size_t n) const {
    for (size_t i = off; i < off + n; ++i)
      if (should_compute_output(i)) return true;
    return false;
  }
  uint64_t sequence_nr() const { return sequence_nr_; }

  /// Hooks on the gradient of forward output `output_nr` (Tensor::register_hook on non-leaves).
  unsigned add_tensor_pre_hook(uint32_t output_nr, std::function<Tensor(const Tensor&)> fn);
  bool remove_tensor_pre_hook(unsigned handle);
  /// Runs the pre-hooks on incoming grads; records retained grads.
  void run_pre_hooks(variable_list& grads);
  void set_retains_grad(uint32_t output_nr);
  const Tensor& retained_grad(uint32_t output_nr) const;
  bool retains_grad(uint32_t output_nr) const;

  /// Anomaly mode: the forward op that created this node, for error messages.
  void set_anomaly_info(std::string info) { anomaly_info_ = std::move(info); }
  const std::string& anomaly_info() const { return anomaly_info_; }

 protected:
  std::vector<Edge> next_edges_;
  std::vector<InputMetadata> input_metadata_;
  uint64_t sequence_nr_;

 private:
  struct PreHook {
    uint32_t output_nr;
    unsigned handle;
    std::function<Tensor(const Tensor&)> fn;
  };
  std::vector<PreHook> pre_hooks_;
  std::vector<std::pair<uint32_t, Tensor>> retained_;
  std::string anomaly_info_;
};

/// Accumulates incoming gradients into a leaf's .grad.
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override;
  Tensor variable;
};

/// A node whose backward raises (for ops whose derivative is not implemented).
struct NotImplementedBackward final : Node {
  explicit NotImplementedBackward(std::string msg) : msg_(std::move(msg)) {}
  std::string name() const override { return "NotImplemented"; }
  variable_list apply(variable_list&&) override;
  std::string msg_;
};

/// The edge a gradient for t flows into: its grad_fn, or its AccumulateGrad if a leaf.
Edge gradient_edge(const Tensor& t);
/// The leaf's AccumulateGrad (created on first use, cached weakly).
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

}  // namespace retorch::autograd
