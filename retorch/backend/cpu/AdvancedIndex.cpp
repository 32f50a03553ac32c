// Advanced indexing kernels: index (gather by tensors of indices / masks), index_put, nonzero.
#include <cstring>

#include "retorch/backend/cpu/ElementWidth.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Dtypes.h"
#include "retorch/core/Shape.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/OpHelpers.h"

namespace retorch::cpu {

namespace {

// Note [Advanced indexing plan]
// PyTorch's rule: index tensors (masks become their nonzero() columns) broadcast together to one
// shape B. When the indexed dims are adjacent, the result is self's leading unindexed dims, then
// B, then the trailing dims; when a slice separates them, B comes first and all unindexed dims
// follow in order. We permute the indexed dims to one adjacent block (the front in the second
// case), so every element is out[b, i, a] = self[before_off[b] + index_off[i] + after_off[a]]
// with precomputed offsets (in elements) over the before dims, B and the after dims.
struct IndexPlan {
  DimVector result_shape;
  std::vector<int64_t> before_off, index_off, after_off;
  bool after_contiguous = false;  // after_off[a] == a: rows copy as one block (embedding-like)
};

bool broadcast_ok(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

// Offsets of every coordinate of `sizes` walked in row-major order with `strides`.
std::vector<int64_t> walk_offsets(IntArrayRef sizes, IntArrayRef strides) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> out(size_t(std::max<int64_t>(n, 0)));
  if (n == 0) return out;
  DimVector coord(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    out[size_t(k)] = off;
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
      size_t du = size_t(d);
      if (++coord[du] < sizes[du]) {
        off += strides[du];
        break;
      }
      off -= (sizes[du] - 1) * strides[du];
      coord[du] = 0;
    }
  }
  return out;
}

// Replaces masks by their nonzero() columns and checks dtypes; the result has one entry per
// indexed dim of self (None for unindexed dims), no longer than self.dim().
std::vector<std::optional<Tensor>> expand_masks(const Tensor& self,
                                                ArrayRef<std::optional<Tensor>> indices) {
  std::vector<std::optional<Tensor>> out;
  for (const auto& idx : indices) {
    if (!idx || !idx->defined()) {
      out.emplace_back(std::nullopt);
      continue;
    }
    ScalarType dt = idx->dtype();
    if (dt == kBool || dt == kByte) {
      int64_t start = int64_t(out.size());
      for (int64_t j = 0; j < idx->dim(); ++j) {
        int64_t sd = start + j;
        RT_CHECK_INDEX(sd < self.dim(), "too many indices for tensor of dimension ", self.dim());
        RT_CHECK_INDEX(idx->size(j) == self.size(sd), "The shape of the mask ", idx->sizes(),
                       " at index ", j, " does not match the shape of the indexed tensor ",
                       self.sizes(), " at index ", sd);
      }
      Tensor nz = (dt == kBool ? *idx : idx->to(kBool)).nonzero();
      for (int64_t j = 0; j < idx->dim(); ++j) out.emplace_back(nz.select(1, j));
    } else {
      RT_CHECK_INDEX(dt == kLong, "tensors used as indices must be long, byte or bool tensors "
                     "(got ", dt, ")");
      out.emplace_back(*idx);
    }
  }
  RT_CHECK_INDEX(int64_t(out.size()) <= self.dim(), "too many indices for tensor of dimension ",
                 self.dim(), " (got ", out.size(), ")");
  return out;
}

// Builds the plan for `geom` (self or the tensor written by index_put) and the indices.
IndexPlan make_plan(const Tensor& geom, ArrayRef<std::optional<Tensor>> raw, const char* op) {
  std::vector<std::optional<Tensor>> idx = expand_masks(geom, raw);
  int64_t nd = geom.dim();
  idx.resize(size_t(nd));
  std::vector<int64_t> indexed, plain;
  DimVector bshape;
  bool first = true;
  for (int64_t d = 0; d < nd; ++d) {
    if (!idx[size_t(d)]) {
      plain.push_back(d);
      continue;
    }
    indexed.push_back(d);
    IntArrayRef s = idx[size_t(d)]->sizes();
    if (first) {
      bshape = DimVector(s);
      first = false;
    } else {
      RT_CHECK_INDEX(broadcast_ok(bshape, s), "shape mismatch: indexing tensors could not be "
                     "broadcast together with shapes ", IntArrayRef(bshape), ", ", s);
      bshape = broadcast_shapes(bshape, s, op);
    }
  }
  RT_CHECK(!indexed.empty(), op, "(): expected at least one index tensor");
  bool adjacent = indexed.back() - indexed.front() + 1 == int64_t(indexed.size());
  // Dims before the block, the block, dims after the block.
  std::vector<int64_t> before, after;
  if (adjacent) {
    for (int64_t d : plain) (d < indexed.front() ? before : after).push_back(d);
  } else {
    after = plain;
  }
  IndexPlan p;
  DimVector bsz, bst, asz, ast;
  for (int64_t d : before) {
    bsz.push_back(geom.size(d));
    bst.push_back(geom.stride(d));
  }
  for (int64_t d : after) {
    asz.push_back(geom.size(d));
    ast.push_back(geom.stride(d));
  }
  p.result_shape = bsz;
  for (int64_t s : bshape) p.result_shape.push_back(s);
  for (int64_t s : asz) p.result_shape.push_back(s);
  p.before_off = walk_offsets(bsz, bst);
  p.after_off = walk_offsets(asz, ast);
  p.after_contiguous = true;
  for (size_t a = 0; a < p.after_off.size() && p.after_contiguous; ++a)
    p.after_contiguous = p.after_off[a] == int64_t(a);
  int64_t m = 1;
  for (int64_t s : bshape) m *= s;
  // On meta the plan is its shape: the index values are data (Note [Meta through CPU kernels]).
  if (geom.device().is_meta()) return p;
  p.index_off.resize(size_t(m));  // (the first index writes it, the others add)
  bool first_index = true;
  for (int64_t d : indexed) {
    Tensor t = idx[size_t(d)]->expand(bshape).contiguous();
    const int64_t* const ip = t.data_ptr<int64_t>();
    int64_t* const off = p.index_off.data();  // (locals: the loop vectorizes, nothing reloads)
    const int64_t size = geom.size(d), stride = geom.stride(d);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t v = ip[i];
      bad |= int64_t(v < -size) | int64_t(v >= size);
      off[i] = (first_index ? 0 : off[i]) + (v < 0 ? v + size : v) * stride;
    }
    first_index = false;
    if (bad)
      for (int64_t i = 0; i < m; ++i)
        RT_CHECK_INDEX(ip[i] >= -size && ip[i] < size, "index ", ip[i],
                       " is out of bounds for dimension ", d, " with size ", size);
  }
  return p;
}

}  // namespace

