// The CUDA gather ops' kernels: im2col and its adjoint col2im, scatter_reduce with atomics, and
// embedding_bag's forward and embedding_renorm_ over rows named by index tensors.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaGather.h"

namespace retorch::cuda_backend {

// Note [CUDA gather ops]
// These ops read or write through computed places: sliding windows (im2col/col2im) or index
// tensors (scatter_reduce, _embedding_bag, embedding_renorm_). The kernels follow the cpu ones
// (backend/cpu/ConvOps.cpp, IndexOps.cpp, NNEmbeddingOps.cpp) and give their results:
// - im2col is a thread per column element, zero where the window leaves the image; col2im is
//   its adjoint written as a gather, a thread per image element summing, in the accumulation
//   type and in the cpu's (kernel row, kernel column) order, the column elements that read it:
//   deterministic, no atomics, no zeroing.
// - scatter_reduce walks the index's shape with an offset calculator (the result restrided
//   along dim as in Note [CUDA index kernels]) over a contiguous result that starts as self:
//   the reduction's identity is written at the indexed places first when include_self is
//   false (a launch of its own, so that every write lands before the first reduction); sum and
//   mean add with atomicAdd, prod, amax and amin update through atomicCAS loops on the
//   element's bits (NaN wins amax and amin, as in PyTorch); mean counts its terms with int32
//   atomics and a last pass divides the places with more than one term (self counts when
//   included). The order of the terms is unspecified, as on PyTorch's CUDA path.
// - _embedding_bag is a thread per (bag, column) walking its bag's indices in order, so sums,
//   means and the max's NaN and tie rules are the cpu's; a thread per index first finds its
//   bag (a binary search of the offsets) and checks the index and the offsets.
// - embedding_renorm_ is a block per index entry; a row named twice is renormed once, by the
//   block that claims it first (atomicCAS on a per-row flag), its norm summed in double as the
//   cpu kernel does.
// Index values and offsets are checked on the device (RT_DEVICE_CHECK): a bad one stops the
// kernel and is reported at the next synchronizing call.

namespace {

// ---------------------------------------------------------------- im2col / col2im

template <typename T>
__global__ void im2col_kernel(const T* x, T* cols, FoldShape g) {
  const int64_t L = g.oh * g.ow, K = g.c * g.kh * g.kw, total = g.n * K * L;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = i % L, k = (i / L) % K, n = i / (L * K);
    const int64_t ox = l % g.ow, oy = l / g.ow;
    const int64_t kj = k % g.kw, ki = (k / g.kw) % g.kh, c = k / (g.kw * g.kh);
    const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
    if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
      cols[i] = x[n * g.in_strides[0] + c * g.in_strides[1] + iy * g.in_strides[2] +
                  ix * g.in_strides[3]];
    else
      store(cols + i, acc_t<T>(0));
  }
}

template <typename T>
__global__ void col2im_kernel(const T* cols, T* image, FoldShape g) {
  using A = acc_t<T>;
  const int64_t total = g.n * g.c * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t x = i % g.w, y = (i / g.w) % g.h, c = (i / (g.w * g.h)) % g.c;
    const int64_t n = i / (g.w * g.h * g.c);
    const T* base = cols + n * g.in_strides[0];
    A sum = A(0);
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t ty = y + g.ph - ki * g.dh;  // oy * sh for the window rows that read y
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t tx = x + g.pw - kj * g.dw;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
        const int64_t k = (c * g.kh + ki) * g.kw + kj, l = (ty / g.sh) * g.ow + tx / g.sw;
        sum += A(load(base + k * g.in_strides[1] + l * g.in_strides[2]));
      }
    }
    store(image + i, sum);
  }
}

// ---------------------------------------------------------------- scatter_reduce

__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(__half* p, __half v) { atomicAdd(p, v); }
__device__ inline void atomic_add(__nv_bfloat16* p, __nv_bfloat16 v) { atomicAdd(p, v); }

// The unsigned type of an element's bits that atomicCAS takes.
template <typename T> struct Bits;
template <> struct Bits<float> { using type = unsigned int; };
template <> struct Bits<double> { using type = unsigned long long; };
template <> struct Bits<__half> { using type = unsigned short; };
template <> struct Bits<__nv_bfloat16> { using type = unsigned short; };

