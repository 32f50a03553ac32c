// The CUDA backend's batch-norm, max-pool and average-pool kernels for NCHW tensors:
// per-channel statistics a block per channel, elementwise passes a thread per element, pooling a
// thread per output (a thread per input for the average pool's gradient).
#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaNorm.h"

namespace retorch::cuda_backend {

// Note [CUDA batch norm and max pool]
// Batch norm's training statistics follow the cpu kernel's two passes per channel (the mean,
// then the squared deviations from it), a block of 256 threads per channel walking its N x S
// elements, and update the running mean and the unbiased running variance with the momentum;
// the normalization is x * scale + shift with scale = invstd * w and shift = b - mean * scale,
// as on the cpu. The backward is PyTorch's two fused passes: per-channel sums of dy and
// dy * (x - mean), then gi = (dy - sum_dy / M - (x - mean) * invstd² * sum_dy_xmu / M) * invstd
// * w. Max pool scans each window in the cpu kernel's order (the first maximum wins, a NaN wins
// over any number) and records the flat h * W + w index; its backward scatters each output's
// gradient to that index with atomicAdd, since windows overlap when the stride is smaller than
// the kernel.

namespace {

// Element k of channel c, of N x S elements in NCHW order.
__device__ inline int64_t at(int64_t k, int64_t c, int64_t C, int64_t S) {
  return ((k / S) * C + c) * S + k % S;
}

template <typename T>
__global__ void bn_stats_kernel(const T* x, BatchNormShape g, T* save_mean, T* save_invstd,
                                T* running_mean, T* running_var, acc_t<T>* mean_out,
                                acc_t<T>* invstd_out) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t c = blockIdx.x, count = g.n * g.s;
  A s = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) s += A(load(x + at(k, c, g.c, g.s)));
  const A mean = count > 0 ? block_sum(s, shared) / A(count) : A(NAN);
  A q = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const A d = A(load(x + at(k, c, g.c, g.s))) - mean;
    q += d * d;
  }
  const A ss = block_sum(q, shared);
  if (threadIdx.x != 0) return;
  const A var = count > 0 ? ss / A(count) : A(NAN);
  const A invstd = A(1) / sqrt(var + A(g.eps));
  mean_out[c] = mean;
  invstd_out[c] = invstd;
  store(save_mean + c, mean);
  store(save_invstd + c, invstd);
  const A m = A(g.momentum);
  if (running_mean) store(running_mean + c, (A(1) - m) * A(load(running_mean + c)) + m * mean);
  if (running_var) {
    const A unbiased = count > 1 ? ss / A(count - 1) : A(NAN);
    store(running_var + c, (A(1) - m) * A(load(running_var + c)) + m * unbiased);
  }
}

template <typename T>
__global__ void bn_eval_params_kernel(const T* running_mean, const T* running_var,
                                      BatchNormShape g, acc_t<T>* mean_out, acc_t<T>* invstd_out) {
  using A = acc_t<T>;
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= g.c) return;
  mean_out[c] = A(load(running_mean + c));
  invstd_out[c] = A(1) / sqrt(A(load(running_var + c)) + A(g.eps));
}

template <typename T>
__global__ void bn_apply_kernel(const T* x, const acc_t<T>* mean, const acc_t<T>* invstd,
                                const T* weight, const T* bias, T* y, BatchNormShape g) {
  using A = acc_t<T>;
  const int64_t n = g.n * g.c * g.s;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / g.s) % g.c;
    const A scale = invstd[c] * (weight ? A(load(weight + c)) : A(1));
    const A shift = (bias ? A(load(bias + c)) : A(0)) - mean[c] * scale;
    store(y + i, A(load(x + i)) * scale + shift);
  }
}

template <typename T>
__global__ void bn_backward_reduce_kernel(const T* dy, const T* x, const T* mean, BatchNormShape g,
                                          T* sum_dy, T* sum_dy_xmu) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t c = blockIdx.x, count = g.n * g.s;
  const A m = A(load(mean + c));
  A s1 = 0, s2 = 0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t i = at(k, c, g.c, g.s);
    const A d = A(load(dy + i));
    s1 += d;
    s2 += d * (A(load(x + i)) - m);
  }
  s1 = block_sum(s1, shared);
  s2 = block_sum(s2, shared);
  if (threadIdx.x == 0) {
    store(sum_dy + c, s1);
    store(sum_dy_xmu + c, s2);
  }
}