Tensor index(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  IndexPlan p = make_plan(self, indices, "index");
  Tensor out = make_empty(p.result_shape, self.dtype(), self.device());
  int64_t nb = int64_t(p.before_off.size()), m = int64_t(p.index_off.size());
  int64_t na = int64_t(p.after_off.size());
  if (out.numel() == 0 || out.device().is_meta()) return out;
  by_width(self.element_size(), "index", [&](auto w) {
    using T = decltype(w);
    const T* src = static_cast<const T*>(self.impl()->data());
    T* dst = static_cast<T*>(out.impl()->data());
    if (na == 1) {  // single elements: no division or memcpy call per element (a[idx] 2.5x)
      const int64_t a0 = p.after_off[0];
      const int64_t* const before = p.before_off.data();
      const int64_t* const at = p.index_off.data();
      parallel_for(0, nb * m, 32768, [=](int64_t b, int64_t e) {  // (by value: no reloads)
        int64_t o = b / m, j = b % m;
        for (int64_t r = b; r < e; ++r) {
          dst[r] = src[before[o] + at[j] + a0];
          if (++j == m) {
            j = 0;
            ++o;
          }
        }
      });
      return;
    }
    parallel_for(0, nb * m, std::max<int64_t>(1, 32768 / na), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* s = src + p.before_off[size_t(r / m)] + p.index_off[size_t(r % m)];
        T* d = dst + r * na;
        if (p.after_contiguous) std::memcpy(d, s, size_t(na) * sizeof(T));
        else for (int64_t a = 0; a < na; ++a) d[a] = s[p.after_off[size_t(a)]];
      }
    });
  });
  return out;
}