// *p = f(*p) atomically: a compare-and-swap loop on the element's bits, which stops early when
// f leaves the element as it is.
template <typename T, typename F>
__device__ void atomic_update(T* p, const F& f) {
  using U = typename Bits<T>::type;
  U* q = reinterpret_cast<U*>(p);
  U old = *q, seen;
  do {
    seen = old;
    T cur;
    memcpy(&cur, &seen, sizeof(T));
    const T next = f(cur);
    U want;
    memcpy(&want, &next, sizeof(T));
    if (want == seen) return;
    old = atomicCAS(q, seen, want);
  } while (old != seen);
}

// An element of type T holding v rounded (the stores' rounding).
template <typename T, typename A>
__device__ inline T rounded(A v) {
  T out;
  store(&out, v);
  return out;
}

template <typename T>
__device__ inline T reduction_identity(ScatterReduce r) {
  using A = acc_t<T>;
  switch (r) {
    case ScatterReduce::kProd: return rounded<T>(A(1));
    case ScatterReduce::kAmax: return rounded<T>(A(-INFINITY));
    case ScatterReduce::kAmin: return rounded<T>(A(INFINITY));
    default: return rounded<T>(A(0));
  }
}

// One term v reduced into *p (the cpu's reduce_step, atomically).
template <typename T>
__device__ inline void reduce_into(ScatterReduce r, T* p, T v) {
  using A = acc_t<T>;
  const A b = A(load(&v));
  switch (r) {
    case ScatterReduce::kSum:
    case ScatterReduce::kMean: return atomic_add(p, v);
    case ScatterReduce::kProd:
      return atomic_update(p, [b](T cur) { return rounded<T>(A(load(&cur)) * b); });
    case ScatterReduce::kAmax:
      return atomic_update(p, [b, v](T cur) { return b != b || b > A(load(&cur)) ? v : cur; });
    case ScatterReduce::kAmin:
      return atomic_update(p, [b, v](T cur) { return b != b || b < A(load(&cur)) ? v : cur; });
  }
}

// fill: out[at] = the identity; else out[at] = reduce(out[at], src[o1]) (and counts[at] += 1
// for kMean). Operands as in ScatterArgs.
template <typename Index, typename T>
__global__ void scatter_reduce_kernel(OffsetCalc<3, Index> calc, Index n, T* out, const T* src,
                                      const int64_t* index, int64_t dim_size, int64_t dim_stride,
                                      ScatterReduce r, bool fill, int32_t* counts) {
  const T identity = reduction_identity<T>(r);
  for (Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += Index(gridDim.x) * blockDim.x) {
    Index o[3];
    calc.offsets(i, o);
    const int64_t v = index[o[2]];
    RT_DEVICE_CHECK(v >= 0 && v < dim_size, "scatter_reduce: an index");
    const int64_t at = int64_t(o[0]) + v * dim_stride;
    if (fill) {
      out[at] = identity;
      continue;
    }
    reduce_into(r, out + at, src[o[1]]);
    if (r == ScatterReduce::kMean) atomicAdd(counts + at, 1);
  }
}

// mean's last pass: the places with more than one term divided by their count.
template <typename T>
__global__ void scatter_mean_kernel(T* out, const int32_t* counts, int64_t n, int32_t self) {
  using A = acc_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t count = counts[i] + self;
    if (count > 1) store(out + i, A(load(out + i)) / A(count));
  }
}

// ---------------------------------------------------------------- embedding_bag / renorm

// The end of bag b's indices (the next offset, or n after the last offset).
__device__ inline int64_t bag_end(const int64_t* offsets, int64_t b, const BagShape& g) {
  return b + 1 < g.offsets ? offsets[b + 1] : g.n;
}

