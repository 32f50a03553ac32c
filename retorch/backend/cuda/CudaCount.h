// Launchers of the CUDA backend's counting kernels (CudaCount.cu): histc, bincount,
// searchsorted, repeat_interleave's index and the runs of unique's sorted values.
#pragma once
#include <cstddef>
#include <cstdint>

#include "retorch/backend/cuda/CudaPointwise.h"
#include "retorch/backend/cuda/CudaRuntime.h"

namespace retorch::cuda_backend {

/// Device scratch for a launch (CUB's temporary storage, counters), held by the caller until
/// the queued work is done: scratch(ctx, bytes).
using ScratchFn = void* (*)(void* ctx, size_t bytes);

/// out[0] = the smallest and out[1] the largest of the n (> 0) contiguous elements of `in`
/// (floating type t), as doubles in device memory; a NaN anywhere makes both NaN.
void launch_min_max_float(FloatType t, const void* in, int64_t n, double* out, ScratchFn scratch,
                          void* ctx, StreamHandle s);
/// The same for integers (t one of the int types): out[0] = min, out[1] = max as int64.
void launch_min_max_int(NumericType t, const void* in, int64_t n, int64_t* out,
                        ScratchFn scratch, void* ctx, StreamHandle s);

/// histc: `bins` counts of the n contiguous elements of `in` in [lo, hi] (lo < hi, finite),
/// written to out (bins elements of type t), binned as the cpu's (see Note [CUDA counting ops]).
void launch_histc(FloatType t, const void* in, int64_t n, int64_t bins, double lo, double hi,
                  void* out, ScratchFn scratch, void* ctx, StreamHandle s);

/// bincount: out[v] += 1 (int64 out) or out[v] += w[i] (`weights` of type float or double
/// when `weight_double`, out of the same type) for each of the n non-negative values v = in[i]
/// (int type t); out has nbins elements, all below which the values lie. Zeroes out first.
void launch_bincount(NumericType t, const void* in, int64_t n, const void* weights,
                     bool weight_double, void* out, int64_t nbins, StreamHandle s);

/// searchsorted: out[i] = the place of values[i] in its row of `seq` (rows of L, row i / per_row,
/// or the only row when per_row is 0), through sorter's row when sorter is not null; left or
/// right side. seq and values share type t; out is int32 when out_int32, else int64.
void launch_searchsorted(NumericType t, const void* seq, const void* values,
                         const int64_t* sorter, int64_t n, int64_t L, int64_t per_row, bool right,
                         bool out_int32, void* out, StreamHandle s);

/// repeat_interleave, first half: `cum` (n int64) = the running sums of the n repeats (int32
/// when `int32`, else int64); summary[0] = their total, summary[1] = 1 if any is negative.
void launch_repeat_cumsum(bool int32, const void* repeats, int64_t n, int64_t* cum,
                          int64_t* summary, ScratchFn scratch, void* ctx, StreamHandle s);
/// Second half: out[j] (total elements, int32 when `int32`) = the i with cum[i - 1] <= j <
/// cum[i]. With `expect_total` >= 0 (output_size given, summary not read by the host), a
/// negative repeat or a total other than expect_total stops the kernel (RT_DEVICE_CHECK).
void launch_repeat_fill(bool int32, const int64_t* cum, int64_t n, const int64_t* summary,
                        int64_t expect_total, int64_t total, void* out, StreamHandle s);

/// unique, first half: ids[i] (n int64) = 1 + the run number of sorted[i] among the n sorted
/// values of type t (equal neighbours share a run; NaNs never do); ids[n - 1] is the number of
/// runs. Bools go as kUInt8.
void launch_unique_runs(NumericType t, const void* sorted, int64_t n, int64_t* ids,
                        ScratchFn scratch, void* ctx, StreamHandle s);
/// Second half, with u runs: values[r] = the run's value, inverse[perm[i]] = the run of i and
/// counts[r] = its length (inverse and counts skipped when null).
void launch_unique_outputs(NumericType t, const void* sorted, const int64_t* perm,
                           const int64_t* ids, int64_t n, int64_t u, void* values,
                           int64_t* inverse, int64_t* counts, ScratchFn scratch, void* ctx,
                           StreamHandle s);

}  // namespace retorch::cuda_backend
