// out= for the generated bindings of ops whose ops.yaml entry has no out variant.
#include "python/src/bindings.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::python {

namespace {

// PyTorch's canCast: no floating result into an integral out, nothing but bool into bool.
bool castable(ScalarType from, ScalarType to) {
  if (is_floating_type(from) && !is_floating_type(to)) return false;
  return from == ScalarType::Bool || to != ScalarType::Bool;
}

}  // namespace

Tensor write_out_arg(const Tensor& result, const Tensor& out, const char* op) {
  RT_CHECK(!(GradMode::is_enabled() && (result.requires_grad() || out.requires_grad())),
           op, "(): functions with out=... arguments don't support automatic differentiation, "
           "but one of the arguments requires grad.");
  RT_CHECK(castable(result.dtype(), out.dtype()), "result type ", dtype_name(result.dtype()),
           " can't be cast to the desired output type ", dtype_name(out.dtype()));
  detail::resize_output(out, result.sizes(), op);
  Tensor target = out;
  target.copy_(result);
  return out;
}

}  // namespace retorch::python
