// Row convolution: AVX-512 stride-1 convolution kernels whose vectors run along output rows (for
// layers with few output channels), forward and weight gradient.
#include "retorch/backend/cpu/ConvRows.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define RETORCH_ROW_CONV 1
#endif

namespace retorch::cpu {

// Note [Row convolution]
// The direct kernels (Note [Direct convolution]) keep output channels in the vector lanes. With
// 16 output channels and few taps (a first layer's one input channel) their tiles are short and
// spend much of their time storing and transposing: the seed ConvNet's 1->16 5x5 layer ran at
// ~120 GFLOP/s forward and backward. Here the lanes hold 16 consecutive output columns of one
// row instead. A forward tile is R row vectors x OT output channels: per tap it loads the R image
// vectors under it (unaligned, from a zero-padded copy of the image) and broadcasts OT weights,
// R*OT FMAs for R+OT loads, and its accumulators are rows of the NCHW output, stored with a mask
// at a row's end (no transposed copy-out). The weight gradient turns it around: OT channels x NT
// taps accumulate, per row vector, the product of OT output-gradient vectors and NT image
// vectors, and are summed across their lanes once at the end. Lanes past a row's end compute
// values that are thrown away (the gradient masks them to zero on both operands, so an inf in
// the image meets only the positions PyTorch's would pair it with), so the kernels run where at
// least 3/4 of the lanes are real. With many taps the direct tiles win; the applies functions
// below carry the measured crossovers.

#ifdef RETORCH_ROW_CONV

namespace {

constexpr int64_t kLanes = 16;

struct RowLayout {
  int64_t Wp, Hp, plane, K, V, U, P;
  explicit RowLayout(const DirectConvShape& g) {
    Wp = g.ow + g.dw * (g.kw - 1);
    Hp = g.oh + g.dh * (g.kh - 1);
    plane = Hp * Wp;
    K = g.C * g.kh * g.kw;
    V = (g.ow + kLanes - 1) / kLanes;  // vectors per output row
    U = g.oh * V;                      // row vectors per output plane
    P = g.oh * g.ow;
  }
  // One group's padded channels (an image's buffer holds kLanes more: the slack a row's last
  // vector reads past the end).
  int64_t image(int64_t C) const { return C * plane; }
};

// Shapes both kernels take: stride 1 (the caller's), padding in front, rows whose vectors are
// at least 3/4 real, and offsets that fit in 32 bits.
bool row_shape_ok(const DirectConvShape& g) {
  if (cpu_isa() < CpuIsa::kAvx512) return false;
  if (g.oh <= 0 || g.ow <= 0 || g.C <= 0 || g.O <= 0 || g.top < 0 || g.left < 0) return false;
  const RowLayout l(g);
  return g.ow * 4 >= l.V * kLanes * 3 && l.image(g.C) * 64 < std::numeric_limits<int32_t>::max();
}

// Tap offsets into a group's padded image, k = (c*kh + i)*kw + j.
std::vector<int32_t> row_taps(const DirectConvShape& g, const RowLayout& l) {
  std::vector<int32_t> off;
  off.reserve(size_t(l.K));
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        off.push_back(int32_t(c * l.plane + i * g.dh * l.Wp + j * g.dw));
  return off;
}

// Copies one image's groups*C channels into zero-padded planes (buf holds groups*C*plane floats
// and kLanes more).
void pad_rows(const float* x, int64_t channels, const DirectConvShape& g, const RowLayout& l,
              float* buf) {
  std::fill(buf, buf + channels * l.plane + kLanes, 0.0f);
  const int64_t rows = std::min(g.H, l.Hp - g.top), cols = std::min(g.W, l.Wp - g.left);
  if (rows <= 0 || cols <= 0) return;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(buf + c * l.plane + (g.top + r) * l.Wp + g.left, x + (c * g.H + r) * g.W,
                  size_t(cols) * sizeof(float));
}

constexpr int kR = 5, kOT = 4;  // forward tile: row vectors x channels
constexpr int kGT = 4, kNT = 5;  // weight-gradient tile: channels x taps

// A row vector of the output: where it reads the padded image and writes the output plane, and
// the mask of its real lanes.
struct RowVector {
  int64_t z, y;
  __mmask16 m;
};

std::vector<RowVector> row_vectors(const DirectConvShape& g, const RowLayout& l) {
  std::vector<RowVector> units(static_cast<size_t>(l.U));
  for (int64_t u = 0; u < l.U; ++u) {
    const int64_t oy = u / l.V, x0 = u % l.V * kLanes, n = std::min(kLanes, g.ow - x0);
    units[size_t(u)] = {oy * l.Wp + x0, oy * g.ow + x0, __mmask16((1u << n) - 1)};
  }
  return units;
}

// y[k*P + v[r].y + lane] = bias[k] + sum_s w[s*kOT + k] * z[off[s] + v[r].z + lane] for the
// real lanes of the kR row vectors v[r] and k < nk output channels.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void row_tile(
    const float* z, const int32_t* off, int64_t K, const float* w, const float* bias,
    int64_t nk, const RowVector* const* v, float* y, int64_t P) {
  const float* zr[kR];
  for (int r = 0; r < kR; ++r) zr[r] = z + v[r]->z;
  __m512 acc[kR][kOT];
  for (int k = 0; k < kOT; ++k) {
    const __m512 b = _mm512_set1_ps(bias && k < nk ? bias[k] : 0.0f);
    for (int r = 0; r < kR; ++r) acc[r][k] = b;
  }
#pragma GCC unroll 2
  for (int64_t s = 0; s < K; ++s, w += kOT) {
    const int64_t o = off[s];
    __m512 x[kR];
    for (int r = 0; r < kR; ++r) x[r] = _mm512_loadu_ps(zr[r] + o);
    for (int k = 0; k < kOT; ++k) {
      __m512 wk = _mm512_set1_ps(w[k]);
      asm("" : "+v"(wk));  // one broadcast per weight, not one per FMA
      for (int r = 0; r < kR; ++r) acc[r][k] = _mm512_fmadd_ps(x[r], wk, acc[r][k]);
    }
  }
  for (int k = 0; k < kOT; ++k) {
    if (k >= nk) break;
    for (int r = 0; r < kR; ++r) _mm512_mask_storeu_ps(y + k * P + v[r]->y, v[r]->m, acc[r][k]);
  }
}

// The weights of every group as [groups][OB][K][kOT] (zero past O), k = (c*kh + i)*kw + j.
std::vector<float> pack_row_weights(const float* w, int64_t groups, const DirectConvShape& g,
                                    const RowLayout& l, int64_t OB, DirectWeight layout) {
  std::vector<float> packed(size_t(groups * OB * l.K * kOT), 0.0f);
  const int64_t taps = g.kh * g.kw;
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t c = 0; c < g.C; ++c)
        for (int64_t t = 0; t < taps; ++t)
          packed[size_t(((gi * OB + o / kOT) * l.K + c * taps + t) * kOT + o % kOT)] =
              layout == DirectWeight::kConv ? w[((gi * g.O + o) * g.C + c) * taps + t]
                                            : w[((gi * g.C + c) * g.O + o) * taps + (taps - 1 - t)];
  return packed;
}

