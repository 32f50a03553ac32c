// Direct float32 convolution with stride 1: micro-kernels (AVX2/FMA, AVX-512) that read their
// image operand straight out of a zero-padded copy of the image, and its weight gradient.
#include "retorch/backend/cpu/ConvDirect.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <vector>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Error.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define RETORCH_DIRECT_CONV 1
#endif

namespace retorch::cpu {

// Note [Direct convolution]
// A stride-1 convolution of a zero-padded image Z (C x Hp x Wp, Wp = ow + dw*(kw-1)) is a GEMM
// whose B operand needs no im2col: output (oy, ox) reads Z at c*Hp*Wp + i*dh*Wp + j*dw +
// (oy*Wp + ox) for tap (c, i, j), the tap's offset plus the position's own. The micro-kernel
// keeps 16 output channels x 6 positions in 12 ymm accumulators; per tap it loads 16 packed
// weights and broadcasts 6 image values from the tap's offset plus each position's (the
// OpenBLAS Haswell kernel's shape, with the broadcast addresses as its only im2col), and writes
// its tile position-major into a small buffer that is copied out, transposed, with the bias. On
// the 32->64 3x3 28x28 benchmark shape this runs at about 85-90% of the AVX2 FMA peak, against
// about 80% for OpenBLAS on the im2col GEMM, which also pays for im2col. With AVX-512 the tile
// is 64 x 6, 32 x 12 or 16 x 12 channels x positions (four, two or one zmm of channels; picked by
// the output channels, pick_tiling), each broadcast addressed off its own position pointer: the
// 32->64 benchmark shape went from ~200 GFLOP/s (AVX2 tile) to ~270 on two threads, ~78% of the
// 428 GFLOP/s AVX-512 FMA peak inside the micro-kernel (one zmm of channels gave ~225).
// With one or two zmm of channels and kernel rows of 3 or 5 taps the sliding tile (Note [Sliding
// taps]) runs instead: the seed ConvNet's 16->32 5x5 layer 1.8 -> 1.6 ms and its 32->16 input
// gradient 2.1 -> 1.6 ms (batch 100, 2 threads).

namespace {

constexpr int64_t kOcBlock = 16;  // output channels per AVX2 tile (two ymm), and per zmm
constexpr int64_t kPosAvx2 = 6;   // positions per AVX2 tile
constexpr int64_t kMaxPos = 12;

// A micro-kernel tile: ocb output channels (16 per zmm) x pos positions.
struct Tiling {
  int64_t ocb, pos;
};
constexpr Tiling kAvx2Tiling{kOcBlock, kPosAvx2};
// AVX-512 tiles keep 12 or 24 accumulators: 16 x 12, 32 x 12 and 64 x 6 channels x positions.
constexpr Tiling kAvx512Tilings[] = {{64, 6}, {32, 12}, {16, 12}};

struct Layout {
  int64_t Hp, Wp, plane, P, K, OB, ldt, chunk, image, ocb, pos;
  Layout(const DirectConvShape& g, Tiling t) : ocb(t.ocb), pos(t.pos) {
    Wp = g.ow + g.dw * (g.kw - 1);
    Hp = g.oh + g.dh * (g.kh - 1);
    plane = Hp * Wp;
    P = g.oh * g.ow;
    K = g.C * g.kh * g.kw;
    OB = (g.O + ocb - 1) / ocb;
    ldt = OB * ocb;
    // Positions per chunk: the chunk's output tile (chunk x ldt floats) stays near 96 KB.
    chunk = std::max<int64_t>(pos, (int64_t(96) << 10) / 4 / ldt / pos * pos);
    image = g.C * plane;  // one group's padded channels
  }
};

// What both direct kernels need of a shape: a non-empty output, padding in front, 16-channel
// tiles at most a quarter idle, and offsets of a padded image that fit in 32 bits.
bool direct_shape_ok(const DirectConvShape& g) {
  if (g.oh <= 0 || g.ow <= 0 || g.C <= 0 || g.O <= 0 || g.top < 0 || g.left < 0) return false;
  const Layout l(g, {kOcBlock, kMaxPos});
  return g.O * 4 >= l.ldt * 3 && l.image * 64 < std::numeric_limits<int32_t>::max();
}

// Tap offsets into the padded image, k = (c*kh + i)*kw + j: one per tap, or (per_tap false) one
// per kernel row, whose kw taps the unrolled kernels step through themselves.
std::vector<int32_t> tap_offsets(const DirectConvShape& g, const Layout& l, bool per_tap) {
  std::vector<int32_t> off;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < (per_tap ? g.kw : 1); ++j)
        off.push_back(int32_t(c * l.plane + i * g.dh * l.Wp + j * g.dw));
  return off;
}

}  // namespace

