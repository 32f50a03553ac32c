// Reductions: sum, mean, prod, amax/amin, max/min (with indices), argmax/argmin, all/any.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "retorch/backend/cpu/Convert16.h"
#include "retorch/backend/cpu/ReduceUtils.h"
#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

// Accumulator type: double for floats (more accurate than the output), int64 for integers.
template <typename T>
using acc_of = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double,
                                  std::conditional_t<std::is_same_v<T, bool>, int64_t, int64_t>>;

ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral_type(self.dtype(), true) ? kLong : self.dtype();
}

// Writes a freshly computed result into out (allocating or resizing it).
void write_out(const Tensor& result, Tensor& out, const char* op) {
  if (!out.defined()) {
    out = result;
    return;
  }
  detail::resize_output(out, result.sizes(), op);
  out.copy_(result);
}

// Note [Float sum accumulation]
// Float sums accumulate in double over 16 independent lanes: one running total would chain
// every add on the previous one (latency-bound, ~12x slower than PyTorch on a 4M-element sum).
// Converting every element to double cost more than the adds (a row sum of 1024 floats in cache
// 1.9x slower than PyTorch's float sums on a Zen 4 core), so each block of 64 elements is first
// added in float, four vectors of 16 at a time, (v0 + v1) + (v2 + v3), and each lane of that
// joins its double accumulator: two float roundings per element, an error of at most 2^-23 of
// the sum of |x| (PyTorch's float cascade adds about 2^-24 per level of its tree), and half the
// conversions of a float sum of 32 lanes. Long rows are cut into fixed 64K-element chunks summed
// in parallel and combined in order, so the result does not depend on the thread count. Half
// and BFloat16 are widened a block at a time (Note [16-bit float loops]) or in registers, in the
// same blocks of 64, so the order of the adds is the same as for float. Doubles sum in 32
// double lanes.
// For each block of kSumBlock elements, q[k] = (x[k] + x[16 + k]) + (x[32 + k] + x[48 + k]) in
// float, then lo[k] += q[k] and hi[k] += q[8 + k] in double, over the first m = n - n %
// kSumBlock elements; returns m.
int64_t sum_quads(const float* x, int64_t n, SumLanes& lo, SumLanes& hi) {
  typedef float Quad __attribute__((vector_size(64)));
  int64_t i = 0;
  for (; i + kSumBlock <= n; i += kSumBlock) {
    // (one vector per memcpy, and halves by shuffles: an array of four filled by one memcpy,
    // and a memcpy of the sum into two halves, went through the stack, and the 32-byte reloads
    // of a 64-byte store wait for it; sum(1) of 1024-float rows took 78 ns a row, PyTorch 55)
    Quad v0, v1, v2, v3;
    std::memcpy(&v0, x + i, sizeof(Quad));
    std::memcpy(&v1, x + i + 16, sizeof(Quad));
    std::memcpy(&v2, x + i + 32, sizeof(Quad));
    std::memcpy(&v3, x + i + 48, sizeof(Quad));
    const Quad q = (v0 + v1) + (v2 + v3);
    typedef float Eight __attribute__((vector_size(32)));
    const Eight h0 = __builtin_shufflevector(q, q, 0, 1, 2, 3, 4, 5, 6, 7);
    const Eight h1 = __builtin_shufflevector(q, q, 8, 9, 10, 11, 12, 13, 14, 15);
#if defined(__AVX512F__)
    // (GCC widens a convertvector of eight floats in 128-bit pieces; the maskz form, as GCC 12
    // warns that the plain one's undefined pass-through is unset)
    lo += _mm512_maskz_cvtps_pd(0xff, h0);
    hi += _mm512_maskz_cvtps_pd(0xff, h1);
#else
    lo += __builtin_convertvector(h0, SumLanes);
    hi += __builtin_convertvector(h1, SumLanes);
#endif
  }
  return i;
}

template <typename scalar_t>
double sum_lanes(const scalar_t* x, int64_t n) {
  int64_t i = 0;
  double tail = 0;
  if constexpr (std::is_same_v<scalar_t, double>) {
    constexpr int kLanes = 32;
    double lane[kLanes] = {};
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) lane[k] += x[i + k];
    for (; i < n; ++i) tail += x[i];
    for (int w = kLanes / 2; w >= 1; w /= 2)  // pairwise: lane k += lane k + w
      for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
    return lane[0] + tail;
  } else {
    SumLanes lo{}, hi{};
    if constexpr (is_float16_v<scalar_t>) {
      if (vec_avx512())  // the same blocks, widened in registers
        i = vec512::sum_quads16_avx512(reinterpret_cast<const uint16_t*>(x), n,
                                       std::is_same_v<scalar_t, BFloat16>, lo, hi);
      static_assert(kConvertBlock % kSumBlock == 0);
      alignas(64) float buf[kConvertBlock];
      for (; i + kConvertBlock <= n; i += kConvertBlock) {
        to_float(x + i, buf, kConvertBlock);
        sum_quads(buf, kConvertBlock, lo, hi);
      }
      const int64_t m = (n - i) / kSumBlock * kSumBlock;
      to_float(x + i, buf, m);
      sum_quads(buf, m, lo, hi);
      i += m;
    } else {
      i = sum_quads(x, n, lo, hi);
    }
    for (; i < n; ++i) tail += double(opmath_t<scalar_t>(x[i]));
    SumLanes all = lo + hi;
    for (int w = 4; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) all[k] += all[k + w];
    return all[0] + tail;
  }
}

