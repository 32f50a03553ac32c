// The CUDA backend's image kernels: nearest and bilinear resizing, adaptive max pooling and group
// norm, with their backwards, for contiguous NCHW tensors.
#include <cstdint>
#include <type_traits>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaImage.h"

namespace retorch::cuda_backend {

// Note [CUDA image ops]
// Resizing follows the cpu kernels' source-index rules (backend/cpu/UpsampleOps.cpp, PyTorch's):
// nearest reads floor(o * s) (in float, s = 1 / scale when a scale is given, else in / out,
// clamped to in - 1; out == in and out == 2 in are exact), bilinear reads taps i0 and i0 + 1
// (i0 alone at the last row) of the source coordinate, computed in the accumulation type. The
// forwards are a thread per output; the backwards are gathers, a thread per input element:
// the source index is monotonic in the output index, so the outputs that read input i form a
// range found by binary search over the forward's own index function, and each thread sums
// their gradients in the cpu kernel's order (outputs in row-major order, taps in its order), so
// the result is deterministic, needs no atomics or zeroing, and accumulates the 16-bit types in
// float. The bilinear range is widened by one output each side and every tap checked, so a
// source coordinate rounded differently by a contracted multiply-add cannot drop a term.
// adaptive_max_pool2d scans each of PyTorch's adaptive windows as max_pool2d does (Note [CUDA
// batch norm and max pool]); its backward scatters to the indices with atomicAdd (the indices
// are the caller's, so no gather can be sure to find them), into grad_in for float and double
// and into a float buffer, then converted, for the 16-bit types. Group norm is the cpu
// kernel's (Note [Group norm kernels]): forward a block per (sample, group) row taking the mean
// and then the squared deviations, then y = x * scale + shift (few rows, as a batch of one in
// one group, leave most of the device idle: rows split over blocks would be the next step);
// backward a block per (sample, channel) plane for Σ dy (x - mean) and Σ dy, a thread per
// (sample, group) folding them into the coefficients of dx = c1 dy + c2 (x - mean) + c3, a
// thread per element for dx and a thread per channel for the weight's and bias's gradients.

namespace {

// ---------------------------------------------------------------- resizing

// The cpu kernel's nearest source index (s: the float scale, see launch_upsample_nearest2d).
__device__ inline int64_t nearest_index(int64_t o, int64_t in, int64_t out, float s) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  return min(int64_t(floorf(float(o) * s)), in - 1);
}

// The first output o in [0, out] whose index(o) >= i, index non-decreasing in o.
template <typename F>
__device__ inline int64_t first_output(int64_t i, int64_t out, const F& index) {
  int64_t lo = 0, hi = out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (index(mid) >= i)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Moves elements (E: an unsigned type of their size): a thread per output.
template <typename E>
__global__ void upsample_nearest_kernel(const E* x, E* y, ResizeShape g, float sh, float sw) {
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, plane = i / (g.ow * g.oh);
    const int64_t iy = nearest_index(oy, g.ih, g.oh, sh), ix = nearest_index(ox, g.iw, g.ow, sw);
    y[i] = x[(plane * g.ih + iy) * g.iw + ix];
  }
}

template <typename T>
__global__ void upsample_nearest_backward_kernel(const T* gy, T* gx, ResizeShape g, float sh,
                                                 float sw) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.ih * g.iw;
  auto row = [&](int64_t o) { return nearest_index(o, g.ih, g.oh, sh); };
  auto col = [&](int64_t o) { return nearest_index(o, g.iw, g.ow, sw); };
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ix = i % g.iw, iy = (i / g.iw) % g.ih, plane = i / (g.iw * g.ih);
    const int64_t oy0 = first_output(iy, g.oh, row), oy1 = first_output(iy + 1, g.oh, row);
    const int64_t ox0 = first_output(ix, g.ow, col), ox1 = first_output(ix + 1, g.ow, col);
    const T* p = gy + plane * g.oh * g.ow;
    A sum = 0;
    for (int64_t oy = oy0; oy < oy1; ++oy)
      for (int64_t ox = ox0; ox < ox1; ++ox) sum += A(load(p + oy * g.ow + ox));
    store(gx + i, sum);
  }
}

