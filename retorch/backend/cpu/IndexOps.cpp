// Indexing kernels: index_select, gather, scatter (src/value/add), scatter_reduce, masked_fill,
// cat.
#include <atomic>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "retorch/backend/cpu/ElementWidth.h"
#include "retorch/backend/cpu/Loops.h"
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

void check_index_dtype(const char* op, const Tensor& index) {
  RT_CHECK(index.dtype() == kLong || index.dtype() == kInt, op,
           "(): Expected dtype int32/int64 for index (got ", index.dtype(), ")");
}

// The index as contiguous int64: the tensor itself when it already is (a copy into a vector cost
// index_select of 256K indices ~0.1 ms, a third of its time).
Tensor index_values(const Tensor& index) { return index.to(kLong).contiguous(); }

// Whether every one of the n indices at p lies in [0, size): one OR of unsigned compares per block,
// which vectorizes (a negative index is a huge unsigned one).
bool indices_in_range(const int64_t* p, int64_t n, int64_t size) {
  uint64_t bad = 0;
  for (int64_t j = 0; j < n; ++j) bad |= uint64_t(uint64_t(p[j]) >= uint64_t(size));
  return bad == 0;
}

[[noreturn]] void index_out_of_range(const int64_t* p, int64_t n, int64_t size, int64_t d) {
  int64_t v = 0;
  for (int64_t j = 0; j < n; ++j)
    if (p[j] < 0 || p[j] >= size) { v = p[j]; break; }
  RT_CHECK_INDEX(false, "index_select(): index ", v, " out of range in self (dimension ", d,
                 " has size ", size, ")");
  std::abort();  // (not reached)
}

// Prepares `out` for an out-style kernel that starts from a copy of self.
Tensor start_from_self(const Tensor& self, Tensor& out, const char* op) {
  if (!out.defined()) {
    out = self.clone();
  } else if (!out.is_same(self)) {
    detail::resize_output(out, self.sizes(), op);
    out.copy_(self);
  }
  return out;
}

// The error of a gather/scatter index outside its dim (out of line: the loops stay small).
[[noreturn, gnu::noinline, gnu::cold]] void index_out_of_bounds(const char* op, int64_t v,
                                                                int64_t dim, int64_t size) {
  RT_ERROR(op, "(): index ", v, " is out of bounds for dimension ", dim, " with size ", size);
}