// out[r] = finish(fold of row r) over contiguous rows, span(x, n) folding n elements and
// merge(a, b) two spans' results: rows longer than 2 x 64K elements, fewer than the threads, in
// fixed 64K chunks that threads fold and that merge in order (so the result does not depend on
// the thread count), other rows whole with threads over rows.
template <typename Acc, typename E, typename Out, typename Span, typename Merge, typename Finish>
void fold_rows_by(const E* in, int64_t outer, int64_t inner, Out* out, const Span& span,
                  const Merge& merge, const Finish& finish) {
  constexpr int64_t kChunk = 65536;
  if (outer < get_num_threads() && inner > 2 * kChunk) {
    const int64_t chunks = (inner + kChunk - 1) / kChunk;
    std::vector<Acc> part(static_cast<size_t>(chunks), Acc(0));
    for (int64_t r = 0; r < outer; ++r) {
      const E* row = in + r * inner;
      parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
          part[size_t(c)] = span(row + c * kChunk, std::min(kChunk, inner - c * kChunk));
      });
      Acc total = part[0];
      for (size_t c = 1; c < part.size(); ++c) total = merge(total, part[c]);
      out[r] = finish(total);
    }
    return;
  }
  parallel_for(0, outer, std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) out[r] = finish(span(in + r * inner, inner));
  });
}

// fold_rows_by with sums.
template <typename Acc, typename E, typename Out, typename SpanSum, typename Finish>
void sum_rows_by(const E* in, int64_t outer, int64_t inner, Out* out, const SpanSum& span_sum,
                 const Finish& finish) {
  fold_rows_by<Acc>(in, outer, inner, out, span_sum, [](Acc a, Acc b) { return Acc(a + b); },
                    finish);
}

template <typename scalar_t>
void sum_float_rows(const ReducePlan& p, scalar_t* out, bool mean) {
  const int64_t inner = p.inner;
  if (inner == 1) {
    // Rows of one element (a sum over size-1 dims): each plus 0, so -0 becomes +0 as in a
    // longer row, in one loop that vectorizes, where a call per row took einsum's sum over the
    // size-1 dim of [8, 64, 64, 1] floats 66 us.
    const scalar_t* in = static_cast<const scalar_t*>(p.rows.impl()->data());
    parallel_for(0, p.outer, 65536, [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        out[r] = scalar_t(opmath_t<scalar_t>(0.0 + double(opmath_t<scalar_t>(in[r]))));
    });
    return;
  }
  sum_rows_by<double>(static_cast<const scalar_t*>(p.rows.impl()->data()), p.outer, inner, out,
                      [](const scalar_t* x, int64_t n) { return sum_lanes(x, n); },
                      [&](double total) {
                        return scalar_t(opmath_t<scalar_t>(mean ? total / double(inner) : total));
                      });
}

// Note [Column sums]
// Summing the leading dims of a contiguous tensor (a broadcast gradient's sum_to, a batch
// mean) needs no transposed copy: each output column accumulates its input column in row order
// in double, threads splitting the columns in fixed blocks and the rows in fixed chunks, whose
// partial sums are added in chunk order (so the result does not depend on the thread count).
// Measured on [4096, 1024] float32, sum(0), 2 threads: 18 ms through the transposed copy, 0.63
// ms this way (PyTorch 1.4 ms). `outer` independent such matrices sum at once: kept dims
// before the summed ones (a channels-last image batch's mean over (2, 3), Note [Sums in memory
// order]).
template <typename scalar_t>
void sum_columns(const scalar_t* in, int64_t outer, int64_t rows, int64_t cols, scalar_t* out,
                 bool mean) {
  fold_columns<scalar_t, double>(
      in, outer, rows, cols, out, 0.0,
      [](double* acc, const scalar_t* x, int64_t n) {
        if constexpr (is_float16_v<scalar_t>) {
          alignas(32) float buf[kColumnBlock];
          to_float(x, buf, n);
          for (int64_t j = 0; j < n; ++j) acc[j] += double(buf[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) acc[j] += double(x[j]);
        }
      },
      [](double a, double b) { return a + b; },
      [&](double total) {
        return scalar_t(opmath_t<scalar_t>(mean ? total / double(rows) : total));
      });
}

// Note [Plane sums]
// Summing the dims on both sides of a kept block of a contiguous tensor (a convolution's bias
// gradient: sum over (0, 2, 3) of NCHW) reads it as [A, C, B]: each of the A*C rows of B
// elements is summed on its own (Note [Float sum accumulation]) and out[c] adds its A row sums
// in order, in double, so the result does not depend on the thread count. The general path
// copied the tensor into [C, A*B] first: 0.30 ms for [100, 16, 28, 28] float32 on 2 threads
// (PyTorch 0.17 ms), 0.09 ms this way.
template <typename scalar_t>
void sum_planes(const scalar_t* in, int64_t A, int64_t C, int64_t B, scalar_t* out, bool mean) {
  std::vector<double> part(static_cast<size_t>(A * C));
  parallel_for(0, A * C, std::max<int64_t>(1, 32768 / B), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) part[size_t(r)] = sum_lanes(in + r * B, B);
  });
  for (int64_t c = 0; c < C; ++c) {
    double total = 0;
    for (int64_t a = 0; a < A; ++a) total += part[size_t(a * C + c)];
    out[c] = scalar_t(opmath_t<scalar_t>(mean ? total / double(A * B) : total));
  }
}

