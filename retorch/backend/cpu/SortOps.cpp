// Sorting and searching kernels: sort, topk, unique (_unique2), searchsorted.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>

#include "retorch/backend/cpu/ReduceUtils.h"
#include "retorch/backend/cpu/TensorIterator.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

// Note [NaN order]
// PyTorch sorts NaN above every number (also +inf), in both directions; topk and unique use the
// same order. `less` is that total order on opmath values.
template <typename T>
bool nan_less(T a, T b) {
  return !is_nan(a) && (is_nan(b) || a < b);
}

// Note [Radix sort]
// sort of rows of 48 or more elements is a stable LSD radix sort of (key, index) pairs, a byte per
// pass, where std::stable_sort's indirect comparisons took ~55 ns per element (1024 rows of 1024
// floats, 2 threads: 29 -> 5.4 ms, PyTorch 27; one row of 1M floats 14 ms, PyTorch 100). The key of
// a value is an unsigned integer in the order of Note [NaN order]: signed integers with the sign
// bit flipped; floats (16-bit ones widened to float) with the sign bit flipped for positives and
// every bit for negatives, -0 keyed as +0 (they compare equal, so they keep their input order) and
// every NaN as the largest key; descending sorts the complemented keys, so ties stay in input order
// both ways, as the stable comparison sort keeps them. Only the bytes that differ between keys get
// histograms (one pass counts them all) and passes: the same byte in every key (the high bytes of
// small integers, exponents of a narrow range) is skipped. Rows shorter than 48, where a pass's
// 256-bucket histograms cost more than the row, are insertion-sorted by the same keys. Values are
// gathered from the input by the sorted indices, so NaN payloads and the signs of zeros come out as
// they went in.
constexpr int64_t kRadixMinLength = 48;

template <typename scalar_t>
auto radix_key(scalar_t v) {
  if constexpr (std::is_same_v<scalar_t, bool>) {
    return uint32_t(v);
  } else if constexpr (std::is_integral_v<scalar_t>) {
    using U = std::make_unsigned_t<scalar_t>;
    using K = std::conditional_t<sizeof(scalar_t) == 8, uint64_t, uint32_t>;
    U u = U(v);
    if constexpr (std::is_signed_v<scalar_t>) u ^= U(U(1) << (sizeof(U) * 8 - 1));
    return K(u);
  } else {
    using F = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    using K = std::conditional_t<std::is_same_v<scalar_t, double>, uint64_t, uint32_t>;
    const F f = F(opmath_t<scalar_t>(v));
    constexpr K kSign = K(1) << (sizeof(K) * 8 - 1);
    K b;
    std::memcpy(&b, &f, sizeof(b));
    if (f != f) return ~K(0);
    if (b == kSign) b = 0;  // -0 as +0
    return (b & kSign) ? K(~b) : K(b | kSign);
  }
}

// Sorts keys[0, L) with their indices stably, a byte per pass through the second buffers;
// returns the buffer pair holding the result.
template <typename K, typename Count>
std::pair<K*, int64_t*> radix_sort(K* keys, int64_t* idx, K* keys2, int64_t* idx2, int64_t L) {
  constexpr int kBytes = int(sizeof(K));
  // The bytes that differ between keys (bits set in some key and clear in another, one
  // vectorized pass); only they get histograms and passes (unique of 1M int64 values below 100
  // counted all eight bytes of every key).
  K any = 0, all = ~K(0);
  for (int64_t i = 0; i < L; ++i) {
    any |= keys[i];
    all &= keys[i];
  }
  const K varies = any ^ all;
  int active[kBytes], na = 0;
  for (int p = 0; p < kBytes; ++p)
    if ((varies >> (8 * p)) & 255) active[na++] = p;
  Count hist[kBytes][256];  // (32-bit counts where they fit: half the zeroing per row)
  for (int a = 0; a < na; ++a) std::fill(hist[a], hist[a] + 256, Count(0));
  for (int64_t i = 0; i < L; ++i)
    for (int a = 0; a < na; ++a) ++hist[a][(keys[i] >> (8 * active[a])) & 255];
  for (int a = 0; a < na; ++a) {
    const int p = active[a];
    Count* h = hist[a];
    if (int64_t(h[(keys[0] >> (8 * p)) & 255]) == L) continue;  // one value of this byte
    Count at = 0;
    for (int d = 0; d < 256; ++d) {
      const Count c = h[d];
      h[d] = at;
      at += c;
    }
    for (int64_t i = 0; i < L; ++i) {
      const int64_t pos = h[(keys[i] >> (8 * p)) & 255]++;
      keys2[pos] = keys[i];
      idx2[pos] = idx[i];
    }
    std::swap(keys, keys2);
    std::swap(idx, idx2);
  }
  return {keys, idx};
}

