// Reduction planning: move reduced dims last, view the input as [outer, inner] rows.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"
#include "retorch/core/Tensor.h"

namespace retorch::cpu {

struct ReducePlan {
  Tensor rows;           // contiguous, logically [outer, inner]
  int64_t outer = 1;
  int64_t inner = 1;
  DimVector out_shape;   // with or without kept dims
};

/// A row's mean and 1 / sqrt(var + eps), var the biased variance, in two passes over the
/// (cached) row in opmath: layer norm's and group norm's statistics. An empty row gives
/// `empty_mean` and a NaN rstd.
template <typename scalar_t, typename op_t = opmath_t<scalar_t>>
std::pair<op_t, op_t> row_moments(const scalar_t* x, int64_t n, double eps, op_t empty_mean) {
  op_t s = 0;
  _Pragma("omp simd reduction(+ : s)")
  for (int64_t i = 0; i < n; ++i) s += op_t(x[i]);
  const op_t m = n > 0 ? s / op_t(n) : empty_mean;
  op_t sq = 0;
  _Pragma("omp simd reduction(+ : sq)")
  for (int64_t i = 0; i < n; ++i) {
    const op_t d = op_t(x[i]) - m;
    sq += d * d;
  }
  const op_t var = n > 0 ? sq / op_t(n) : op_t(NAN);
  return {m, op_t(1) / std::sqrt(std::max(var, op_t(0)) + op_t(eps))};
}

/// dims empty/none reduces everything. Errors on out-of-range or repeated dims.
ReducePlan plan_reduce(const Tensor& self, OptionalIntArrayRef dims, bool keepdim, const char* op);
/// Moves dim to the end and makes the result contiguous: rows of length size(dim).
Tensor move_dim_last(const Tensor& self, int64_t dim);
/// Inverse of move_dim_last for a tensor shaped like its output.
Tensor restore_dim(const Tensor& t, int64_t dim);

/// out[r] = finalize(fold(init, rows[r, :])) with a per-row accumulator of type acc_t.
template <typename scalar_t, typename out_t, typename acc_t, typename Fold, typename Fin>
void reduce_rows(const ReducePlan& p, out_t* out, acc_t init, const Fold& fold, const Fin& fin) {
  const scalar_t* in = static_cast<const scalar_t*>(p.rows.impl()->data());
  int64_t inner = p.inner;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1));
  parallel_for(0, p.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      acc_t acc = init;
      const scalar_t* row = in + r * inner;
      for (int64_t i = 0; i < inner; ++i) acc = fold(acc, row[i], i);
      out[r] = fin(acc, inner);
    }
  });
}

/// merge over the lanes of a GCC vector of 16, 8, 4 or 2, pairing lane k with lane k + n/2 at
/// each halving (shuffles in registers: the array a vector was stored to and reloaded from in
/// pieces waited on store forwarding, ~15% of amax(1) of 1024-float rows).
template <typename V, typename Merge>
auto fold_lanes(V v, const Merge& merge) {
  constexpr int n = int(sizeof(V) / sizeof(v[0]));
  if constexpr (n == 16) {
    return fold_lanes(merge(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7),
                            __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)),
                      merge);
  } else if constexpr (n == 8) {
    return fold_lanes(merge(__builtin_shufflevector(v, v, 0, 1, 2, 3),
                            __builtin_shufflevector(v, v, 4, 5, 6, 7)),
                      merge);
  } else if constexpr (n == 4) {
    return fold_lanes(
        merge(__builtin_shufflevector(v, v, 0, 1), __builtin_shufflevector(v, v, 2, 3)), merge);
  } else {
    static_assert(n == 2);
    return merge(v[0], v[1]);
  }
}

/// Note [Lane reductions]: reduce_rows for an associative, commutative step (max, min,
/// product, sum of squares): each row is folded into kLanes independent accumulators held in
/// one GCC vector (so the fold compiles to SIMD instructions; written as a loop over an array
/// of lanes it stayed scalar), combined pairwise at the end. Chaining every step on the previous
/// one made prod and amax of 1024-wide rows 22x and 9x slower than PyTorch. Four such vectors
/// (kStreams) take consecutive blocks of a row, so four steps are in flight at once: with one,
/// each step waited out the previous one's latency (a compare, a select: amax of 1024-wide rows
/// in cache 2.3x slower than PyTorch on a Zen 4 core, with four 1.0x). step(acc, value) is
/// generic: it gets vectors of acc_t in the main loop and acc_t scalars for the tail;
/// merge(a, b) joins two lanes (or two vectors of them). Float and double accumulators only;
/// others use reduce_rows.
template <typename scalar_t, typename out_t, typename acc_t, typename Step, typename Merge,
          typename Fin>
