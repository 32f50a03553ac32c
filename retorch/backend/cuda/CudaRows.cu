// The CUDA backend's row kernels: a block per row with warp-shuffle reductions, for sums, means,
// maxima and minima, softmax and log_softmax, layer_norm, fused RMSNorm, and SiLU-and-mul.
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaRows.h"

namespace retorch::cuda_backend {

// Note [CUDA row kernels]
// Every kernel here works on contiguous rows (the host side makes them so: CudaRowOps.cpp) with
// one block of 256 threads per row: each thread folds the elements j ≡ threadIdx.x (mod 256),
// the 32 lanes of a warp combine with __shfl_xor_sync, and the 8 warp results meet in shared
// memory (block_reduce). Rows are read again from L2 for each further pass (softmax: max, sum
// of exponentials, write; layer_norm: mean, variance about the mean, write), which keeps the
// numerics of PyTorch's two-pass formulas; softmax, layer_norm and fused_rms_norm rows of up to
// 8192 elements stay in registers between the passes instead (Note [Rows in registers]). 16-bit
// floats accumulate in float, float64 in double.
// Maxima and minima propagate NaN; an all -inf softmax row gives NaN, as PyTorch's does.

namespace {

template <typename A>
__device__ inline A combine(RowReduce op, A a, A b) {
  switch (op) {
    case RowReduce::kSum:
    case RowReduce::kMean: return a + b;
    case RowReduce::kMax: return a != a ? a : (b != b ? b : (a > b ? a : b));
    case RowReduce::kMin: return a != a ? a : (b != b ? b : (a < b ? a : b));
    case RowReduce::kProd: return a * b;
  }
  return a;
}

template <typename A>
__device__ inline A identity(RowReduce op) {
  if (op == RowReduce::kMax) return -A(INFINITY);
  if (op == RowReduce::kMin) return A(INFINITY);
  if (op == RowReduce::kProd) return A(1);
  return A(0);
}

// The block's op-combined value, in every thread. `shared` holds 32 values.
template <typename A>
__device__ A row_reduce(RowReduce op, A v, A* shared) {
  return block_reduce(v, identity<A>(op), [op](A a, A b) { return combine(op, a, b); }, shared);
}

template <typename T>
__global__ void reduce_rows_kernel(RowReduce op, const T* in, T* out, int64_t cols) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  A acc = identity<A>(op);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) acc = combine(op, acc, A(load(x + j)));
  acc = row_reduce(op, acc, shared);
  if (threadIdx.x == 0) store(out + blockIdx.x, op == RowReduce::kMean ? acc / A(cols) : acc);
}

// A row's mean and its sum of squares about the mean, in two passes over the row (PyTorch's
// two-pass formula), every thread of the block getting both.
template <typename A>
struct RowMoments {
  A mean, m2;
};
template <typename T, typename A>
__device__ RowMoments<A> row_moments(const T* x, int64_t cols, A* shared) {
  A s = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += A(load(x + j));
  const A mean = row_reduce(RowReduce::kSum, s, shared) / A(cols);
  A q = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A d = A(load(x + j)) - mean;
    q += d * d;
  }
  return {mean, row_reduce(RowReduce::kSum, q, shared)};
}

// var.correction of each row: the mean, then the centered sum of squares (two passes, as the
// cpu kernel); N - correction <= 0 gives inf, or NaN for a zero sum or an empty row.
template <typename T>
__global__ void var_rows_kernel(const T* in, T* out, int64_t cols, double correction) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const RowMoments<A> r = row_moments(in + int64_t(blockIdx.x) * cols, cols, shared);
  const A q = r.m2;
  if (threadIdx.x == 0) {
    const A denom = A(double(cols) - correction);
    store(out + blockIdx.x, denom > A(0) ? q / denom : (q == A(0) || cols == 0 ? A(NAN)
                                                                               : A(INFINITY)));
  }
}