// Visits every element of `index` (any strides), giving the flat offsets in elements of
// index, of `self_like` (with the dim coordinate replaced by the index value), and of
// `src_like` at the same coordinates as index. Rows along index's last dim run as inner loops
// with the outer coordinates' offsets computed once a row (a per-element walk over every dim
// took gather(1) of [1024, 256] indices 51x PyTorch's time); `parallel` splits the rows over
// threads, which the caller allows when no two rows write the same element (gather; scatter
// along the last dim, whose rows differ in a kept coordinate: rows run along the last dim of
// size > 1, before the scatter dim when that has size 1).
template <typename F>
void for_each_index(const Tensor& index, int64_t dim, IntArrayRef self_strides,
                    IntArrayRef self_sizes, IntArrayRef src_strides, const char* op,
                    bool parallel, const F& f) {
  const int64_t nd = index.dim();
  const Tensor idx = index.to(kLong);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const int64_t n = idx.numel();
  // (a 0-dim self or src has no sizes or strides: size 1, stride 0)
  auto at = [](IntArrayRef v, int64_t d, int64_t none) {
    return size_t(d) < v.size() ? v[size_t(d)] : none;
  };
  const int64_t dim_size = nd == 0 ? 1 : at(self_sizes, dim, 1);
  auto check = [&](int64_t v) { index_out_of_bounds(op, v, dim, dim_size); };
  if (n == 0) return;
  if (nd == 0) {
    if (ip[0] < 0 || ip[0] >= dim_size) check(ip[0]);
    return f(int64_t(0), int64_t(0));
  }
  // The inner dim is the last one of size > 1 (trailing size-1 dims keep coordinate 0): an
  // [N, 1] index (one_hot's scatter) then runs one row of N, not N rows of one (81 us for 4096).
  int64_t last = nd - 1;
  while (last > 0 && idx.size(last) == 1) --last;
  const int64_t len = idx.size(last);
  const int64_t is = idx.stride(last), ss = at(self_strides, last, 0);
  const int64_t rs = at(src_strides, last, 0), ds = at(self_strides, dim, 0);
  auto rows = [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> coord(size_t(nd), 0);
    for (int64_t d = last - 1, r = r0; d >= 0; --d) {
      coord[size_t(d)] = r % idx.size(d);
      r /= idx.size(d);
    }
    for (int64_t r = r0; r < r1; ++r) {
      int64_t ioff = 0, soff = 0, roff = 0;
      for (int64_t d = 0; d < last; ++d) {
        ioff += coord[size_t(d)] * idx.stride(d);
        if (d != dim) soff += coord[size_t(d)] * at(self_strides, d, 0);
        roff += coord[size_t(d)] * at(src_strides, d, 0);
      }
      const int64_t* const row_ip = ip + ioff;
      const int64_t step = last == dim ? 0 : ss, istep = is, vstep = ds, rstep = rs;
      const int64_t bound = dim_size;
      const F visit = f;  // (locals: through the captures, every step reloaded them)
      for (int64_t j = 0; j < len; ++j) {
        const int64_t v = row_ip[j * istep];
        if (v < 0 || v >= bound) check(v);
        visit(soff + j * step + v * vstep, roff + j * rstep);
      }
      for (int64_t d = last - 1; d >= 0; --d) {
        if (++coord[size_t(d)] < idx.size(d)) break;
        coord[size_t(d)] = 0;
      }
    }
  };
  const int64_t nrows = n / len;
  if (parallel) parallel_for(0, nrows, std::max<int64_t>(1, 32768 / len), rows);
  else rows(0, nrows);
}

void check_scatter_gather(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor* src) {
  // Unlike index_select, PyTorch's gather/scatter take int64 indices only (an empty index of
  // any dtype is let through, as there).
  RT_CHECK(index.dtype() == kLong || index.numel() == 0, op,
           "(): Expected dtype int64 for index (got ", index.dtype(), ")");
  RT_CHECK(index.dim() == self.dim() || (index.dim() <= 1 && self.dim() <= 1), op,
           "(): Index tensor must have the same number of dimensions as self tensor (index ",
           index.sizes(), ", self ", self.sizes(), ")");
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d == dim) continue;
    RT_CHECK(index.size(d) <= self.size(d), op, "(): Size does not match at dimension ", d,
             " expected index ", index.sizes(), " to be smaller than self ", self.sizes(),
             " apart from dimension ", dim);
    if (src) RT_CHECK(index.size(d) <= src->size(d), op, "(): Expected index ", index.sizes(),
                      " to be smaller than src ", src->sizes());
  }
  // (after the sizes, as in PyTorch: a src of fewer dims fails there, on its dim)
  RT_CHECK(!src || src->dim() == index.dim() || (index.dim() <= 1 && src->dim() <= 1), op,
           "(): Index tensor must have the same number of dimensions as src tensor (index ",
           index.sizes(), ", src ", src->sizes(), ")");
}

}  // namespace