template <typename T>
__global__ void bn_backward_elemt_kernel(const T* dy, const T* x, const T* mean, const T* invstd,
                                         const T* weight, const T* sum_dy, const T* sum_dy_xmu,
                                         T* gi, BatchNormShape g) {
  using A = acc_t<T>;
  const int64_t n = g.n * g.c * g.s;
  const A M = A(g.n * g.s > 1 ? g.n * g.s : 1);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / g.s) % g.c;
    const A is = A(load(invstd + c));
    const A proj = A(load(sum_dy_xmu + c)) / M * is * is;
    const A w = weight ? A(load(weight + c)) : A(1);
    store(gi + i, (A(load(dy + i)) - A(load(sum_dy + c)) / M -
                   (A(load(x + i)) - A(load(mean + c))) * proj) * is * w);
  }
}

template <typename T>
__global__ void max_pool_kernel(const T* x, PoolShape g, T* y, int64_t* indices) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, pl = i / (g.ow * g.oh);
    int64_t h0 = oy * g.sh - g.ph, w0 = ox * g.sw - g.pw;
    const int64_t h1 = min(h0 + (g.kh - 1) * g.dh + 1, g.h);
    const int64_t w1 = min(w0 + (g.kw - 1) * g.dw + 1, g.w);
    while (h0 < 0) h0 += g.dh;
    while (w0 < 0) w0 += g.dw;
    const T* plane = x + pl * g.h * g.w;
    A best = -A(INFINITY);
    int64_t arg = h0 * g.w + w0;
    for (int64_t hh = h0; hh < h1; hh += g.dh)
      for (int64_t ww = w0; ww < w1; ww += g.dw) {
        const A v = A(load(plane + hh * g.w + ww));
        if (v > best || v != v) {
          best = v;
          arg = hh * g.w + ww;
        }
      }
    store(y + i, best);
    indices[i] = arg;
  }
}

__device__ inline void add_to(float* p, float v) { atomicAdd(p, v); }
__device__ inline void add_to(double* p, double v) { atomicAdd(p, v); }
__device__ inline void add_to(__half* p, float v) { atomicAdd(p, __float2half_rn(v)); }
__device__ inline void add_to(__nv_bfloat16* p, float v) { atomicAdd(p, __float2bfloat16_rn(v)); }

template <typename T>
__global__ void max_pool_backward_kernel(const T* grad_out, const int64_t* indices, PoolShape g,
                                         T* grad_in) {
  const int64_t n = g.planes * g.oh * g.ow, hw = g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pl = i / (g.ow * g.oh), idx = indices[i];
    RT_DEVICE_CHECK(idx >= 0 && idx < hw, "max_pool2d backward: an index");
    add_to(grad_in + pl * hw + idx, load(grad_out + i));
  }
}

// adaptive_avg_pool2d's windows, as PyTorch's: output oy of oh over h input rows averages rows
// [floor(oy h / oh), ceil((oy + 1) h / oh)), and likewise for columns.
__device__ inline int64_t window_start(int64_t o, int64_t out, int64_t in) { return o * in / out; }
__device__ inline int64_t window_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

// A thread per output element: the mean of its window (NCHW planes).
template <typename T>
__global__ void adaptive_avg_pool2d_kernel(const T* x, T* y, PoolShape g) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, plane = i / (g.ow * g.oh);
    const int64_t h0 = window_start(oy, g.oh, g.h), h1 = window_end(oy, g.oh, g.h);
    const int64_t w0 = window_start(ox, g.ow, g.w), w1 = window_end(ox, g.ow, g.w);
    const T* p = x + plane * g.h * g.w;
    A sum = 0;
    for (int64_t r = h0; r < h1; ++r)
      for (int64_t c = w0; c < w1; ++c) sum += A(load(p + r * g.w + c));
    store(y + i, sum / A((h1 - h0) * (w1 - w0)));
  }
}

