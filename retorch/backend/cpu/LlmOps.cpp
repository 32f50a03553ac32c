// LLM inference kernels: fused RMSNorm(+residual, or with the projection after it), SiLU-and-mul,
// rotary embedding, paged attention.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "retorch/backend/cpu/AttentionAvx512.h"
#include "retorch/backend/cpu/Blas.h"
#include "retorch/backend/cpu/Convert16.h"
#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/core/Dtypes.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {
namespace {

// The kernels compute in float32; other floating inputs are converted on the way in and the
// results converted back, so bfloat16/float16 models run through the same loops.
Tensor as_float(const Tensor& t, const char* op, const char* arg) {
  RT_CHECK_TYPE(is_floating_type(t.dtype()), op, ": expected a floating point '", arg,
                "', got ", t.dtype(), " of shape ", t.sizes());
  return t.to(kFloat).contiguous();
}

void check_int(const Tensor& t, const char* op, const char* arg) {
  RT_CHECK_TYPE(t.dtype() == kLong || t.dtype() == kInt, op, ": expected an int64 or int32 '",
                arg, "', got ", t.dtype());
}

std::vector<int64_t> int_values(const Tensor& t, const char* op, const char* arg) {
  check_int(t, op, arg);
  Tensor c = t.to(kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// Note [Attention tiles]
// In a prefill, a run of query tokens of one sequence at consecutive positions shares almost all
// its keys, and Note [Paged attention]'s loop per (token, head) — a 64-float dot product per key,
// each ending in a horizontal sum — ran at ~15 GFLOP/s: half of a 512-token prefill of the 110m
// model. Such runs are cut into tiles of up to kTileQ tokens, and each (tile, query head) walks
// its keys kTileK at a time: the chunk's key and value rows are gathered from their blocks into
// contiguous buffers, the scores of every row of the tile against them are one SGEMM, each row
// gets its own causal (and sliding-window) mask and the online-softmax update, and the weighted
// values are a second SGEMM into the tile's accumulator. The same rule, the same results to
// rounding; tokens outside long runs (decode, a short chunk) keep the per-token loop.
constexpr int64_t kTileQ = 64, kTileK = 128, kMinTile = 8;

struct AttnTile {
  int64_t t0, n, seq, p0, h, keys;  // tokens t0..t0+n-1 at positions p0.., query head h
};

struct AttnShape {
  int64_t Hq, Hkv, D, BS, MB, group;
  float scale;
  int64_t window;
};

// The key and value blocks, float32 or bfloat16 (a bfloat16 cache halves the bytes a decode step
// reads; rows are widened to float32 as they are used).
struct CacheData {
  const void* k;
  const void* v;
  bool bf16;
};

// D floats of the row at element offset off of a cache.
void load_row(const void* base, bool bf16, int64_t off, float* dst, int64_t D) {
  if (!bf16) {
    const float* src = static_cast<const float*>(base) + off;
    std::copy(src, src + D, dst);
    return;
  }
  to_float(static_cast<const BFloat16*>(base) + off, dst, D);
}

// Element off of a cache.
const void* elem_ptr(const void* base, bool bf16, int64_t off) {
  return bf16 ? static_cast<const void*>(static_cast<const BFloat16*>(base) + off)
              : static_cast<const void*>(static_cast<const float*>(base) + off);
}

// Asks for n rows of D elements, `stride` apart from element off, to be brought into L2 (the
// T1 hint: a block's 128 lines queued for L1 outran its miss buffers and most were lost; into
// L2 they arrive, and a 110m model's decode attention at 528 positions went from 13-16 GB/s
// to 31-38, the copy bandwidth, with Note [Decode attention in key ranges]).
void prefetch_rows(const void* base, bool bf16, int64_t off, int64_t n, int64_t stride,
                   int64_t D) {
  const int64_t es = bf16 ? 2 : 4;
  const char* p = static_cast<const char*>(base) + off * es;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t b = 0; b < D * es; b += 64) __builtin_prefetch(p + j * stride * es + b, 0, 2);
}

// Keys of the query at position p: lo(p) ..= p.
int64_t first_key(int64_t p, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
}

void attend_tile(const AttnTile& tile, const AttnShape& g, const float* qp, const CacheData& kv,
                 const int64_t* row, float* outp, std::vector<float>& buf) {
  const int64_t n = tile.n, D = g.D, kvh = tile.h / g.group;
  buf.resize(size_t(2 * kTileK * D + n * kTileK + n * D + 2 * n));
  float* kc = buf.data();
  float* vc = kc + kTileK * D;
  float* sc = vc + kTileK * D;
  float* acc = sc + n * kTileK;
  float* m = acc + n * D;
  float* l = m + n;
  std::fill(acc, acc + n * D, 0.0f);
  std::fill(m, m + n, -std::numeric_limits<float>::infinity());
  std::fill(l, l + n, 0.0f);
  const float* q = qp + (tile.t0 * g.Hq + tile.h) * D;
  const int64_t lo = first_key(tile.p0, g.window), hi = tile.p0 + n;  // keys [lo, hi)
  for (int64_t k0 = lo; k0 < hi; k0 += kTileK) {
    const int64_t k1 = std::min(hi, k0 + kTileK), nk = k1 - k0;
    for (int64_t j = k0; j < k1; ++j) {
      const int64_t off = ((row[j / g.BS] * g.BS + j % g.BS) * g.Hkv + kvh) * D;
      load_row(kv.k, kv.bf16, off, kc + (j - k0) * D, D);
      load_row(kv.v, kv.bf16, off, vc + (j - k0) * D, D);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(n), int(nk), int(D), g.scale, q,
                int(g.Hq * D), kc, int(D), 0.0f, sc, int(kTileK));
    for (int64_t r = 0; r < n; ++r) {
      float* s = sc + r * kTileK;
      const int64_t p = tile.p0 + r;
      const int64_t c0 = std::max(first_key(p, g.window), k0) - k0;
      const int64_t c1 = std::min(p + 1, k1) - k0;
      if (c1 <= c0) {  // no key of this row in the chunk
        std::fill(s, s + nk, 0.0f);
        continue;
      }
      std::fill(s, s + c0, 0.0f);
      std::fill(s + c1, s + nk, 0.0f);
      float bm = -std::numeric_limits<float>::infinity();
      for (int64_t j = c0; j < c1; ++j) bm = std::max(bm, s[j]);
      if (bm > m[r]) {
        const float c = std::exp(m[r] - bm);  // 0 for the row's first keys (m = -inf)
        l[r] *= c;
        float* a = acc + r * D;
        for (int64_t d = 0; d < D; ++d) a[d] *= c;
        m[r] = bm;
      }
      l[r] += vec_exp_shift_sum(s + c0, m[r], s + c0, c1 - c0);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(D), int(nk), 1.0f, sc,
                int(kTileK), vc, int(D), 1.0f, acc, int(D));
  }
  for (int64_t r = 0; r < n; ++r) {
    float* o = outp + ((tile.t0 + r) * g.Hq + tile.h) * D;
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    for (int64_t d = 0; d < D; ++d) o[d] = acc[r * D + d] * inv;
  }
}

// The tiles of the runs of at least kMinTile tokens (one sequence, consecutive positions), for
// every query head; marks their tokens in `tiled`.
std::vector<AttnTile> attention_tiles(const std::vector<int64_t>& seq,
                                      const std::vector<int64_t>& pos, const AttnShape& g,
                                      std::vector<char>& tiled) {
  std::vector<AttnTile> tiles;
  const int64_t T = int64_t(seq.size());
  for (int64_t t = 0; t < T;) {
    int64_t e = t + 1;
    while (e < T && seq[size_t(e)] == seq[size_t(t)] && pos[size_t(e)] == pos[size_t(e - 1)] + 1)
      ++e;
    if (e - t >= kMinTile) {
      for (int64_t a = t; a < e; a += kTileQ) {
        const int64_t n = std::min(kTileQ, e - a), p0 = pos[size_t(a)];
        for (int64_t h = 0; h < g.Hq; ++h)
          tiles.push_back({a, n, seq[size_t(a)], p0, h, p0 + n - first_key(p0, g.window)});
      }
      std::fill(tiled.begin() + t, tiled.begin() + e, char(1));
    }
    t = e;
  }
  // Longest first, handed out one at a time: the threads finish together.
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const AttnTile& a, const AttnTile& b) { return a.n * a.keys > b.n * b.keys; });
  return tiles;
}

}  // namespace