// Where a floating sum of a contiguous tensor can skip the general path's permuted copy: the
// dims, grouped into runs of reduced and kept ones, are reduced-kept (Note [Column sums]),
// kept-reduced-kept (columns of `outer` matrices) or reduced-kept-reduced (Note [Plane sums]).
// A, C and B are the element counts of the first, middle and last run (B = 1 for two runs).
struct SumLayout {
  enum Kind { kNone, kColumns, kOuterColumns, kPlanes } kind = kNone;
  int64_t A = 1, C = 1, B = 1;
  std::vector<bool> reduced;  // per dim of the input
};

// The output shape of a reduction over the dims flagged in `reduced`.
DimVector reduced_shape(const Tensor& self, const std::vector<bool>& reduced, bool keepdim) {
  DimVector shape;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!reduced[size_t(d)]) shape.push_back(self.size(d));
    else if (keepdim) shape.push_back(1);
  return shape;
}

SumLayout sum_layout(const Tensor& self, OptionalIntArrayRef dim) {
  if (!dim || dim->empty() || !self.is_contiguous() || self.dim() < 2) return {};
  std::vector<bool> reduced(size_t(self.dim()), false);
  for (int64_t d : *dim) {
    int64_t w = d < 0 ? d + self.dim() : d;
    if (w < 0 || w >= self.dim() || reduced[size_t(w)]) return {};  // errors: the general path
    reduced[size_t(w)] = true;
  }
  std::vector<std::pair<bool, int64_t>> runs;  // (reduced, elements)
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (runs.empty() || runs.back().first != reduced[size_t(d)])
      runs.emplace_back(reduced[size_t(d)], 1);
    runs.back().second *= self.size(d);
  }
  SumLayout l;
  if (runs.size() == 2 && runs[0].first) {
    l.kind = SumLayout::kColumns;
  } else if (runs.size() == 3) {
    l.kind = runs[0].first ? SumLayout::kPlanes : SumLayout::kOuterColumns;
  } else {
    return {};
  }
  l.A = runs[0].second;
  l.C = runs[1].second;
  if (runs.size() == 3) l.B = runs[2].second;
  l.reduced = std::move(reduced);
  return l;
}

// Note [Sums in memory order]
// A dense tensor in another memory order (channels-last) sums as the contiguous tensor its
// memory holds, its dims permuted into memory order: a channels-last batch's sum over (0, 2, 3)
// is then column sums, its mean over (2, 3) columns of each image, with no copy (both had gone
// through a permuted copy of the whole input: 14.8 and 4.9 ms on 32x64x56x56, PyTorch 0.55 and
// 0.45). The kept dims come out in memory order; where that is not their order, the (smaller)
// result is permuted back. in_memory_order runs reduce(view, its reduced dims) without keepdim
// and returns the result in the output's shape, or an undefined tensor where the input is not
// a permuted contiguous tensor or reduce declines (returns an undefined tensor).
template <typename Reduce>
Tensor in_memory_order(const Tensor& self, IntArrayRef dim, bool keepdim, const Reduce& reduce) {
  const int64_t nd = self.dim();
  std::vector<int64_t> perm(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) perm[size_t(d)] = d;
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  Tensor m = self.permute(perm);
  if (!m.is_contiguous()) return {};
  std::vector<bool> reduced(size_t(nd), false);
  for (int64_t d : dim) {
    int64_t w = d < 0 ? d + nd : d;
    if (w < 0 || w >= nd || reduced[size_t(w)]) return {};  // errors: the general path
    reduced[size_t(w)] = true;
  }
  DimVector mdims, kept;  // reduced dims in m's order; kept dims in memory order
  for (int64_t j = 0; j < nd; ++j) {
    if (reduced[size_t(perm[size_t(j)])]) mdims.push_back(j);
    else kept.push_back(perm[size_t(j)]);
  }
  Tensor r = reduce(m, IntArrayRef(mdims));
  if (!r.defined()) return {};
  if (!std::is_sorted(kept.begin(), kept.end())) {
    DimVector back;  // result dim i holds kept[i]; put them back in ascending order
    for (size_t i = 0; i < kept.size(); ++i) back.push_back(int64_t(i));
    std::sort(back.begin(), back.end(),
              [&](int64_t a, int64_t b) { return kept[size_t(a)] < kept[size_t(b)]; });
    r = r.permute(back).contiguous();
  }
  return r.view(reduced_shape(self, reduced, keepdim));
}