// A thread per input element: the sum of grad / window size over the outputs whose windows
// hold it (deterministic, no atomics).
template <typename T>
__global__ void adaptive_avg_pool2d_backward_kernel(const T* gy, T* gx, PoolShape g) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.w, r = (i / g.w) % g.h, plane = i / (g.w * g.h);
    // The outputs whose windows can hold row r: oy in [r oh / h, ((r + 1) oh + h - 1) / h).
    const int64_t oy0 = r * g.oh / g.h, oy1 = ((r + 1) * g.oh + g.h - 1) / g.h;
    const int64_t ox0 = c * g.ow / g.w, ox1 = ((c + 1) * g.ow + g.w - 1) / g.w;
    const T* p = gy + plane * g.oh * g.ow;
    A sum = 0;
    for (int64_t oy = oy0; oy < oy1 && oy < g.oh; ++oy) {
      const int64_t h0 = window_start(oy, g.oh, g.h), h1 = window_end(oy, g.oh, g.h);
      if (r < h0 || r >= h1) continue;
      for (int64_t ox = ox0; ox < ox1 && ox < g.ow; ++ox) {
        const int64_t w0 = window_start(ox, g.ow, g.w), w1 = window_end(ox, g.ow, g.w);
        if (c < w0 || c >= w1) continue;
        sum += A(load(p + oy * g.ow + ox)) / A((h1 - h0) * (w1 - w0));
      }
    }
    store(gx + i, sum);
  }
}

// avg_pool2d's window of output (oy, ox), as PyTorch's: clipped to the input, its divisor the
// override, or the window's size with the padding (count_include_pad), or without it.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;  // 0: an empty window
};
__device__ inline AvgWindow avg_window(int64_t oy, int64_t ox, const PoolShape& g,
                                       bool count_pad, int64_t divisor_override) {
  int64_t h0 = oy * g.sh - g.ph, w0 = ox * g.sw - g.pw;
  int64_t h1 = min(h0 + g.kh, g.h + g.ph), w1 = min(w0 + g.kw, g.w + g.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t(0)), w0 = max(w0, int64_t(0));
  h1 = min(h1, g.h), w1 = min(w1, g.w);
  if (h0 >= h1 || w0 >= w1) return {h0, h1, w0, w1, 0.0};
  const int64_t n = divisor_override ? divisor_override
                    : count_pad      ? padded
                                     : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, double(n)};
}

template <typename T>
__global__ void avg_pool2d_kernel(const T* x, T* y, PoolShape g, bool count_pad,
                                  int64_t divisor_override) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, plane = i / (g.ow * g.oh);
    const AvgWindow win = avg_window(oy, ox, g, count_pad, divisor_override);
    const T* p = x + plane * g.h * g.w;
    A sum = 0;
    for (int64_t r = win.h0; r < win.h1; ++r)
      for (int64_t c = win.w0; c < win.w1; ++c) sum += A(load(p + r * g.w + c));
    store(y + i, win.divisor == 0.0 ? A(0) : sum / A(win.divisor));
  }
}

// A thread per input element: its share of every output window that holds it.
template <typename T>
__global__ void avg_pool2d_backward_kernel(const T* gy, T* gx, PoolShape g, bool count_pad,
                                           int64_t divisor_override) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.w, r = (i / g.w) % g.h, plane = i / (g.w * g.h);
    const int64_t hp = r + g.ph, wp = c + g.pw;  // in padded coordinates
    const int64_t oy0 = hp < g.kh ? 0 : (hp - g.kh) / g.sh + 1, oy1 = min(hp / g.sh + 1, g.oh);
    const int64_t ox0 = wp < g.kw ? 0 : (wp - g.kw) / g.sw + 1, ox1 = min(wp / g.sw + 1, g.ow);
    const T* p = gy + plane * g.oh * g.ow;
    A sum = 0;
    for (int64_t oy = oy0; oy < oy1; ++oy)
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        const AvgWindow win = avg_window(oy, ox, g, count_pad, divisor_override);
        if (win.divisor == 0.0 || r < win.h0 || r >= win.h1 || c < win.w0 || c >= win.w1)
          continue;
        sum += A(load(p + oy * g.ow + ox)) / A(win.divisor);
      }
    store(gx + i, sum);
  }
}

}  // namespace

