// Compiled backward: reverse-mode differentiation of a pointwise kernel's statements into a
// generated backward kernel, and the autograd node that calls it.
#include "retorch/compiler/Backward.h"

#include "retorch/autograd/FunctionsManual.h"
#include "retorch/autograd/GeneratedHelpers.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/Node.h"
#include "retorch/autograd/SavedVariable.h"
#include "retorch/compiler/RowOps.h"
#include "retorch/generated/Functions.h"

namespace retorch::compiler {

// Note [Compiled backward]
// A pointwise kernel whose floating statements all have derivative rules (PointwiseGrads.cpp)
// gets a backward kernel, generated into the same source. It reads the forward kernel's inputs
// (the only tensors the autograd node saves: the forward's intermediates are registers, so
// recomputing them costs less than saving them) and the gradients of the floating outputs;
// recomputes the forward statements; then walks them in reverse, each statement's adjoint being
// the sum of what its users contribute (adjoint * local derivative), seeded by the outputs'
// gradients; and stores one gradient per floating input over the whole iteration space. The
// node sums a broadcast input's gradient down to its shape (eager's sum_to) and returns nothing
// for inputs that do not require grad. The backward kernel records no autograd itself, so a
// graph built by backward(create_graph=True) through it raises, as torch.compile's does.

std::shared_ptr<Kernel> make_backward(const Kernel& k) {
  if (!k.reductions.empty() || !k.differentiable) return nullptr;
  auto b = std::make_shared<Kernel>();
  b->name = k.name + "_backward";
  b->origins = k.origins;
  b->sizes = k.sizes;
  b->inputs = k.inputs;
  b->input_ctypes = k.input_ctypes;
  b->body = k.body;  // the forward, recomputed
  const size_t ni = k.inputs.size();
  auto dense = [&](ScalarType dt) {
    KernelArg a{dt, k.sizes, contiguous_strides(k.sizes), {}, false};
    a.loop_strides = aligned_strides(a.sizes, a.strides, k.sizes);
    return a;
  };
  std::vector<std::vector<std::string>> adj_t(k.body.size()), adj_l(ni);
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    if (!is_floating_type(k.outputs[o].dtype)) continue;
    b->grad_of_outputs.push_back(o);
    b->inputs.push_back(dense(k.outputs[o].dtype));
    b->input_ctypes.push_back(compute_ctype(k.outputs[o].dtype));
    adj_t[k.stores[o]].push_back("l" + std::to_string(b->inputs.size() - 1));
  }
  auto push_sum = [&](const std::string& ct, const std::vector<std::string>& terms) {
    std::string e;
    for (const std::string& t : terms) e += (e.empty() ? "" : " + ") + t;
    b->body.push_back({ct, e, false, {}, {}, {}});
    return "t" + std::to_string(b->body.size() - 1);
  };
  for (size_t s = k.body.size(); s-- > 0;) {
    const std::string& ct = k.body[s].ctype;
    if (adj_t[s].empty() || (ct != "float" && ct != "double")) continue;
    const std::string a = push_sum(ct, adj_t[s]);
    for (const auto& [operand, d] : k.body[s].partials) {
      const size_t i = std::stoul(operand.substr(1));
      (operand[0] == 'l' ? adj_l[i] : adj_t[i]).push_back(a + " * " + d);
    }
  }
  for (size_t i = 0; i < ni; ++i) {
    if (!is_floating_type(k.inputs[i].dtype) || adj_l[i].empty()) continue;
    const std::string a = push_sum(k.input_ctypes[i], adj_l[i]);
    b->grad_for_inputs.push_back(i);
    b->outputs.push_back(dense(k.inputs[i].dtype));
    b->stores.push_back(std::stoul(a.substr(1)));
  }
  if (b->outputs.empty()) return nullptr;
  return b;
}

namespace {

struct CompiledKernelBackward final : autograd::Node {
  CompiledKernelBackward(const Kernel& k, KernelFn fn) : k_(k), fn_(fn) {}
  std::string name() const override { return "CompiledKernelBackward"; }

  autograd::variable_list apply(autograd::variable_list&& grads) override {
    RT_CHECK(!GradMode::is_enabled(), "compile: ", k_.name, " has a compiled backward, which "
             "cannot be differentiated again (backward with create_graph=True); call the "
             "function uncompiled for higher-order gradients");
    const Kernel& b = *k_.backward;
    RT_CHECK(!inputs_.empty() || k_.inputs.empty(), "compile: ", name(), " (", k_.name,
             "): trying to backward through the graph a second time; use retain_graph=True");
    std::vector<Tensor> keep;
    std::vector<void*> args;
    for (const autograd::SavedVariable& v : inputs_) keep.push_back(v.unpack());
    for (size_t j = 0; j < b.grad_of_outputs.size(); ++j) {
      const KernelArg& a = b.inputs[k_.inputs.size() + j];
      Tensor g = grads.at(b.grad_of_outputs[j]);
      if (!g.defined()) g = zeros(a.sizes, TensorOptions(a.dtype));
      else if (g.dtype() != a.dtype || !g.is_contiguous()) g = g.to(a.dtype).contiguous();
      keep.push_back(g);
    }
    for (const Tensor& t : keep) args.push_back(t.impl()->data());
    std::vector<Tensor> outs;
    for (const KernelArg& a : b.outputs) {
      outs.push_back(empty_strided(a.sizes, a.strides, TensorOptions(a.dtype)));
      args.push_back(outs.back().impl()->data());
    }
    fn_(args.data());
    autograd::variable_list result(k_.inputs.size());
    for (size_t j = 0; j < b.grad_for_inputs.size(); ++j) {
      const size_t i = b.grad_for_inputs[j];
      if (!should_compute_output(i)) continue;
      const std::vector<int64_t>& shape = k_.inputs[i].sizes;
      result[i] = shape == b.sizes ? outs[j] : sum_to(outs[j], shape);
    }
    return result;
  }
  void release_variables() override { inputs_.clear(); }

  const Kernel& k_;
  KernelFn fn_;
  std::vector<autograd::SavedVariable> inputs_;
};

}  // namespace

void attach_backward(const Kernel& k, KernelFn backward_fn, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs) {
  auto node = std::make_shared<CompiledKernelBackward>(k, backward_fn);
  std::vector<autograd::Edge> edges;
  for (const Tensor& t : inputs) {
    node->inputs_.emplace_back(t, false);
    edges.push_back(t.requires_grad() ? autograd::gradient_edge(t) : autograd::Edge());
  }
  node->set_next_edges(std::move(edges));
  for (const Tensor& t : outputs) autograd::generated::set_history(t, node, 0, nullptr);
}

}  // namespace retorch::compiler