void index_put_out(const Tensor& self, ArrayRef<std::optional<Tensor>> indices,
                   const Tensor& values, bool accumulate, Tensor& out) {
  if (!out.defined()) {
    out = self.clone();
  } else if (!out.is_same(self)) {
    detail::resize_output(out, self.sizes(), "index_put");
    out.copy_(self);
  }
  // One boolean mask over leading dims of self and one value (x[x < 0] = 0): masked_fill's
  // one pass, as PyTorch's index_put_ takes it (a value of another dtype is cast, as there), not
  // nonzero's index list and a scattered write (1M floats 2.6 ms, masked_fill_ 0.05).
  if (!accumulate && indices.size() == 1 && indices[0].has_value() &&
      indices[0]->dtype() == kBool && indices[0]->device() == out.device() &&
      indices[0]->dim() >= 1 && indices[0]->dim() <= out.dim() &&
      out.sizes().slice(0, size_t(indices[0]->dim())).equals(indices[0]->sizes()) &&
      values.numel() == 1) {
    DimVector shape(indices[0]->sizes().begin(), indices[0]->sizes().end());
    shape.resize(size_t(out.dim()), 1);
    out.masked_fill_(indices[0]->view(shape).expand(out.sizes()), values.reshape({}));
    return;
  }
  RT_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination "
           "dtypes match, got ", self.dtype(), " for the destination and ",
           values.dtype(), " for the source.");
  IndexPlan p = make_plan(out, indices, "index_put");
  RT_CHECK(is_expandable_to(values.sizes(), p.result_shape), "shape mismatch: value tensor of "
           "shape ", values.sizes(), " cannot be broadcast to indexing result of shape ",
           IntArrayRef(p.result_shape));
  if (out.device().is_meta()) return;  // See Note [Meta through CPU kernels]
  int64_t nb = int64_t(p.before_off.size()), m = int64_t(p.index_off.size());
  int64_t na = int64_t(p.after_off.size());
  if (nb * m * na == 0) return;
  detail::assert_no_partial_overlap(out, values, "index_put_");
  // Values that alias the written tensor in a way the check allows (non-dense views) are read
  // from a copy, so no element is read after it was overwritten.
  bool aliased = values.impl()->storage().get() == out.impl()->storage().get();
  Tensor v = aliased ? values.expand(p.result_shape).clone()
                     : values.expand(p.result_shape).contiguous();
  RT_DISPATCH_ALL(self.dtype(), "index_put", [&] {
    const scalar_t* vp = v.data_ptr<scalar_t>();
    scalar_t* dst = static_cast<scalar_t*>(out.impl()->data());
    auto row = [&](int64_t r) {  // (plain writes of a row; accumulation has its paths below)
      scalar_t* d = dst + p.before_off[size_t(r / m)] + p.index_off[size_t(r % m)];
      const scalar_t* s = vp + r * na;
      if (p.after_contiguous) {  // a row at a time (a KV cache's slot write)
        std::memcpy(static_cast<void*>(d), s, size_t(na) * sizeof(scalar_t));
        return;
      }
      for (int64_t a = 0; a < na; ++a) d[p.after_off[size_t(a)]] = s[a];
    };
    // Repeated indices make writes collide: accumulation stays serial (as in PyTorch), plain
    // writes of rows run in parallel when large (then which duplicate wins is unspecified).
    if (na == 1) {  // single elements, as in index above (index_put_ and index_add_ 3.8x)
      const int64_t a0 = p.after_off[0];
      const int64_t* const before = p.before_off.data();
      const int64_t* const at = p.index_off.data();
      auto put = [=](int64_t b, int64_t e) {  // (by value: no reloads)
        int64_t o = b / m, j = b % m;
        for (int64_t r = b; r < e; ++r) {
          scalar_t& x = dst[before[o] + at[j] + a0];
          if (accumulate) x = scalar_t(opmath_t<scalar_t>(x) + opmath_t<scalar_t>(vp[r]));
          else x = vp[r];
          if (++j == m) {
            j = 0;
            ++o;
          }
        }
      };
      // Accumulation on one thread (duplicates add in order); plain writes on threads past
      // 32K elements (256K random writes into 1M floats: one thread 0.35 ms, two 0.26, PyTorch
      // 0.32; an earlier loop took 1.02 on two threads, when its cache lines were the cost).
      if (accumulate) {
        put(0, nb * m);
      } else {
        parallel_for(0, nb * m, 32768, put);
      }
      return;
    }
    if (accumulate) {
      // Whole rows (index_add_ along a leading dim, index_select's backward): threads split the
      // columns, so duplicate indices still add in order and never collide, and contiguous rows
      // add as vectors (element by element through the offsets, one thread, 1024 rows of 1024
      // floats took 0.79 ms, PyTorch 0.16).
      parallel_for(0, na, std::max<int64_t>(64, 32768 / std::max<int64_t>(nb * m, 1)),
                   [&](int64_t a0, int64_t a1) {
        for (int64_t r = 0; r < nb * m; ++r) {
          scalar_t* d = dst + p.before_off[size_t(r / m)] + p.index_off[size_t(r % m)];
          const scalar_t* src = vp + r * na;
          if (p.after_contiguous) {  // (values never alias dst: aliased ones were cloned)
            scalar_t* __restrict dd = d + a0;
            const scalar_t* __restrict ss = src + a0;
            for (int64_t a = 0; a < a1 - a0; ++a)
              dd[a] = scalar_t(opmath_t<scalar_t>(dd[a]) + opmath_t<scalar_t>(ss[a]));
          } else {
            for (int64_t a = a0; a < a1; ++a) {
              scalar_t& x = d[p.after_off[size_t(a)]];
              x = scalar_t(opmath_t<scalar_t>(x) + opmath_t<scalar_t>(src[a]));
            }
          }
        }
      });
    } else {
      parallel_for(0, nb * m, std::max<int64_t>(1, 32768 / na), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) row(r);
      });
    }
  });
}

