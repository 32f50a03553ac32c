// The CUDA backend's CTC loss: a block per sample running the alpha (and beta) recursions.
#include <cstdint>

#include "retorch/backend/cuda/CudaCtc.h"
#include "retorch/backend/cuda/CudaDevice.cuh"

namespace retorch::cuda_backend {

// Note [CUDA CTC]
// The cpu's recursions (backend/cpu/NNLossOps.cpp) in double, one block per sample: the states
// s of the extended label sequence (blanks between and around the labels) are the threads'
// (strided), and a time step's states all read the previous step's, so the block syncs between
// steps. The gradient's sum over the states of each class, which the cpu takes in the log
// domain, is a sum of exp(alpha + beta + nll - log_prob) here, added into grad_in's element
// (t, b, label) with double atomics (blank states share an element), then turned into
// exp(log_prob) minus that sum, times the sample's incoming gradient.

namespace {

__device__ inline double log_add(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const double m = a > b ? a : b;
  return m + log1p(exp(-fabs(a - b)));
}

// One sample's view of the problem.
template <typename T>
struct Sample {
  const T* lp;
  const int64_t* labels;
  int64_t b, N, C, blank, L, len;
  __device__ int64_t label(int64_t s) const { return s % 2 == 0 ? blank : labels[s / 2]; }
  __device__ double at(int64_t t, int64_t c) const {
    return double(load(lp + (t * N + b) * C + c));
  }
};

template <typename T>
__device__ Sample<T> sample(const T* lp, const int64_t* labels, const int64_t* offsets,
                            const int64_t* lengths, const CtcShape& g) {
  const int64_t b = blockIdx.x;
  return {lp, labels + offsets[b], b, g.N, g.C, g.blank, lengths[g.N + b], lengths[b]};
}

template <typename T>
__global__ void ctc_alpha_kernel(const T* lp, const int64_t* labels, const int64_t* offsets,
                                 const int64_t* lengths, CtcShape g, double* alpha, double* nll) {
  const Sample<T> p = sample(lp, labels, offsets, lengths, g);
  const int64_t S = g.S, Sb = 2 * p.L + 1;
  double* a = alpha + p.b * g.T * S;
  if (p.len == 0) {
    if (threadIdx.x == 0) nll[p.b] = p.L == 0 ? 0.0 : INFINITY;
    return;
  }
  if (threadIdx.x == 0) {
    a[0] = p.at(0, g.blank);
    if (p.L > 0) a[1] = p.at(0, p.label(1));
  }
  __syncthreads();
  for (int64_t t = 1; t < p.len; ++t) {
    for (int64_t s = threadIdx.x; s < Sb; s += blockDim.x) {
      const double* prev = a + (t - 1) * S;
      double v = prev[s];
      if (s > 0) v = log_add(v, prev[s - 1]);
      if (s > 1 && p.label(s) != g.blank && p.label(s) != p.label(s - 2))
        v = log_add(v, prev[s - 2]);
      a[t * S + s] = v == -INFINITY ? v : v + p.at(t, p.label(s));
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double end = a[(p.len - 1) * S + Sb - 1];
    if (p.L > 0) end = log_add(end, a[(p.len - 1) * S + Sb - 2]);
    nll[p.b] = -end;
  }
}

template <typename T>
__global__ void ctc_grad_kernel(const T* lp, const int64_t* labels, const int64_t* offsets,
                                const int64_t* lengths, CtcShape g, const double* alpha,
                                const double* nll_in, const double* grad, bool zero_infinity,
                                double* beta, double* out) {
  const Sample<T> p = sample(lp, labels, offsets, lengths, g);
  const int64_t S = g.S, Sb = 2 * p.L + 1, len = p.len;
  const double nll = nll_in[p.b];
  if (len == 0 || (zero_infinity && isinf(nll))) return;
  const double* a = alpha + p.b * g.T * S;
  double* be = beta + p.b * g.T * S;
  if (threadIdx.x == 0) {
    be[(len - 1) * S + Sb - 1] = p.at(len - 1, g.blank);
    if (p.L > 0) be[(len - 1) * S + Sb - 2] = p.at(len - 1, p.label(Sb - 2));
  }
  __syncthreads();
  for (int64_t t = len - 2; t >= 0; --t) {
    for (int64_t s = threadIdx.x; s < Sb; s += blockDim.x) {
      const double* next = be + (t + 1) * S;
      double v = next[s];
      if (s + 1 < Sb) v = log_add(v, next[s + 1]);
      if (s + 2 < Sb && p.label(s) != g.blank && p.label(s) != p.label(s + 2))
        v = log_add(v, next[s + 2]);
      be[t * S + s] = v == -INFINITY ? v : v + p.at(t, p.label(s));
    }
    __syncthreads();
  }
  // Σ over the states of each class of exp(alpha + beta + nll - log_prob), per time step.
  for (int64_t i = threadIdx.x; i < len * Sb; i += blockDim.x) {
    const int64_t t = i / Sb, s = i % Sb, c = p.label(s);
    const double ab = a[t * S + s] + be[t * S + s];
    if (ab != -INFINITY) atomicAdd(out + (t * g.N + p.b) * g.C + c, exp(ab + nll - p.at(t, c)));
  }
  __syncthreads();
  const double gb = grad[p.b];
  for (int64_t i = threadIdx.x; i < len * g.C; i += blockDim.x) {
    const int64_t t = i / g.C, c = i % g.C;
    double* o = out + (t * g.N + p.b) * g.C + c;
    *o = (exp(p.at(t, c)) - *o) * gb;
  }
}

}  // namespace

void launch_ctc_alpha(FloatType t, const void* log_probs, const int64_t* labels,
                      const int64_t* offsets, const int64_t* lengths, const CtcShape& g,
                      double* alpha, double* nll, StreamHandle s) {
  if (g.N == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    ctc_alpha_kernel<T><<<unsigned(g.N), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(log_probs), labels, offsets, lengths, g, alpha, nll);
  });
  check_launch("ctc_alpha");
}

void launch_ctc_grad(FloatType t, const void* log_probs, const int64_t* labels,
                     const int64_t* offsets, const int64_t* lengths, const CtcShape& g,
                     const double* alpha, const double* nll, const double* grad,
                     bool zero_infinity, double* beta, double* grad_in, StreamHandle s) {
  if (g.N == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    ctc_grad_kernel<T><<<unsigned(g.N), kThreads, 0, as_stream(s)>>>(
        static_cast<const T*>(log_probs), labels, offsets, lengths, g, alpha, nll, grad,
        zero_infinity, beta, grad_in);
  });
  check_launch("ctc_grad");
}

}  // namespace retorch::cuda_backend
