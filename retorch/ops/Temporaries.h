// When an operator may write its result into a dying temporary operand (Note [Reusing
// temporaries]).
#pragma once
#include "retorch/core/Tensor.h"

namespace retorch::detail {

// Note [Reusing temporaries]
// `(a * 2 + 1).tanh()` makes two temporaries nobody else can see; writing `+ 1` and `tanh` into
// the first one in place saves two output allocations and two passes of fresh memory, which is
// most of an elementwise chain's time once the data leaves L2. The C++ operators and the
// unary methods take such rvalue operands and run the in-place form when it is
// indistinguishable from the functional one: the tensor is the only reference to its storage
// (no views, no saved-for-backward copies), the storage is retorch's own (not from_blob or a
// memory map), it is contiguous floating point from offset 0 filling its storage, nothing
// requires grad, and no thread-local dispatch keys are on (tracing and the profiler see
// PyTorch's functional ops). Python never reaches these overloads.
bool reusable_temporary(const Tensor& t);

/// reusable_temporary(t) and `t op other` has t's dtype and shape (other broadcasts into t).
bool reusable_temporary(const Tensor& t, const Tensor& other);

}  // namespace retorch::detail
