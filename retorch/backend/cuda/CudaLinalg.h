// Launchers of the linear-algebra ops' own small kernels (CudaLinalg.cu): the triangles of
// factors, permutation matrices from LAPACK pivots, and determinants from LU factors.
#pragma once
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"

namespace retorch::cuda_backend {

/// Zeroes, in place, the elements above the diagonal (lower) or below it (!lower) of `batch`
/// contiguous rows x cols matrices of t (float or double), and writes 1 on the diagonal when
/// unit_diagonal (tril(a, -1) + eye, as lu_unpack's L).
void launch_triangle(FloatType t, void* a, int64_t batch, int64_t rows, int64_t cols, bool lower,
                     bool unit_diagonal, StreamHandle s);
/// p = the contiguous [batch, m, m] permutation matrices of `count` LAPACK pivots per matrix
/// (1-based int32 row swaps, applied in order to the identity's rows): P[perm[i], i] = 1.
/// `perm` is scratch of batch * m int64. A pivot outside [1, m] is skipped.
void launch_permutation(FloatType t, const int32_t* pivots, int64_t batch, int64_t m,
                        int64_t count, int64_t* perm, void* p, StreamHandle s);
/// Sign and log|det| of `batch` contiguous column-major n x n LU factors with their n pivots,
/// as the cpu's lu_slogdet (accumulated in double, stored in t), and det = sign * exp(logabs)
/// in t; each output may be nullptr.
void launch_lu_det(FloatType t, const void* lu, const int32_t* pivots, int64_t batch, int64_t n,
                   void* sign, void* logabs, void* det, StreamHandle s);

}  // namespace retorch::cuda_backend