// One row of sort by the keys of Note [Radix sort] into values vo and indices io.
template <typename scalar_t>
void key_sort_row(const scalar_t* x, int64_t L, bool descending, scalar_t* vo, int64_t* io) {
  using K = decltype(radix_key(scalar_t()));
  // Scratch (two buffers of keys and of indices): rows up to 64K elements keep theirs with the
  // thread (no allocation per row); longer rows take a block of the caching allocator, whose
  // pages are already mapped (fresh vectors of a 1M-element row spent a third of unique's time
  // zeroing and faulting pages), so one large sort does not keep its buffers either.
  constexpr int64_t kKeptRow = 65536;
  thread_local std::vector<K> kept_keys;
  thread_local std::vector<int64_t> kept_idx;
  Tensor block;
  K* keys;
  int64_t* idx;
  if (L <= kKeptRow) {
    if (kept_keys.size() < size_t(2 * L)) kept_keys.resize(size_t(2 * L));
    if (kept_idx.size() < size_t(2 * L)) kept_idx.resize(size_t(2 * L));
    keys = kept_keys.data();
    idx = kept_idx.data();
  } else {
    block = make_empty({2 * L * int64_t(sizeof(K) + sizeof(int64_t))}, kByte, Device(kCPU));
    idx = static_cast<int64_t*>(block.impl()->data());
    keys = reinterpret_cast<K*>(idx + 2 * L);
  }
  for (int64_t i = 0; i < L; ++i) {
    const K k = radix_key(x[i]);
    keys[i] = descending ? K(~k) : k;
    idx[i] = i;
  }
  if (L < kRadixMinLength) {  // short rows: insertion sort of the same keys (stable)
    K* k = keys;
    int64_t* ix = idx;
    for (int64_t i = 1; i < L; ++i) {
      const K kk = k[i];
      const int64_t ii = ix[i];
      int64_t j = i;
      for (; j > 0 && k[j - 1] > kk; --j) {
        k[j] = k[j - 1];
        ix[j] = ix[j - 1];
      }
      k[j] = kk;
      ix[j] = ii;
    }
    for (int64_t i = 0; i < L; ++i) {
      io[i] = ix[i];
      vo[i] = x[ix[i]];
    }
    return;
  }
  const auto sorted = L <= int64_t(UINT32_MAX)
      ? radix_sort<K, uint32_t>(keys, idx, keys + L, idx + L, L)
      : radix_sort<K, int64_t>(keys, idx, keys + L, idx + L, L);
  const int64_t* si = sorted.second;
  for (int64_t i = 0; i < L; ++i) {
    io[i] = si[i];
    vo[i] = x[si[i]];
  }
}