template <bool kMean>
Tensor sum_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                std::optional<ScalarType> dtype, const char* op) {
  ScalarType rt = sum_dtype(self, dtype);
  if (!kMean && rt == kLong && is_integral_type(self.dtype(), true)) {
    // Integer and bool sums into int64 read the input as it is: converting it to int64 first
    // wrote 8 bytes per element, and the one-accumulator fold kept the loop scalar (sum of 1M
    // bools 0.24 ms, PyTorch 0.10). Integer adds are exact, so the order is free and the
    // widening loop vectorizes.
    ReducePlan p = plan_reduce(self, dim, keepdim, op);
    Tensor result = make_empty(p.out_shape, kLong, self.device());
    if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
    int64_t* out = result.data_ptr<int64_t>();
    RT_DISPATCH_INTEGRAL(self.dtype(), op, [&] {
      // (bools as their bytes, 0 or 1: a bool-to-int64 loop did not vectorize)
      using E = std::conditional_t<std::is_same_v<scalar_t, bool>, uint8_t, scalar_t>;
      const E* x = static_cast<const E*>(p.rows.impl()->data());
      sum_rows_by<int64_t>(x, p.outer, p.inner, out,
                           [](const E* v, int64_t n) {
                             int64_t total = 0;
                             for (int64_t i = 0; i < n; ++i) total += int64_t(v[i]);
                             return total;
                           },
                           [](int64_t total) { return total; });
    });
    return result;
  }
  Tensor in = self.dtype() == rt ? self : self.to(rt);
  // See Note [Sums in memory order]: the sum runs over `in` without keepdim and its result is
  // viewed with the output's shape.
  if (is_floating_type(rt) && dim && !dim->empty() && in.dim() >= 2 && !in.is_contiguous()) {
    Tensor r = in_memory_order(in, *dim, keepdim, [&](const Tensor& m, IntArrayRef mdims) {
      return sum_impl<kMean>(m, mdims, false, rt, op);
    });
    if (r.defined()) return r;
  }
  const SumLayout l = is_floating_type(rt) ? sum_layout(in, dim) : SumLayout{};
  // Rows of fewer than 64 elements (columns of fewer than 8) sum faster through the general
  // path's copy.
  if (l.kind != SumLayout::kNone && (l.kind != SumLayout::kPlanes || l.B >= 64) &&
      (l.kind != SumLayout::kOuterColumns || l.B >= 8)) {
    Tensor result = make_empty(reduced_shape(in, l.reduced, keepdim), rt, self.device());
    if (result.numel() == 0 || result.device().is_meta()) return result;
    RT_DISPATCH_FLOATING(rt, op, [&] {
      const scalar_t* x = static_cast<const scalar_t*>(in.impl()->data());
      scalar_t* out = result.data_ptr<scalar_t>();
      if (l.kind == SumLayout::kColumns)
        sum_columns<scalar_t>(x, 1, l.A, l.C, out, kMean);
      else if (l.kind == SumLayout::kOuterColumns)
        sum_columns<scalar_t>(x, l.A, l.C, l.B, out, kMean);
      else
        sum_planes<scalar_t>(x, l.A, l.C, l.B, out, kMean);
    });
    return result;
  }
  ReducePlan p = plan_reduce(in, dim, keepdim, op);
  Tensor result = make_empty(p.out_shape, rt, self.device());
  if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_ALL(rt, op, [&] {
    using acc_t = acc_of<scalar_t>;
    if constexpr (std::is_floating_point_v<opmath_t<scalar_t>>) {
      // See Note [Float sum accumulation].
      sum_float_rows<scalar_t>(p, result.data_ptr<scalar_t>(), kMean);
      return;
    }
    reduce_rows<scalar_t, scalar_t, acc_t>(
        p, result.data_ptr<scalar_t>(), acc_t(0),
        [](acc_t a, scalar_t v, int64_t) { return acc_t(a + acc_t(opmath_t<scalar_t>(v))); },
        [](acc_t a, int64_t n) {
          if constexpr (kMean) return scalar_t(opmath_t<scalar_t>(double(a) / double(n)));
          else return scalar_t(opmath_t<scalar_t>(a));
        });
  });
  return result;
}

}  // namespace

