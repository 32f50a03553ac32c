// Direct float32 convolution with stride 1: 16-channel micro-kernels (AVX2/FMA: 6 positions;
// AVX-512: 12) that read their B operand straight out of a zero-padded copy of the image.
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
// its tile position-major into a small buffer that is copied out, transposed, with the bias. On the 32->64 3x3 28x28 benchmark shape this
// runs at about 85-90% of the FMA peak, against about 80% for OpenBLAS on the im2col GEMM,
// which also pays for im2col. With AVX-512 one zmm holds the 16 channels and the tile grows to
// 12 positions (12 accumulators, one weight load and 12 broadcasts folded into the FMAs per
// tap, each broadcast addressed off its own position pointer); the 32->64 benchmark shape went
// from ~200 to ~225 GFLOP/s on two threads (of a 428 GFLOP/s AVX-512 FMA peak there).

namespace {

constexpr int64_t kOcBlock = 16;   // output channels per micro-kernel tile (two ymm, one zmm)
constexpr int64_t kPosAvx2 = 6;    // positions per AVX2 tile
constexpr int64_t kPosAvx512 = 12;  // positions per AVX-512 tile
constexpr int64_t kMaxPos = 12;

struct Layout {
  int64_t Hp, Wp, plane, P, K, OB, ldt, chunk, image, pos;
  Layout(const DirectConvShape& g, int64_t pos_block) : pos(pos_block) {
    Wp = g.ow + g.dw * (g.kw - 1);
    Hp = g.oh + g.dh * (g.kh - 1);
    plane = Hp * Wp;
    P = g.oh * g.ow;
    K = g.C * g.kh * g.kw;
    OB = (g.O + kOcBlock - 1) / kOcBlock;
    ldt = OB * kOcBlock;
    // Positions per chunk: the chunk's output tile (chunk x ldt floats) stays near 96 KB.
    chunk = std::max<int64_t>(pos, (int64_t(96) << 10) / 4 / ldt / pos * pos);
    image = g.C * plane;  // one group's padded channels
  }
};

}  // namespace

bool direct_conv_applies(const DirectConvShape& g) {
#ifdef RETORCH_DIRECT_CONV
  if (cpu_isa() < CpuIsa::kAvx2) return false;
  if (g.oh <= 0 || g.ow <= 0 || g.C <= 0 || g.O <= 0 || g.kh * g.kw <= 1) return false;
  if (g.top < 0 || g.left < 0) return false;
  Layout l(g, kMaxPos);
  const bool full_tiles = g.O * 4 >= l.ldt * 3;  // at most a quarter of the lanes idle
  const bool fits = l.image * 64 < std::numeric_limits<int32_t>::max();
  return full_tiles && fits && l.K >= 4;
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

// The AVX-512 form: 16 channels in one zmm, NP positions, so NP accumulators; per tap one weight
// load and NP broadcasts, which GCC folds into the FMAs as {1to16} memory operands.
template <int KW, int NP>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void micro_kernel_avx512(
    const float* b, const int32_t* off, int64_t rows, const float* a, const int64_t* d,
    float* out, int64_t ldo) {
  // One pointer per position, so that each broadcast is [p_q + 4*(off + j)]: no address
  // arithmetic per FMA (an index per position cost about 15%).
  const float* pq[NP];
  for (int q = 0; q < NP; ++q) pq[q] = b + d[q];
  __m512 c[NP];
  for (int q = 0; q < NP; ++q) c[q] = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = off[r];
#pragma GCC unroll 8
    for (int j = 0; j < (KW > 0 ? KW : 1); ++j, a += kOcBlock) {
      __m512 w = _mm512_loadu_ps(a);
      asm("" : "+v"(w));  // one load per tap, not one per FMA
#pragma GCC unroll 16
      for (int q = 0; q < NP; ++q)
        c[q] = _mm512_fmadd_ps(_mm512_set1_ps(pq[q][o + j]), w, c[q]);
    }
  }
  for (int q = 0; q < NP; ++q) _mm512_storeu_ps(out + q * ldo, c[q]);
}