void index_select_out(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  check_index_dtype("index_select", index);
  RT_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector, got shape ",
                 index.sizes());
  int64_t d = maybe_wrap_dim(dim, self.dim(), "index_select");
  if (self.device().is_meta() || index.device().is_meta()) {  // Note [Meta through CPU kernels]
    std::vector<int64_t> shape = self.sizes().vec();
    if (self.dim() > 0) shape[size_t(d)] = index.numel();
    Tensor result = make_empty(shape, self.dtype(), Device(kMeta));
    if (!out.defined()) out = result;
    else detail::resize_output(out, shape, "index_select");
    return;
  }
  const Tensor index_long = index_values(index);
  const int64_t* const idx = index_long.data_ptr<int64_t>();
  const int64_t n = index_long.numel();
  int64_t size = self.dim() == 0 ? 1 : self.size(d);
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[size_t(d)] = n;
  Tensor src = self.contiguous();
  Tensor result = make_empty(shape, self.dtype(), self.device());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= self.size(i);
  for (int64_t i = d + 1; i < self.dim(); ++i) inner *= self.size(i);
  int64_t isz = self.element_size();
  const char* sp = static_cast<const char*>(src.impl()->data());
  char* op = static_cast<char*>(result.impl()->data());
  // An index that steps by +1 or -1 (flip's reversed arange, a slice written as an index)
  // copies each row as one run: forward, or backward through vector permutes, where the element
  // gather below took flip(1) of [1024, 1024] floats 0.31 ms (PyTorch 0.16).
  int64_t step = 0;
  if (inner == 1 && n >= 16 && (idx[1] - idx[0] == 1 || idx[1] - idx[0] == -1)) {
    step = idx[1] - idx[0];
    for (int64_t j = 2; j < n && step != 0; ++j)
      if (idx[j] - idx[j - 1] != step) step = 0;
  }
  const bool typed = isz == 1 || isz == 2 || isz == 4 || isz == 8;
  // Indices are checked before any is read through: a run by its two ends, single elements a
  // block at a time inside their gather (a separate pass over 256K indices cost it 10%), the
  // rest here.
  if (step != 0 && typed) {
    if (!indices_in_range(idx, 1, size) || !indices_in_range(idx + n - 1, 1, size))
      index_out_of_range(idx, n, size, d);
  } else if (!(inner == 1 && typed) && !indices_in_range(idx, n, size)) {
    index_out_of_range(idx, n, size, d);
  }
  if (step != 0 && typed) {
    by_width(isz, "index_select", [&](auto tag) {
      using E = decltype(tag);
      const E* src_e = reinterpret_cast<const E*>(sp);
      E* dst_e = reinterpret_cast<E*>(op);
      const int64_t first = idx[0];
      parallel_for(0, outer, std::max<int64_t>(1, 32768 / n), [=](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const E* s = src_e + o * size + first;
          E* dst = dst_e + o * n;
          if (step > 0) std::memcpy(dst, s, size_t(n) * sizeof(E));
          else
            for (int64_t j = 0; j < n; ++j) dst[j] = s[-j];
        }
      });
    });
  } else if (inner == 1 && typed) {
    // Single elements (the last dim, or a 1-d input): typed loads and stores, where a memcpy
    // call and a division per element took a 1-d gather of 256K floats 3.8x PyTorch's time.
    by_width(isz, "index_select", [&](auto tag) {
      using E = decltype(tag);
      const E* src_e = reinterpret_cast<const E*>(sp);
      E* dst_e = reinterpret_cast<E*>(op);
      const int64_t* const at = idx;
      std::atomic<bool> bad{false};
      std::atomic<bool>* const bad_p = &bad;
      // (Row by row, each a plain gather loop that vectorizes; the row switch inside the
      // element loop kept it scalar: 256K floats from 1M 0.38 ms, PyTorch 0.29.)
      parallel_for(0, outer * n, 32768, [=](int64_t b, int64_t e) {  // (by value: no reloads)
        for (int64_t k = b; k < e;) {
          const int64_t o = k / n, j0 = k % n, j1 = std::min(n, j0 + (e - k));
          const E* row = src_e + o * size;
          E* dst = dst_e + o * n;
          for (int64_t j = j0; j < j1; j += 2048) {
            const int64_t jn = std::min(j1, j + 2048);
            if (!indices_in_range(at + j, jn - j, size)) {
              bad_p->store(true, std::memory_order_relaxed);
              return;
            }
            for (int64_t i = j; i < jn; ++i) dst[i] = row[at[i]];
          }
          k += j1 - j0;
        }
      });
      if (bad.load()) index_out_of_range(at, n, size, d);
    });
  } else {
    parallel_for(0, outer * n, std::max<int64_t>(1, 65536 / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        int64_t o = k / n, j = k % n;
        std::memcpy(op + (o * n + j) * inner * isz,
                    sp + (o * size + idx[j]) * inner * isz, size_t(inner * isz));
      }
    });
  }
  if (!out.defined()) {
    out = result;
  } else {
    detail::resize_output(out, result.sizes(), "index_select");
    out.copy_(result);
  }
}