namespace {
// An explicit dtype and a user out= tensor must agree (PyTorch's infer_dtype_from_optional).
// Bad dims are reported first, as in PyTorch.
void check_out_dtype(const Tensor& self, OptionalIntArrayRef dim, const Tensor& out,
                     std::optional<ScalarType> dtype, const char* op) {
  if (dim)
    for (int64_t d : *dim) maybe_wrap_dim(d, self.dim(), op);
  // (PyTorch names the dtypes by their C++ types here)
  auto cpp_name = [](ScalarType t) {
    constexpr const char* names[] = {"unsigned char", "signed char",  "short int", "int",
                                     "long int",      "c10::Half",    "float",     "double",
                                     "bool",          "c10::BFloat16"};
    return size_t(t) < std::size(names) ? names[size_t(t)] : "undefined";
  };
  RT_CHECK(!out.defined() || !dtype || out.dtype() == *dtype, "Expected out tensor to have dtype ",
           cpp_name(*dtype), ", but got ", cpp_name(out.dtype()), " instead");
}
}  // namespace

void sum_out(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
             std::optional<ScalarType> dtype, Tensor& out) {
  check_out_dtype(self, dim, out, dtype, "sum");
  // Like PyTorch, sum(..., out=o) accumulates in o's dtype (the input is cast first).
  if (out.defined() && !dtype) dtype = out.dtype();
  write_out(sum_impl<false>(self, dim, keepdim, dtype, "sum"), out, "sum");
}

void mean_out(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
              std::optional<ScalarType> dtype, Tensor& out) {
  ScalarType rt = dtype.value_or(self.dtype());
  const char* which = dtype ? "Optional" : "Input";
  RT_CHECK(is_floating_type(rt), "mean(): could not infer output dtype. ", which,
           " dtype must be either a floating point or complex dtype. Got: ", scalar_type_name(rt));
  check_out_dtype(self, dim, out, dtype, "mean");
  if (out.defined()) {
    RT_CHECK(can_cast(rt, out.dtype()), "mean: result type ", rt,
             " can't be cast to the desired output type ", out.dtype());
    rt = out.dtype();
  }
  write_out(sum_impl<true>(self, dim, keepdim, rt, "mean"), out, "mean");
}