// Runs f(row_in, L, row_values, row_indices, perm) over every row of self along dim (moved
// last), f writing out_len values and indices (L for sort, k for topk); perm is scratch of L.
template <typename scalar_t, typename F>
std::tuple<Tensor, Tensor> rowwise(const Tensor& self, int64_t d, int64_t out_len, const F& f) {
  Tensor rows = move_dim_last(self, d);
  int64_t L = self.dim() == 0 ? 1 : rows.size(-1);
  DimVector shape(rows.sizes());
  if (!shape.empty()) shape.back() = out_len;
  Tensor values = make_empty(shape, self.dtype(), self.device());
  Tensor indices = make_empty(shape, kLong, self.device());
  if (values.device().is_meta())  // See Note [Meta through CPU kernels]
    return {restore_dim(values, d), restore_dim(indices, d)};
  int64_t n = L == 0 ? 0 : rows.numel() / L;
  const scalar_t* in = static_cast<const scalar_t*>(rows.impl()->data());
  scalar_t* vo = values.numel() ? values.data_ptr<scalar_t>() : nullptr;
  int64_t* io = indices.numel() ? indices.data_ptr<int64_t>() : nullptr;
  parallel_for(0, n, std::max<int64_t>(1, 4096 / std::max<int64_t>(L, 1)),
               [&](int64_t b, int64_t e) {
    std::vector<int64_t> perm(static_cast<size_t>(L));
    for (int64_t r = b; r < e; ++r)
      f(in + r * L, L, vo ? vo + r * out_len : nullptr, io ? io + r * out_len : nullptr, perm);
  });
  return {restore_dim(values, d), restore_dim(indices, d)};
}

// perm = 0, 1, ..., sort(perm) orders it, and the first n of x in that order and their indices
// go to vo and io.
template <typename scalar_t, typename Sort>
void sort_perm(const scalar_t* x, std::vector<int64_t>& perm, int64_t n, scalar_t* vo,
               int64_t* io, const Sort& sort) {
  std::iota(perm.begin(), perm.end(), 0);
  sort(perm);
  for (int64_t i = 0; i < n; ++i) {
    vo[i] = x[perm[size_t(i)]];
    io[i] = perm[size_t(i)];
  }
}

}  // namespace

std::tuple<Tensor, Tensor> sort_stable(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                       bool descending) {
  (void)stable;  // the CPU sort is always stable, as in PyTorch
  int64_t d = maybe_wrap_dim(dim, self.dim(), "sort");
  int64_t L = self.dim() == 0 ? 1 : self.size(d);
  std::tuple<Tensor, Tensor> out;
  RT_DISPATCH_ALL(self.dtype(), "sort", [&] {
    out = rowwise<scalar_t>(self, d, L, [&](const scalar_t* x, int64_t n, scalar_t* vo,
                                            int64_t* io, std::vector<int64_t>&) {
      key_sort_row(x, n, descending, vo, io);
    });
  });
  return out;
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  (void)sorted;  // always sorted: a valid order for sorted=False too
  int64_t d = maybe_wrap_dim(dim, self.dim(), "topk");
  int64_t L = self.dim() == 0 ? 1 : self.size(d);
  RT_CHECK(k >= 0 && k <= L, "topk(): selected index k out of range (k = ", k,
           ", dimension ", d, " has size ", L, ")");
  // A 0-dim input is its own top-1 for every dtype (PyTorch answers before dispatching).
  if (self.dim() == 0) return {self.clone(), make_empty({}, kLong, self.device()).fill_(0)};
  std::tuple<Tensor, Tensor> out;
  RT_DISPATCH_NUMERIC(self.dtype(), "topk", [&] {
    using op_t = opmath_t<scalar_t>;
    out = rowwise<scalar_t>(self, d, k, [&](const scalar_t* x, int64_t, scalar_t* vo,
                                            int64_t* io, std::vector<int64_t>& perm) {
      // Note [Top k by scan]
      // For k up to 32 (and rows of 8k or more), one pass keeps the best k so far in order
      // (better value first, then lower index) and compares each element with the worst of
      // them only, shifting it in when it beats that one: the partial sort's indirect
      // comparisons took topk(10) of 1024 rows of 1024 floats 1.73 ms (PyTorch 1.51).
      if (k >= 1 && k <= 32 && 8 * k <= L) {
        auto better = [&](op_t a, op_t b) { return largest ? nan_less(b, a) : nan_less(a, b); };
        op_t bv[32];
        int64_t bi[32], cnt = 0;
        for (int64_t i = 0; i < L; ++i) {
          const op_t v(x[i]);
          if (cnt == k) {
            if (!better(v, bv[k - 1])) continue;
            --cnt;
          }
          int64_t j = cnt;
          for (; j > 0 && better(v, bv[j - 1]); --j) {
            bv[j] = bv[j - 1];
            bi[j] = bi[j - 1];
          }
          bv[j] = v;
          bi[j] = i;
          ++cnt;
        }
        for (int64_t j = 0; j < k; ++j) {
          vo[j] = x[bi[j]];
          io[j] = bi[j];
        }
        return;
      }
      // Ties keep the lower index first so the result is deterministic.
      auto cmp = [&](int64_t a, int64_t b) {
        op_t va(x[a]), vb(x[b]);
        bool before = largest ? nan_less(vb, va) : nan_less(va, vb);
        bool after = largest ? nan_less(va, vb) : nan_less(vb, va);
        return before || (!after && a < b);
      };
      sort_perm(x, perm, k, vo, io, [&](std::vector<int64_t>& p) {
        std::partial_sort(p.begin(), p.begin() + k, p.end(), cmp);
      });
    });
  });
  return out;
}

