// Whether an operator may write into a dying temporary: see Note [Reusing temporaries].
#include "retorch/ops/Temporaries.h"

#include "retorch/core/Storage.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/dispatch/DispatchKeySet.h"

namespace retorch::detail {

bool reusable_temporary(const Tensor& t) {
  if (!t.defined() || t.use_count() != 1) return false;
  const TensorImpl& impl = *t.impl();
  const Storage& s = impl.storage();
  if (s.use_count() != 1 || !s->resizable()) return false;
  if (!is_floating_type(t.dtype()) || !impl.is_contiguous() || impl.storage_offset() != 0 ||
      size_t(t.numel()) * size_t(t.element_size()) != s->nbytes())
    return false;
  if (t.requires_grad()) return false;
  return tls_local_dispatch_key_set().included.empty();
}

bool reusable_temporary(const Tensor& t, const Tensor& other) {
  if (!other.defined() || other.dtype() != t.dtype() || other.device() != t.device() ||
      other.requires_grad() || other.dim() > t.dim())
    return false;
  for (int64_t i = 1; i <= other.dim(); ++i) {
    int64_t o = other.size(-i);
    if (o != 1 && o != t.size(-i)) return false;
  }
  return reusable_temporary(t);
}

}  // namespace retorch::detail