// The p-norm of each row, as the cpu's norm: max |x| (p = inf), min |x| (-inf), the count of
// nonzeros (0), sum |x| (1), sqrt(sum x²) (2), else (sum |x|^p)^(1/p); NaN propagates.
template <typename T>
__global__ void norm_rows_kernel(const T* in, T* out, int64_t cols, double p) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  const RowReduce op = isinf(p) ? (p > 0 ? RowReduce::kMax : RowReduce::kMin) : RowReduce::kSum;
  const A pa = A(p);
  A acc = op == RowReduce::kMin ? A(INFINITY) : A(0);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A v = fabs(A(load(x + j)));
    const A term = op != RowReduce::kSum ? v
                   : p == 0             ? (v != A(0) ? A(1) : A(0))
                   : p == 1             ? v
                   : p == 2             ? v * v
                                        : pow(v, pa);
    acc = combine(op, acc, term);
  }
  acc = row_reduce(op, acc, shared);
  if (threadIdx.x == 0) {
    if (p == 2) acc = sqrt(acc);
    else if (op == RowReduce::kSum && p != 0 && p != 1) acc = pow(acc, A(1) / pa);
    store(out + blockIdx.x, acc);
  }
}

// any (or all) of each row of bools; an empty row gives false (true).
__global__ void bool_rows_kernel(bool any, const bool* in, bool* out, int64_t cols) {
  __shared__ int shared[32];
  const bool* x = in + int64_t(blockIdx.x) * cols;
  int v = any ? 0 : 1;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) v = any ? (v | x[j]) : (v & x[j]);
  v = block_reduce(v, any ? 0 : 1, [any](int a, int b) { return any ? (a | b) : (a & b); },
                   shared);
  if (threadIdx.x == 0) out[blockIdx.x] = v != 0;
}

// The first index of each row's maximum (minimum), NaN counting as the maximum (minimum) as in
// PyTorch: the row's extreme value in one pass (row_reduce), then each thread's first element
// equal to it and the smallest such index over the block (the cpu's Note [Two-pass argmax]).
template <typename T>
__global__ void arg_rows_kernel(bool take_max, const T* in, int64_t* out, int64_t cols) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  __shared__ long long shared_index[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  const RowReduce op = take_max ? RowReduce::kMax : RowReduce::kMin;
  A m = identity<A>(op);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = combine(op, m, A(load(x + j)));
  m = row_reduce(op, m, shared);
  long long first = LLONG_MAX;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A v = A(load(x + j));
    if (v == m || (m != m && v != v)) {
      first = j;
      break;
    }
  }
  first = block_reduce(first, LLONG_MAX, [](long long a, long long b) { return a < b ? a : b; },
                       shared_index);
  if (threadIdx.x == 0) out[blockIdx.x] = first;
}

template <typename T>
__global__ void softmax_rows_kernel(bool take_log, const T* in, T* out, int64_t cols) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  T* y = out + int64_t(blockIdx.x) * cols;
  A m = -A(INFINITY);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    m = combine(RowReduce::kMax, m, A(load(x + j)));
  m = row_reduce(RowReduce::kMax, m, shared);
  A s = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += exp(A(load(x + j)) - m);
  s = row_reduce(RowReduce::kSum, s, shared);
  const A log_s = log(s), inv_s = A(1) / s;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A d = A(load(x + j)) - m;
    store(y + j, take_log ? d - log_s : exp(d) * inv_s);
  }
}