bool direct_conv_applies(const DirectConvShape& g) {
#ifdef RETORCH_DIRECT_CONV
  return cpu_isa() >= CpuIsa::kAvx2 && g.kh * g.kw > 1 && g.C * g.kh * g.kw >= 4 &&
         direct_shape_ok(g);
#else
  (void)g;
  return false;
#endif
}

#ifdef RETORCH_DIRECT_CONV

namespace {

// out[q * ldo + r] = sum_k a[k*16 + r] * b[off_k + d[q]] for q < 6, r < 16: 16 channels of 6
// positions, whose offsets d[q] from the first one are consecutive except across a row end.
// Tap offsets: with KW == 0, off_k = off[k] (rows == K); with KW > 0 (dilation 1 along the
// row), off holds one offset per kernel row and its KW taps follow at +0 .. +KW-1, unrolled, so
// that the inner loop loads no offsets (about 10% faster on 3x3).
template <int KW>
inline void micro_kernel(const float* b, const int32_t* off, int64_t rows, const float* a,
                         const int64_t* d, float* out, int64_t ldo) {
  const int64_t d1 = d[1], d2 = d[2], d3 = d[3], d4 = d[4], d5 = d[5];
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t r = 0; r < rows; ++r) {
    const float* br = b + off[r];
#pragma GCC unroll 8
    for (int j = 0; j < (KW > 0 ? KW : 1); ++j, a += kOcBlock) {
      const float* bk = br + j;
      __m256 a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8);
      // Keeps the weights in registers: unrolled, GCC would fold their loads into each FMA.
      asm("" : "+x"(a0), "+x"(a1));
      __m256 v = _mm256_broadcast_ss(bk);
      c00 = _mm256_fmadd_ps(v, a0, c00);
      c01 = _mm256_fmadd_ps(v, a1, c01);
      v = _mm256_broadcast_ss(bk + d1);
      c10 = _mm256_fmadd_ps(v, a0, c10);
      c11 = _mm256_fmadd_ps(v, a1, c11);
      v = _mm256_broadcast_ss(bk + d2);
      c20 = _mm256_fmadd_ps(v, a0, c20);
      c21 = _mm256_fmadd_ps(v, a1, c21);
      v = _mm256_broadcast_ss(bk + d3);
      c30 = _mm256_fmadd_ps(v, a0, c30);
      c31 = _mm256_fmadd_ps(v, a1, c31);
      v = _mm256_broadcast_ss(bk + d4);
      c40 = _mm256_fmadd_ps(v, a0, c40);
      c41 = _mm256_fmadd_ps(v, a1, c41);
      v = _mm256_broadcast_ss(bk + d5);
      c50 = _mm256_fmadd_ps(v, a0, c50);
      c51 = _mm256_fmadd_ps(v, a1, c51);
    }
  }
  const __m256 tile[6][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                             {c30, c31}, {c40, c41}, {c50, c51}};
  for (int q = 0; q < 6; ++q) {
    _mm256_storeu_ps(out + q * ldo, tile[q][0]);
    _mm256_storeu_ps(out + q * ldo + 8, tile[q][1]);
  }
}

