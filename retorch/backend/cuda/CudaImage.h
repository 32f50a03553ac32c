// Launchers of the CUDA backend's image kernels (CudaImage.cu): nearest and bilinear resizing,
// adaptive max pooling and group norm, with their backwards, over contiguous NCHW tensors.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaNorm.h"
#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// A 2-D resize of `planes` contiguous ih x iw planes to oh x ow: the scales given to the op
/// (0: none, the size ratio), and for bilinear whether the corner pixels align.
struct ResizeShape {
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  double scale_h = 0, scale_w = 0;
  bool align_corners = false;
};

/// y = upsample_nearest2d(x), moving elements of `element_size` bytes (any dtype).
void launch_upsample_nearest2d(int64_t element_size, const void* x, void* y, const ResizeShape& g,
                               StreamHandle s);
/// Its gradient, a thread per input element summing the outputs that copied it.
void launch_upsample_nearest2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                        const ResizeShape& g, StreamHandle s);
/// y = upsample_bilinear2d(x).
void launch_upsample_bilinear2d(FloatType t, const void* x, void* y, const ResizeShape& g,
                                StreamHandle s);
/// Its gradient, a thread per input element summing its share of the outputs that read it.
void launch_upsample_bilinear2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                         const ResizeShape& g, StreamHandle s);

/// adaptive_max_pool2d of g.planes planes of g.h x g.w into g.oh x g.ow: values and the flat
/// h * w index of each window's maximum.
void launch_adaptive_max_pool2d(FloatType t, const void* x, void* y, int64_t* indices,
                                const PoolShape& g, StreamHandle s);
/// grad_in = grad_out scattered to the indices. `acc` (g.planes * g.h * g.w floats) is the
/// accumulator of the 16-bit types; nullptr for float and double, which sum in grad_in.
void launch_adaptive_max_pool2d_backward(FloatType t, const void* grad_out, const int64_t* indices,
                                         void* grad_in, float* acc, const PoolShape& g,
                                         StreamHandle s);

/// Group norm of contiguous [n, c, hxw] in `group` groups.
struct GroupNormShape {
  int64_t n = 0, c = 0, hxw = 0, group = 1;
  double eps = 1e-5;
};

/// y = group_norm(x) and the [n, group] mean and rstd (type t); weight and bias may be nullptr.
void launch_group_norm(FloatType t, const void* x, const void* weight, const void* bias, void* y,
                       void* mean, void* rstd, const GroupNormShape& g, StreamHandle s);
/// dx, dw and db (type t) of _group_norm_backward; weight may be nullptr. `work` holds
/// 2 n c + 2 n group values of t's accumulation type (the plane sums and coefficients).
void launch_group_norm_backward(FloatType t, const void* dy, const void* x, const void* mean,
                                const void* rstd, const void* weight, void* dx, void* dw, void* db,
                                void* work, const GroupNormShape& g, StreamHandle s);

}  // namespace retorch::cuda_backend
