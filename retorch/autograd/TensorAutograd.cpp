// The autograd methods of Tensor: requires_grad, grad, grad_fn, backward, hooks.
#include "retorch/autograd/Engine.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/Node.h"
#include "retorch/generated/Functions.h"

namespace retorch {

using autograd::Node;

bool Tensor::requires_grad() const {
  AutogradMeta* m = impl_->autograd_meta();
  return m && (m->requires_grad_ || m->grad_fn_);
}

Tensor& Tensor::set_requires_grad(bool r) {
  RT_CHECK(defined(), "requires_grad_: called on an undefined tensor");
  AutogradMeta* m = impl_->autograd_meta();
  if (m && m->grad_fn_) {
    RT_CHECK(r, "you can only change requires_grad flags of leaf variables. If you want to use a "
             "computed variable in a subgraph that doesn't require differentiation use "
             "var_no_grad = var.detach().");
    return *this;
  }
  RT_CHECK(!r || is_floating_type(dtype()),
           "only Tensors of floating point dtype can require gradients (got ", dtype(), ")");
  if (!r && !m) return *this;
  impl_->ensure_autograd_meta().requires_grad_ = r;
  if (r) impl_->add_key(DispatchKey::Autograd);
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  AutogradMeta* m = impl_->autograd_meta();
  if (!m) return undefined;
  if (m->grad_fn_ && m->retains_grad_) return m->grad_fn_->retained_grad(m->output_nr_);
  return m->grad_;
}

Tensor& Tensor::mutable_grad() { return impl_->ensure_autograd_meta().grad_; }

void Tensor::set_grad(const Tensor& g) {
  if (g.defined()) {
    RT_CHECK(g.sizes().equals(sizes()), "assigned grad has data of a different size: ",
             g.sizes(), " vs ", sizes());
    RT_CHECK(g.dtype() == dtype(), "assigned grad has data of a different type: ", g.dtype(),
             " vs ", dtype());
  }
  impl_->ensure_autograd_meta().grad_ = g;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  AutogradMeta* m = impl_->autograd_meta();
  return m ? m->grad_fn_ : none;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

uint32_t Tensor::output_nr() const {
  AutogradMeta* m = impl_->autograd_meta();
  return m ? m->output_nr_ : 0;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      TensorList inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs.vec());
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> fn) const {
  RT_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta& m = impl_->ensure_autograd_meta();
  if (m.grad_fn_) return m.grad_fn_->add_tensor_pre_hook(m.output_nr_, std::move(fn));
  static unsigned next = 1u << 30;
  unsigned h = next++;
  m.hooks_.push_back({h, std::move(fn)});
  return h;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* m = impl_->autograd_meta();
  if (!m) return;
  if (m->grad_fn_ && m->grad_fn_->remove_tensor_pre_hook(handle)) return;
  for (auto it = m->hooks_.begin(); it != m->hooks_.end(); ++it) {
    if (it->handle == handle) {
      m->hooks_.erase(it);
      return;
    }
  }
}

void Tensor::retain_grad() const {
  RT_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta& m = impl_->ensure_autograd_meta();
  if (!m.grad_fn_) return;  // leaves always keep .grad
  m.retains_grad_ = true;
  m.grad_fn_->set_retains_grad(m.output_nr_);
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = impl_->autograd_meta();
  return m && m->grad_fn_ && m->retains_grad_;
}

void Tensor::set_data(const Tensor& new_data) const {
  RT_CHECK(defined() && new_data.defined(), "set_data: both tensors must be defined");
  impl_->set_data_from(*new_data.impl());
}

}  // namespace retorch
