// copy_ (with broadcasting and dtype conversion), fill_, clone and _to_copy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "retorch/backend/cpu/Loops.h"
#include "retorch/core/MemoryFormat.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

// Note [Transposing copies]: copying a transposed view into a contiguous tensor (`x.t()
// .contiguous()`, a reduction's move of the reduced dim last, k.transpose(-2, -1)) read the
// source a column at a time, every element from another cache line: 4.2 ms for 1024x1024 floats
// (PyTorch 1.04). When the output's second-last dim is the source's unit-stride one, each
// matrix is copied in 32x32 tiles instead, reading and writing whole cache lines. Where the
// source's column stride is a multiple of 2 KB, the tile's 32 source columns fall in one or two
// L1 sets and evicted each other before the next row used them (1024x1024 floats 1.05 ms,
// 1024x1000 0.18 ms, on a Zen 4 core): there each column is first copied, contiguous, into a
// small buffer (0.44 ms). The buffer's scalar reads cost more than the tiles elsewhere. A column
// broadcast (last stride 0: a sum's expanded gradient) is no transpose: each row is one value
// stored across, the element loop's broadcast case (0.36 -> 0.04 ms for 1024x1024 floats).
template <typename T>
void transpose_tiles(const T* src, int64_t rows, int64_t cols, int64_t col_stride, T* dst) {
  constexpr int64_t kTile = 32;
  const bool aliasing = (col_stride * int64_t(sizeof(T))) % 2048 == 0;
  T buf[kTile][kTile];  // buf[c - c0][r - r0]
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      if (!aliasing) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) dst[r * cols + c] = src[r + c * col_stride];
        continue;
      }
      for (int64_t c = c0; c < c1; ++c)
        std::memcpy(buf[c - c0], src + r0 + c * col_stride, size_t(r1 - r0) * sizeof(T));
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[r * cols + c] = buf[c - c0][r - r0];
    }
}

// A transposed matrix of 2 to 7 columns (pixel_shuffle's last dims: each output row
// interleaves r input rows): the columns, a compile-time count, are interleaved a row at a time,
// which vectorizes, where the element iterator's inner loop of r took pixel_shuffle of
// [16, 32, 32, 32] floats by 2 0.85 ms (PyTorch 0.58).
template <int C, typename T>
void interleave_columns(const T* src, int64_t rows, int64_t col_stride, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c) dst[r * C + c] = src[r + c * col_stride];
}

template <typename T>
void transpose_matrix(const T* src, int64_t rows, int64_t cols, int64_t col_stride, T* dst) {
  switch (cols) {
    case 2: return interleave_columns<2>(src, rows, col_stride, dst);
    case 3: return interleave_columns<3>(src, rows, col_stride, dst);
    case 4: return interleave_columns<4>(src, rows, col_stride, dst);
    default: return transpose_tiles(src, rows, cols, col_stride, dst);
  }
}

// Whether copying src into self is a transposing copy of the kind above (dtypes aside).
bool transposing(const Tensor& self, const Tensor& src) {
  return src.dim() >= 2 && self.sizes().equals(src.sizes()) && self.is_contiguous() &&
         src.stride(-2) == 1 && src.stride(-1) != 1 && src.stride(-1) != 0 &&
         src.size(-1) >= 2 && !(src.size(-1) > 4 && src.size(-1) < 8) && src.size(-2) >= 8;
}