void launch_batch_norm(FloatType t, const void* x, const void* weight, const void* bias,
                       void* running_mean, void* running_var, bool training, void* save_mean,
                       void* save_invstd, void* mean_buf, void* invstd_buf, void* y,
                       const BatchNormShape& g, StreamHandle s) {
  if (g.c == 0) return;
  RT_CHECK_VALUE(g.c <= INT32_MAX, "cuda batch_norm: ", g.c, " channels");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    if (training)
      bn_stats_kernel<T><<<unsigned(g.c), kThreads, 0, as_stream(s)>>>(
          static_cast<const T*>(x), g, static_cast<T*>(save_mean), static_cast<T*>(save_invstd),
          static_cast<T*>(running_mean), static_cast<T*>(running_var), static_cast<A*>(mean_buf),
          static_cast<A*>(invstd_buf));
    else
      bn_eval_params_kernel<T><<<blocks_for(g.c), kThreads, 0, as_stream(s)>>>(
          static_cast<const T*>(running_mean), static_cast<const T*>(running_var), g,
          static_cast<A*>(mean_buf), static_cast<A*>(invstd_buf));
    if (g.n * g.c * g.s > 0)
      bn_apply_kernel<T><<<blocks_for(g.n * g.c * g.s), kThreads, 0, as_stream(s)>>>(
          static_cast<const T*>(x), static_cast<const A*>(mean_buf),
          static_cast<const A*>(invstd_buf), static_cast<const T*>(weight),
          static_cast<const T*>(bias), static_cast<T*>(y), g);
  });
  check_launch("batch_norm");
}

void launch_batch_norm_backward_reduce(FloatType t, const void* dy, const void* x,
                                       const void* mean, void* sum_dy, void* sum_dy_xmu,
                                       const BatchNormShape& g, StreamHandle s) {
  if (g.c == 0) return;
  RT_CHECK_VALUE(g.c <= INT32_MAX, "cuda batch_norm backward: ", g.c, " channels");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    bn_backward_reduce_kernel<T><<<unsigned(g.c), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(mean), g,
        static_cast<T*>(sum_dy), static_cast<T*>(sum_dy_xmu));
  });
  check_launch("batch_norm_backward_reduce");
}

void launch_batch_norm_backward_elemt(FloatType t, const void* dy, const void* x,
                                      const void* mean, const void* invstd, const void* weight,
                                      const void* sum_dy, const void* sum_dy_xmu, void* gi,
                                      const BatchNormShape& g, StreamHandle s) {
  const int64_t n = g.n * g.c * g.s;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    bn_backward_elemt_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(mean),
        static_cast<const T*>(invstd), static_cast<const T*>(weight),
        static_cast<const T*>(sum_dy), static_cast<const T*>(sum_dy_xmu), static_cast<T*>(gi), g);
  });
  check_launch("batch_norm_backward_elemt");
}

void launch_max_pool2d(FloatType t, const void* x, void* y, int64_t* indices, const PoolShape& g,
                       StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    max_pool_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(x), g, static_cast<T*>(y), indices);
  });
  check_launch("max_pool2d");
}

void launch_max_pool2d_backward(FloatType t, const void* grad_out, const int64_t* indices,
                                void* grad_in, const PoolShape& g, StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    max_pool_backward_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(grad_out), indices, g, static_cast<T*>(grad_in));
  });
  check_launch("max_pool2d_backward");
}

void launch_adaptive_avg_pool2d(FloatType t, const void* x, void* y, const PoolShape& g,
                                StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    adaptive_avg_pool2d_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), g);
  });
  check_launch("adaptive_avg_pool2d");
}

void launch_adaptive_avg_pool2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                         const PoolShape& g, StreamHandle s) {
  const int64_t n = g.planes * g.h * g.w;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    adaptive_avg_pool2d_backward_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(grad_out), static_cast<T*>(grad_in), g);
  });
  check_launch("adaptive_avg_pool2d_backward");
}

void launch_avg_pool2d(FloatType t, const void* x, void* y, const PoolShape& g, bool count_pad,
                       int64_t divisor_override, StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    avg_pool2d_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), g, count_pad, divisor_override);
  });
  check_launch("avg_pool2d");
}

void launch_avg_pool2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                const PoolShape& g, bool count_pad, int64_t divisor_override,
                                StreamHandle s) {
  const int64_t n = g.planes * g.h * g.w;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    avg_pool2d_backward_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(grad_out), static_cast<T*>(grad_in), g, count_pad,
        divisor_override);
  });
  check_launch("avg_pool2d_backward");
}

}  // namespace retorch::cuda_backend