// A thread per index (its bag, 0 past the last bag, as the cpu) and per offset (checked).
__global__ void offset2bag_kernel(const int64_t* indices, const int64_t* offsets,
                                  int64_t* offset2bag, BagShape g) {
  const int64_t total = g.n > g.offsets ? g.n : g.offsets;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (i < g.offsets) {
      const int64_t o = offsets[i];
      RT_DEVICE_CHECK(i == 0 ? o == 0 : o >= offsets[i - 1],
                      "embedding_bag: an offset (offsets[0] != 0 or decreasing offsets)");
      RT_DEVICE_CHECK(o <= g.n, "embedding_bag: an offset (past the indices)");
    }
    if (i < g.n) {
      const int64_t v = indices[i];
      RT_DEVICE_CHECK(v >= 0 && v < g.rows, "embedding_bag: an index");
      int64_t lo = 0, hi = g.bags;  // the first bag starting after i
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= i)
          lo = mid + 1;
        else
          hi = mid;
      }
      const int64_t b = lo - 1;
      offset2bag[i] = b >= 0 && i < bag_end(offsets, b, g) ? b : 0;
    }
  }
}

// A thread per (bag, column): the cpu kernel's loop over the bag's indices.
template <typename T>
__global__ void embedding_bag_kernel(const T* weight, const int64_t* indices,
                                     const int64_t* offsets, const T* per_sample_weights, T* out,
                                     int64_t* bag_size, int64_t* max_indices, BagShape g) {
  using A = acc_t<T>;
  const int64_t total = g.bags * g.dim;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / g.dim, c = i % g.dim;
    const int64_t end = bag_end(offsets, b, g);
    A acc = g.mode == 2 ? A(-INFINITY) : A(0);
    int64_t count = 0, arg = 0;
    for (int64_t k = offsets[b]; k < end; ++k) {
      const int64_t v = indices[k];
      RT_DEVICE_CHECK(v >= 0 && v < g.rows, "embedding_bag: an index");
      if (v == g.padding_idx) continue;
      const A x = A(load(weight + v * g.row_stride + c * g.col_stride));
      if (g.mode == 2) {
        if (count == 0 || x > acc || x != x) {
          acc = x;
          arg = v;
        }
      } else {
        acc += per_sample_weights ? x * A(load(per_sample_weights + k)) : x;
      }
      ++count;
    }
    store(out + i, count == 0 ? A(0) : g.mode == 1 ? acc / A(count) : acc);
    if (g.mode == 2) max_indices[i] = arg;
    if (c == 0) {
      bag_size[b] = count;
      if (g.mode != 2) max_indices[b] = count;
    }
  }
}

// A block per index entry; the block that claims a row first renorms it.
template <typename T>
__global__ void embedding_renorm_kernel(T* weight, int64_t rows, int64_t dim, int64_t row_stride,
                                        int64_t col_stride, const int64_t* indices, int64_t n,
                                        int32_t* claimed, double max_norm, double p) {
  using A = acc_t<T>;
  __shared__ double partial[32];
  __shared__ int mine;
  for (int64_t k = blockIdx.x; k < n; k += gridDim.x) {
    const int64_t v = indices[k];
    RT_DEVICE_CHECK(v >= 0 && v < rows, "embedding_renorm_: an index");
    __syncthreads();  // the last entry's readers of `mine` are done
    if (threadIdx.x == 0) mine = atomicCAS(claimed + v, 0, 1) == 0;
    __syncthreads();
    if (!mine) continue;  // (the whole block)
    T* row = weight + v * row_stride;
    double acc = 0;
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) {
      const double x = fabs(double(load(row + c * col_stride)));
      acc += p == 1 ? x : (p == 2 ? x * x : pow(x, p));
    }
    double norm = block_sum(acc, partial);
    norm = p == 1 ? norm : (p == 2 ? sqrt(norm) : pow(norm, 1.0 / p));
    if (norm > max_norm) {
      const A scale = A(max_norm / (norm + 1e-7));
      for (int64_t c = threadIdx.x; c < dim; c += blockDim.x)
        store(row + c * col_stride, A(load(row + c * col_stride)) * scale);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void launch_im2col(FloatType t, const void* image, void* cols, const FoldShape& g,
                   StreamHandle s) {
  const int64_t total = g.n * g.c * g.kh * g.kw * g.oh * g.ow;
  if (total == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    im2col_kernel<T><<<blocks_for(total), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(image), static_cast<T*>(cols), g);
  });
  check_launch("im2col");
}