// Note [Rows in registers]
// A row of at most kThreads * kPer elements (8192 at kPer = 32) is read from memory once: each
// thread keeps its kPer elements in registers, loaded as 16-byte vectors where the rows allow it
// (kVec = 16 / sizeof(T) elements each; every row 16-byte aligned: aligned pointers and cols a
// multiple of kVec), else one element at a time, every load of a thread issued before the first
// use; the passes (softmax: max, sum of exponentials, write; layer_norm: mean, variance about
// it, write) then read registers instead of L2, and results leave as vectors too. PyTorch keeps
// such rows in shared memory for the same reason. The numerics are the looping kernels' (same
// passes, same accumulation types); longer rows take those kernels.
template <typename T, int kPer>
struct RowCache {
  using A = acc_t<T>;
  static constexpr int kVec = 16 / int(sizeof(T));
  static_assert(kPer % kVec == 0, "a row cache holds whole vectors");
  A v[kPer];
  bool vec;

  // The column of this thread's element i.
  __device__ int64_t col(int i) const {
    return vec ? (int64_t(i / kVec) * blockDim.x + threadIdx.x) * kVec + i % kVec
               : int64_t(i) * blockDim.x + threadIdx.x;
  }
  // Loads the row's elements, `pad` past its end.
  __device__ void load_row(const T* x, int64_t cols, bool vectorized, A pad) {
    vec = vectorized;
    if (vec) {
#pragma unroll
      for (int k = 0; k < kPer / kVec; ++k) {
        const int64_t c = (int64_t(k) * blockDim.x + threadIdx.x) * kVec;
        uint4 raw = make_uint4(0, 0, 0, 0);
        if (c < cols) raw = *reinterpret_cast<const uint4*>(x + c);
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int u = 0; u < kVec; ++u) v[k * kVec + u] = c < cols ? A(load(e + u)) : pad;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
        v[i] = c < cols ? A(load(x + c)) : pad;
      }
    }
  }
  // Writes f(element, column) for each element of the row.
  template <typename F>
  __device__ void store_row(T* y, int64_t cols, F f) const {
    if (vec) {
#pragma unroll
      for (int k = 0; k < kPer / kVec; ++k) {
        const int64_t c = (int64_t(k) * blockDim.x + threadIdx.x) * kVec;
        if (c >= cols) continue;
        uint4 raw;
        T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
        for (int u = 0; u < kVec; ++u) store(e + u, f(v[k * kVec + u], c + u));
        *reinterpret_cast<uint4*>(y + c) = raw;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
        if (c < cols) store(y + c, f(v[i], c));
      }
    }
  }
};

template <typename T, int kPer>
__global__ void softmax_rows_cached_kernel(bool take_log, bool vec, const T* in, T* out,
                                           int64_t cols) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  RowCache<T, kPer> r;
  r.load_row(in + int64_t(blockIdx.x) * cols, cols, vec, -A(INFINITY));
  A m = -A(INFINITY);
#pragma unroll
  for (int i = 0; i < kPer; ++i) m = combine(RowReduce::kMax, m, r.v[i]);
  m = row_reduce(RowReduce::kMax, m, shared);
  A s = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    if (r.col(i) < cols) s += exp(r.v[i] - m);
  s = row_reduce(RowReduce::kSum, s, shared);
  const A log_s = log(s), inv_s = A(1) / s;
  r.store_row(out + int64_t(blockIdx.x) * cols, cols, [&](A x, int64_t) {
    const A d = x - m;
    return take_log ? d - log_s : exp(d) * inv_s;
  });
}

template <typename T, int kPer>
__global__ void layer_norm_rows_cached_kernel(bool vec, const T* in, const T* weight,
                                              const T* bias, T* out, T* mean_out, T* rstd_out,
                                              int64_t cols, double eps) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  RowCache<T, kPer> r;
  r.load_row(in + int64_t(blockIdx.x) * cols, cols, vec, A(0));
  A s = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) s += r.v[i];
  const A mean = row_reduce(RowReduce::kSum, s, shared) / A(cols);
  A q = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const A d = r.v[i] - mean;
    if (r.col(i) < cols) q += d * d;
  }
  const A rstd = A(1) / sqrt(row_reduce(RowReduce::kSum, q, shared) / A(cols) + A(eps));
  r.store_row(out + int64_t(blockIdx.x) * cols, cols, [&](A x, int64_t c) {
    A v = (x - mean) * rstd;
    if (weight) v = v * A(load(weight + c));
    if (bias) v = v + A(load(bias + c));
    return v;
  });
  if (threadIdx.x == 0) {
    store(mean_out + blockIdx.x, mean);
    store(rstd_out + blockIdx.x, rstd);
  }
}