bool copy_transposed(const Tensor& self, const Tensor& src) {
  const int64_t nd = src.dim();
  if (self.dtype() != src.dtype() || !transposing(self, src)) return false;
  const int64_t rows = src.size(-2), cols = src.size(-1), col_stride = src.stride(-1);
  const int64_t batches = self.numel() / (rows * cols);
  const int64_t isz = src.element_size();
  const char* sp = static_cast<const char*>(src.impl()->data());
  char* dp = static_cast<char*>(self.impl()->data());
  // Source offset of matrix b: its leading-dim coordinates times the source's strides.
  auto src_offset = [&](int64_t b) {
    int64_t off = 0;
    for (int64_t d = nd - 3; d >= 0; --d) {
      off += (b % src.size(d)) * src.stride(d);
      b /= src.size(d);
    }
    return off;
  };
  const int64_t row_tiles = (rows + 31) / 32;
  parallel_for(0, batches * row_tiles, std::max<int64_t>(1, 32768 / (32 * cols)),
               [&](int64_t b0, int64_t e0) {
    for (int64_t t = b0; t < e0; ++t) {
      const int64_t b = t / row_tiles, r0 = (t % row_tiles) * 32;
      const int64_t n = std::min<int64_t>(32, rows - r0);
      const char* s = sp + (src_offset(b) + r0) * isz;
      char* d = dp + (b * rows + r0) * cols * isz;
      switch (isz) {
        case 1: transpose_matrix(reinterpret_cast<const uint8_t*>(s), n, cols, col_stride,
                                reinterpret_cast<uint8_t*>(d)); break;
        case 2: transpose_matrix(reinterpret_cast<const uint16_t*>(s), n, cols, col_stride,
                                reinterpret_cast<uint16_t*>(d)); break;
        case 4: transpose_matrix(reinterpret_cast<const uint32_t*>(s), n, cols, col_stride,
                                reinterpret_cast<uint32_t*>(d)); break;
        default: transpose_matrix(reinterpret_cast<const uint64_t*>(s), n, cols, col_stride,
                                 reinterpret_cast<uint64_t*>(d)); break;
      }
    }
  });
  return true;
}

// copy_ without the overlap check, shared with fill_ (see Note [Internal overlap]).
Tensor copy_impl(const Tensor& self, const Tensor& src, bool check_overlap) {
  RT_CHECK(self.defined() && src.defined(), "copy_: undefined tensor");
  RT_CHECK(self.is_cpu() && src.is_cpu(), "copy_: the CPU backend copies between CPU tensors only ",
           "(got ", self.device(), " and ", src.device(), ")");
  if (self.is_same(src) || self.numel() == 0) return self;
  if (check_overlap) detail::assert_no_partial_overlap(self, src, "copy_");
  // Fast path: same dtype, same shape, both contiguous.
  if (self.dtype() == src.dtype() && self.sizes().equals(src.sizes()) && self.is_contiguous() &&
      src.is_contiguous()) {
    char* d = static_cast<char*>(self.impl()->data());
    const char* s = static_cast<const char*>(src.impl()->data());
    if (d == s) return self;
    int64_t nbytes = self.numel() * self.element_size();
    parallel_for(0, nbytes, 1 << 20, [&](int64_t b, int64_t e) { std::memmove(d + b, s + b, size_t(e - b)); });
    return self;
  }
  if (copy_transposed(self, src)) return self;
  if (self.dim() >= 2 && self.stride(-2) == 1 && self.size(-2) > 1 && self.size(-1) > 1 &&
      self.sizes().equals(src.sizes())) {
    // Into a transposed destination (Python's .to() laying a result out like its transposed
    // input): the copy of the two transposed views, whose destination is contiguous when self
    // is a transposed contiguous tensor.
    auto swap_last = [](const Tensor& t) {
      std::vector<int64_t> sz = t.sizes().vec(), st = t.strides().vec();
      std::swap(sz[sz.size() - 1], sz[sz.size() - 2]);
      std::swap(st[st.size() - 1], st[st.size() - 2]);
      return alias_with_geometry(t, sz, st, t.storage_offset());
    };
    Tensor self_t = swap_last(self);
    if (self_t.is_contiguous()) {
      copy_impl(self_t, swap_last(src), false);
      return self;
    }
  }
  if (transposing(self, src)) {
    // A transposing copy that also converts (autocast's cast of a transposed weight gradient
    // in backward): the tiles in src's dtype, then a contiguous conversion. The element
    // iterator read 1024x4096 bfloat16 a column at a time into float32 in 15 ms; this 1.5.
    Tensor tiles = make_empty(src.sizes(), src.dtype(), src.device());
    copy_transposed(tiles, src);
    return copy_impl(self, tiles, false);
  }
  if (self.dtype() != src.dtype() && self.sizes().equals(src.sizes()) &&
      self.strides().equals(src.strides()) && self.dim() > 1 &&
      is_non_overlapping_and_dense_strides(self.sizes(), self.strides())) {
    // The same dense layout on both sides, in some dim order: one flat loop over the span.
    // A transposed tensor's .to(dtype) keeps its layout (preserve_format), and the element
    // iterator walked it a column at a time: 1024x4096 bfloat16 -> float32 30 ms (PyTorch
    // 0.8), autocast's cast of every transposed weight gradient.
    const std::vector<int64_t> flat{self.numel()}, unit{1};
    copy_impl(alias_with_geometry(self, flat, unit, self.storage_offset()),
              alias_with_geometry(src, flat, unit, src.storage_offset()), false);
    return self;
  }
  Tensor out = self;
  // copy_ broadcasts src to self's shape (the iterator only broadcasts inputs with each other).
  const Tensor s = src.sizes().equals(self.sizes()) ? src : src.expand(self.sizes());
  TensorIterator iter(out, {s}, {.name = "copy_", .promote_inputs = false,
                                 .out_dtype = self.dtype(), .common = src.dtype(),
                                 .allow_resize_out = false,
                                 .check_mem_overlap = check_overlap});
  // bool reads and writes go through its bytes (0 or 1): GCC vectorizes no loop that loads or
  // stores bool (bool -> int64 of 1M took 0.15 ms, PyTorch 0.05).
  RT_DISPATCH_ALL(self.dtype(), "copy_", [&] {
    constexpr bool kOutBool = std::is_same_v<scalar_t, bool>;
    using out_t = std::conditional_t<kOutBool, uint8_t, scalar_t>;
    RT_DISPATCH_ALL(src.dtype(), "copy_", [&] {
      using in_t = std::conditional_t<std::is_same_v<scalar_t, bool>, uint8_t, scalar_t>;
      unary_loop<out_t, in_t>(iter, [](auto x) {
        if constexpr (kOutBool) return uint8_t(x != decltype(x)(0));
        else return x;
      });
    });
  });
  iter.finish();
  return self;
}
}  // namespace

Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  (void)non_blocking;
  return copy_impl(self, src, true);
}