std::tuple<Tensor, Tensor> fused_rms_norm(const Tensor& input, const std::optional<Tensor>& residual,
                                          const Tensor& weight, double eps) {
  RT_CHECK(input.dim() >= 1, "fused_rms_norm: expected input with at least 1 dim, got shape ",
           input.sizes());
  int64_t H = input.size(-1);
  RT_CHECK(weight.dim() == 1 && weight.size(0) == H, "fused_rms_norm: weight of shape ",
           weight.sizes(), " does not match input of shape ", input.sizes());
  bool has_res = residual.has_value() && residual->defined();
  if (has_res)
    RT_CHECK(residual->sizes() == input.sizes(), "fused_rms_norm: residual of shape ",
             residual->sizes(), " does not match input of shape ", input.sizes());
  if (input.device().is_meta()) {  // See Note [Meta through CPU kernels]
    Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
    return {out, has_res ? make_empty(input.sizes(), input.dtype(), input.device()) : input};
  }
  Tensor x = as_float(input, "fused_rms_norm", "input");
  Tensor r = has_res ? as_float(*residual, "fused_rms_norm", "residual") : Tensor();
  Tensor w = as_float(weight, "fused_rms_norm", "weight");
  Tensor out = empty(input.sizes(), TensorOptions().dtype(kFloat));
  Tensor h = has_res ? empty(input.sizes(), TensorOptions().dtype(kFloat)) : x;
  int64_t rows = H == 0 ? 0 : x.numel() / H;
  const float* xp = x.data_ptr<float>();
  const float* rp = has_res ? r.data_ptr<float>() : nullptr;
  const float* wp = w.data_ptr<float>();
  float* op = out.data_ptr<float>();
  float* hp = h.data_ptr<float>();
  float feps = float(eps);
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(H, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* xr = xp + i * H;
      float* hr = hp + i * H;
      if (rp) {
        const float* rr = rp + i * H;
        _Pragma("omp simd")
        for (int64_t j = 0; j < H; ++j) hr[j] = xr[j] + rr[j];
      }
      float ss = 0;
      _Pragma("omp simd reduction(+ : ss)")
      for (int64_t j = 0; j < H; ++j) ss += hr[j] * hr[j];
      // The order of HF's LlamaRMSNorm: (h * rsqrt(mean + eps)) * weight.
      float inv = 1.0f / std::sqrt(ss / float(H) + feps);
      float* orow = op + i * H;
      _Pragma("omp simd")
      for (int64_t j = 0; j < H; ++j) orow[j] = (hr[j] * inv) * wp[j];
    }
  });
  ScalarType dt = input.dtype();
  if (!has_res) h = input;  // residual_out is the input itself when there is no residual
  return {out.to(dt), h.to(dt)};
}