// The weights of every group as [groups][OB][K][16] (zero past O), k = (c*kh + i)*kw + j.
std::vector<float> pack_weights(const float* w, int64_t groups, const DirectConvShape& g,
                                const Layout& l, DirectWeight layout) {
  std::vector<float> packed(size_t(groups * l.OB * l.K * kOcBlock), 0.0f);
  const int64_t taps = g.kh * g.kw;
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t o = 0; o < g.O; ++o) {
      float* dst = packed.data() + ((gi * l.OB + o / kOcBlock) * l.K) * kOcBlock + o % kOcBlock;
      for (int64_t c = 0; c < g.C; ++c) {
        for (int64_t t = 0; t < taps; ++t) {
          float v = layout == DirectWeight::kConv
                        ? w[((gi * g.O + o) * g.C + c) * taps + t]
                        : w[((gi * g.C + c) * g.O + o) * taps + (taps - 1 - t)];
          dst[(c * taps + t) * kOcBlock] = v;
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

// The unrolled kernel for rows of kw taps at dilation 1 (common widths), else the per-tap one
// (kw 0); the AVX-512 one where cpu_isa() allows.
template <int KW>
MicroKernel kernel_for(bool avx512) {
  return avx512 ? micro_kernel_avx512<KW, kPosAvx512> : micro_kernel<KW>;
}

MicroKernel pick_kernel(const DirectConvShape& g, bool avx512, bool* per_tap) {
  *per_tap = false;
  if (g.dw == 1 || g.kw == 1) {
    switch (g.kw) {
      case 1: return kernel_for<1>(avx512);
      case 2: return kernel_for<2>(avx512);
      case 3: return kernel_for<3>(avx512);
      case 4: return kernel_for<4>(avx512);
      case 5: return kernel_for<5>(avx512);
      case 7: return kernel_for<7>(avx512);
      default: break;
    }
  }
  *per_tap = true;
  return kernel_for<0>(avx512);
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
// padded copy.
void run_chunk(MicroKernel kernel, const float* padded, const float* packed, const int32_t* off,
               int64_t rows, const float* bias, float* y, int64_t groups, const DirectConvShape& g, const Layout& l, int64_t p0,
               int64_t p1, float* tile) {
  // Where each position reads the padded image (for tap 0); a last partial tile repeats the
  // final position and its extra rows are not copied out.
  auto padded_index = [&](int64_t p) {
    p = std::min(p, l.P - 1);
    return p / g.ow * l.Wp + p % g.ow;
  };
  for (int64_t gi = 0; gi < groups; ++gi) {
    const float* img = padded + gi * l.image;
    for (int64_t ob = 0; ob < l.OB; ++ob) {
      const float* a = packed + (gi * l.OB + ob) * l.K * kOcBlock;
      for (int64_t p = p0; p < p1; p += l.pos) {
        const int64_t base = padded_index(p);
        int64_t d[kMaxPos];
        for (int64_t q = 0; q < l.pos; ++q) d[q] = padded_index(p + q) - base;
        kernel(img + base, off, rows, a, d, tile + (p - p0) * l.ldt + ob * kOcBlock, l.ldt);
      }
    }
    copy_out(tile, l.ldt, bias ? bias + gi * g.O : nullptr, y + gi * g.O * l.P, g.O, l.P, p0, p1);
  }
}

}  // namespace

void direct_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                   int64_t groups, const DirectConvShape& g, DirectWeight layout) {
  const bool avx512 = cpu_isa() >= CpuIsa::kAvx512;
  const Layout l(g, avx512 ? kPosAvx512 : kPosAvx2);
  const std::vector<float> packed = pack_weights(w, groups, g, l, layout);
  // Offsets into the padded image: per tap for the generic kernel, per kernel row otherwise.
  bool per_tap = false;
  const MicroKernel kernel = pick_kernel(g, avx512, &per_tap);
  const int64_t rows = per_tap ? l.K : g.C * g.kh;
  std::vector<int32_t> off;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < (per_tap ? g.kw : 1); ++j)
        off.push_back(int32_t(c * l.plane + i * g.dh * l.Wp + j * g.dw));
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
      for (int64_t ch = c0; ch < c1; ++ch)
        run_chunk(kernel, padded, packed.data(), off.data(), rows, bias, y + n * out_size, groups,
                  g, l, ch * l.chunk, std::min(l.P, (ch + 1) * l.chunk), tile.data());
    }
  });
}