// The AVX-512 form: NZ zmm of 16 channels x NP positions, NZ*NP accumulators; per tap NZ weight
// loads and NP broadcasts (folded into the FMAs as {1to16} memory operands when NZ is 1).
template <int KW, int NZ, int NP>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void micro_kernel_avx512(
    const float* b, const int32_t* off, int64_t rows, const float* a, const int64_t* d,
    float* out, int64_t ldo) {
  // One pointer per position, so that each broadcast is [p_q + 4*(off + j)]: no address
  // arithmetic per FMA (an index per position cost about 15%).
  const float* pq[NP];
  for (int q = 0; q < NP; ++q) pq[q] = b + d[q];
  __m512 c[NP][NZ];
  for (int q = 0; q < NP; ++q)
    for (int z = 0; z < NZ; ++z) c[q][z] = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = off[r];
#pragma GCC unroll 8
    for (int j = 0; j < (KW > 0 ? KW : 1); ++j, a += 16 * NZ) {
      __m512 w[NZ];
      for (int z = 0; z < NZ; ++z) {
        w[z] = _mm512_loadu_ps(a + 16 * z);
        asm("" : "+v"(w[z]));  // one load per tap, not one per FMA
      }
#pragma GCC unroll 16
      for (int q = 0; q < NP; ++q) {
        const __m512 v = _mm512_set1_ps(pq[q][o + j]);
        for (int z = 0; z < NZ; ++z) c[q][z] = _mm512_fmadd_ps(v, w[z], c[q][z]);
      }
    }
  }
  for (int q = 0; q < NP; ++q)
    for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(out + q * ldo + 16 * z, c[q][z]);
}

// Note [Sliding taps]
// Along a kernel row (dilation 1), tap j of position q reads the image at q + j: the same value
// is tap 0 of position q + j. micro_kernel_avx512 broadcasts it once per (tap, position) pair,
// and each broadcast feeds NZ FMAs: with 16 or 32 output channels that is one load per FMA or
// two, and the loads bound the tile. sliding_kernel keeps a kernel row's KW weight vectors in
// registers and sweeps the NP + KW - 1 image values under NP consecutive positions of one output
// row, broadcasting each once into the (up to KW) positions it is a tap of: per kernel row
// KW*NZ weight loads and NP + KW - 1 broadcasts for NP*KW*NZ FMAs. Positions are whole tiles
// within a row; a row's last tile may overlap the one before it (writing the same values).
template <int KW, int NZ, int NP>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void sliding_kernel(
    const float* b, const int32_t* off, int64_t rows, const float* a, float* out, int64_t ldo) {
  __m512 c[NP][NZ];
  for (int q = 0; q < NP; ++q)
    for (int z = 0; z < NZ; ++z) c[q][z] = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r, a += KW * NZ * 16) {
    const float* zr = b + off[r];
    __m512 w[KW][NZ];
    for (int j = 0; j < KW; ++j)
      for (int z = 0; z < NZ; ++z) {
        w[j][z] = _mm512_loadu_ps(a + (j * NZ + z) * 16);
        asm("" : "+v"(w[j][z]));  // one load per weight vector, not one per FMA
      }
#pragma GCC unroll 32
    for (int x = 0; x < NP + KW - 1; ++x) {
      __m512 v = _mm512_set1_ps(zr[x]);
      asm("" : "+v"(v));  // one broadcast per image value
#pragma GCC unroll 8
      for (int j = 0; j < KW; ++j) {
        const int q = x - j;
        if (q < 0 || q >= NP) continue;
        for (int z = 0; z < NZ; ++z) c[q][z] = _mm512_fmadd_ps(v, w[j][z], c[q][z]);
      }
    }
  }
  for (int q = 0; q < NP; ++q)
    for (int z = 0; z < NZ; ++z) _mm512_storeu_ps(out + q * ldo + 16 * z, c[q][z]);
}

// The weights of every group as [groups][OB][K][ocb] (zero past O), k = (c*kh + i)*kw + j.
std::vector<float> pack_weights(const float* w, int64_t groups, const DirectConvShape& g,
                                const Layout& l, DirectWeight layout) {
  std::vector<float> packed(size_t(groups * l.OB * l.K * l.ocb), 0.0f);
  const int64_t taps = g.kh * g.kw;
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t o = 0; o < g.O; ++o) {
      float* dst = packed.data() + ((gi * l.OB + o / l.ocb) * l.K) * l.ocb + o % l.ocb;
      for (int64_t c = 0; c < g.C; ++c) {
        for (int64_t t = 0; t < taps; ++t) {
          float v = layout == DirectWeight::kConv
                        ? w[((gi * g.O + o) * g.C + c) * taps + t]
                        : w[((gi * g.C + c) * g.O + o) * taps + (taps - 1 - t)];
          dst[(c * taps + t) * l.ocb] = v;
        }
      }
    }
  }
  return packed;
}