// The ops it names, each dispatched (on the input's device: cuda's kernel calls this for the
// calls its fused kernel does not take, Note [Normed decode projections] in CudaGemv.cu).
std::tuple<Tensor, Tensor> rms_norm_linear(const Tensor& input,
                                           const std::optional<Tensor>& residual,
                                           const Tensor& norm_weight, double eps,
                                           const Tensor& weight, int64_t qtype,
                                           int64_t in_features, const std::optional<Tensor>& bias,
                                           bool swiglu) {
  auto [x, sum] = retorch::fused_rms_norm(input, residual, norm_weight, eps);
  Tensor y = retorch::quantized_linear(x.to(kFloat), weight, qtype, in_features, bias);
  if (swiglu) y = retorch::silu_and_mul(y);
  return {y, sum};
}

// rms_norm_linear's parts, then rotary_and_cache of the projection (see rms_norm_linear).
std::tuple<Tensor, Tensor> rms_norm_linear_rotary_and_cache(
    const Tensor& input, const std::optional<Tensor>& residual, const Tensor& norm_weight,
    double eps, const Tensor& weight, int64_t qtype, int64_t in_features,
    const std::optional<Tensor>& bias, const Tensor& positions, const Tensor& cos_sin_cache,
    const Tensor& key_cache, const Tensor& value_cache, const Tensor& slots, bool interleaved) {
  auto [qkv, sum] = retorch::rms_norm_linear(input, residual, norm_weight, eps, weight, qtype,
                                             in_features, bias, false);
  Tensor q = retorch::rotary_and_cache(qkv, positions, cos_sin_cache, key_cache, value_cache,
                                       slots, interleaved);
  return {q, sum};
}

Tensor silu_and_mul(const Tensor& input) {
  RT_CHECK(input.dim() >= 1 && input.size(-1) % 2 == 0, "silu_and_mul: expected an even last "
           "dim (gate then up halves), got shape ", input.sizes());
  Tensor x = as_float(input, "silu_and_mul", "input");
  int64_t D = input.size(-1) / 2;
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.back() = D;
  if (input.device().is_meta())  // See Note [Meta through CPU kernels]
    return make_empty(shape, input.dtype(), input.device());
  Tensor out = empty(shape, TensorOptions().dtype(kFloat));
  int64_t rows = D == 0 ? 0 : x.numel() / (2 * D);
  const float* xp = x.data_ptr<float>();
  float* op = out.data_ptr<float>();
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(D, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* gate = xp + i * 2 * D;
      const float* up = gate + D;
      float* o = op + i * D;
      if (!vec_unary(VecFn::kSilu, gate, o, D))
        for (int64_t j = 0; j < D; ++j) o[j] = gate[j] / (1.0f + std::exp(-gate[j]));
      _Pragma("omp simd")
      for (int64_t j = 0; j < D; ++j) o[j] *= up[j];
    }
  });
  return out.to(input.dtype());
}