// layer_norm's input gradient, a block per row: with gw = g · w and xhat = (x - mean) · rstd,
// dx = rstd · (gw - mean(gw) - xhat · mean(gw · xhat)), the cpu kernel's formula.
template <typename T>
__global__ void layer_norm_backward_input_kernel(const T* g, const T* x, const T* mean,
                                                 const T* rstd, const T* w, T* dx,
                                                 int64_t cols) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t base = int64_t(blockIdx.x) * cols;
  const A m = A(load(mean + blockIdx.x)), rs = A(load(rstd + blockIdx.x));
  A a = 0, b = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A gw = A(load(g + base + j)) * (w ? A(load(w + j)) : A(1));
    a += gw;
    b += gw * (A(load(x + base + j)) - m) * rs;
  }
  a = row_reduce(RowReduce::kSum, a, shared) / A(cols);
  b = row_reduce(RowReduce::kSum, b, shared) / A(cols);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A gw = A(load(g + base + j)) * (w ? A(load(w + j)) : A(1));
    const A xhat = (A(load(x + base + j)) - m) * rs;
    store(dx + base + j, rs * (gw - a - xhat * b));
  }
}

// layer_norm's weight gradient, Σ_rows g · xhat per column, in two deterministic steps: block
// (column tile, row chunk) sums its chunk's rows into part[chunk, col] (a thread per column:
// coalesced rows), then the chunks' partials are added per column.
template <typename T>
__global__ void layer_norm_backward_weight_part_kernel(const T* g, const T* x, const T* mean,
                                                       const T* rstd, acc_t<T>* part,
                                                       int64_t rows, int64_t cols,
                                                       int64_t chunk_rows) {
  using A = acc_t<T>;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const int64_t r0 = int64_t(blockIdx.y) * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
  A acc = 0;
  for (int64_t r = r0; r < r1; ++r)
    acc += A(load(g + r * cols + col)) * (A(load(x + r * cols + col)) - A(load(mean + r))) *
           A(load(rstd + r));
  part[int64_t(blockIdx.y) * cols + col] = acc;
}

template <typename T>
__global__ void column_sum_kernel(const acc_t<T>* part, T* out, int64_t chunks, int64_t cols) {
  using A = acc_t<T>;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  A s = 0;
  for (int64_t c = 0; c < chunks; ++c) s += part[c * cols + col];
  store(out + col, s);
}

// fused_rms_norm with the row (and the residual) in registers: one read of each, the sum
// written, then the norm from the unrounded sum as the looping kernel does.
template <typename T, int kPer>
__global__ void rms_norm_rows_cached_kernel(bool vec, const T* in, const T* residual,
                                            const T* weight, T* out, T* sum_out, int64_t cols,
                                            float eps) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t base = int64_t(blockIdx.x) * cols;
  RowCache<T, kPer> h;
  h.load_row(in + base, cols, vec, A(0));
  if (residual) {
    RowCache<T, kPer> r;
    r.load_row(residual + base, cols, vec, A(0));
#pragma unroll
    for (int i = 0; i < kPer; ++i) h.v[i] += r.v[i];
    h.store_row(sum_out + base, cols, [](A x, int64_t) { return x; });
  }
  A q = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) q += h.v[i] * h.v[i];  // the padding is 0
  const A inv = A(1) / sqrt(row_reduce(RowReduce::kSum, q, shared) / A(cols) + A(eps));
  h.store_row(out + base, cols,
              [&](A x, int64_t c) { return (x * inv) * A(load(weight + c)); });
}