// dst[p * ldd + r * wp + c] = src[(p * rows + r) * lds + c] for c < cols, r < rows, p < planes:
// image rows copied into a padded grid as masked vector copies (a memcpy call per row of 28
// floats cost as much as the tiles of a one-channel convolution).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) void spread_rows(
    const float* src, int64_t lds, int64_t planes, int64_t rows, int64_t cols, float* dst,
    int64_t ldd, int64_t wp) {
  const __mmask16 tail = __mmask16((1u << (cols % 16)) - 1);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* s = src + (p * rows + r) * lds;
      float* d = dst + p * ldd + r * wp;
      int64_t c = 0;
      for (; c + 16 <= cols; c += 16) _mm512_storeu_ps(d + c, _mm512_loadu_ps(s + c));
      if (tail) _mm512_mask_storeu_ps(d + c, tail, _mm512_maskz_loadu_ps(tail, s + c));
    }
  }
}

// Copies the C*groups channels of one image into its zero-padded form (one Layout::image
// stride per group).
void pad_image(const float* x, int64_t groups, const DirectConvShape& g, const Layout& l,
               float* buf) {
  std::fill(buf, buf + groups * l.image, 0.0f);
  const int64_t rows = std::min(g.H, l.Hp - g.top), cols = std::min(g.W, l.Wp - g.left);
  if (rows <= 0 || cols <= 0) return;
  if (cpu_isa() >= CpuIsa::kAvx512 && rows == g.H) {
    for (int64_t gi = 0; gi < groups; ++gi)
      spread_rows(x + gi * g.C * g.H * g.W, g.W, g.C, rows, cols,
                  buf + gi * l.image + g.top * l.Wp + g.left, l.plane, l.Wp);
    return;
  }
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t c = 0; c < g.C; ++c) {
      const float* src = x + (gi * g.C + c) * g.H * g.W;
      float* dst = buf + gi * l.image + c * l.plane + g.top * l.Wp + g.left;
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(dst + r * l.Wp, src + r * g.W, size_t(cols) * sizeof(float));
    }
  }
}

using MicroKernel = void (*)(const float*, const int32_t*, int64_t, const float*, const int64_t*,
                            float*, int64_t);

// The tile for this shape: AVX2's, or the widest AVX-512 one that leaves at most a quarter of
// its channels idle (16 x 12 always qualifies when direct_conv_applies).
Tiling pick_tiling(const DirectConvShape& g, bool avx512) {
  if (!avx512) return kAvx2Tiling;
  for (const Tiling& t : kAvx512Tilings)
    if (g.O * 4 >= (g.O + t.ocb - 1) / t.ocb * t.ocb * 3) return t;
  return kAvx512Tilings[2];
}

// The unrolled kernel for rows of kw taps at dilation 1 (common widths), else the per-tap one
// (kw 0), for the tiling t.
template <int KW>
MicroKernel kernel_for(Tiling t) {
  if (t.ocb == kAvx2Tiling.ocb && t.pos == kAvx2Tiling.pos) return micro_kernel<KW>;
  if (t.ocb == 64) return micro_kernel_avx512<KW, 4, 6>;
  if (t.ocb == 32) return micro_kernel_avx512<KW, 2, 12>;
  return micro_kernel_avx512<KW, 1, 12>;
}

MicroKernel pick_kernel(const DirectConvShape& g, Tiling t, bool* per_tap) {
  *per_tap = false;
  if (g.dw == 1 || g.kw == 1) {
    switch (g.kw) {
      case 1: return kernel_for<1>(t);
      case 2: return kernel_for<2>(t);
      case 3: return kernel_for<3>(t);
      case 4: return kernel_for<4>(t);
      case 5: return kernel_for<5>(t);
      case 7: return kernel_for<7>(t);
      default: break;
    }
  }
  *per_tap = true;
  return kernel_for<0>(t);
}

using SlidingKernel = void (*)(const float*, const int32_t*, int64_t, const float*, float*,
                              int64_t);

// The sliding tile for this shape (Note [Sliding taps]): AVX-512, kernel rows of 3 or 5 taps at
// dilation 1, one or two zmm of output channels (pick_tiling's 16- and 32-channel tiles), and the
// positions per tile that waste the fewest on a row; kernel nullptr where none applies.
struct Sliding {
  SlidingKernel kernel = nullptr;
  Tiling tiling{0, 0};
};