namespace {
// amax/amin over the leading dims of a contiguous tensor, as Note [Column sums]: each output
// column folds its input column in row order, threads splitting the columns in blocks and the
// rows in chunks (a max is exact, so the chunks join in any order), where the general path
// copied the tensor transposed first (amax(0) of [1024, 1024] float32: 0.59 -> 0.06 ms); and
// of `outer` such matrices (Note [Sums in memory order]).
template <typename scalar_t, typename op_t, typename Pick>
void pick_columns(const scalar_t* in, int64_t outer, int64_t rows, int64_t cols, scalar_t* out,
                  op_t init, const Pick& pick) {
  fold_columns<scalar_t, op_t>(
      in, outer, rows, cols, out, init,
      [&](op_t* acc, const scalar_t* x, int64_t n) {
        for (int64_t j = 0; j < n; ++j) acc[j] = pick(acc[j], op_t(x[j]));
      },
      pick, [](op_t a) { return scalar_t(a); });
}

// The matrices a fold over the leading dims reads (pick_columns' outer, rows and cols) when
// the layout has them: one [A, C] matrix, or A [C, B] ones with rows long enough to pay.
struct ColumnForm {
  int64_t outer, rows, cols;
};
std::optional<ColumnForm> column_form(const SumLayout& l, const Tensor& self) {
  if (self.numel() == 0) return std::nullopt;
  if (l.kind == SumLayout::kColumns) return ColumnForm{1, l.A, l.C};
  if (l.kind == SumLayout::kOuterColumns && l.B >= 8) return ColumnForm{l.A, l.C, l.B};
  return std::nullopt;
}

template <bool kMax>
Tensor amax_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, const char* op) {
  if (dim && !dim->empty() && self.dim() >= 2 && !self.is_contiguous()) {
    // See Note [Sums in memory order]: only where the memory then folds as columns.
    Tensor r = in_memory_order(self, *dim, keepdim, [&](const Tensor& m, IntArrayRef mdims) {
      return column_form(sum_layout(m, mdims), m) ? amax_impl<kMax>(m, mdims, false, op)
                                                   : Tensor();
    });
    if (r.defined()) return r;
  }
  const SumLayout l = sum_layout(self, dim);
  if (const auto cf = column_form(l, self)) {
    Tensor result = make_empty(reduced_shape(self, l.reduced, keepdim), self.dtype(),
                               self.device());
    if (result.numel() == 0 || result.device().is_meta()) return result;
    RT_DISPATCH_ALL(self.dtype(), op, [&] {
      using op_t = opmath_t<scalar_t>;
      auto pick = [](op_t a, op_t v) {
        const op_t m = (kMax ? v > a : v < a) ? v : a;
        if constexpr (std::is_floating_point_v<op_t>) return v != v ? v : m;  // NaN wins, stays
        else return m;
      };
      const op_t init = std::is_floating_point_v<op_t>
                            ? (kMax ? -std::numeric_limits<op_t>::infinity()
                                    : std::numeric_limits<op_t>::infinity())
                            : (kMax ? std::numeric_limits<op_t>::lowest()
                                    : std::numeric_limits<op_t>::max());
      pick_columns<scalar_t, op_t>(static_cast<const scalar_t*>(self.impl()->data()), cf->outer,
                                   cf->rows, cf->cols, result.data_ptr<scalar_t>(), init, pick);
    });
    return result;
  }
  ReducePlan p = plan_reduce(self, dim, keepdim, op);
  if (p.inner == 0 && p.outer != 0) {  // PyTorch's messages: no identity to start from
    RT_CHECK((dim && !dim->empty()) || self.numel() != 0, op,
             "(): Expected reduction dim to be "
             "specified for input.numel() == 0. Specify the reduction dim with the 'dim' "
             "argument.");
    for (int64_t d : dim ? *dim : IntArrayRef())
      RT_CHECK_INDEX(self.size(maybe_wrap_dim(d, self.dim(), op)) != 0, op,
                     "(): Expected reduction dim ", maybe_wrap_dim(d, self.dim(), op),
                     " to have non-zero size.");
  }
  Tensor result = make_empty(p.out_shape, self.dtype(), self.device());
  if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    // Selects that vectorize (Note [Lane reductions]): a NaN value wins and, once in a lane,
    // stays (no comparison with it is true), so NaN propagates as in PyTorch.
    auto fin = [](op_t a, int64_t) { return scalar_t(a); };
    if constexpr (std::is_floating_point_v<op_t>) {
      auto pick = [](auto a, auto v) {
        auto m = (kMax ? v > a : v < a) ? v : a;
        return v != v ? v : m;  // a NaN wins, and stays: no comparison with it is true
      };
      op_t start = kMax ? -std::numeric_limits<op_t>::infinity()
                        : std::numeric_limits<op_t>::infinity();
      reduce_rows_lanes<scalar_t, scalar_t, op_t>(p, result.data_ptr<scalar_t>(), start, pick,
                                                  pick, fin);
    } else {
      // Integers: a select per element from the type's extreme (vectorizes), long rows split
      // across threads (a fold from the first element per row, one thread, took min() of 256K
      // int64 0.15 ms: index_add_'s bounds check).
      // (bools as their bytes, 0 or 1: GCC vectorizes no bool loop)
      using E = std::conditional_t<std::is_same_v<scalar_t, bool>, uint8_t, scalar_t>;
      auto pick = [](E a, E v) {
        if constexpr (kMax) return v > a ? v : a;
        else return v < a ? v : a;
      };
      constexpr E init = kMax ? std::numeric_limits<E>::lowest() : std::numeric_limits<E>::max();
      fold_rows_by<E>(static_cast<const E*>(p.rows.impl()->data()), p.outer, p.inner,
                      result.data_ptr<scalar_t>(),
                      [pick](const E* x, int64_t n) {
                        E a = init;
                        for (int64_t i = 0; i < n; ++i) a = pick(a, x[i]);
                        return a;
                      },
                      pick, [](E a) { return scalar_t(a); });
    }
  });
  return result;
}

// Note [Two-pass argmax]
// max/min with indices over a float row: the first pass finds the extreme value with the
// vector selects of Note [Lane reductions] (NaN wins), the second the first index holding it
// (the first NaN for NaN), 64 elements at a time, testing a chunk with one vectorized OR before
// looking inside: the same answer as one scalar pass with its compare-and-branch per element,
// which ran at 2.2x PyTorch's time (max(1) of [1024, 1024] float32).
template <bool kMax, typename T>
int64_t arg_pick_row(const T* row, int64_t n) {
  constexpr int64_t kLanes = 64 / sizeof(T);
  typedef T Lanes __attribute__((vector_size(64)));
  auto pick = [](auto a, auto v) {
    auto m = (kMax ? v > a : v < a) ? v : a;
    return v != v ? v : m;
  };
  const T init = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  Lanes lane = Lanes{} + init;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Lanes x;
    std::memcpy(&x, row + i, sizeof(x));
    lane = pick(lane, x);
  }
  T best = init;
  for (int64_t k = 0; k < kLanes; ++k) best = pick(best, lane[k]);
  for (; i < n; ++i) best = pick(best, row[i]);
  const bool nan = best != best;
  constexpr int64_t kChunk = 64;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t m = std::min(kChunk, n - c);
    int hit = 0;  // an int count vectorizes, a bool |= did not
    for (int64_t j = 0; j < m; ++j)
      hit += (nan ? row[c + j] != row[c + j] : row[c + j] == best) ? 1 : 0;
    if (!hit) continue;
    for (int64_t j = 0; j < m; ++j)
      if (nan ? row[c + j] != row[c + j] : row[c + j] == best) return c + j;
  }
  return 0;  // n == 0 is rejected before; not reached
}