// Output o's two source taps along one dim and their weights (the cpu kernel's linear_taps).
template <typename A>
struct Tap {
  int64_t i0, i1;
  A l0, l1;
};

template <typename A>
__device__ inline Tap<A> linear_tap(int64_t o, int64_t in, A s, bool align_corners) {
  const A src = align_corners ? s * A(o) : max(s * (A(o) + A(0.5)) - A(0.5), A(0));
  const int64_t i = min(int64_t(src), in - 1);
  const A l1 = min(max(src - A(i), A(0)), A(1));
  return {i, i < in - 1 ? i + 1 : i, A(1) - l1, l1};
}

// The source coordinate's scale: (in - 1) / (out - 1) with aligned corners, else 1 / scale
// when a scale is given, else in / out (host code, in the cpu kernel's type and order).
template <typename A>
A linear_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? A(in - 1) / A(out - 1) : A(0);
  return scale > 0 ? A(1.0 / scale) : A(in) / A(out);
}

template <typename T>
__global__ void upsample_bilinear_kernel(const T* x, T* y, ResizeShape g, acc_t<T> sh,
                                         acc_t<T> sw) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, plane = i / (g.ow * g.oh);
    const Tap<A> h = linear_tap(oy, g.ih, sh, g.align_corners);
    const Tap<A> w = linear_tap(ox, g.iw, sw, g.align_corners);
    const T* r0 = x + (plane * g.ih + h.i0) * g.iw;
    const T* r1 = x + (plane * g.ih + h.i1) * g.iw;
    const A v = h.l0 * (w.l0 * A(load(r0 + w.i0)) + w.l1 * A(load(r0 + w.i1))) +
                h.l1 * (w.l0 * A(load(r1 + w.i0)) + w.l1 * A(load(r1 + w.i1)));
    store(y + i, v);
  }
}

template <typename T>
__global__ void upsample_bilinear_backward_kernel(const T* gy, T* gx, ResizeShape g, acc_t<T> sh,
                                                  acc_t<T> sw) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.ih * g.iw;
  const bool ac = g.align_corners;
  auto row = [&](int64_t o) { return linear_tap(o, g.ih, sh, ac).i0; };
  auto col = [&](int64_t o) { return linear_tap(o, g.iw, sw, ac).i0; };
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ix = i % g.iw, iy = (i / g.iw) % g.ih, plane = i / (g.iw * g.ih);
    // The outputs whose first tap is i - 1 or i (the only ones that read i), widened by one.
    const int64_t oy0 = max(first_output(iy - 1, g.oh, row) - 1, int64_t(0));
    const int64_t oy1 = min(first_output(iy + 1, g.oh, row) + 1, g.oh);
    const int64_t ox0 = max(first_output(ix - 1, g.ow, col) - 1, int64_t(0));
    const int64_t ox1 = min(first_output(ix + 1, g.ow, col) + 1, g.ow);
    const T* p = gy + plane * g.oh * g.ow;
    A sum = 0;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      const Tap<A> h = linear_tap(oy, g.ih, sh, ac);
      if (h.i0 != iy && h.i1 != iy) continue;
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        const Tap<A> w = linear_tap(ox, g.iw, sw, ac);
        if (w.i0 != ix && w.i1 != ix) continue;
        const A v = A(load(p + oy * g.ow + ox));
        if (h.i0 == iy && w.i0 == ix) sum += h.l0 * w.l0 * v;
        if (h.i0 == iy && w.i1 == ix) sum += h.l0 * w.l1 * v;
        if (h.i1 == iy && w.i0 == ix) sum += h.l1 * w.l0 * v;
        if (h.i1 == iy && w.i1 == ix) sum += h.l1 * w.l1 * v;
      }
    }
    store(gx + i, sum);
  }
}

// ---------------------------------------------------------------- adaptive max pool