template <int KW>
Sliding sliding_for(int64_t ocb, int64_t ow) {
  struct Option {
    int64_t ocb, np;
    SlidingKernel kernel;
  };
  static constexpr Option kOptions[] = {
      {16, 16, sliding_kernel<KW, 1, 16>}, {16, 14, sliding_kernel<KW, 1, 14>},
      {16, 7, sliding_kernel<KW, 1, 7>},   {32, 8, sliding_kernel<KW, 2, 8>},
      {32, 7, sliding_kernel<KW, 2, 7>}};
  Sliding best;
  int64_t best_work = 0;
  for (const Option& o : kOptions) {
    if (o.ocb != ocb || ow < o.np) continue;
    const int64_t work = (ow + o.np - 1) / o.np * o.np;  // positions computed per row
    if (!best.kernel || work < best_work) best = {o.kernel, {o.ocb, o.np}}, best_work = work;
  }
  return best;
}

Sliding pick_sliding(const DirectConvShape& g, Tiling t) {
  if (g.dw != 1 || (t.ocb != 16 && t.ocb != 32)) return {};
  if (g.kw == 3) return sliding_for<3>(t.ocb, g.ow);
  if (g.kw == 5) return sliding_for<5>(t.ocb, g.ow);
  return {};
}

// Transposes the 8x8 block r[0..8) in place (r[i] lane j <-> r[j] lane i).
inline void transpose8(__m256* r) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// y[o, p] = tile[p - p0, o] + bias[o] for o < O and p in [p0, p1): the tile transposed in 8x8
// blocks, the last positions one by one.
void copy_out(const float* tile, int64_t ldt, const float* bias, float* y, int64_t O, int64_t P,
              int64_t p0, int64_t p1) {
  int64_t p = p0;
  for (; p + 8 <= p1; p += 8) {
    for (int64_t o0 = 0; o0 < O; o0 += 8) {
      __m256 r[8];
      for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(tile + (p - p0 + q) * ldt + o0);
      transpose8(r);
      for (int64_t j = 0; j < std::min<int64_t>(8, O - o0); ++j) {
        const __m256 b = _mm256_set1_ps(bias ? bias[o0 + j] : 0.0f);
        _mm256_storeu_ps(y + (o0 + j) * P + p, _mm256_add_ps(r[j], b));
      }
    }
  }
  for (; p < p1; ++p)
    for (int64_t o = 0; o < O; ++o) y[o * P + p] = tile[(p - p0) * ldt + o] + (bias ? bias[o] : 0.0f);
}

// Computes output positions [p0, p1) (of oh*ow) of every output channel of one image from its
// padded copy: tiles(img, a, tile_out) fills the chunk's tile for one group's padded image img
// and one output-channel block's packed weights a (tile_out: that block's first channel of the
// chunk's first position), then the tile is copied out, transposed, with the bias.
template <typename Tiles>
void run_blocks(const float* padded, const float* packed, const float* bias, float* y,
                int64_t groups, const DirectConvShape& g, const Layout& l, int64_t p0, int64_t p1,
                float* tile, const Tiles& tiles) {
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t ob = 0; ob < l.OB; ++ob)
      tiles(padded + gi * l.image, packed + (gi * l.OB + ob) * l.K * l.ocb, tile + ob * l.ocb);
    copy_out(tile, l.ldt, bias ? bias + gi * g.O : nullptr, y + gi * g.O * l.P, g.O, l.P, p0, p1);
  }
}

// run_blocks with the micro-kernel's tiles of l.pos positions in order (a last partial tile
// repeats the final position, and its extra rows are not copied out).
void run_chunk(MicroKernel kernel, const float* padded, const float* packed, const int32_t* off,
               int64_t rows, const float* bias, float* y, int64_t groups,
               const DirectConvShape& g, const Layout& l, int64_t p0, int64_t p1, float* tile) {
  auto padded_index = [&](int64_t p) {  // where position p reads the padded image for tap 0
    p = std::min(p, l.P - 1);
    return p / g.ow * l.Wp + p % g.ow;
  };
  run_blocks(padded, packed, bias, y, groups, g, l, p0, p1, tile,
             [&](const float* img, const float* a, float* out) {
    for (int64_t p = p0; p < p1; p += l.pos) {
      const int64_t base = padded_index(p);
      int64_t d[kMaxPos];
      for (int64_t q = 0; q < l.pos; ++q) d[q] = padded_index(p + q) - base;
      kernel(img + base, off, rows, a, d, out + (p - p0) * l.ldt, l.ldt);
    }
  });
}

