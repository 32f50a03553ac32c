// The CUDA backend's scans along rows: cumsum, cumprod, logcumsumexp, cummax and cummin, a block
// per row with warp-shuffle scans (Note [CUDA scans]).
#include <cstdint>

#include "retorch/backend/cuda/CudaDevice.cuh"
#include "retorch/backend/cuda/CudaScan.h"

namespace retorch::cuda_backend {

// Note [CUDA scans]
// Each row is scanned by one block in chunks of blockDim elements: every warp scans its 32
// values with shuffles, the first warp scans the warps' totals, each value takes its warp's
// prefix and the running total of the earlier chunks. One kernel serves every scan through an
// op object: its value type (a number, or a (value, column) pair for cummax and cummin), its
// identity and its combine(left, right), which must be associative (the order of the
// combinations is not the cpu's sequential one, so sums, products and log-sum-exps differ from
// the cpu's by rounding only). cummax's pair combine keeps the right one where it is NaN, where
// the left one is not NaN and the right one is no smaller (ties move to the later column), as
// the cpu's loop: a NaN sticks until the next NaN. The identity is a pair with column -1, which
// combine drops whichever side it is on.

namespace {

template <typename A>
struct Extreme {
  A v;
  int64_t i;
};

template <typename V>
__device__ inline V shfl_up(V v, int o) {
  return __shfl_up_sync(0xffffffffu, v, o);
}
template <typename A>
__device__ inline Extreme<A> shfl_up(Extreme<A> p, int o) {
  return {__shfl_up_sync(0xffffffffu, p.v, o), __shfl_up_sync(0xffffffffu, p.i, o)};
}

// Running sums (kSum) or products (kProd) in A, from elements of T.
template <typename T, typename A, bool kProduct>
struct Arithmetic {
  using V = A;
  const T* in;
  T* out;
  __device__ V identity() const { return A(kProduct ? 1 : 0); }
  __device__ V combine(V a, V b) const { return kProduct ? a * b : a + b; }
  __device__ V get(int64_t k) const { return A(load(in + k)); }
  __device__ void put(int64_t k, V v) const { store(out + k, v); }
};

// log(exp(a) + exp(b)) in double, as the cpu's: NaN wins, -inf + -inf stays -inf.
template <typename T>
struct LogSumExp {
  using V = double;
  const T* in;
  T* out;
  __device__ V identity() const { return -INFINITY; }
  __device__ V combine(V a, V b) const {
    if (a != a || b != b) return NAN;
    const double hi = a > b ? a : b, lo = a > b ? b : a;
    if (lo == -INFINITY || hi == INFINITY) return hi;
    return hi + log1p(exp(lo - hi));
  }
  __device__ V get(int64_t k) const { return double(load(in + k)); }
  __device__ void put(int64_t k, V v) const { store(out + k, v); }
};

template <typename T, bool kMax>
struct RunningExtreme {
  using A = acc_t<T>;
  using V = Extreme<A>;
  const T* in;
  T* out;
  int64_t* indices;
  int64_t cols;
  __device__ V identity() const { return {A(0), -1}; }
  __device__ V combine(V a, V b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (b.v != b.v) return b;
    if (a.v != a.v) return a;
    return (kMax ? b.v >= a.v : b.v <= a.v) ? b : a;
  }
  __device__ V get(int64_t k) const { return {A(load(in + k)), k % cols}; }
  __device__ void put(int64_t k, V v) const {
    store(out + k, v.v);
    indices[k] = v.i;
  }
};

template <typename Op>
__global__ void scan_rows_kernel(Op op, int64_t cols) {
  using V = typename Op::V;
  __shared__ V totals[32];
  const int64_t base = int64_t(blockIdx.x) * cols;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  V carry = op.identity();
  for (int64_t c0 = 0; c0 < cols; c0 += blockDim.x) {
    const int64_t j = c0 + threadIdx.x;
    V v = j < cols ? op.get(base + j) : op.identity();
    for (int o = 1; o < 32; o <<= 1) {
      const V y = shfl_up(v, o);
      if (lane >= o) v = op.combine(y, v);
    }
    if (lane == 31) totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
      V t = lane < warps ? totals[lane] : op.identity();
      for (int o = 1; o < 32; o <<= 1) {
        const V y = shfl_up(t, o);
        if (lane >= o) t = op.combine(y, t);
      }
      totals[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v = op.combine(totals[warp - 1], v);
    if (j < cols) op.put(base + j, op.combine(carry, v));
    carry = op.combine(carry, totals[warps - 1]);
    __syncthreads();  // every thread has read totals before the next chunk writes them
  }
}

template <typename Op>
void launch(const Op& op, int64_t rows, int64_t cols, StreamHandle s) {
  RT_CHECK(rows <= INT32_MAX, "cuda scan: ", rows, " rows are more than one launch takes");
  scan_rows_kernel<Op><<<unsigned(rows), kThreads, 0, as_stream(s)>>>(op, cols);
}

}  // namespace

void launch_scan_rows(ScanOp op, FloatType t, const void* in, void* out, int64_t* indices,
                      int64_t rows, int64_t cols, StreamHandle s) {
  if (rows == 0 || cols == 0) return;
  with_type(t, [&](auto type) {
    using T = typename decltype(type)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    switch (op) {
      case ScanOp::kSum: return launch(Arithmetic<T, acc_t<T>, false>{x, y}, rows, cols, s);
      case ScanOp::kProd: return launch(Arithmetic<T, double, true>{x, y}, rows, cols, s);
      case ScanOp::kLogSumExp: return launch(LogSumExp<T>{x, y}, rows, cols, s);
      case ScanOp::kMax: return launch(RunningExtreme<T, true>{x, y, indices, cols}, rows, cols, s);
      case ScanOp::kMin:
        return launch(RunningExtreme<T, false>{x, y, indices, cols}, rows, cols, s);
    }
  });
  check_launch("scan_rows");
}

void launch_scan_rows_int(ScanOp op, bool int64, const void* in, void* out, int64_t rows,
                          int64_t cols, StreamHandle s) {
  if (rows == 0 || cols == 0) return;
  RT_CHECK(op == ScanOp::kSum || op == ScanOp::kProd, "cuda scan: op ", int(op),
           " has no integer form");
  auto go = [&](auto type) {
    using T = typename decltype(type)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (op == ScanOp::kSum) launch(Arithmetic<T, T, false>{x, y}, rows, cols, s);
    else launch(Arithmetic<T, T, true>{x, y}, rows, cols, s);
  };
  if (int64) go(Tag<int64_t>{});
  else go(Tag<int32_t>{});
  check_launch("scan_rows (integers)");
}

}  // namespace retorch::cuda_backend