// A thread per output: the first maximum of its adaptive window, a NaN winning over any number.
template <typename T>
__global__ void adaptive_max_pool_kernel(const T* x, T* y, int64_t* indices, PoolShape g) {
  using A = acc_t<T>;
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, plane = i / (g.ow * g.oh);
    const int64_t h0 = oy * g.h / g.oh, h1 = ((oy + 1) * g.h + g.oh - 1) / g.oh;
    const int64_t w0 = ox * g.w / g.ow, w1 = ((ox + 1) * g.w + g.ow - 1) / g.ow;
    const T* p = x + plane * g.h * g.w;
    A best = -A(INFINITY);
    int64_t arg = h0 * g.w + w0;
    for (int64_t r = h0; r < h1; ++r)
      for (int64_t c = w0; c < w1; ++c) {
        const A v = A(load(p + r * g.w + c));
        if (v > best || v != v) {
          best = v;
          arg = r * g.w + c;
        }
      }
    store(y + i, best);
    indices[i] = arg;
  }
}

__device__ inline void add_to(float* p, float v) {
  atomicAdd(p, v);
}
__device__ inline void add_to(double* p, double v) {
  atomicAdd(p, v);
}

// dst (grad_in, or the float accumulator of a 16-bit grad_in; zeroed) += grad_out scattered.
template <typename T, typename D>
__global__ void scatter_max_grad_kernel(const T* gy, const int64_t* indices, D* dst, PoolShape g) {
  const int64_t n = g.planes * g.oh * g.ow, hw = g.h * g.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = i / (g.ow * g.oh), idx = indices[i];
    RT_DEVICE_CHECK(idx >= 0 && idx < hw, "adaptive_max_pool2d backward: an index");
    add_to(dst + plane * hw + idx, D(load(gy + i)));
  }
}

template <typename T>
__global__ void store_kernel(const float* acc, T* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(out + i, acc[i]);
}

// ---------------------------------------------------------------- group norm

// A block per (sample, group) row of d * hxw contiguous elements.
template <typename T>
__global__ void group_norm_kernel(const T* x, const T* weight, const T* bias, T* y, T* mean,
                                  T* rstd, GroupNormShape g) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t row = blockIdx.x, d = g.c / g.group, len = d * g.hxw;
  const T* xr = x + row * len;
  A s = 0;
  for (int64_t k = threadIdx.x; k < len; k += blockDim.x) s += A(load(xr + k));
  const A m = block_sum(s, shared) / A(len);
  A q = 0;
  for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
    const A e = A(load(xr + k)) - m;
    q += e * e;
  }
  const A var = block_sum(q, shared) / A(len);
  const A rs = A(1) / sqrt(max(var, A(0)) + A(g.eps));
  if (threadIdx.x == 0) {
    store(mean + row, m);
    store(rstd + row, rs);
  }
  const int64_t c0 = (row % g.group) * d;
  T* yr = y + row * len;
  for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
    const int64_t c = c0 + k / g.hxw;
    const A scale = weight ? rs * A(load(weight + c)) : rs;
    const A shift = (bias ? A(load(bias + c)) : A(0)) - m * scale;
    store(yr + k, A(load(xr + k)) * scale + shift);
  }
}

// A block per (sample, channel) plane: ds = Σ dy (x - mean), dbs = Σ dy.
template <typename T>
__global__ void group_norm_plane_sums_kernel(const T* dy, const T* x, const T* mean,
                                             GroupNormShape g, acc_t<T>* ds, acc_t<T>* dbs) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t p = blockIdx.x, d = g.c / g.group;
  const A m = A(load(mean + (p / g.c) * g.group + (p % g.c) / d));
  const T* xp = x + p * g.hxw;
  const T* gp = dy + p * g.hxw;
  A a = 0, b = 0;
  for (int64_t k = threadIdx.x; k < g.hxw; k += blockDim.x) {
    const A v = A(load(gp + k));
    a += v * (A(load(xp + k)) - m);
    b += v;
  }
  a = block_sum(a, shared);
  b = block_sum(b, shared);
  if (threadIdx.x == 0) {
    ds[p] = a;
    dbs[p] = b;
  }
}