void gather_out(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad, Tensor& out) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), "gather");
  check_scatter_gather("gather", self, d, index, nullptr);
  Tensor result = make_empty(index.sizes(), self.dtype(), self.device());
  IntArrayRef rs = result.strides();
  if (!result.device().is_meta())  // See Note [Meta through CPU kernels]
  RT_DISPATCH_ALL(self.dtype(), "gather", [&] {
    const scalar_t* sp = static_cast<const scalar_t*>(self.impl()->data());
    scalar_t* rp = result.data_ptr<scalar_t>();
    for_each_index(index, d, self.strides(), self.sizes(), rs, "gather", true,
                   [rp, sp](int64_t soff, int64_t roff) { rp[roff] = sp[soff]; });
  });
  if (!out.defined()) {
    out = result;
  } else {
    detail::resize_output(out, result.sizes(), "gather");
    out.copy_(result);
  }
}

namespace {
template <bool kAdd>
void scatter_impl(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor* src, const Scalar* value, Tensor& out) {
  int64_t d = maybe_wrap_dim(dim, self.dim(), op);
  check_scatter_gather(op, self, d, index, src);
  if (src)
    RT_CHECK(src->dtype() == self.dtype(), op, "(): Expected self.dtype to be equal to "
             "src.dtype (got ", self.dtype(), " and ", src->dtype(), ")");
  start_from_self(self, out, op);
  Tensor o = out;
  if (o.device().is_meta()) return;  // See Note [Meta through CPU kernels]
  // Rows along the last dim write disjoint elements when that dim is the scattered one.
  const bool by_rows = index.dim() > 0 && d == index.dim() - 1;
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    scalar_t* dp = static_cast<scalar_t*>(o.impl()->data());
    if (src) {
      const scalar_t* sp = static_cast<const scalar_t*>(src->impl()->data());
      for_each_index(index, d, o.strides(), o.sizes(), src->strides(), op, by_rows,
                     [dp, sp](int64_t doff, int64_t soff) {
        if constexpr (kAdd)
          dp[doff] = scalar_t(opmath_t<scalar_t>(dp[doff]) + opmath_t<scalar_t>(sp[soff]));
        else
          dp[doff] = sp[soff];
      });
    } else {
      scalar_t v = value->to<scalar_t>();
      for_each_index(index, d, o.strides(), o.sizes(), index.strides(), op, by_rows,
                     [dp, v](int64_t doff, int64_t) { dp[doff] = v; });
    }
  });
}
}  // namespace

void scatter_src_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     Tensor& out) {
  scatter_impl<false>("scatter", self, dim, index, &src, nullptr, out);
}
void scatter_value_out(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                       Tensor& out) {
  scatter_impl<false>("scatter", self, dim, index, nullptr, &value, out);
}
void scatter_add_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     Tensor& out) {
  scatter_impl<true>("scatter_add", self, dim, index, &src, nullptr, out);
}