// Note [Direct weight gradient]
// gw[o, k] = sum over images and positions of go[o, oy, ox] * Z[off_k + oy*Wp + ox], Z the
// zero-padded image and off_k tap k's offset (Note [Direct convolution]). Spread onto the padded
// grid (rows of Wp, the last Wp - ow columns of each row masked off), the output gradient and
// every tap's view of Z are both contiguous along positions, so the weight gradient needs no
// im2col: an AVX-512 tile of 4 output channels x NK taps (NK of 4, 5 or 6, whichever wastes
// fewest taps) keeps 4*NK zmm sums; per 16 positions it loads 4 gradient vectors and NK image
// vectors and runs 4*NK masked FMAs (masked, not zero-filled, so that an inf in the image
// outside the window does not turn into inf * 0 = NaN). Each thread takes a fixed share of
// whole images into its own partial sums (blocks of four images per tile pass), added at the end
// in thread order like the im2col path's. Against im2col + OpenBLAS on two threads: 81 -> 169 GFLOP/s on the seed ConvNet's
// 16->32 5x5 layer, 105 -> 132 on its 1->16 one, 162 -> 205 on the 32->64 3x3 benchmark shape.

namespace {

constexpr int kGradO = 4;  // output channels per weight-gradient tile

// acc[o][k] += sum_b,s masks[s] ? g_b[o][16s..] * z_b[off[k] + 16s..] : 0 over nb images (g_b =
// g + b*gstride, z_b = z + b*zstride), then gw[o*ldw + k] += the sums, for o < no (rows past no
// repeat the last one and are not written) and k < nk. Summing several images before the
// horizontal sums keeps those (4*NK per tile) small next to the FMAs.
template <int NK>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void grad_tile(
    const float* g, int64_t ldg, int64_t gstride, int64_t no, const float* z, int64_t zstride,
    int64_t nb, const int32_t* off, int64_t nk, const uint16_t* masks, int64_t steps, float* gw,
    int64_t ldw) {
  __m512 acc[kGradO][NK];
  for (int o = 0; o < kGradO; ++o)
    for (int k = 0; k < NK; ++k) acc[o][k] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const float* gp[kGradO];
    for (int o = 0; o < kGradO; ++o) gp[o] = g + b * gstride + std::min<int64_t>(o, no - 1) * ldg;
    const float* zp[NK];
    for (int k = 0; k < NK; ++k) zp[k] = z + b * zstride + off[std::min<int64_t>(k, nk - 1)];
    for (int64_t s = 0; s < steps; ++s) {
      const __mmask16 m = masks[s];
      __m512 gv[kGradO];
      for (int o = 0; o < kGradO; ++o) gv[o] = _mm512_loadu_ps(gp[o] + 16 * s);
#pragma GCC unroll 8
      for (int k = 0; k < NK; ++k) {
        const __m512 v = _mm512_loadu_ps(zp[k] + 16 * s);
        for (int o = 0; o < kGradO; ++o)
          acc[o][k] = _mm512_mask3_fmadd_ps(gv[o], v, acc[o][k], m);
      }
    }
  }
  for (int o = 0; o < no && o < kGradO; ++o)
    for (int k = 0; k < nk && k < NK; ++k) gw[o * ldw + k] += _mm512_reduce_add_ps(acc[o][k]);
}

using GradTile = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                          const int32_t*, int64_t, const uint16_t*, int64_t, float*, int64_t);

constexpr int64_t kGradImages = 4;  // images summed per tile before its horizontal sums

// The tile width among 4, 5, 6 that leaves the fewest taps idle in the last tile (wider on ties).
int64_t pick_grad_taps(int64_t K) {
  int64_t best = 6, waste = (6 - K % 6) % 6;
  for (int64_t nk : {5, 4}) {
    const int64_t w = (nk - K % nk) % nk;
    if (w < waste) best = nk, waste = w;
  }
  return best;
}

}  // namespace