// Calls f(std::integral_constant<int, kPer>) with the smallest row cache that holds `cols`
// elements (Note [Rows in registers]); false, without calling it, for longer rows.
template <typename F>
bool with_row_cache(int64_t cols, F&& f) {
  if (cols <= kThreads * 8) return f(std::integral_constant<int, 8>{}), true;
  if (cols <= kThreads * 16) return f(std::integral_constant<int, 16>{}), true;
  if (cols <= kThreads * 32) return f(std::integral_constant<int, 32>{}), true;
  return false;
}

// Whether rows of `cols` elements of T at these addresses can move as 16-byte vectors.
template <typename T>
bool rows_vectorizable(int64_t cols, std::initializer_list<const void*> ptrs) {
  if (cols % (16 / int64_t(sizeof(T))) != 0) return false;
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

template <typename T>
__global__ void layer_norm_rows_kernel(const T* in, const T* weight, const T* bias, T* out,
                                       T* mean_out, T* rstd_out, int64_t cols, double eps) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  T* y = out + int64_t(blockIdx.x) * cols;
  const RowMoments<A> r = row_moments(x, cols, shared);
  const A mean = r.mean;
  const A rstd = A(1) / sqrt(r.m2 / A(cols) + A(eps));
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    A v = (A(load(x + j)) - mean) * rstd;
    if (weight) v = v * A(load(weight + j));
    if (bias) v = v + A(load(bias + j));
    store(y + j, v);
  }
  if (threadIdx.x == 0) {
    store(mean_out + blockIdx.x, mean);
    store(rstd_out + blockIdx.x, rstd);
  }
}

template <typename T>
__global__ void rms_norm_rows_kernel(const T* in, const T* residual, const T* weight, T* out,
                                     T* sum_out, int64_t cols, float eps) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t base = int64_t(blockIdx.x) * cols;
  A q = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    A h = A(load(in + base + j));
    if (residual) {
      h += A(load(residual + base + j));
      store(sum_out + base + j, h);
    }
    q += h * h;
  }
  // HF's LlamaRMSNorm order: (h * rsqrt(mean(h²) + eps)) * weight.
  const A inv = A(1) / sqrt(row_reduce(RowReduce::kSum, q, shared) / A(cols) + A(eps));
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    // The unrounded sum, as the cpu kernel normalizes it.
    A h = A(load(in + base + j));
    if (residual) h += A(load(residual + base + j));
    store(out + base + j, (h * inv) * A(load(weight + j)));
  }
}

template <typename T>
__global__ void silu_and_mul_kernel(const T* in, T* out, int64_t rows, int64_t d) {
  using A = acc_t<T>;
  const int64_t n = rows * d;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, j = i - r * d;
    const A g = A(load(in + r * 2 * d + j)), u = A(load(in + r * 2 * d + d + j));
    store(out + i, g / (A(1) + exp(-g)) * u);
  }
}

// Cross entropy forward, a block per row: lse, the row's loss and its weight (0 when ignored).
template <typename T>
__global__ void cross_entropy_rows_kernel(const T* in, const int64_t* target, const T* weight,
                                          T* lse_out, acc_t<T>* loss_out, acc_t<T>* w_out,
                                          int64_t cols, int64_t ignore_index, double smoothing) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  A m = -A(INFINITY);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    m = combine(RowReduce::kMax, m, A(load(x + j)));
  m = row_reduce(RowReduce::kMax, m, shared);
  const A shift = isinf(m) ? A(0) : m;
  A s = 0, wx = 0, wsum = 0;
  const A ls = A(smoothing);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A v = A(load(x + j));
    s += exp(v - shift);
    if (ls > A(0)) {
      const A w = weight ? A(load(weight + j)) : A(1);
      wx += w * v;
      wsum += w;
    }
  }
  s = row_reduce(RowReduce::kSum, s, shared);
  if (ls > A(0)) {
    wx = row_reduce(RowReduce::kSum, wx, shared);
    wsum = row_reduce(RowReduce::kSum, wsum, shared);
  }
  if (threadIdx.x != 0) return;
  const A l = log(s) + shift;
  store(lse_out + blockIdx.x, l);
  const int64_t t = target[blockIdx.x];
  if (t == ignore_index) {
    loss_out[blockIdx.x] = 0;
    w_out[blockIdx.x] = 0;
    return;
  }
  RT_DEVICE_CHECK(t >= 0 && t < cols, "cross_entropy: a target");
  const A wt = weight ? A(load(weight + t)) : A(1);
  A loss = -wt * (A(load(x + t)) - l) * (A(1) - ls);
  if (ls > A(0)) loss += -(ls / A(cols)) * (wx - l * wsum);
  loss_out[blockIdx.x] = loss;
  w_out[blockIdx.x] = wt;
}