namespace {

enum class Reduction { Sum, Prod, Mean, Amax, Amin };

Reduction parse_reduction(std::string_view reduce) {
  if (reduce == "sum") return Reduction::Sum;
  if (reduce == "prod") return Reduction::Prod;
  if (reduce == "mean") return Reduction::Mean;
  if (reduce == "amax") return Reduction::Amax;
  RT_CHECK(reduce == "amin", "scatter_reduce(): reduce argument must be either sum, prod, mean, "
           "amax or amin, got ", reduce);
  return Reduction::Amin;
}

/// The value a position starts from when include_self=False leaves self out of its reduction.
template <typename T>
T reduction_identity(Reduction r) {
  constexpr bool kInt = std::is_integral_v<T>;
  switch (r) {
    case Reduction::Prod: return T(1);
    case Reduction::Amax:
      if constexpr (kInt) return std::numeric_limits<T>::lowest();
      else return T(-std::numeric_limits<float>::infinity());
    case Reduction::Amin:
      if constexpr (kInt) return std::numeric_limits<T>::max();
      else return T(std::numeric_limits<float>::infinity());
    default: return T(0);
  }
}

/// One step of the reduction; amax/amin propagate NaN like PyTorch's kernel.
template <typename T>
T reduce_step(Reduction r, T acc, T v) {
  using A = opmath_t<T>;
  A a = A(acc), b = A(v);
  switch (r) {
    case Reduction::Prod: return T(a * b);
    case Reduction::Amax: return (b != b || b > a) ? v : acc;
    case Reduction::Amin: return (b != b || b < a) ? v : acc;
    default: return T(a + b);
  }
}

/// sum / count, rounded down for integers as PyTorch's mean of integer tensors is.
template <typename T>
T mean_of(T sum, int64_t count) {
  if constexpr (std::is_integral_v<T>) {
    int64_t s = int64_t(sum), q = s / count;
    return T((s % count != 0 && s < 0) ? q - 1 : q);
  } else {
    return T(opmath_t<T>(sum) / opmath_t<T>(count));
  }
}

}  // namespace

// Note [scatter_reduce]: the positions index names reduce self's value (include_self) and every
// src value sent there; untouched positions keep self. The work happens on a contiguous
// result, whose element offsets double as positions for mean's counts, and is copied into a
// strided out at the end.
void scatter_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self, Tensor& out) {
  const char* op = "scatter_reduce";
  Reduction r = parse_reduction(reduce);
  int64_t d = maybe_wrap_dim(dim, self.dim(), op);
  check_scatter_gather(op, self, d, index, &src);
  RT_CHECK(src.dtype() == self.dtype(), op, "(): Expected self.dtype to be equal to src.dtype "
           "(got ", self.dtype(), " and ", src.dtype(), ")");
  RT_CHECK(r != Reduction::Mean || self.dtype() != kBool, op,
           "(): reduce='mean' is not supported for Bool tensors");
  start_from_self(self, out, op);
  if (out.device().is_meta()) return;  // See Note [Meta through CPU kernels]
  Tensor w = out.is_contiguous() ? out : out.contiguous();
  RT_DISPATCH_ALL(self.dtype(), op, [&] {
    scalar_t* dp = w.data_ptr<scalar_t>();
    const scalar_t* sp = static_cast<const scalar_t*>(src.impl()->data());
    std::vector<int64_t> count;
    if (r == Reduction::Mean) count.assign(size_t(w.numel()), include_self ? 1 : 0);
    if (!include_self) {
      scalar_t start = reduction_identity<scalar_t>(r);
      for_each_index(index, d, w.strides(), w.sizes(), src.strides(), op, false,
                     [&](int64_t doff, int64_t) { dp[doff] = start; });
    }
    for_each_index(index, d, w.strides(), w.sizes(), src.strides(), op, false,
                   [&](int64_t doff, int64_t soff) {
      dp[doff] = reduce_step(r, dp[doff], sp[soff]);
      if (r == Reduction::Mean) ++count[size_t(doff)];
    });
    if constexpr (!std::is_same_v<scalar_t, bool>) {
      if (r == Reduction::Mean)
        for (int64_t i = 0; i < w.numel(); ++i)
          if (count[size_t(i)] > 1) dp[i] = mean_of(dp[i], count[size_t(i)]);
    }
  });
  if (!w.is_same(out)) out.copy_(w);
}