// Two passes over fixed chunks of 64K elements, threads taking chunks: count each chunk's
// nonzeros, then (after a prefix sum) write each chunk's coordinates at its place, a coordinate
// vector stepped per element from the chunk's first (1-d: the index itself). One pass on one
// thread with a byte per element took nonzero of 1M bools 10 ms (PyTorch 3.3).
Tensor nonzero(const Tensor& self) {
  const Tensor c = self.contiguous();
  const int64_t n = c.numel(), nd = self.dim();
  const DimVector sizes(self.sizes().begin(), self.sizes().end());
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> start(size_t(chunks + 1), 0);
  Tensor out;
  RT_DISPATCH_ALL(self.dtype(), "nonzero", [&] {
    using op_t = opmath_t<scalar_t>;
    const scalar_t* p = n ? c.data_ptr<scalar_t>() : nullptr;
    auto hit = [p](int64_t i) { return op_t(p[i]) != op_t(0); };
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        int64_t count = 0;
        for (int64_t i = k * kChunk, end = std::min(n, i + kChunk); i < end; ++i) count += hit(i);
        start[size_t(k + 1)] = count;
      }
    });
    for (int64_t k = 0; k < chunks; ++k) start[size_t(k + 1)] += start[size_t(k)];
    out = make_empty({start[size_t(chunks)], nd}, kLong, self.device());
    if (out.numel() == 0) return;
    int64_t* o = out.data_ptr<int64_t>();
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      DimVector coord(size_t(nd), 0);
      for (int64_t k = b; k < e; ++k) {
        int64_t* w = o + start[size_t(k)] * nd;
        const int64_t i0 = k * kChunk, i1 = std::min(n, i0 + kChunk);
        if (nd == 1) {
          for (int64_t i = i0; i < i1; ++i)
            if (hit(i)) *w++ = i;
          continue;
        }
        for (int64_t d = nd - 1, r = i0; d >= 0; --d) {
          coord[size_t(d)] = r % sizes[size_t(d)];
          r /= sizes[size_t(d)];
        }
        for (int64_t i = i0; i < i1; ++i) {
          if (hit(i))
            for (int64_t d = 0; d < nd; ++d) *w++ = coord[size_t(d)];
          for (int64_t d = nd - 1; d >= 0; --d) {
            if (++coord[size_t(d)] < sizes[size_t(d)]) break;
            coord[size_t(d)] = 0;
          }
        }
      }
    });
  });
  return out;
}

Tensor repeat_interleave_counts(const Tensor& repeats, std::optional<int64_t> output_size) {
  RT_CHECK(repeats.dim() <= 1, "repeat_interleave: repeats must be 0-dim or 1-dim tensor (got "
           "shape ", repeats.sizes(), ")");
  RT_CHECK(repeats.dtype() == kLong || repeats.dtype() == kInt, "repeat_interleave: repeats has "
           "to be Long or Int tensor (got ", repeats.dtype(), ")");
  Tensor r = repeats.reshape({-1}).to(kLong).contiguous();
  const int64_t* rp = r.data_ptr<int64_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < r.numel(); ++i) {
    RT_CHECK(rp[i] >= 0, "repeat_interleave: repeats can not be negative (got ", rp[i], ")");
    total += rp[i];
  }
  if (output_size)
    RT_CHECK(*output_size == total, "repeat_interleave: allocated size does not match required "
             "size (output_size ", *output_size, ", repeats sum to ", total, ")");
  Tensor out = make_empty({total}, kLong, repeats.device());
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < r.numel(); ++i)
    for (int64_t k = 0; k < rp[i]; ++k) *o++ = i;
  return repeats.dtype() == kLong ? out : out.to(repeats.dtype());
}

}  // namespace retorch::cpu