// Cross entropy backward, a block per row: d loss_i / d x_j = p_j * qsum - q_j with
// q = (1 - ls) w_t onehot(t) + (ls / C) w, scaled by the row's share of the incoming grad.
template <typename T>
__global__ void cross_entropy_grad_rows_kernel(const T* in, const int64_t* target,
                                               const T* weight, const T* lse, const T* grad,
                                               const acc_t<T>* denom, T* out, int64_t cols,
                                               int64_t ignore_index, int reduction,
                                               double smoothing) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = in + int64_t(blockIdx.x) * cols;
  T* g = out + int64_t(blockIdx.x) * cols;
  const int64_t t = target[blockIdx.x];
  if (t == ignore_index) {
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) store(g + j, A(0));
    return;
  }
  const A ls = A(smoothing);
  A wsum = A(cols);
  if (weight && ls > A(0)) {
    A p = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p += A(load(weight + j));
    wsum = row_reduce(RowReduce::kSum, p, shared);
  }
  const A scale = reduction == 0 ? A(load(grad + blockIdx.x))
                  : reduction == 1 ? A(load(grad)) / *denom : A(load(grad));
  const A wt = weight ? A(load(weight + t)) : A(1);
  const A qsum = ((A(1) - ls) * wt + ls / A(cols) * wsum) * scale;
  const A sm = ls / A(cols) * scale, l = A(load(lse + blockIdx.x));
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A w = weight ? A(load(weight + j)) : A(1);
    A v = exp(A(load(x + j)) - l) * qsum - sm * w;
    if (j == t) v -= (A(1) - ls) * wt * scale;
    store(g + j, v);
  }
}

// The mean's denominator: the summed weights of the rows whose target is kept (one block).
template <typename T>
__global__ void cross_entropy_denominator_kernel(const int64_t* target, const T* weight,
                                                 int64_t rows, int64_t ignore_index,
                                                 acc_t<T>* out) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  A s = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const int64_t t = target[i];
    if (t != ignore_index) s += weight ? A(load(weight + t)) : A(1);
  }
  s = row_reduce(RowReduce::kSum, s, shared);
  if (threadIdx.x == 0) *out = s;
}

void check_rows(int64_t rows, const char* what) {
  RT_CHECK_VALUE(rows <= INT32_MAX, "cuda ", what, ": ", rows, " rows; at most 2^31 - 1");
}

}  // namespace

void launch_reduce_rows(RowReduce op, FloatType t, const void* in, void* out, int64_t rows,
                        int64_t cols, StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, "reduction");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    reduce_rows_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(
        op, static_cast<const T*>(in), static_cast<T*>(out), cols);
  });
  check_launch("reduce_rows");
}

void launch_var_or_norm_rows(bool norm, FloatType t, const void* in, void* out, int64_t rows,
                             int64_t cols, double param, StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, norm ? "norm" : "var");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    auto* kernel = norm ? &norm_rows_kernel<T> : &var_rows_kernel<T>;
    kernel<<<unsigned(rows), kThreads, 0, as_stream(s)>>>(static_cast<const T*>(in),
                                                          static_cast<T*>(out), cols, param);
  });
  check_launch(norm ? "norm_rows" : "var_rows");
}