void masked_fill_out(const Tensor& self, const Tensor& mask, const Scalar& value, Tensor& out) {
  RT_CHECK(mask.dtype() == kBool || mask.dtype() == kByte, "masked_fill_ only supports boolean "
           "masks, but got mask with dtype ", mask.dtype());
  Tensor m = mask;
  if (mask.dtype() == kByte) {
    // PyTorch 1.13 still takes (with a deprecation warning) uint8 masks of zeros and ones.
    RT_CHECK(mask.numel() == 0 || mask.le(1).all().item<bool>(),
             "masked_fill_: Mask tensor can take 0 and 1 values only");
    m = mask.to(kBool);
  }
  bool inplace = out.defined() && out.is_same(self);
  if (inplace) {
    RT_CHECK(is_expandable_to(mask.sizes(), self.sizes()), "masked_fill_: mask of shape ",
             mask.sizes(), " is not broadcastable to self of shape ", self.sizes());
  }
  Tensor result = out;
  TensorIterator iter(result, {self, m}, {.name = "masked_fill", .promote_inputs = false,
                                          .out_dtype = self.dtype(), .common = self.dtype(),
                                          // See Note [Internal overlap].
                                          .check_mem_overlap = false});
  RT_DISPATCH_ALL(self.dtype(), "masked_fill", [&] {
    scalar_t v = value.to<scalar_t>();
    iter.for_each([&](char** data, const int64_t* st, int64_t n) {
      if (st[0] == sizeof(scalar_t) && st[1] == sizeof(scalar_t) && st[2] == 1) {
        // Contiguous: the mask read as its bytes, so the select vectorizes (GCC does not
        // vectorize a loop that loads bool; branching on a random mask took masked_fill of 1M
        // floats 2.0 ms, PyTorch's too).
        auto* o = reinterpret_cast<scalar_t*>(data[0]);
        const auto* x = reinterpret_cast<const scalar_t*>(data[1]);
        const auto* mk = reinterpret_cast<const uint8_t*>(data[2]);
        const scalar_t fill = v;  // (a local: through the capture it was reloaded each element)
        for (int64_t i = 0; i < n; ++i) o[i] = mk[i] ? fill : x[i];
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        bool mk = *reinterpret_cast<const bool*>(data[2] + i * st[2]);
        *reinterpret_cast<scalar_t*>(data[0] + i * st[0]) =
            mk ? v : *reinterpret_cast<const scalar_t*>(data[1] + i * st[1]);
      }
    });
  });
  iter.finish();
  if (!out.defined()) out = result;
}

void masked_fill_tensor_out(const Tensor& self, const Tensor& mask, const Tensor& value, Tensor& out) {
  RT_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got "
           "tensor with ", value.dim(), " dimension(s).");
  masked_fill_out(self, mask, value.item(), out);
}

void cat_out(TensorList tensors, int64_t dim, Tensor& out) {
  RT_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  // Legacy rule: 1-D empty tensors are skipped whatever their shape.
  std::vector<Tensor> ts;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) ts.push_back(t);
  ScalarType dt = result_type(tensors);
  if (ts.empty()) {
    Tensor r = make_empty({0}, dt, tensors[0].device());
    if (!out.defined()) out = r;
    else detail::resize_output(out, {0}, "cat");
    return;
  }
  const Tensor& ref = ts[0];
  RT_CHECK(ref.dim() > 0, "zero-dimensional tensor (at position 0) cannot be concatenated");
  int64_t d = maybe_wrap_dim(dim, ref.dim(), "cat");
  std::vector<int64_t> shape = ref.sizes().vec();
  int64_t total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    RT_CHECK(t.dim() == ref.dim(), "Tensors must have same number of dimensions: got ", ref.dim(),
             " and ", t.dim());
    RT_CHECK(t.device() == ref.device(), "Expected all tensors to be on the same device, but found ",
             ref.device(), " and ", t.device());
    for (int64_t k = 0; k < ref.dim(); ++k) {
      if (k == d) continue;
      RT_CHECK(t.size(k) == ref.size(k), "Sizes of tensors must match except in dimension ", d,
               ". Expected size ", ref.size(k), " but got size ", t.size(k), " for tensor number ",
               i, " in the list.");
    }
    total += t.size(d);
  }
  shape[size_t(d)] = total;
  if (!out.defined()) {
    out = make_empty(shape, dt, ref.device());
  } else {
    RT_CHECK(can_cast(dt, out.dtype()), "cat: result type ", dt,
             " can't be cast to the desired output type ", out.dtype());
    detail::resize_output(out, shape, "cat");
  }
  int64_t offset = 0;
  for (const auto& t : ts) {
    out.narrow(d, offset, t.size(d)).copy_(t);
    offset += t.size(d);
  }
}

}  // namespace retorch::cpu
