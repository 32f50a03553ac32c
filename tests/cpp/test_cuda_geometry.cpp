// The CUDA kernels' offset calculator (CudaGeometry.h) checked on the host: coalescing, the
// 32-bit choice, and every element's offsets against a plain row-major walk.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "retorch/backend/cuda/CudaGeometry.h"

namespace cb = retorch::cuda_backend;

namespace {

// Each element's offsets by walking the shape in row-major order, next to the calculator's.
template <int N, typename Index>
void expect_offsets_match(const std::vector<int64_t>& shape,
                          const std::vector<std::vector<int64_t>>& strides) {
  const int64_t* p[N];
  for (int k = 0; k < N; ++k) p[k] = strides[k].data();
  cb::Geometry<N> g;
  ASSERT_TRUE(cb::make_geometry<N>(shape.data(), int(shape.size()), p, &g));
  const auto calc = g.template calc<Index>();
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  ASSERT_EQ(g.numel, numel);
  for (int64_t i = 0; i < numel; ++i) {
    Index got[N];
    calc.offsets(Index(i), got);
    for (int k = 0; k < N; ++k) {
      int64_t want = 0;
      for (size_t d = 0; d < shape.size(); ++d) want += idx[d] * strides[k][d];
      ASSERT_EQ(int64_t(got[k]), want) << "element " << i << " operand " << k;
    }
    for (int d = int(shape.size()) - 1; d >= 0; --d) {  // the next row-major index
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d) s[size_t(d)] = s[size_t(d) + 1] * shape[size_t(d) + 1];
  return s;
}

}  // namespace

TEST(CudaGeometry, ContiguousOperandsCoalesceIntoOneDim) {
  const std::vector<int64_t> shape{4, 5, 6};
  const auto s = contiguous_strides(shape);
  const int64_t* p[2] = {s.data(), s.data()};
  cb::Geometry<2> g;
  ASSERT_TRUE(cb::make_geometry<2>(shape.data(), 3, p, &g));
  EXPECT_EQ(g.dims, 1);
  EXPECT_EQ(g.sizes[0], 120);
  EXPECT_TRUE(g.fits_32bit());
}

TEST(CudaGeometry, BroadcastRowKeepsTwoDimsAndSizeOneDimsDrop) {
  const std::vector<int64_t> shape{7, 1, 9};
  const std::vector<int64_t> out = contiguous_strides(shape), row{0, 0, 1}, col{1, 0, 0};
  const int64_t* p[3] = {out.data(), row.data(), col.data()};
  cb::Geometry<3> g;
  ASSERT_TRUE(cb::make_geometry<3>(shape.data(), 3, p, &g));
  EXPECT_EQ(g.dims, 2);
  EXPECT_EQ(g.sizes[0], 9);  // innermost first
  EXPECT_EQ(g.sizes[1], 7);
  expect_offsets_match<3, int32_t>(shape, {out, row, col});
}

TEST(CudaGeometry, RandomStridedBroadcastAndPermutedOperandsMatchARowMajorWalk) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int dims = 1 + int(rng() % 5);
    std::vector<int64_t> shape(static_cast<size_t>(dims));
    for (auto& s : shape) s = int64_t(rng() % 4);  // 0 to 3: empty and size-1 dims included
    std::vector<std::vector<int64_t>> strides(3);
    strides[0] = contiguous_strides(shape);
    for (int k = 1; k < 3; ++k) {
      // Whole operands that merge (contiguous, or contiguous with broadcast dims) as often as
      // ones that do not (a slice's strides per dim).
      const int kind = int(rng() % 3);
      strides[size_t(k)] = contiguous_strides(shape);
      for (int d = 0; d < dims; ++d) {
        if (kind == 1 && rng() % 2) strides[size_t(k)][size_t(d)] = 0;
        if (kind == 2) strides[size_t(k)][size_t(d)] = int64_t(1 + rng() % 40);
      }
    }
    expect_offsets_match<3, int32_t>(shape, strides);
    expect_offsets_match<3, int64_t>(shape, strides);
  }
}

TEST(CudaGeometry, LargeSpansNeed64BitIndices) {
  const std::vector<int64_t> shape{3, 2};
  const std::vector<int64_t> out{2, 1}, far{int64_t(1) << 31, 1};
  const int64_t* p[2] = {out.data(), far.data()};
  cb::Geometry<2> g;
  ASSERT_TRUE(cb::make_geometry<2>(shape.data(), 2, p, &g));
  EXPECT_FALSE(g.fits_32bit());
  expect_offsets_match<2, int64_t>(shape, {out, far});
}

TEST(CudaGeometry, TooManyDimsAfterCoalescingIsRefused) {
  const int dims = cb::kMaxGeometryDims + 1;
  std::vector<int64_t> shape(static_cast<size_t>(dims), 2), s(static_cast<size_t>(dims));
  for (int d = 0; d < dims; ++d) s[size_t(d)] = int64_t(3) << d;  // nothing merges
  const int64_t* p[1] = {s.data()};
  cb::Geometry<1> g;
  EXPECT_FALSE(cb::make_geometry<1>(shape.data(), dims, p, &g));
}