bool direct_weight_grad_applies(const DirectConvShape& g) {
  if (cpu_isa() < CpuIsa::kAvx512) return false;
  if (g.oh <= 0 || g.ow <= 0 || g.C <= 0 || g.O <= 0 || g.top < 0 || g.left < 0) return false;
  const Layout l(g, kMaxPos);
  // Enough positions per tap to amortize the tile's horizontal sums, and offsets in 32 bits.
  return g.oh * g.ow >= 64 && l.image * 64 < std::numeric_limits<int32_t>::max();
}

void direct_conv2d_weight_grad(const float* go, const float* x, float* gw, int64_t N,
                               int64_t groups, const DirectConvShape& g) {
  const Layout l(g, kMaxPos);
  const int64_t K = l.K, Q = g.oh * l.Wp, steps = (Q + 15) / 16, ldg = steps * 16;
  const int64_t nk = pick_grad_taps(K);
  const GradTile tile = nk == 6 ? grad_tile<6> : nk == 5 ? grad_tile<5> : grad_tile<4>;
  std::vector<int32_t> off;
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) off.push_back(int32_t(c * l.plane + i * g.dh * l.Wp + j * g.dw));
  off.resize(size_t((K + nk - 1) / nk * nk), off.back());
  // Lane masks per 16 positions of the padded grid: real columns (ox < ow) of real rows.
  std::vector<uint16_t> masks(size_t(steps), 0);
  for (int64_t q = 0; q < Q; ++q)
    if (q % l.Wp < g.ow) masks[size_t(q / 16)] |= uint16_t(1u << (q % 16));
  // Reads reach (kw - 1) * dw + 15 floats past the last padded plane: a zeroed slack.
  const int64_t slack = g.dw * (g.kw - 1) + 16;
  const int64_t O = groups * g.O, in_size = groups * g.C * g.H * g.W, out_size = O * g.oh * g.ow;
  const int64_t zsize = groups * l.image + slack, gsize = O * ldg;
  const int64_t blocks = (N + kGradImages - 1) / kGradImages;
  const int64_t threads = std::min<int64_t>(get_num_threads(), blocks);
  std::vector<std::vector<float>> partial(static_cast<size_t>(threads));
  // Thread t takes blocks t, t + threads, ... in order (not whichever is free), so that each
  // partial sum, and the gradient, is the same from run to run (a resumed run stays bit-exact).
  parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      // Columns past ow of the spread gradient are never written: they stay 0 (and are masked).
      // The gradient rows start on cache lines (ldg is a multiple of 16 floats), so that only
      // the image loads, at every tap's offset, straddle lines.
      std::vector<float> z(size_t(kGradImages * zsize), 0.0f);
      std::vector<float> gbuf(size_t(kGradImages * gsize + 16), 0.0f);
      float* gp = gbuf.data() + (16 - (reinterpret_cast<uintptr_t>(gbuf.data()) / 4) % 16) % 16;
      std::vector<float>& acc = partial[size_t(t)];
      acc.assign(size_t(O * K), 0.0f);
      for (int64_t blk = t; blk < blocks; blk += threads) {
        const int64_t n0 = blk * kGradImages, nb = std::min(kGradImages, N - n0);
        for (int64_t b = 0; b < nb; ++b) {
          pad_image(x + (n0 + b) * in_size, groups, g, l, z.data() + b * zsize);
          spread_rows(go + (n0 + b) * out_size, g.ow, O, g.oh, g.ow, gp + b * gsize, ldg,
                      l.Wp);
        }
        for (int64_t gi = 0; gi < groups; ++gi)
          for (int64_t o0 = 0; o0 < g.O; o0 += kGradO)
            for (int64_t k0 = 0; k0 < K; k0 += nk)
              tile(gp + (gi * g.O + o0) * ldg, ldg, gsize, std::min<int64_t>(kGradO, g.O - o0),
                   z.data() + gi * l.image, zsize, nb, off.data() + k0, std::min(nk, K - k0),
                   masks.data(), steps, acc.data() + (gi * g.O + o0) * K + k0, K);
      }
    }
  });
  std::fill(gw, gw + O * K, 0.0f);
  for (const std::vector<float>& acc : partial)
    for (size_t i = 0; i < acc.size(); ++i) gw[i] += acc[i];
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