namespace {
// Note [Unique by counting]
// Integers (and bools) whose span max - min is below max(n, 64K) are counted, not sorted: each
// thread marks (or, for return_counts, counts) its part of the input in a table indexed by
// value - min, the tables are summed, and the values present, read in order, are the result; a
// rank table gives each element its inverse. That is three or four passes over the input where
// the key sort of Note [Radix sort] took unique of 1M int64 values below 100 8.5 ms (PyTorch,
// whose hash set is then sorted, 2.0). Returns false (sort instead) for other inputs.
template <typename scalar_t>
bool unique_by_counting(const Tensor& flat, bool return_inverse, bool return_counts,
                        IntArrayRef sizes, Tensor& values, Tensor& inverse, Tensor& counts) {
  if constexpr (!std::is_integral_v<scalar_t>) {
    return false;
  } else {
    const int64_t n = flat.numel();
    if (n < 1024 || n > int64_t(INT32_MAX)) return false;
    const scalar_t* x = flat.data_ptr<scalar_t>();
    const int64_t T = std::min<int64_t>(get_num_threads(), 1 + n / 65536);
    const int64_t chunk = (n + T - 1) / T;
    auto each_chunk = [&](const auto& f) {  // f(t, begin, end) for chunk t, one per thread
      parallel_for(0, T, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) f(t, t * chunk, std::min(n, (t + 1) * chunk));
      });
    };
    // (the integer min and max reductions: vector selects, threads over the row)
    const int64_t mn = retorch::min(flat).item<int64_t>();
    const int64_t mx = retorch::max(flat).item<int64_t>();
    const uint64_t span = uint64_t(mx) - uint64_t(mn);  // (no overflow for any int64 pair)
    if (span >= uint64_t(std::max<int64_t>(n, 65536))) return false;
    const int64_t width = int64_t(span) + 1;
    // Per-thread tables: counts when asked for, else presence marks (plain stores).
    std::vector<uint32_t> table(size_t(T * width), 0);
    each_chunk([&](int64_t t, int64_t b, int64_t e) {
      uint32_t* tab = table.data() + t * width;
      const int64_t base = mn;
      if (return_counts)
        for (int64_t i = b; i < e; ++i) ++tab[int64_t(x[i]) - base];
      else
        for (int64_t i = b; i < e; ++i) tab[int64_t(x[i]) - base] = 1;
    });
    std::vector<int64_t> rank(return_inverse ? size_t(width) : 0);
    int64_t u = 0;
    for (int64_t v = 0; v < width; ++v) {
      uint32_t c = 0;
      for (int64_t t = 0; t < T; ++t) c += table[size_t(t * width + v)];
      table[size_t(v)] = c;  // (row 0 becomes the total)
      if (return_inverse) rank[size_t(v)] = u;
      u += c != 0;
    }
    values = make_empty({u}, flat.dtype(), Device(kCPU));
    counts = make_empty({return_counts ? u : 0}, kLong, Device(kCPU));
    scalar_t* vp = u ? values.data_ptr<scalar_t>() : nullptr;
    int64_t* cp = return_counts && u ? counts.data_ptr<int64_t>() : nullptr;
    for (int64_t v = 0, g = 0; v < width; ++v) {
      if (table[size_t(v)] == 0) continue;
      vp[g] = scalar_t(mn + v);
      if (cp) cp[g] = table[size_t(v)];
      ++g;
    }
    if (return_inverse) {
      inverse = make_empty(sizes, kLong, Device(kCPU));
      int64_t* inv = inverse.data_ptr<int64_t>();
      const int64_t* rk = rank.data();
      each_chunk([&](int64_t, int64_t b, int64_t e) {
        const int64_t base = mn;
        for (int64_t i = b; i < e; ++i) inv[i] = rk[int64_t(x[i]) - base];
      });
    } else {
      inverse = make_empty({0}, kLong, Device(kCPU));
    }
    return true;
  }
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool sorted, bool return_inverse,
                                           bool return_counts) {
  (void)sorted;  // sorted output is a valid answer for sorted=False as well
  Tensor flat = self.reshape({-1}).contiguous();
  int64_t n = flat.numel();
  Tensor values, inverse, counts;
  RT_DISPATCH_ALL(self.dtype(), "unique", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* x = n ? flat.data_ptr<scalar_t>() : nullptr;
    if (unique_by_counting<scalar_t>(flat, return_inverse, return_counts, self.sizes(), values,
                                     inverse, counts))
      return;
    // The stable key sort of Note [Radix sort] (std::stable_sort with indirect comparisons
    // took unique of 1M int64 values 73 ms, PyTorch 2.0).
    // (tensors from the caching allocator: mapped pages, no zeroing)
    const Tensor perm_t = make_empty({n}, kLong, Device(kCPU));
    const Tensor sorted_t = make_empty({n}, self.dtype(), Device(kCPU));
    int64_t* perm = n ? perm_t.data_ptr<int64_t>() : nullptr;
    const scalar_t* sv = n ? sorted_t.data_ptr<scalar_t>() : nullptr;
    if (n > 0) key_sort_row(x, n, false, const_cast<scalar_t*>(sv), perm);
    // NaN never equals NaN, so every NaN is its own group (as in PyTorch). Groups start where
    // the sorted values change (read in order; the inverse's scattered writes only when asked).
    std::vector<int64_t> starts;
    for (int64_t i = 0; i < n; ++i)
      if (i == 0 || !(op_t(sv[i]) == op_t(sv[i - 1]))) starts.push_back(i);
    const int64_t u = int64_t(starts.size());
    values = make_empty({u}, self.dtype(), self.device());
    counts = make_empty({return_counts ? u : 0}, kLong, self.device());
    for (int64_t g = 0; g < u; ++g) {
      const int64_t begin = starts[size_t(g)], end = g + 1 < u ? starts[size_t(g + 1)] : n;
      values.data_ptr<scalar_t>()[g] = sv[begin];
      if (return_counts) counts.data_ptr<int64_t>()[g] = end - begin;
    }
    if (return_inverse) {
      inverse = make_empty(self.sizes(), kLong, self.device());
      int64_t* inv = inverse.numel() ? inverse.data_ptr<int64_t>() : nullptr;
      for (int64_t g = 0; g < u; ++g) {
        const int64_t end = g + 1 < u ? starts[size_t(g + 1)] : n;
        for (int64_t i = starts[size_t(g)]; i < end; ++i) inv[perm[i]] = g;
      }
    } else {
      inverse = make_empty({0}, kLong, self.device());
    }
  });
  return {values, inverse, counts};
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  const char* op = "searchsorted";
  if (side) {
    RT_CHECK(*side == "left" || *side == "right", op, "(): side can only be 'left' or 'right' "
             "but got ", *side);
    RT_CHECK(!(right && *side == "left"), op, "(): side and right can't be set to opposites, got "
             "side of left while right was True");
    right = *side == "right";
  }
  const Tensor& seq = sorted_sequence;
  RT_CHECK(seq.dim() >= 1, op, "(): boundaries tensor should have positive dimension, but got 0 "
           "dimension");
  bool one_d = seq.dim() == 1;
  if (!one_d) {
    RT_CHECK(seq.dim() == self.dim(), op, "(): boundaries tensor should be 1 dimension or the "
             "first N-1 dimensions of boundaries tensor and input value tensor must match, but we "
             "got boundaries tensor ", seq.sizes(), " and input value tensor ", self.sizes());
    for (int64_t i = 0; i + 1 < seq.dim(); ++i)
      RT_CHECK(seq.size(i) == self.size(i), op, "(): boundaries tensor should be 1 dimension or "
               "the first N-1 dimensions of boundaries tensor and input value tensor must match, "
               "but we got boundaries tensor ", seq.sizes(), " and input value tensor ",
               self.sizes());
  }
  Tensor order;
  if (sorter) {
    RT_CHECK(sorter->dtype() == kLong, op, "(): sorter must be a tensor of long dtype but got ",
             sorter->dtype());
    RT_CHECK(sorter->sizes() == seq.sizes(), op, "(): boundary and sorter must have the same size, "
             "but got boundary tensor ", seq.sizes(), " and got sorter tensor ", sorter->sizes());
    order = sorter->contiguous();
  }
  ScalarType ct = result_type({seq, self});
  Tensor s = seq.to(ct).contiguous(), v = self.to(ct).contiguous();
  int64_t L = seq.size(-1);
  Tensor out = make_empty(self.sizes(), out_int32 ? kInt : kLong, self.device());
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  int64_t n = self.numel();
  int64_t per_row = one_d || self.dim() == 0 ? n : self.size(-1);
  const int64_t* ord = order.defined() ? order.data_ptr<int64_t>() : nullptr;
  if (ord) {
    for (int64_t i = 0; i < order.numel(); ++i)
      RT_CHECK_INDEX(ord[i] >= 0 && ord[i] < L, op, "(): sorter index out of range (got ", ord[i],
                     " for a boundary row of size ", L, ")");
  }
  RT_DISPATCH_NUMERIC(ct, op, [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* sp = s.numel() ? s.data_ptr<scalar_t>() : nullptr;
    const scalar_t* vp = v.numel() ? v.data_ptr<scalar_t>() : nullptr;
    int32_t* o32 = out_int32 && n ? out.data_ptr<int32_t>() : nullptr;
    int64_t* o64 = !out_int32 && n ? out.data_ptr<int64_t>() : nullptr;
    // Queries are independent: threads split them (one thread with a typed data_ptr call per
    // result took 65536 queries into 1024 boundaries 3.4 ms, PyTorch 1.8).
    parallel_for(0, n, 4096, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t row = one_d || per_row == 0 ? 0 : i / per_row;
        const scalar_t* base = sp + row * L;
        const int64_t* ob = ord ? ord + row * L : nullptr;
        auto at = [&](int64_t j) { return op_t(base[ob ? ob[j] : j]); };
        const op_t x(vp[i]);
        int64_t lo = 0, hi = L;
        while (lo < hi) {
          const int64_t mid = lo + (hi - lo) / 2;
          // PyTorch's comparisons, written so NaN (in either place) moves right.
          const bool go_right = right ? !(at(mid) > x) : !(at(mid) >= x);
          if (go_right) lo = mid + 1;
          else hi = mid;
        }
        if (o32) o32[i] = int32_t(lo);
        else o64[i] = lo;
      }
    });
  });
  return out;
}

}  // namespace retorch::cpu