// Every output channel block ob of group gi of one image, from its padded copy.
void row_image(const float* z, const float* packed, const int32_t* off,
               const std::vector<RowVector>& units, const float* bias, float* y, const DirectConvShape& g, const RowLayout& l, int64_t OB, int64_t gi,
               int64_t ob) {
  const float* a = packed + (gi * OB + ob) * l.K * kOT;
  const int64_t o0 = ob * kOT, nk = std::min<int64_t>(kOT, g.O - o0);
  const float* b = bias ? bias + gi * g.O + o0 : nullptr;
  float* yo = y + (gi * g.O + o0) * l.P;
  for (int64_t u = 0; u < l.U; u += kR) {
    const RowVector* v[kR];
    for (int r = 0; r < kR; ++r)  // a last partial tile repeats its last vector
      v[r] = &units[size_t(std::min(u + r, l.U - 1))];
    row_tile(z + gi * l.image(g.C), off, l.K, a, b, nk, v, yo, l.P);
  }
}

// acc[(t*kGT + k)*16 + lane] += sum over row vectors of go[k*P + y + lane] *
// z[off[t] + zpos + lane], both masked to the row's real lanes, for k < kGT (channels past nk
// repeat the last one) and t < kNT.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) void wgrad_row_tile(
    const float* go, int64_t P, int64_t nk, const float* z, const int32_t* off,
    const RowVector* units, int64_t U, float* accp) {
  const float* gk[kGT];
  for (int k = 0; k < kGT; ++k) gk[k] = go + std::min<int64_t>(k, nk - 1) * P;
  const float* zt[kNT];
  for (int t = 0; t < kNT; ++t) zt[t] = z + off[t];
  __m512 acc[kNT][kGT];
  for (int t = 0; t < kNT; ++t)
    for (int k = 0; k < kGT; ++k) acc[t][k] = _mm512_setzero_ps();
  // One do-while loop over the row vectors (U > 0), their offsets read from a table: with a path
  // around the loop (U == 0), or nested row and column loops, GCC -O3 stored every accumulator
  // to the stack at each step.
  int64_t u = 0;
  do {
    const __mmask16 m = units[u].m;
    const int64_t yp = units[u].y, zp = units[u].z;
    __m512 gv[kGT];
    for (int k = 0; k < kGT; ++k) gv[k] = _mm512_maskz_loadu_ps(m, gk[k] + yp);
    for (int t = 0; t < kNT; ++t) {
      const __m512 x = _mm512_maskz_loadu_ps(m, zt[t] + zp);
      for (int k = 0; k < kGT; ++k) acc[t][k] = _mm512_fmadd_ps(gv[k], x, acc[t][k]);
    }
  } while (++u < U);
  for (int t = 0; t < kNT; ++t)
    for (int k = 0; k < kGT; ++k) {
      float* a = accp + (t * kGT + k) * kLanes;
      _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), acc[t][k]));
    }
}