void launch_bool_rows(bool any, const bool* in, bool* out, int64_t rows, int64_t cols,
                      StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, any ? "any" : "all");
  bool_rows_kernel<<<unsigned(rows), kThreads, 0, as_stream(s)>>>(any, in, out, cols);
  check_launch("bool_rows");
}

void launch_arg_rows(bool take_max, FloatType t, const void* in, int64_t* out, int64_t rows,
                     int64_t cols, StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, take_max ? "argmax" : "argmin");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    arg_rows_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(
        take_max, static_cast<const T*>(in), out, cols);
  });
  check_launch(take_max ? "argmax" : "argmin");
}

void launch_softmax_rows(bool log, FloatType t, const void* in, void* out, int64_t rows,
                         int64_t cols, StreamHandle s) {
  if (rows == 0 || cols == 0) return;
  check_rows(rows, "softmax");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    const bool vec = rows_vectorizable<T>(cols, {in, out});
    const bool cached = with_row_cache(cols, [&](auto per) {
      softmax_rows_cached_kernel<T, decltype(per)::value>
          <<<unsigned(rows), kThreads, 0, as_stream(s)>>>(log, vec, x, y, cols);
    });
    if (!cached)
      softmax_rows_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(log, x, y, cols);
  });
  check_launch("softmax_rows");
}

void launch_layer_norm_rows(FloatType t, const void* in, const void* weight, const void* bias,
                            void* out, void* mean, void* rstd, int64_t rows, int64_t cols,
                            double eps, StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, "layer_norm");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    const T *x = static_cast<const T*>(in), *w = static_cast<const T*>(weight),
            *b = static_cast<const T*>(bias);
    T *y = static_cast<T*>(out), *m = static_cast<T*>(mean), *r = static_cast<T*>(rstd);
    const bool vec = rows_vectorizable<T>(cols, {in, out});
    const bool cached = with_row_cache(cols, [&](auto per) {
      layer_norm_rows_cached_kernel<T, decltype(per)::value>
          <<<unsigned(rows), kThreads, 0, as_stream(s)>>>(vec, x, w, b, y, m, r, cols, eps);
    });
    if (!cached)
      layer_norm_rows_kernel<T>
          <<<unsigned(rows), kThreads, 0, as_stream(s)>>>(x, w, b, y, m, r, cols, eps);
  });
  check_launch("layer_norm_rows");
}

void launch_layer_norm_backward_input(FloatType t, const void* grad, const void* in,
                                      const void* mean, const void* rstd, const void* weight,
                                      void* dx, int64_t rows, int64_t cols, StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, "layer_norm_backward");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    layer_norm_backward_input_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(grad), static_cast<const T*>(in), static_cast<const T*>(mean),
        static_cast<const T*>(rstd), static_cast<const T*>(weight), static_cast<T*>(dx), cols);
  });
  check_launch("layer_norm_backward_input");
}

int64_t layer_norm_weight_chunks(int64_t rows) {
  const int64_t chunks = (rows + 31) / 32;  // 32 rows a chunk, at most 4096 chunks
  return chunks < 1 ? 1 : (chunks > 4096 ? 4096 : chunks);
}

