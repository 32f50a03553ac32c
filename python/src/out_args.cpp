// out= for the generated bindings of ops whose ops.yaml entry has no out variant.
#include "python/src/bindings.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::python {

Tensor write_out_arg(const Tensor& result, const Tensor& out, const char* op) {
  RT_CHECK(!(GradMode::is_enabled() && (result.requires_grad() || out.requires_grad())),
           op, "(): functions with out=... arguments don't support automatic differentiation, "
           "but one of the arguments requires grad.");
  RT_CHECK(can_cast(result.dtype(), out.dtype()), "result type ", dtype_name(result.dtype()),
           " can't be cast to the desired output type ", dtype_name(out.dtype()));
  detail::resize_output(out, result.sizes(), op);
  Tensor target = out;
  target.copy_(result);
  return out;
}

}  // namespace retorch::python