// run_blocks with sliding tiles (Note [Sliding taps]): output rows [p0 / ow, p1 / ow), each in
// tiles of np positions, the last one moved back to end at the row's end.
void run_sliding_chunk(SlidingKernel kernel, int64_t np, const float* padded,
                       const float* packed, const int32_t* off, int64_t rows, const float* bias,
                       float* y, int64_t groups, const DirectConvShape& g, const Layout& l,
                       int64_t p0, int64_t p1, float* tile) {
  run_blocks(padded, packed, bias, y, groups, g, l, p0, p1, tile,
             [&](const float* img, const float* a, float* out) {
    for (int64_t oy = p0 / g.ow; oy < p1 / g.ow; ++oy)
      for (int64_t x0 = 0; x0 < g.ow; x0 += np) {
        const int64_t xs = std::min(x0, g.ow - np);
        kernel(img + oy * l.Wp + xs, off, rows, a, out + (oy * g.ow + xs - p0) * l.ldt, l.ldt);
      }
  });
}

}  // namespace

void direct_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                   int64_t groups, const DirectConvShape& g, DirectWeight layout) {
  const bool avx512 = cpu_isa() >= CpuIsa::kAvx512;
  const Sliding sliding = avx512 ? pick_sliding(g, pick_tiling(g, true)) : Sliding{};
  const Tiling tiling = sliding.kernel ? sliding.tiling : pick_tiling(g, avx512);
  Layout l(g, tiling);
  if (sliding.kernel) l.chunk = std::max<int64_t>(1, l.chunk / g.ow) * g.ow;  // whole rows
  const std::vector<float> packed = pack_weights(w, groups, g, l, layout);
  // Offsets into the padded image: per tap for the generic kernel, per kernel row otherwise.
  bool per_tap = false;
  const MicroKernel kernel = sliding.kernel ? nullptr : pick_kernel(g, tiling, &per_tap);
  const int64_t rows = per_tap ? l.K : g.C * g.kh;
  const std::vector<int32_t> off = tap_offsets(g, l, per_tap);
  const int64_t in_size = groups * g.C * g.H * g.W, out_size = groups * g.O * g.oh * g.ow;
  const int64_t chunks = (l.P + l.chunk - 1) / l.chunk;
  const size_t tile_size = size_t(l.chunk * l.ldt);
  // Work units are (image, chunk) pairs handed out one at a time, so that a thread slowed down
  // (a shared machine) takes fewer of them. A thread pads each image it starts; with at least
  // as many images as threads, each thread takes whole images and pads each once.
  const int64_t threads = std::min<int64_t>(get_num_threads(), N * chunks);
  const bool whole_images = N >= threads;
  const int64_t units = whole_images ? N : N * chunks;
  std::vector<float> shared;
  if (!whole_images) {
    shared.resize(size_t(N * groups * l.image));
    for (int64_t n = 0; n < N; ++n)
      pad_image(x + n * in_size, groups, g, l, shared.data() + n * groups * l.image);
  }
  std::atomic<int64_t> next{0};
  parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    std::vector<float> own(whole_images ? size_t(groups * l.image) : 0), tile(tile_size);
    for (int64_t u = next++; u < units; u = next++) {
      const int64_t n = whole_images ? u : u / chunks;
      const float* padded = shared.data() + n * groups * l.image;
      if (whole_images) {
        pad_image(x + n * in_size, groups, g, l, own.data());
        padded = own.data();
      }
      const int64_t c0 = whole_images ? 0 : u % chunks, c1 = whole_images ? chunks : c0 + 1;
      for (int64_t ch = c0; ch < c1; ++ch) {
        const int64_t p0 = ch * l.chunk, p1 = std::min(l.P, (ch + 1) * l.chunk);
        if (sliding.kernel)
          run_sliding_chunk(sliding.kernel, tiling.pos, padded, packed.data(), off.data(), rows,
                            bias, y + n * out_size, groups, g, l, p0, p1, tile.data());
        else
          run_chunk(kernel, padded, packed.data(), off.data(), rows, bias, y + n * out_size,
                    groups, g, l, p0, p1, tile.data());
      }
    }
  });
}