__attribute__((target("avx512f"))) float lane_sum(const float* v) {
  return _mm512_reduce_add_ps(_mm512_loadu_ps(v));
}

}  // namespace

// Where the direct kernel's tile would hold one zmm of output channels (fewer than 24) and the
// reduction is short: with few taps the direct tiles spend their time storing and transposing
// (measured on 2 threads, batch 100: 1->16 5x5 28x28 0.42 -> 0.38 ms against the sliding tile,
// Note [Sliding taps]; 3->16 3x3 32x32 0.76 -> 0.44), with 72 taps or more they win (8->16 3x3
// 0.82 against 0.91 here, 16->16 3x3 1.86 against 2.37).
bool row_conv_applies(const DirectConvShape& g) {
  return row_shape_ok(g) && g.kh * g.kw > 1 && g.O < 24 && g.C * g.kh * g.kw <= 48;
}

void row_conv2d(const float* x, const float* w, const float* bias, float* y, int64_t N,
                int64_t groups, const DirectConvShape& g, DirectWeight layout) {
  const RowLayout l(g);
  const int64_t OB = (g.O + kOT - 1) / kOT;
  const std::vector<float> packed = pack_row_weights(w, groups, g, l, OB, layout);
  const std::vector<int32_t> off = row_taps(g, l);
  const std::vector<RowVector> units = row_vectors(g, l);
  const int64_t channels = groups * g.C, image = channels * l.plane + kLanes;
  const int64_t in_size = channels * g.H * g.W, out_size = groups * g.O * l.P;
  const int64_t threads = get_num_threads();
  if (N >= threads) {  // whole images per thread, each padded into the thread's own buffer
    parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
      std::vector<float> z(static_cast<size_t>(image));
      for (int64_t n = b; n < e; ++n) {
        pad_rows(x + n * in_size, channels, g, l, z.data());
        for (int64_t gi = 0; gi < groups; ++gi)
          for (int64_t ob = 0; ob < OB; ++ob)
            row_image(z.data(), packed.data(), off.data(), units, bias, y + n * out_size, g, l, OB, gi,
                      ob);
      }
    });
    return;
  }
  std::vector<float> shared(static_cast<size_t>(N * image));
  for (int64_t n = 0; n < N; ++n) pad_rows(x + n * in_size, channels, g, l, &shared[size_t(n * image)]);
  parallel_for(0, N * groups * OB, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / (groups * OB), gi = i / OB % groups, ob = i % OB;
      row_image(&shared[size_t(n * image)], packed.data(), off.data(), units, bias, y + n * out_size, g,
                l, OB, gi, ob);
    }
  });
}