void reduce_rows_lanes(const ReducePlan& p, out_t* out, acc_t init, const Step& step,
                       const Merge& merge, const Fin& fin) {
  static_assert(std::is_same_v<acc_t, float> || std::is_same_v<acc_t, double>);
  constexpr int64_t kLanes = 64 / sizeof(acc_t);  // one AVX-512 register (two AVX2 ones)
  constexpr int64_t kStreams = 4;
  typedef acc_t Lanes __attribute__((vector_size(kLanes * sizeof(acc_t))));
  typedef float FloatLanes __attribute__((vector_size(kLanes * sizeof(float))));
  const scalar_t* in = static_cast<const scalar_t*>(p.rows.impl()->data());
  int64_t inner = p.inner;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1));
  auto load = [](const scalar_t* at) {
    Lanes x;
    if constexpr (std::is_same_v<scalar_t, acc_t>) {
      std::memcpy(&x, at, sizeof(x));
    } else if constexpr (std::is_same_v<scalar_t, float>) {
      FloatLanes f;
      std::memcpy(&f, at, sizeof(f));
      x = __builtin_convertvector(f, Lanes);
    } else {
      for (int64_t k = 0; k < kLanes; ++k) x[k] = acc_t(opmath_t<scalar_t>(at[k]));
    }
    return x;
  };
  parallel_for(0, p.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const scalar_t* row = in + r * inner;
      Lanes s0 = Lanes{} + init, s1 = s0, s2 = s0, s3 = s0;
      int64_t i = 0;
      for (; i + kStreams * kLanes <= inner; i += kStreams * kLanes) {
        s0 = step(s0, load(row + i));
        s1 = step(s1, load(row + i + kLanes));
        s2 = step(s2, load(row + i + 2 * kLanes));
        s3 = step(s3, load(row + i + 3 * kLanes));
      }
      for (; i + kLanes <= inner; i += kLanes) s0 = step(s0, load(row + i));
      Lanes lane = merge(merge(s0, s1), merge(s2, s3));
      if (i == inner) {  // no tail: halve in registers (the same pairs as the loop below)
        out[r] = fin(fold_lanes(lane, merge), inner);
        continue;
      }
      acc_t l[kLanes];
      std::memcpy(l, &lane, sizeof(l));
      for (int64_t k = 0; i < inner; ++i, ++k) l[k] = step(l[k], acc_t(opmath_t<scalar_t>(row[i])));
      for (int64_t w = kLanes / 2; w >= 1; w /= 2)
        for (int64_t k = 0; k < w; ++k) l[k] = merge(l[k], l[k + w]);
      out[r] = fin(l[0], inner);
    }
  });
}

/// Note [Column folds]: out[o * cols + c] = finish(the fold of column c of matrix o), for `outer`
/// contiguous [rows, cols] matrices. fold_row(acc, x, n) folds n consecutive elements of one
/// row into acc[0, n); join(a, b) combines two partial folds. Threads split the columns in
/// blocks of kColumnBlock and the rows in fixed chunks of kColumnRows, whose partials join in
/// chunk order, so the result does not depend on the thread count (column sums, Note [Column
/// sums]; amax/amin over leading dims).
constexpr int64_t kColumnBlock = 512, kColumnRows = 1024;
template <typename scalar_t, typename acc_t, typename FoldRow, typename Join, typename Finish>
void fold_columns(const scalar_t* in, int64_t outer, int64_t rows, int64_t cols, scalar_t* out,
                  acc_t init, const FoldRow& fold_row, const Join& join, const Finish& finish) {
  const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
  // (no rows: one empty chunk, so each column is finish(init), a sum's 0)
  const int64_t chunks = std::max<int64_t>(1, (rows + kColumnRows - 1) / kColumnRows);
  // (not a std::vector: acc_t may be bool)
  std::unique_ptr<acc_t[]> part(chunks > 1 ? new acc_t[size_t(outer * chunks * cols)] : nullptr);
  const int64_t work = std::min(rows, kColumnRows) * std::min(cols, kColumnBlock);
  parallel_for(0, outer * chunks * blocks, std::max<int64_t>(1, 65536 / std::max<int64_t>(work, 1)),
               [&](int64_t b, int64_t e) {
    acc_t acc[kColumnBlock];
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / (chunks * blocks), ch = task / blocks % chunks, blk = task % blocks;
      const int64_t c0 = blk * kColumnBlock, n = std::min(kColumnBlock, cols - c0);
      const int64_t r0 = ch * kColumnRows, r1 = std::min(rows, r0 + kColumnRows);
      for (int64_t j = 0; j < n; ++j) acc[j] = init;
      for (int64_t r = r0; r < r1; ++r) fold_row(acc, in + (o * rows + r) * cols + c0, n);
      if (chunks == 1) {
        for (int64_t j = 0; j < n; ++j) out[o * cols + c0 + j] = finish(acc[j]);
      } else {
        acc_t* p = part.get() + (o * chunks + ch) * cols + c0;
        for (int64_t j = 0; j < n; ++j) p[j] = acc[j];
      }
    }
  });
  if (chunks == 1) return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < cols; ++j) {
      acc_t total = part[size_t(o * chunks * cols + j)];
      for (int64_t ch = 1; ch < chunks; ++ch)
        total = join(total, part[size_t((o * chunks + ch) * cols + j)]);
      out[o * cols + j] = finish(total);
    }
}

}  // namespace retorch::cpu