void launch_layer_norm_backward_weight(FloatType t, const void* grad, const void* in,
                                       const void* mean, const void* rstd, void* part, void* dw,
                                       int64_t rows, int64_t cols, StreamHandle s) {
  if (cols == 0) return;
  const int64_t chunks = layer_norm_weight_chunks(rows);
  const int64_t chunk_rows = (rows + chunks - 1) / chunks;
  const unsigned tiles = unsigned((cols + kThreads - 1) / kThreads);
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    if (rows > 0)
      layer_norm_backward_weight_part_kernel<T>
          <<<dim3(tiles, unsigned(chunks)), kThreads, 0, as_stream(s)>>>(
              static_cast<const T*>(grad), static_cast<const T*>(in), static_cast<const T*>(mean),
              static_cast<const T*>(rstd), static_cast<A*>(part), rows, cols, chunk_rows);
    column_sum_kernel<T><<<tiles, kThreads, 0, as_stream(s)>>>(
        static_cast<const A*>(part), static_cast<T*>(dw), rows > 0 ? chunks : 0, cols);
  });
  check_launch("layer_norm_backward_weight");
}

void launch_rms_norm_rows(FloatType t, const void* in, const void* residual, const void* weight,
                          void* out, void* sum_out, int64_t rows, int64_t cols, double eps,
                          StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, "fused_rms_norm");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    const T *x = static_cast<const T*>(in), *r = static_cast<const T*>(residual),
            *w = static_cast<const T*>(weight);
    T *y = static_cast<T*>(out), *h = static_cast<T*>(sum_out);
    const bool vec = residual ? rows_vectorizable<T>(cols, {in, residual, out, sum_out})
                              : rows_vectorizable<T>(cols, {in, out});
    const bool cached = with_row_cache(cols, [&](auto per) {
      rms_norm_rows_cached_kernel<T, decltype(per)::value>
          <<<unsigned(rows), kThreads, 0, as_stream(s)>>>(vec, x, r, w, y, h, cols, float(eps));
    });
    if (!cached)
      rms_norm_rows_kernel<T>
          <<<unsigned(rows), kThreads, 0, as_stream(s)>>>(x, r, w, y, h, cols, float(eps));
  });
  check_launch("rms_norm_rows");
}

void launch_silu_and_mul(FloatType t, const void* in, void* out, int64_t rows, int64_t d,
                         StreamHandle s) {
  const int64_t n = rows * d;
  if (n == 0) return;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    silu_and_mul_kernel<T><<<unsigned(blocks < 65535 ? blocks : 65535), kThreads, 0,
                             as_stream(s)>>>(static_cast<const T*>(in),
                                                             static_cast<T*>(out), rows, d);
  });
  check_launch("silu_and_mul");
}

void launch_cross_entropy_rows(FloatType t, const void* in, const int64_t* target,
                               const void* weight, void* lse, void* row_loss, void* row_weight,
                               int64_t rows, int64_t cols, int64_t ignore_index, double smoothing,
                               StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, "cross_entropy");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    cross_entropy_rows_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(in), target, static_cast<const T*>(weight), static_cast<T*>(lse),
        static_cast<A*>(row_loss), static_cast<A*>(row_weight), cols, ignore_index, smoothing);
  });
  check_launch("cross_entropy_rows");
}

void launch_cross_entropy_grad_rows(FloatType t, const void* in, const int64_t* target,
                                    const void* weight, const void* lse, const void* grad,
                                    void* denom, void* out, int64_t rows, int64_t cols,
                                    int64_t ignore_index, int reduction, double smoothing,
                                    StreamHandle s) {
  if (rows == 0) return;
  check_rows(rows, "cross_entropy backward");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    if (reduction == 1)
      cross_entropy_denominator_kernel<T><<<1, kThreads, 0, as_stream(s)>>>(
          target, static_cast<const T*>(weight), rows, ignore_index, static_cast<A*>(denom));
    cross_entropy_grad_rows_kernel<T>
        <<<unsigned(rows), kThreads, 0, as_stream(s)>>>(
            static_cast<const T*>(in), target, static_cast<const T*>(weight),
            static_cast<const T*>(lse), static_cast<const T*>(grad),
            static_cast<const A*>(denom), static_cast<T*>(out), cols, ignore_index, reduction,
            smoothing);
  });
  check_launch("cross_entropy_grad_rows");
}

}  // namespace retorch::cuda_backend