// PyTorch's checked_convert for fill values: a value outside the dtype's range is an error
// rather than a wrapped or saturated number. Negative integers may wrap into unsigned types
// (-1 fills uint8 with 255), infinities and nan may fill floating types, bool takes anything.
template <typename T>
void check_fill_value(const Scalar& v, ScalarType dtype) {
  if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, double>) {
    constexpr bool kFloat = !std::is_integral_v<T>;
    constexpr bool kSigned = kFloat || std::is_signed_v<T>;
    double lo, hi;
    if constexpr (std::is_same_v<T, Half>) {
      lo = -65504.0, hi = 65504.0;
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      lo = -3.3895313892515355e38, hi = 3.3895313892515355e38;
    } else {
      lo = double(std::numeric_limits<T>::lowest()), hi = double(std::numeric_limits<T>::max());
    }
    bool ok;
    if (v.is_floating_point()) {
      double d = v.to_double();
      ok = (kFloat && !std::isfinite(d)) || (d >= lo && d <= hi);
    } else {
      double i = double(v.to_long());
      ok = i <= hi && (kSigned ? i >= lo : -i <= hi);
    }
    RT_CHECK(ok, "fill_: value cannot be converted to type ", dtype, " without overflow");
  }
}

Tensor fill_(const Tensor& self, const Scalar& value) {
  RT_DISPATCH_ALL(self.dtype(), "fill_", [&] { check_fill_value<scalar_t>(value, self.dtype()); });
  if (self.numel() == 0 || self.device().is_meta()) return self;  // Note [Meta through CPU kernels]
  if (self.is_contiguous()) {
    RT_DISPATCH_ALL(self.dtype(), "fill_", [&] {
      scalar_t v = value.to<scalar_t>();
      scalar_t* p = static_cast<scalar_t*>(self.impl()->data());
      parallel_for(0, self.numel(), 1 << 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = v;
      });
    });
    return self;
  }
  Tensor v = make_empty({}, self.dtype());
  RT_DISPATCH_ALL(self.dtype(), "fill_", [&] { *v.data_ptr<scalar_t>() = value.to<scalar_t>(); });
  return copy_impl(self, v, false);
}

Tensor clone(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  return out.copy_(self);  // dispatched: on meta tensors, the meta copy
}

Tensor to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device,
               bool non_blocking) {
  (void)non_blocking;  // a cpu copy is done when it returns
  Device d = device.value_or(self.device());
  RT_CHECK(d.is_cpu(), "_to_copy: the CPU backend cannot copy to device ", d);
  Tensor out = make_empty(self.sizes(), dtype.value_or(self.dtype()), d);
  return copy_(out, self, false);
}

}  // namespace retorch::cpu