// Note [Direct weight gradient]
// gw[o, k] = sum over images and positions (oy, ox) of go[o, oy, ox] * Z[off_k + oy*Wp + ox], Z
// the zero-padded image and off_k tap k's offset (Note [Direct convolution]): a GEMM reducing
// over positions, whose image operand needs no im2col either. The AVX-512 tile is the forward
// kernel's turned around: NZ zmm of 16 output channels x NT taps (64 x 6, 32 x 12 or 16 x 12,
// picked like the forward tiles), accumulated in registers over a band of output rows; per
// position it loads NZ vectors of the output gradient (transposed once per image to
// [position][channel]) and broadcasts the image value under each tap from a pointer per tap.
// Only real positions enter the sums (an inf in the image meets exactly the taps PyTorch's
// would pair it with). Bands of rows keep the gradient slice a tile reads within ~24 KB of L1
// across the tap blocks. Each thread takes a fixed share of whole images into its own partial
// sums, added in thread order at the end (the same gradient from run to run). Against im2col +
// OpenBLAS on two threads: 81 -> 256 GFLOP/s on the seed ConvNet's 16->32 5x5 layer, 105 -> 113
// on its 1->16 one (25 taps in tiles of 12), 162 -> 246 on the 32->64 3x3 benchmark shape;
// PyTorch's oneDNN 150, 68 and 133 there. (A first version summed along the padded grid with
// masked FMAs and horizontal sums per tile: 169, 142 and 205.)

namespace {

// out[t * ldout + c] += sum over rows [oy0, oy1) and ox < ow of g[(oy*ow + ox)*ldo + c] *
// z[off[t] + oy*wp + ox], for t < NT and c < 16 * NZ.
template <int NZ, int NT>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void wgrad_tile(
    const float* g, int64_t ldo, const float* z, const int32_t* off, int64_t oy0, int64_t oy1,
    int64_t ow, int64_t wp, float* out, int64_t ldout) {
  const float* zt[NT];
  for (int t = 0; t < NT; ++t) zt[t] = z + off[t];
  __m512 acc[NT][NZ];
  for (int t = 0; t < NT; ++t)
    for (int c = 0; c < NZ; ++c) acc[t][c] = _mm512_loadu_ps(out + t * ldout + 16 * c);
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const float* grow = g + oy * ow * ldo;
    const int64_t zr = oy * wp;
    for (int64_t ox = 0; ox < ow; ++ox) {
      __m512 w[NZ];
      for (int c = 0; c < NZ; ++c) {
        w[c] = _mm512_loadu_ps(grow + ox * ldo + 16 * c);
        asm("" : "+v"(w[c]));  // one load per position, not one per FMA
      }
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) {
        const __m512 v = _mm512_set1_ps(zt[t][zr + ox]);
        for (int c = 0; c < NZ; ++c) acc[t][c] = _mm512_fmadd_ps(v, w[c], acc[t][c]);
      }
    }
  }
  for (int t = 0; t < NT; ++t)
    for (int c = 0; c < NZ; ++c) _mm512_storeu_ps(out + t * ldout + 16 * c, acc[t][c]);
}

using WgradTile = void (*)(const float*, int64_t, const float*, const int32_t*, int64_t, int64_t,
                           int64_t, int64_t, float*, int64_t);

// dst[p * ldo + o] = src[o * P + p] for o < O, p < P (a channel-major gradient to
// position-major): 8 x 8 blocks transposed in registers, the edges one by one.
void transpose_to_positions(const float* src, int64_t O, int64_t P, float* dst, int64_t ldo) {
  const int64_t O8 = O / 8 * 8, P8 = P / 8 * 8;
  for (int64_t o0 = 0; o0 < O8; o0 += 8) {
    for (int64_t p0 = 0; p0 < P8; p0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (o0 + i) * P + p0);
      transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (p0 + i) * ldo + o0, r[i]);
    }
    for (int64_t o = o0; o < o0 + 8; ++o)
      for (int64_t p = P8; p < P; ++p) dst[p * ldo + o] = src[o * P + p];
  }
  for (int64_t o = O8; o < O; ++o)
    for (int64_t p = 0; p < P; ++p) dst[p * ldo + o] = src[o * P + p];
}

}  // namespace