// A thread per (sample, group): coef[2 ng] = c2 = -rstd³ Σ w ds / M, coef[2 ng + 1] = c3 =
// -rstd Σ w dbs / M (M = d * hxw).
template <typename T>
__global__ void group_norm_coefficients_kernel(const acc_t<T>* ds, const acc_t<T>* dbs,
                                               const T* rstd, const T* weight, GroupNormShape g,
                                               acc_t<T>* coef) {
  using A = acc_t<T>;
  const int64_t ng = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ng >= g.n * g.group) return;
  const int64_t n = ng / g.group, d = g.c / g.group, c0 = (ng % g.group) * d;
  A dsg = 0, dbg = 0;
  for (int64_t k = 0; k < d; ++k) {
    const int64_t c = c0 + k;
    const A w = weight ? A(load(weight + c)) : A(1);
    dsg += ds[n * g.c + c] * w;
    dbg += dbs[n * g.c + c] * w;
  }
  const A r = A(load(rstd + ng)), inv = A(1) / A(d * g.hxw);
  coef[2 * ng] = -dsg * r * r * r * inv;
  coef[2 * ng + 1] = -dbg * r * inv;
}

template <typename T>
__global__ void group_norm_dx_kernel(const T* dy, const T* x, const T* mean, const T* rstd,
                                     const T* weight, const acc_t<T>* coef, GroupNormShape g,
                                     T* dx) {
  using A = acc_t<T>;
  const int64_t total = g.n * g.c * g.hxw, d = g.c / g.group;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i / g.hxw, c = p % g.c, ng = (p / g.c) * g.group + c / d;
    const A c1 = A(load(rstd + ng)) * (weight ? A(load(weight + c)) : A(1));
    store(dx + i, c1 * A(load(dy + i)) + coef[2 * ng] * (A(load(x + i)) - A(load(mean + ng))) +
                      coef[2 * ng + 1]);
  }
}

// A thread per channel: dw = Σ_n ds rstd, db = Σ_n dbs.
template <typename T>
__global__ void group_norm_affine_grad_kernel(const acc_t<T>* ds, const acc_t<T>* dbs,
                                              const T* rstd, GroupNormShape g, T* dw, T* db) {
  using A = acc_t<T>;
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= g.c) return;
  const int64_t d = g.c / g.group;
  A gw = 0, gb = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    gw += ds[n * g.c + c] * A(load(rstd + n * g.group + c / d));
    gb += dbs[n * g.c + c];
  }
  store(dw + c, gw);
  store(db + c, gb);
}

}  // namespace

void launch_upsample_nearest2d(int64_t element_size, const void* x, void* y, const ResizeShape& g,
                               StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  // The cpu kernel's scale, in float (see nearest_index).
  const float sh = g.scale_h > 0 ? float(1.0 / g.scale_h) : float(g.ih) / float(g.oh);
  const float sw = g.scale_w > 0 ? float(1.0 / g.scale_w) : float(g.iw) / float(g.ow);
  with_element_size(element_size, "upsample_nearest2d", [&](auto type) {
    using E = typename decltype(type)::type;
    upsample_nearest_kernel<E><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const E*>(x), static_cast<E*>(y), g, sh, sw);
  });
  check_launch("upsample_nearest2d");
}

void launch_upsample_nearest2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                        const ResizeShape& g, StreamHandle s) {
  const int64_t n = g.planes * g.ih * g.iw;
  if (n == 0) return;
  const float sh = g.scale_h > 0 ? float(1.0 / g.scale_h) : float(g.ih) / float(g.oh);
  const float sw = g.scale_w > 0 ? float(1.0 / g.scale_w) : float(g.iw) / float(g.ow);
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    upsample_nearest_backward_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(grad_out), static_cast<T*>(grad_in), g, sh, sw);
  });
  check_launch("upsample_nearest2d_backward");
}

void launch_upsample_bilinear2d(FloatType t, const void* x, void* y, const ResizeShape& g,
                                StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    upsample_bilinear_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), g,
        linear_scale<A>(g.ih, g.oh, g.align_corners, g.scale_h),
        linear_scale<A>(g.iw, g.ow, g.align_corners, g.scale_w));
  });
  check_launch("upsample_bilinear2d");
}

void launch_upsample_bilinear2d_backward(FloatType t, const void* grad_out, void* grad_in,
                                         const ResizeShape& g, StreamHandle s) {
  const int64_t n = g.planes * g.ih * g.iw;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    upsample_bilinear_backward_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(grad_out), static_cast<T*>(grad_in), g,
        linear_scale<A>(g.ih, g.oh, g.align_corners, g.scale_h),
        linear_scale<A>(g.iw, g.ow, g.align_corners, g.scale_w));
  });
  check_launch("upsample_bilinear2d_backward");
}

