// Launchers of the CUDA gather ops' kernels (CudaGather.cu): im2col and col2im, scatter_reduce,
// _embedding_bag's forward and embedding_renorm_.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaGeometry.h"
#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// The sliding windows of im2col/col2im over n images of c x h x w: kernel, dilation, padding
/// and stride, and the oh x ow window positions. `in_strides`: the element strides of the
/// input, an image [n, c, h, w] for im2col, columns [n, c * kh * kw, oh * ow] for col2im.
struct FoldShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, dh = 1, dw = 1, ph = 0, pw = 0, sh = 1, sw = 1;
  int64_t oh = 0, ow = 0;
  int64_t in_strides[4] = {};
};

/// cols (contiguous [n, c * kh * kw, oh * ow]) = im2col(image).
void launch_im2col(FloatType t, const void* image, void* cols, const FoldShape& g, StreamHandle s);
/// image (contiguous [n, c, h, w]) = col2im(cols): a thread per image element summing the
/// columns that read it.
void launch_col2im(FloatType t, const void* cols, void* image, const FoldShape& g, StreamHandle s);

/// scatter_reduce's reductions.
enum class ScatterReduce : int { kSum, kProd, kMean, kAmax, kAmin };

/// The operands of a scatter_reduce launch over the index's shape (Note [CUDA gather ops]):
/// geometry operand 0 is the contiguous result restrided (stride 0 along dim), 1 the source,
/// 2 the index; `dim_size` and `dim_stride` are the result's along dim.
struct ScatterArgs {
  void* out = nullptr;
  const void* src = nullptr;
  const int64_t* index = nullptr;
  int64_t dim_size = 0, dim_stride = 0;
  int64_t out_numel = 0;
  bool include_self = true;
};

/// out = scatter_reduce(out, ...) in place: the reduction's identity written at the indexed
/// places first unless include_self, and for kMean the sums divided by their counts, kept in
/// `counts` (out_numel int32s of scratch).
void launch_scatter_reduce(FloatType t, ScatterReduce r, const Geometry<3>& g,
                           const ScatterArgs& a, int32_t* counts, StreamHandle s);

/// _embedding_bag over n int64 indices and `offsets` int64 offsets forming `bags` bags of the
/// rows of a rows x dim weight (element strides row_stride, col_stride); mode 0 sum, 1 mean,
/// 2 max; indices equal to padding_idx are skipped.
struct BagShape {
  int64_t n = 0, offsets = 0, bags = 0, rows = 0, dim = 0;
  int64_t row_stride = 0, col_stride = 0;
  int64_t padding_idx = -1;
  int mode = 0;
};

/// out [bags, dim], offset2bag [n], bag_size [bags] and max_indices ([bags, dim] in max mode,
/// else [bags], a copy of bag_size); per_sample_weights (n contiguous, weight's type) or nullptr.
void launch_embedding_bag(FloatType t, const void* weight, const int64_t* indices,
                          const int64_t* offsets, const void* per_sample_weights, void* out,
                          int64_t* offset2bag, int64_t* bag_size, int64_t* max_indices,
                          const BagShape& g, StreamHandle s);

/// The rows of weight (rows x dim, element strides row_stride, col_stride) named by n int64
/// indices scaled in place so that their norm_type-norm is at most max_norm, each row once
/// however often it is named; `claimed` is scratch for rows int32s.
void launch_embedding_renorm(FloatType t, void* weight, int64_t rows, int64_t dim,
                             int64_t row_stride, int64_t col_stride, const int64_t* indices,
                             int64_t n, int32_t* claimed, double max_norm, double norm_type,
                             StreamHandle s);

}  // namespace retorch::cuda_backend