void launch_col2im(FloatType t, const void* cols, void* image, const FoldShape& g,
                   StreamHandle s) {
  const int64_t total = g.n * g.c * g.h * g.w;
  if (total == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    col2im_kernel<T><<<blocks_for(total), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(cols), static_cast<T*>(image), g);
  });
  check_launch("col2im");
}

namespace {

template <typename T, typename Index>
void scatter_pass(const Geometry<3>& g, const ScatterArgs& a, ScatterReduce r, bool fill,
                  int32_t* counts, StreamHandle s) {
  scatter_reduce_kernel<Index, T><<<blocks_for(g.numel), kThreads, 0, as_stream(s)>>>(
      g.calc<Index>(), Index(g.numel), static_cast<T*>(a.out), static_cast<const T*>(a.src),
      a.index, a.dim_size, a.dim_stride, r, fill, counts);
}

}  // namespace

void launch_scatter_reduce(FloatType t, ScatterReduce r, const Geometry<3>& g,
                           const ScatterArgs& a, int32_t* counts, StreamHandle s) {
  if (g.numel == 0) return;
  const bool mean = r == ScatterReduce::kMean;
  if (mean) {
    const cudaError_t status = cudaMemsetAsync(counts, 0, size_t(a.out_numel) * sizeof(int32_t),
                                               as_stream(s));
    RT_CHECK(status == cudaSuccess, "scatter_reduce: ", cudaGetErrorString(status));
  }
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    const bool narrow = g.fits_32bit();
    for (const bool fill : {true, false}) {
      if (fill && a.include_self) continue;
      if (narrow)
        scatter_pass<T, int32_t>(g, a, r, fill, counts, s);
      else
        scatter_pass<T, int64_t>(g, a, r, fill, counts, s);
    }
    if (mean)
      scatter_mean_kernel<T><<<blocks_for(a.out_numel), kThreads, 0, as_stream(s)>>>(
          static_cast<T*>(a.out), counts, a.out_numel, a.include_self ? 1 : 0);
  });
  check_launch("scatter_reduce");
}

void launch_embedding_bag(FloatType t, const void* weight, const int64_t* indices,
                          const int64_t* offsets, const void* per_sample_weights, void* out,
                          int64_t* offset2bag, int64_t* bag_size, int64_t* max_indices,
                          const BagShape& g, StreamHandle s) {
  const int64_t checks = g.n > g.offsets ? g.n : g.offsets;
  if (checks > 0)
    offset2bag_kernel<<<blocks_for(checks), kThreads, 0, as_stream(s)>>>(indices, offsets,
                                                                          offset2bag, g);
  const int64_t total = g.bags * g.dim;
  if (total > 0) {
    with_type(t, [&](auto type) {
      using T = typename decltype(type)::type;
      embedding_bag_kernel<T><<<blocks_for(total), kThreads, 0, as_stream(s)>>>(
          static_cast<const T*>(weight), indices, offsets,
          static_cast<const T*>(per_sample_weights), static_cast<T*>(out), bag_size,
          max_indices, g);
    });
  }
  check_launch("embedding_bag");
}

void launch_embedding_renorm(FloatType t, void* weight, int64_t rows, int64_t dim,
                             int64_t row_stride, int64_t col_stride, const int64_t* indices,
                             int64_t n, int32_t* claimed, double max_norm, double norm_type,
                             StreamHandle s) {
  if (n == 0 || rows == 0) return;
  const cudaError_t status =
      cudaMemsetAsync(claimed, 0, size_t(rows) * sizeof(int32_t), as_stream(s));
  RT_CHECK(status == cudaSuccess, "embedding_renorm_: ", cudaGetErrorString(status));
  const unsigned blocks = unsigned(n < 65535 ? n : 65535);
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    embedding_renorm_kernel<T><<<blocks, kThreads, 0, as_stream(s)>>>(
        static_cast<T*>(weight), rows, dim, row_stride, col_stride, indices, n, claimed,
        max_norm, norm_type);
  });
  check_launch("embedding_renorm_");
}

}  // namespace retorch::cuda_backend