namespace {

// The first 2 * half dims of one head's row x rotated by cache row c (cos then sin) into o
// (Note [Rotary embedding layouts]); dims past them are the caller's.
void rotate_row(const float* x, const float* c, float* o, int64_t half, bool interleaved) {
  const float* s = c + half;
  if (interleaved) {
    for (int64_t i = 0; i < half; ++i) {
      float x1 = x[2 * i], x2 = x[2 * i + 1];
      o[2 * i] = x1 * c[i] - x2 * s[i];
      o[2 * i + 1] = x2 * c[i] + x1 * s[i];
    }
  } else {
    _Pragma("omp simd")
    for (int64_t i = 0; i < half; ++i) {
      float x1 = x[i], x2 = x[i + half];
      o[i] = x1 * c[i] - x2 * s[i];
      o[i + half] = x2 * c[i] + x1 * s[i];
    }
  }
}

}  // namespace

// Note [Rotary embedding layouts]
// cos_sin_cache row p holds cos(p * f_i) for i < rot/2, then sin(p * f_i). The non-interleaved
// ("neox", Hugging Face's rotate_half) layout rotates the pair (x[i], x[i + rot/2]); the
// interleaved (GPT-J, llama.cpp's "normal" rope) layout rotates (x[2i], x[2i+1]). Dimensions
// past rot (partial rotary) pass through unchanged.
Tensor rotary_embedding(const Tensor& input, const Tensor& positions, const Tensor& cos_sin_cache,
                        bool interleaved) {
  RT_CHECK(input.dim() >= 2, "rotary_embedding: expected input [..., heads, head_dim], got shape ",
           input.sizes());
  RT_CHECK(cos_sin_cache.dim() == 2 && cos_sin_cache.size(1) % 2 == 0 &&
               cos_sin_cache.size(1) <= input.size(-1),
           "rotary_embedding: cos_sin_cache of shape ", cos_sin_cache.sizes(),
           " must be [max_positions, rot] with an even rot <= head_dim of input ", input.sizes());
  std::vector<int64_t> lead(input.sizes().begin(), input.sizes().end() - 2);
  RT_CHECK(positions.sizes() == IntArrayRef(lead), "rotary_embedding: positions of shape ",
           positions.sizes(), " must match the leading dims of input ", input.sizes());
  // The positions are data: on meta only their shape and dtype are checked.
  if (input.device().is_meta()) {  // See Note [Meta through CPU kernels]
    check_int(positions, "rotary_embedding", "positions");
    return make_empty(input.sizes(), input.dtype(), input.device());
  }
  std::vector<int64_t> pos = int_values(positions, "rotary_embedding", "positions");
  int64_t P = cos_sin_cache.size(0);
  for (int64_t p : pos)
    RT_CHECK_INDEX(p >= 0 && p < P, "rotary_embedding: position ", p,
                   " is outside the cos/sin cache of ", P, " positions");
  Tensor x = as_float(input, "rotary_embedding", "input");
  Tensor cs = as_float(cos_sin_cache, "rotary_embedding", "cos_sin_cache");
  Tensor out = x.clone();
  int64_t H = input.size(-2), D = input.size(-1), half = cs.size(1) / 2;
  int64_t T = int64_t(pos.size());
  const float* xp = x.data_ptr<float>();
  const float* cp = cs.data_ptr<float>();
  float* op = out.data_ptr<float>();
  parallel_for(0, T * H, std::max<int64_t>(1, 8192 / std::max<int64_t>(D, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t th = b; th < e; ++th) {
      rotate_row(xp + th * D, cp + pos[size_t(th / H)] * 2 * half, op + th * D, half,
                 interleaved);
    }
  });
  return out.to(input.dtype());
}

