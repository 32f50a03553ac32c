// History bookkeeping used by the generated autograd kernels.
#include "retorch/autograd/GeneratedHelpers.h"

#include <sstream>

namespace retorch::autograd::generated {

void set_history(const Tensor& result, const std::shared_ptr<Node>& node, uint32_t output_nr,
                 const Tensor* view_of) {
  uint32_t nr = node->add_input_metadata(result);
  (void)output_nr;
  if (!is_floating_type(result.dtype())) return;  // integer outputs are not differentiable
  AutogradMeta& m = result.impl()->ensure_autograd_meta();
  m.grad_fn_ = node;
  m.output_nr_ = nr;
  m.requires_grad_ = false;
  result.impl()->add_key(DispatchKey::Autograd);
  if (view_of && view_of->defined()) {
    AutogradMeta* bm = view_of->impl()->autograd_meta();
    m.is_view_ = true;
    m.base_ = (bm && bm->is_view_) ? bm->base_ : *view_of;
  }
}

namespace {

// The tensor an in-place write into self also changes: the base of an autograd view, else the
// view op's (TensorImpl::view_base: views taken without autograd, of tensors that had none);
// undefined when self is no view.
Tensor written_base(const Tensor& self) {
  const AutogradMeta* m = self.impl()->autograd_meta();
  if (m && m->is_view_ && m->base_.defined()) return m->base_;
  TensorImpl* b = self.impl()->view_base();
  return b ? Tensor(intrusive_ptr<TensorImpl>(b)) : Tensor();
}

}  // namespace

void rebase_history(const Tensor& self, const Tensor& r) {
  AutogradMeta& m = self.impl()->ensure_autograd_meta();
  AutogradMeta* rm = r.impl()->autograd_meta();
  if (!rm || !rm->grad_fn_) return;
  if (Tensor base = written_base(self); base.defined()) {
    // Note [In-place on views]
    // The in-place op wrote r into the view's memory, so the base changed too. Record the
    // base's new value as "old base with the view's elements replaced by r" (a scatter into
    // the flattened base, which differentiates to both), then make the view a view of it.
    // PyTorch does the same with its CopySlices node. Views taken without autograd count too
    // (z = zeros(3, 4); z[1].copy_(x) gives z x's history), as PyTorch tracks every view.
    RT_CHECK(base.is_contiguous(), "in-place operation on a view of a non-contiguous tensor "
             "that requires grad is not supported; clone() the view first");
    int64_t rel = self.storage_offset() - base.storage_offset();
    Tensor idx;
    {
      NoGradGuard ng;
      idx = arange(base.numel(), TensorOptions(kLong))
                .as_strided(self.sizes(), self.strides(), rel)
                .reshape({-1});
    }
    Tensor base_new = base.reshape({-1}).scatter(0, idx, r.reshape({-1})).view(base.sizes());
    AutogradMeta& bm = base.impl()->ensure_autograd_meta();
    bm.grad_fn_ = base_new.grad_fn();
    bm.output_nr_ = base_new.output_nr();
    base.impl()->add_key(DispatchKey::Autograd);
    Tensor v = base_new.as_strided(self.sizes(), self.strides(), rel);
    m.grad_fn_ = v.grad_fn();
    m.output_nr_ = v.output_nr();
    self.impl()->add_key(DispatchKey::Autograd);
    return;
  }
  m.grad_fn_ = rm->grad_fn_;
  m.output_nr_ = rm->output_nr_;
  self.impl()->add_key(DispatchKey::Autograd);
}

void check_inplace(const Tensor& self, bool requires_grad, const char* op) {
  if (!requires_grad) return;
  const Tensor base = written_base(self);
  RT_CHECK(!(base.defined() && base.is_leaf() && base.requires_grad()),
           op, ": a view of a leaf Variable that requires grad is being used in an in-place "
           "operation.");
  AutogradMeta* m = self.impl()->autograd_meta();
  if (!m) return;
  RT_CHECK(!(m->requires_grad_ && !m->grad_fn_), op, ": a leaf Variable that requires grad is "
           "being used in an in-place operation.");
}

void raise_not_implemented(const char* op, const char* arg) {
  if (arg == nullptr)
    detail::throw_error(ErrorKind::kNotImplemented,
                        detail::str_cat("the derivative for '", op, "' is not implemented."));
  detail::throw_error(ErrorKind::kNotImplemented,
                      detail::str_cat("the derivative for '", op, "' with respect to '", arg,
                                      "' is not implemented."));
}

std::string describe_tensor(const Tensor& t) {
  if (!t.defined()) return "None";
  std::ostringstream os;
  os << dtype_name(t.dtype()) << t.sizes();
  return os.str();
}

}  // namespace retorch::autograd::generated