void launch_adaptive_max_pool2d(FloatType t, const void* x, void* y, int64_t* indices,
                                const PoolShape& g, StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow;
  if (n == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    adaptive_max_pool_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(x), static_cast<T*>(y), indices, g);
  });
  check_launch("adaptive_max_pool2d");
}

void launch_adaptive_max_pool2d_backward(FloatType t, const void* grad_out, const int64_t* indices,
                                         void* grad_in, float* acc, const PoolShape& g,
                                         StreamHandle s) {
  const int64_t n = g.planes * g.oh * g.ow, m = g.planes * g.h * g.w;
  if (m == 0) return;
  auto zero = [&](void* p, size_t bytes) {
    const cudaError_t status = cudaMemsetAsync(p, 0, bytes, as_stream(s));
    RT_CHECK(status == cudaSuccess,
             "cudaMemsetAsync failed (adaptive_max_pool2d backward): ", cudaGetErrorString(status));
  };
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (std::is_same_v<T, acc_t<T>>) {  // float and double sum in grad_in
      zero(grad_in, size_t(m) * sizeof(T));
      if (n > 0)
        scatter_max_grad_kernel<T, T><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
            static_cast<const T*>(grad_out), indices, static_cast<T*>(grad_in), g);
    } else {
      RT_CHECK(acc != nullptr, "adaptive_max_pool2d backward: no accumulator");
      zero(acc, size_t(m) * sizeof(float));
      if (n > 0)
        scatter_max_grad_kernel<T, float><<<blocks_for(n), kThreads, 0, as_stream(s)>>>(
            static_cast<const T*>(grad_out), indices, acc, g);
      store_kernel<T>
          <<<blocks_for(m), kThreads, 0, as_stream(s)>>>(acc, static_cast<T*>(grad_in), m);
    }
  });
  check_launch("adaptive_max_pool2d_backward");
}

void launch_group_norm(FloatType t, const void* x, const void* weight, const void* bias, void* y,
                       void* mean, void* rstd, const GroupNormShape& g, StreamHandle s) {
  const int64_t rows = g.n * g.group;
  if (rows == 0 || g.c == 0 || g.hxw == 0) return;
  RT_CHECK_VALUE(rows <= INT32_MAX, "cuda group_norm: ", rows, " rows");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    group_norm_kernel<T><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
        static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd), g);
  });
  check_launch("group_norm");
}

void launch_group_norm_backward(FloatType t, const void* dy, const void* x, const void* mean,
                                const void* rstd, const void* weight, void* dx, void* dw, void* db,
                                void* work, const GroupNormShape& g, StreamHandle s) {
  const int64_t planes = g.n * g.c, rows = g.n * g.group;
  if (planes == 0 || g.hxw == 0) return;
  RT_CHECK_VALUE(planes <= INT32_MAX, "cuda group_norm backward: ", planes, " planes");
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    using A = acc_t<T>;
    A* ds = static_cast<A*>(work);
    A* dbs = ds + planes;
    A* coef = dbs + planes;
    const T* w = static_cast<const T*>(weight);
    group_norm_plane_sums_kernel<T><<<unsigned(planes), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(mean), g, ds,
        dbs);
    group_norm_coefficients_kernel<T><<<blocks_for(rows), kThreads, 0, as_stream(s)>>>(
        ds, dbs, static_cast<const T*>(rstd), w, g, coef);
    group_norm_dx_kernel<T><<<blocks_for(planes * g.hxw), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(mean),
        static_cast<const T*>(rstd), w, coef, g, static_cast<T*>(dx));
    group_norm_affine_grad_kernel<T><<<blocks_for(g.c), kThreads, 0, as_stream(s)>>>(
        ds, dbs, static_cast<const T*>(rstd), g, static_cast<T*>(dw), static_cast<T*>(db));
  });
  check_launch("group_norm_backward");
}

}  // namespace retorch::cuda_backend