// Note [Rotary and cache write]
// rotary_and_cache takes the fused projection's rows qkv [T, (Hq + 2 Hkv) D] as they are: it
// returns the query heads rotated ([T, Hq, D]) and writes the key heads rotated and the value
// heads to cache row slots[t] (the flat row of key_cache.view(-1, Hkv, D): block * block_size +
// offset), converted to the cache's dtype. The values are rotary_embedding's on q and k followed
// by index_put_ of k and v; a decode step on the GPU runs one kernel for what took four (two
// rotations, two row scatters; six with a bfloat16 cache's two conversions). Positions and
// slots are checked like rotary_embedding's and index_put_'s; a slot given twice keeps one of
// its writes.
Tensor rotary_and_cache(const Tensor& qkv, const Tensor& positions, const Tensor& cos_sin_cache,
                        const Tensor& key_cache, const Tensor& value_cache, const Tensor& slots,
                        bool interleaved) {
  const char* op = "rotary_and_cache";
  RT_CHECK(key_cache.dim() == 4 && value_cache.sizes() == key_cache.sizes(), op,
           ": key_cache ", key_cache.sizes(), " and value_cache ", value_cache.sizes(),
           " must both be [blocks, block_size, kv_heads, head_dim]");
  RT_CHECK_TYPE((key_cache.dtype() == kFloat || key_cache.dtype() == kBFloat16) &&
                    value_cache.dtype() == key_cache.dtype() && key_cache.is_contiguous() &&
                    value_cache.is_contiguous(),
                op, ": the KV cache must be contiguous float32 or bfloat16 (keys and values "
                "alike), got ", key_cache.dtype(), " and ", value_cache.dtype());
  const int64_t Hkv = key_cache.size(2), D = key_cache.size(3);
  const int64_t width = qkv.dim() == 2 && D > 0 ? qkv.size(1) : 0;
  RT_CHECK(width % D == 0 && width / D > 2 * Hkv, op, ": expected qkv [tokens, (heads + 2 x ",
           Hkv, ") x ", D, "] for a cache of ", Hkv, " kv heads of ", D, " dims, got shape ",
           qkv.sizes());
  const int64_t T = qkv.size(0), Hq = width / D - 2 * Hkv;
  RT_CHECK(cos_sin_cache.dim() == 2 && cos_sin_cache.size(1) % 2 == 0 &&
               cos_sin_cache.size(1) <= D,
           op, ": cos_sin_cache of shape ", cos_sin_cache.sizes(),
           " must be [max_positions, rot] with an even rot <= the head_dim ", D);
  RT_CHECK(positions.dim() == 1 && positions.size(0) == T && slots.dim() == 1 &&
               slots.size(0) == T,
           op, ": positions ", positions.sizes(), " and slots ", slots.sizes(),
           " must be 1-D with one entry per qkv row (", T, ")");
  if (qkv.device().is_meta()) {  // See Note [Meta through CPU kernels]: indices are data
    check_int(positions, op, "positions");
    check_int(slots, op, "slots");
    return make_empty({T, Hq, D}, qkv.dtype(), qkv.device());
  }
  const std::vector<int64_t> pos = int_values(positions, op, "positions");
  const std::vector<int64_t> slot = int_values(slots, op, "slots");
  const int64_t P = cos_sin_cache.size(0), rows = key_cache.size(0) * key_cache.size(1);
  for (int64_t t = 0; t < T; ++t) {
    RT_CHECK_INDEX(pos[size_t(t)] >= 0 && pos[size_t(t)] < P, op, ": position ", pos[size_t(t)],
                   " is outside the cos/sin cache of ", P, " positions");
    RT_CHECK_INDEX(slot[size_t(t)] >= 0 && slot[size_t(t)] < rows, op, ": slot ",
                   slot[size_t(t)], " is outside the cache's ", rows, " rows");
  }
  Tensor x = as_float(qkv, op, "qkv");
  Tensor cs = as_float(cos_sin_cache, op, "cos_sin_cache");
  Tensor out = empty({T, Hq, D}, TensorOptions().dtype(kFloat));
  const int64_t half = cs.size(1) / 2;
  const float* xp = x.data_ptr<float>();
  const float* cp = cs.data_ptr<float>();
  float* qo = out.data_ptr<float>();
  const bool bf16 = key_cache.dtype() == kBFloat16;
  char* kc = static_cast<char*>(key_cache.data_ptr());
  char* vc = static_cast<char*>(value_cache.data_ptr());
  const size_t esize = bf16 ? 2 : 4;
  // One cache row: rotated (keys) or as it is (values), then stored in the cache's dtype.
  auto store = [&](const float* row, char* dst) {
    if (bf16) from_float(row, reinterpret_cast<BFloat16*>(dst), D);
    else std::copy(row, row + D, reinterpret_cast<float*>(dst));
  };
  parallel_for(0, T, std::max<int64_t>(1, 8192 / ((Hq + 2 * Hkv) * D)), [&](int64_t b, int64_t e) {
    std::vector<float> krow(static_cast<size_t>(D));
    for (int64_t t = b; t < e; ++t) {
      const float* xr = xp + t * width;
      const float* c = cp + pos[size_t(t)] * 2 * half;
      for (int64_t h = 0; h < Hq; ++h) {
        float* o = qo + (t * Hq + h) * D;
        std::copy(xr + h * D + 2 * half, xr + (h + 1) * D, o + 2 * half);
        rotate_row(xr + h * D, c, o, half, interleaved);
      }
      const size_t at = size_t(slot[size_t(t)] * Hkv * D) * esize;
      for (int64_t h = 0; h < Hkv; ++h) {
        const float* k = xr + (Hq + h) * D;
        std::copy(k + 2 * half, k + D, krow.data() + 2 * half);
        rotate_row(k, c, krow.data(), half, interleaved);
        store(krow.data(), kc + at + size_t(h * D) * esize);
        store(xr + (Hq + Hkv + h) * D, vc + at + size_t(h * D) * esize);
      }
    }
  });
  return out.to(qkv.dtype());
}