template <bool kMax>
std::tuple<Tensor, Tensor> max_dim_impl(const Tensor& self, int64_t dim, bool keepdim,
                                        const char* op) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), op);
  ReducePlan p = plan_reduce(self, IntArrayRef(d), keepdim, op);
  RT_CHECK_INDEX(p.inner > 0 || p.outer == 0, op, "(): Expected reduction dim ", d,
                 " to have non-zero size.");
  Tensor values = make_empty(p.out_shape, self.dtype(), self.device());
  Tensor indices = make_empty(p.out_shape, kLong, self.device());
  if (values.device().is_meta()) return {values, indices};  // See Note [Meta through CPU kernels]
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* in = static_cast<const scalar_t*>(p.rows.impl()->data());
    scalar_t* vo = values.data_ptr<scalar_t>();
    int64_t* io = indices.data_ptr<int64_t>();
    parallel_for(0, p.outer, std::max<int64_t>(1, 32768 / std::max<int64_t>(p.inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const scalar_t* row = in + r * p.inner;
        if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
          io[r] = arg_pick_row<kMax>(row, p.inner);
          vo[r] = row[io[r]];
          continue;
        }
        op_t best = op_t(row[0]);
        int64_t bi = 0;
        for (int64_t i = 1; i < p.inner; ++i) {
          op_t v = op_t(row[i]);
          if constexpr (std::is_floating_point_v<op_t>) {
            if (std::isnan(best)) break;
            if (std::isnan(v)) { best = v; bi = i; break; }
          }
          if (kMax ? v > best : v < best) { best = v; bi = i; }
        }
        vo[r] = scalar_t(best);
        io[r] = bi;
      }
    });
  });
  return {values, indices};
}
}  // namespace

namespace {
Tensor prod_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                 std::optional<ScalarType> dtype) {
  ScalarType rt = sum_dtype(self, dtype);
  Tensor in = self.dtype() == rt ? self : self.to(rt);
  const SumLayout l = sum_layout(in, dim);
  if (const auto cf = column_form(l, in)) {  // leading dims: no transposed copy
    Tensor result = make_empty(reduced_shape(in, l.reduced, keepdim), rt, self.device());
    if (result.numel() == 0 || result.device().is_meta()) return result;
    RT_DISPATCH_ALL(rt, "prod", [&] {
      using op_t = std::conditional_t<std::is_floating_point_v<opmath_t<scalar_t>>,
                                      opmath_t<scalar_t>, acc_of<scalar_t>>;
      pick_columns<scalar_t, op_t>(static_cast<const scalar_t*>(in.impl()->data()), cf->outer,
                                   cf->rows, cf->cols, result.data_ptr<scalar_t>(), op_t(1),
                                   [](op_t a, op_t v) { return op_t(a * v); });
    });
    return result;
  }
  ReducePlan p = plan_reduce(in, dim, keepdim, "prod");
  Tensor result = make_empty(p.out_shape, rt, self.device());
  if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_ALL(rt, "prod", [&] {
    using op_t = opmath_t<scalar_t>;
    if constexpr (std::is_floating_point_v<op_t>) {
      // Floating products accumulate in the element's opmath type (float for float, half and
      // bfloat16), as PyTorch's do: a product's relative rounding errors add up without
      // cancellation, so a double accumulator buys little, and converting each element to
      // double made prod(1) of 1024-wide float rows 1.9x slower than PyTorch.
      auto mul = [](auto a, auto v) { return a * v; };
      auto fin = [](op_t a, int64_t) { return scalar_t(a); };
      reduce_rows_lanes<scalar_t, scalar_t, op_t>(p, result.data_ptr<scalar_t>(), op_t(1), mul,
                                                  mul, fin);
    } else {
      using acc_t = acc_of<scalar_t>;
      reduce_rows<scalar_t, scalar_t, acc_t>(
          p, result.data_ptr<scalar_t>(), acc_t(1),
          [](acc_t a, scalar_t v, int64_t) { return acc_t(a * acc_t(opmath_t<scalar_t>(v))); },
          [](acc_t a, int64_t) { return scalar_t(opmath_t<scalar_t>(a)); });
    }
  });
  return result;
}
}  // namespace

Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
  return prod_impl(self, std::nullopt, false, dtype);
}

Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return prod_impl(self, IntArrayRef(dim), keepdim, dtype);
}