// The direct weight gradient's tiles hold 12 taps, most of them idle when a layer has few (25
// taps of a 1->16 5x5 layer fill 3 tiles); with more taps than 48 its tiles win (measured: 1->16
// 5x5 28x28 batch 100 0.53 -> 0.45 ms here; 3->16 3x3 0.72 -> 0.57; 4->16 5x5, 100 taps, 1.23
// direct against 1.57 here).
bool row_weight_grad_applies(const DirectConvShape& g) {
  return row_shape_ok(g) && g.kh * g.kw > 1 && g.O < 24 && g.C * g.kh * g.kw <= 48;
}

void row_conv2d_weight_grad(const float* go, const float* x, float* gw, int64_t N,
                            int64_t groups, const DirectConvShape& g) {
  const RowLayout l(g);
  const int64_t K = l.K, TB = (K + kNT - 1) / kNT, OB = (g.O + kGT - 1) / kGT;
  std::vector<int32_t> off = row_taps(g, l);
  off.resize(size_t(TB * kNT), off.back());  // the last block's extra taps are thrown away
  const std::vector<RowVector> units = row_vectors(g, l);
  const int64_t channels = groups * g.C, image = channels * l.plane + kLanes;
  const int64_t in_size = channels * g.H * g.W, out_size = groups * g.O * l.P;
  const int64_t block = kNT * kGT * kLanes;  // one tile's accumulators
  const int64_t threads = std::min<int64_t>(get_num_threads(), N);
  std::vector<std::vector<float>> partial(static_cast<size_t>(threads));
  // Thread t takes images t, t + threads, ... (as the direct weight gradient), so the gradient
  // is the same from run to run.
  parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      std::vector<float> z(static_cast<size_t>(image));
      std::vector<float>& acc = partial[size_t(t)];  // [groups][OB][TB][block]
      acc.assign(size_t(groups * OB * TB * block), 0.0f);
      for (int64_t n = t; n < N; n += threads) {
        pad_rows(x + n * in_size, channels, g, l, z.data());
        for (int64_t gi = 0; gi < groups; ++gi)
          for (int64_t ob = 0; ob < OB; ++ob)
            for (int64_t tb = 0; tb < TB; ++tb)
              wgrad_row_tile(go + n * out_size + (gi * g.O + ob * kGT) * l.P, l.P,
                             std::min<int64_t>(kGT, g.O - ob * kGT), z.data() + gi * g.C * l.plane,
                             off.data() + tb * kNT, units.data(), l.U,
                             acc.data() + ((gi * OB + ob) * TB + tb) * block);
      }
    }
  });
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t at = ((gi * OB + o / kGT) * TB + k / kNT) * block +
                           (k % kNT * kGT + o % kGT) * kLanes;
        float s = 0.0f;
        for (const std::vector<float>& acc : partial) s += lane_sum(acc.data() + at);
        gw[(gi * g.O + o) * K + k] = s;
      }
}

#else

bool row_conv_applies(const DirectConvShape&) { return false; }
void row_conv2d(const float*, const float*, const float*, float*, int64_t, int64_t,
                const DirectConvShape&, DirectWeight) {
  RT_CHECK(false, "row_conv2d: this build has no AVX-512 row convolution kernel");
}
bool row_weight_grad_applies(const DirectConvShape&) { return false; }
void row_conv2d_weight_grad(const float*, const float*, float*, int64_t, int64_t,
                            const DirectConvShape&) {
  RT_CHECK(false, "row_conv2d_weight_grad: this build has no AVX-512 row weight gradient");
}

#endif

}  // namespace retorch::cpu