// Note [Decode attention in key ranges]
// Decode attends one query per sequence, and there are fewer sequences than threads times
// heads. Splitting the work by head (each thread its heads, over all the keys) read the cache
// 256 bytes at a time from rows 3 KB apart (a block row holds every kv head), each thread in its
// own order: 10-13 GB/s on a 110m model's cache, under half the copy bandwidth, and a 110m Q4_0
// decode step at 512 positions spent half its time there. The tokens that are not tiled now
// split their keys into ranges of whole blocks (at least kMinRangeBlocks, about two per thread
// in all), and a range runs every head of its token over each block before the next, so a thread
// sweeps through whole blocks (the flash-decoding split). Each range keeps, per head, the
// running max, the sum of exponentials and the weighted values; a last pass rescales the
// ranges of each (token, head) to their common max and adds them. One range (a short context,
// or many sequences) gives the one-pass values unchanged.
constexpr int64_t kMinRangeBlocks = 4;
// Query heads per kv head from which they are scored together (Note [Grouped decode scores]).
constexpr int64_t kGroupedScoresMin = 4;

// Note [Paged attention]
// Query token t belongs to sequence query_seq[t] and sits at position query_pos[t]; it attends to
// that sequence's keys at positions max(0, pos - window + 1) ..= pos (causal; window < 0 means
// unbounded). Key j of sequence s lives in block block_tables[s][j / block_size] at row
// j % block_size of the cache. Prefill, chunked prefill and decode are all this one rule with
// different (seq, pos) lists. Each (token, head) runs a one-pass online softmax over the blocks
// (running max and sum, rescaling the accumulator when the max grows), so at most one block of
// scores exists at a time.
Tensor paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                       const Tensor& block_tables, const Tensor& query_seq,
                       const Tensor& query_pos, double scale, int64_t sliding_window) {
  const char* op = "paged_attention";
  RT_CHECK(query.dim() == 3, op, ": expected query [tokens, heads, head_dim], got shape ",
           query.sizes());
  RT_CHECK(key_cache.dim() == 4 && value_cache.sizes() == key_cache.sizes() &&
               key_cache.size(3) == query.size(2),
           op, ": key_cache ", key_cache.sizes(), " and value_cache ", value_cache.sizes(),
           " must both be [blocks, block_size, kv_heads, head_dim] with the head_dim of query ",
           query.sizes());
  RT_CHECK_TYPE((key_cache.dtype() == kFloat || key_cache.dtype() == kBFloat16) &&
                    value_cache.dtype() == key_cache.dtype() && key_cache.is_contiguous() &&
                    value_cache.is_contiguous(),
                op, ": the KV cache must be contiguous float32 or bfloat16 (keys and values "
                "alike), got ", key_cache.dtype(), " and ", value_cache.dtype());
  RT_CHECK(block_tables.dim() == 2, op, ": expected block_tables [seqs, max_blocks], got shape ",
           block_tables.sizes());
  int64_t T = query.size(0), Hq = query.size(1), D = query.size(2);
  int64_t NB = key_cache.size(0), BS = key_cache.size(1), Hkv = key_cache.size(2);
  RT_CHECK(Hkv > 0 && Hq % Hkv == 0, op, ": query heads (", Hq,
           ") must be a multiple of the cache's kv heads (", Hkv, ")");
  RT_CHECK(query_seq.dim() == 1 && query_pos.dim() == 1 && query_seq.size(0) == T &&
               query_pos.size(0) == T,
           op, ": query_seq ", query_seq.sizes(), " and query_pos ", query_pos.sizes(),
           " must be 1-D with one entry per query token (", T, ")");
  if (query.device().is_meta())  // See Note [Meta through CPU kernels]: indices are data
    return make_empty({T, Hq, D}, query.dtype(), query.device());
  std::vector<int64_t> seq = int_values(query_seq, op, "query_seq");
  std::vector<int64_t> pos = int_values(query_pos, op, "query_pos");
  std::vector<int64_t> table = int_values(block_tables, op, "block_tables");
  int64_t S = block_tables.size(0), MB = block_tables.size(1);
  for (int64_t t = 0; t < T; ++t) {
    int64_t s = seq[size_t(t)], p = pos[size_t(t)];
    RT_CHECK_INDEX(s >= 0 && s < S, op, ": query_seq[", t, "] = ", s, " is outside the ", S,
                   " rows of block_tables");
    RT_CHECK_INDEX(p >= 0 && p / BS < MB, op, ": query_pos[", t, "] = ", p,
                   " needs more than the ", MB, " blocks of a block_tables row");
    for (int64_t j = 0; j <= p / BS; ++j) {
      int64_t blk = table[size_t(s * MB + j)];
      RT_CHECK_INDEX(blk >= 0 && blk < NB, op, ": block_tables[", s, "][", j, "] = ", blk,
                     " is outside the cache's ", NB, " blocks");
    }
  }
  Tensor q = as_float(query, op, "query");
  Tensor out = empty({T, Hq, D}, TensorOptions().dtype(kFloat));
  const float* qp = q.data_ptr<float>();
  const bool bf16 = key_cache.dtype() == kBFloat16;
  const CacheData kv{key_cache.data_ptr(), value_cache.data_ptr(), bf16};
  float* outp = out.data_ptr<float>();
  int64_t group = Hq / Hkv;
  float fscale = float(scale);
  // Long runs of one sequence's tokens as tiles (Note [Attention tiles]), the rest token by token.
  const AttnShape shape{Hq, Hkv, D, BS, MB, group, fscale, sliding_window};
  std::vector<char> tiled(size_t(T), 0);
  const std::vector<AttnTile> tiles = attention_tiles(seq, pos, shape, tiled);
  if (!tiles.empty()) {
    RT_CHECK(Hq * D <= INT_MAX, op, ": query rows of ", Hq, " x ", D,
             " floats are too long for BLAS (its strides must fit in int)");
    BlasSingleThreaded single;  // Note [GEMM threading]
    std::atomic<size_t> next{0};
    parallel_for(0, get_num_threads(), 1, [&](int64_t, int64_t) {
      std::vector<float> buf;
      for (size_t i = next++; i < tiles.size(); i = next++)
        attend_tile(tiles[i], shape, qp, kv, table.data() + tiles[i].seq * MB, outp, buf);
    });
  }
  // Note [Decode attention in key ranges]: the other tokens' keys in ranges of whole blocks,
  // every head of a token at once, then the ranges' partial softmaxes merged.
  const bool avx512 = cpu_isa() >= CpuIsa::kAvx512;
  struct KeyRange {
    int64_t t, blk0, blk1;  // blocks [blk0, blk1) of token t's keys
  };
  std::vector<KeyRange> ranges;
  std::vector<size_t> token_ranges(size_t(T) + 1, 0);  // token t's are [token_ranges[t], [t+1])
  int64_t untiled = 0;
  for (int64_t t = 0; t < T; ++t) untiled += !tiled[size_t(t)];
  const int64_t want = (2 * get_num_threads() + std::max<int64_t>(untiled, 1) - 1) /
                       std::max<int64_t>(untiled, 1);  // ranges a token needs to fill the threads
  for (int64_t t = 0; t < T; ++t) {
    token_ranges[size_t(t)] = ranges.size();
    if (tiled[size_t(t)]) continue;
    const int64_t p = pos[size_t(t)], b0 = first_key(p, sliding_window) / BS, b1 = p / BS + 1;
    const int64_t n = std::clamp<int64_t>((b1 - b0) / kMinRangeBlocks, 1, want);
    const int64_t per = (b1 - b0 + n - 1) / n;
    for (int64_t b = b0; b < b1; b += per) ranges.push_back({t, b, std::min(b1, b + per)});
  }
  token_ranges[size_t(T)] = ranges.size();
  // A range's state per head h: acc[h * D ..] (the weighted values), then the running max m[h]
  // and the running sum of exponentials l[h].
  const int64_t state = Hq * (D + 2);
  std::vector<float> partial(ranges.size() * size_t(state));
  parallel_for(0, int64_t(ranges.size()), 1, [&](int64_t b, int64_t e) {
    std::vector<float> sc(static_cast<size_t>(BS));
    std::vector<float> widened(static_cast<size_t>(bf16 && !avx512 ? 2 * BS * D : 0));
    // Note [Grouped decode scores]: a kv head's query heads scored together, their rows in scg.
    const bool grouped = avx512 && group >= kGroupedScoresMin;
    std::vector<float> scg(static_cast<size_t>(grouped ? group * BS : 0));
    for (int64_t r = b; r < e; ++r) {
      const KeyRange& kr = ranges[size_t(r)];
      const int64_t t = kr.t, s = seq[size_t(t)], p = pos[size_t(t)];
      const int64_t lo = first_key(p, sliding_window), stride = Hkv * D;
      const int64_t* row = table.data() + s * MB;
      float* acc_all = partial.data() + r * state;
      float* m_all = acc_all + Hq * D;
      float* l_all = m_all + Hq;
      std::fill(acc_all, acc_all + Hq * D, 0.0f);
      std::fill(m_all, m_all + Hq, -std::numeric_limits<float>::infinity());
      std::fill(l_all, l_all + Hq, 0.0f);
      for (int64_t blk = kr.blk0; blk < kr.blk1; ++blk) {
        const int64_t j0 = std::max(lo, blk * BS), j1 = std::min(p + 1, (blk + 1) * BS);
        const int64_t n = j1 - j0;
        bool group_scored = false;  // this kv head's heads have their scores in scg
        for (int64_t h = 0; h < Hq; ++h) {
          const int64_t kvh = h / group;
          const int64_t off = ((row[blk] * BS + j0 % BS) * Hkv + kvh) * D;
          const float* qr = qp + (t * Hq + h) * D;
          float* acc = acc_all + h * D;
          float& m = m_all[h];
          float& l = l_all[h];
          const float* vb = nullptr;
          int64_t vstride = stride;
          float* hs = sc.data();  // this head's scores, then its weights
          if (avx512) {  // Note [Decode attention]: straight from the cache, either dtype
            if (h % group == 0) {
              if (blk + 1 < kr.blk1) {  // the next block's rows of this kv head
                const int64_t next = (row[blk + 1] * BS * Hkv + kvh) * D;
                prefetch_rows(kv.k, bf16, next, BS, stride, D);
                prefetch_rows(kv.v, bf16, next, BS, stride, D);
              }
              group_scored = grouped && attention_scores_group_avx512(
                                            qr, group, elem_ptr(kv.k, bf16, off), bf16, n, stride,
                                            D, fscale, scg.data(), BS);
            }
            if (group_scored)
              hs = scg.data() + (h % group) * BS;
            else
              attention_scores_avx512(qr, elem_ptr(kv.k, bf16, off), bf16, n, stride, D, fscale,
                                      hs);
          } else {
            const float* kb;
            int64_t kstride = stride;
            if (bf16) {  // the block's rows, widened
              for (int64_t j = 0; j < n; ++j) {
                load_row(kv.k, true, off + j * stride, &widened[size_t(j * D)], D);
                load_row(kv.v, true, off + j * stride, &widened[size_t((BS + j) * D)], D);
              }
              kb = widened.data();
              vb = widened.data() + BS * D;
              kstride = vstride = D;
            } else {
              kb = static_cast<const float*>(kv.k) + off;
              vb = static_cast<const float*>(kv.v) + off;
            }
            for (int64_t j = 0; j < n; ++j) {
              const float* krow = kb + j * kstride;
              float dot = 0;
              _Pragma("omp simd reduction(+ : dot)")
              for (int64_t d = 0; d < D; ++d) dot += qr[d] * krow[d];
              hs[j] = dot * fscale;
            }
          }
          float bm = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < n; ++j) bm = std::max(bm, hs[j]);
          if (bm > m) {
            float c = std::exp(m - bm);  // 0 on the first block (m = -inf)
            l *= c;
            _Pragma("omp simd")
            for (int64_t d = 0; d < D; ++d) acc[d] *= c;
            m = bm;
          }
          l += vec_exp_shift_sum(hs, m, hs, n);
          if (avx512) {
            attention_accumulate_avx512(hs, elem_ptr(kv.v, bf16, off), bf16, n, stride, D, acc);
            continue;
          }
          for (int64_t j = 0; j < n; ++j) {
            const float* vr = vb + j * vstride;
            float w = hs[j];
            _Pragma("omp simd")
            for (int64_t d = 0; d < D; ++d) acc[d] += w * vr[d];
          }
        }
      }
    }
  });
  // Each (token, head): its ranges' sums rescaled to their common maximum.
  parallel_for(0, T * Hq, std::max<int64_t>(1, 4096 / std::max<int64_t>(D, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t th = b; th < e; ++th) {
      const int64_t t = th / Hq, h = th % Hq;
      const size_t r0 = token_ranges[size_t(t)], r1 = token_ranges[size_t(t) + 1];
      if (r0 == r1) continue;  // tiled, or no keys
      auto at = [&](size_t r) { return partial.data() + int64_t(r) * state; };
      float m = -std::numeric_limits<float>::infinity();
      for (size_t r = r0; r < r1; ++r) m = std::max(m, at(r)[Hq * D + h]);
      float* o = outp + th * D;
      float l = 0;
      for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
      for (size_t r = r0; r < r1; ++r) {
        const float mr = at(r)[Hq * D + h];
        if (mr == -std::numeric_limits<float>::infinity()) continue;  // a range of no weight
        const float c = std::exp(mr - m);
        l += at(r)[Hq * D + Hq + h] * c;
        const float* acc = at(r) + h * D;
        for (int64_t d = 0; d < D; ++d) o[d] += acc[d] * c;
      }
      const float inv = l > 0 ? 1.0f / l : 0.0f;
      for (int64_t d = 0; d < D; ++d) o[d] *= inv;
    }
  });
  return out.to(query.dtype());
}

}  // namespace retorch::cpu