void amax_out(const Tensor& self, IntArrayRef dim, bool keepdim, Tensor& out) {
  RT_CHECK(!out.defined() || out.dtype() == self.dtype(), "amax: Expected the dtype for input and "
           "out to match, but got ", self.dtype(), " for input's dtype and ", out.dtype(),
           " for out's dtype.");
  write_out(amax_impl<true>(self, dim, keepdim, "amax"), out, "amax");
}
void amin_out(const Tensor& self, IntArrayRef dim, bool keepdim, Tensor& out) {
  RT_CHECK(!out.defined() || out.dtype() == self.dtype(), "amin: Expected the dtype for input and "
           "out to match, but got ", self.dtype(), " for input's dtype and ", out.dtype(),
           " for out's dtype.");
  write_out(amax_impl<false>(self, dim, keepdim, "amin"), out, "amin");
}

Tensor max_all(const Tensor& self) {
  RT_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() "
           "== 0. Specify the reduction dim with the 'dim' argument.");
  return amax_impl<true>(self, std::nullopt, false, "max");
}
Tensor min_all(const Tensor& self) {
  RT_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() "
           "== 0. Specify the reduction dim with the 'dim' argument.");
  return amax_impl<false>(self, std::nullopt, false, "min");
}

std::tuple<Tensor, Tensor> max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return max_dim_impl<true>(self, dim, keepdim, "max");
}
std::tuple<Tensor, Tensor> min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return max_dim_impl<false>(self, dim, keepdim, "min");
}

namespace {
template <bool kMax>
Tensor arg_impl(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const char* op) {
  if (!dim) {
    RT_CHECK_INDEX(self.numel() > 0, op, "(): Expected reduction dim to be specified for "
                   "input.numel() == 0.");
    Tensor idx = std::get<1>(max_dim_impl<kMax>(self.reshape({-1}), 0, false, op));
    if (keepdim) idx = idx.reshape(std::vector<int64_t>(size_t(self.dim()), 1));
    return idx;
  }
  return std::get<1>(max_dim_impl<kMax>(self, *dim, keepdim, op));
}
}  // namespace

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_impl<true>(self, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_impl<false>(self, dim, keepdim, "argmin");
}

namespace {
// Whether a contiguous row holds a nonzero element (kAll: whether all of them are), NaN counting
// as nonzero; blocks of 256 are tested with vectorizable ORs and the scan stops at the first
// block that decides (a bool fold per element took all() of 1M bools 0.29 ms). Bytes use
// memchr; 16-bit floats test their bits without the sign (a zero's only nonzero bit).
template <bool kAll, typename scalar_t>
bool row_all_any(const scalar_t* x, int64_t n) {
  if (n == 0) return kAll;  // (and memchr is not given a null row)
  if constexpr (sizeof(scalar_t) == 1) {
    if constexpr (kAll) return std::memchr(x, 0, size_t(n)) == nullptr;
  }
  constexpr int64_t kBlock = 256;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    int hit = 0;  // kAll: a zero seen; else: a nonzero seen
    for (int64_t j = 0; j < m; ++j) {
      bool nonzero;
      if constexpr (is_float16_v<scalar_t>) {
        uint16_t bits;
        std::memcpy(&bits, x + i0 + j, sizeof(bits));
        nonzero = (bits & 0x7fff) != 0;
      } else {
        nonzero = x[i0 + j] != scalar_t(0);
      }
      hit |= int(kAll ? !nonzero : nonzero);
    }
    if (hit) return !kAll;
  }
  return kAll;
}

template <bool kAll>
Tensor all_any_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, const char* op) {
  ScalarType rt = self.dtype() == kByte ? kByte : kBool;
  ReducePlan p = plan_reduce(self, dim, keepdim, op);
  Tensor result = make_empty(p.out_shape, rt, self.device());
  if (result.device().is_meta()) return result;  // See Note [Meta through CPU kernels]
  uint8_t* out = static_cast<uint8_t*>(result.impl()->data());  // (bool and uint8: one byte)
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    // (bools as their bytes, 0 or 1: GCC vectorizes no loop that loads bool)
    using E = std::conditional_t<std::is_same_v<scalar_t, bool>, uint8_t, scalar_t>;
    const E* in = static_cast<const E*>(p.rows.impl()->data());
    const int64_t inner = p.inner;
    parallel_for(0, p.outer, std::max<int64_t>(1, 65536 / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        out[r] = uint8_t(row_all_any<kAll>(in + r * inner, inner));
    });
  });
  return result;
}
}  // namespace

Tensor all(const Tensor& self) { return all_any_impl<true>(self, std::nullopt, false, "all"); }
Tensor all_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return all_any_impl<true>(self, IntArrayRef(dim), keepdim, "all");
}
Tensor any(const Tensor& self) { return all_any_impl<false>(self, std::nullopt, false, "any"); }
Tensor any_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return all_any_impl<false>(self, IntArrayRef(dim), keepdim, "any");
}

}  // namespace retorch::cpu