bool direct_weight_grad_applies(const DirectConvShape& g) {
  return cpu_isa() >= CpuIsa::kAvx512 && direct_shape_ok(g);
}

void direct_conv2d_weight_grad(const float* go, const float* x, float* gw, int64_t N,
                               int64_t groups, const DirectConvShape& g) {
  const Tiling tiling = pick_tiling(g, true);
  const Layout l(g, tiling);
  const int64_t K = l.K, NT = tiling.pos, Kp = (K + NT - 1) / NT * NT, ldo = l.ldt, P = l.P;
  const WgradTile tile = tiling.ocb == 64   ? wgrad_tile<4, 6>
                         : tiling.ocb == 32 ? wgrad_tile<2, 12>
                                            : wgrad_tile<1, 12>;
  std::vector<int32_t> off = tap_offsets(g, l, true);
  off.resize(size_t(Kp), off.back());  // the last tile's extra taps land in rows past K
  // Bands of output rows whose gradient slice (ow x ocb floats a row) stays near 24 KB.
  const int64_t band_rows = std::clamp<int64_t>((int64_t(24) << 10) / (g.ow * l.ocb * 4), 1, g.oh);
  const int64_t bands = (g.oh + band_rows - 1) / band_rows, rows = (g.oh + bands - 1) / bands;
  const int64_t O = groups * g.O, in_size = groups * g.C * g.H * g.W, out_size = O * P;
  const int64_t threads = std::min<int64_t>(get_num_threads(), N);
  std::vector<std::vector<float>> partial(static_cast<size_t>(threads));
  // Thread t takes images t, t + threads, ... in order (not whichever is free), so that each
  // partial sum, and the gradient, is the same from run to run (a resumed run stays bit-exact).
  parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::vector<float> z(size_t(groups * l.image), 0.0f), gt(size_t(groups * P * ldo), 0.0f);
      std::vector<float>& acc = partial[size_t(t)];  // [groups][Kp][ldo]
      acc.assign(size_t(groups * Kp * ldo), 0.0f);
      for (int64_t n = t; n < N; n += threads) {
        pad_image(x + n * in_size, groups, g, l, z.data());
        for (int64_t gi = 0; gi < groups; ++gi)
          transpose_to_positions(go + n * out_size + gi * g.O * P, g.O, P,
                                 gt.data() + gi * P * ldo, ldo);
        for (int64_t gi = 0; gi < groups; ++gi)
          for (int64_t oy0 = 0; oy0 < g.oh; oy0 += rows)
            for (int64_t ob = 0; ob < l.OB; ++ob)
              for (int64_t k0 = 0; k0 < Kp; k0 += NT)
                tile(gt.data() + gi * P * ldo + ob * l.ocb, ldo, z.data() + gi * l.image,
                     off.data() + k0, oy0, std::min(g.oh, oy0 + rows), g.ow, l.Wp,
                     acc.data() + (gi * Kp + k0) * ldo + ob * l.ocb, ldo);
      }
    }
  });
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t k = 0; k < K; ++k) {
        float s = 0.0f;
        for (const std::vector<float>& acc : partial) s += acc[size_t((gi * Kp + k) * ldo + o)];
        gw[(gi * g.O + o) * K + k] = s;
      }
}

#else

void direct_conv2d(const float*, const float*, const float*, float*, int64_t, int64_t,
                   const DirectConvShape&, DirectWeight) {
  RT_CHECK(false, "direct_conv2d: this build has no AVX2/FMA direct convolution kernel");
}

bool direct_weight_grad_applies(const DirectConvShape&) { return false; }

void direct_conv2d_weight_grad(const float*, const float*, float*, int64_t, int64_t,
                               const DirectConvShape&) {
  RT_CHECK(false, "direct_conv2d_weight_grad: this build has no AVX-512 weight-gradient kernel");
}

#endif

}  // namespace retorch::cpu
