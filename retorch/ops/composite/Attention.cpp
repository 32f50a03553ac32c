// Attention composites: scaled_dot_product_attention (PyTorch 2.x semantics) and
// multi_head_attention_forward (torch.nn.functional's, sequence-first).
#include <cmath>

#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/ops/composite/LinalgHelpers.h"

namespace retorch::composite {

using linalg_detail::mT;
using linalg_detail::triangle_mask;

namespace {

/// Inverted dropout with retorch's default generator: keep with probability 1 - p, scale up.
Tensor attention_dropout(const Tensor& w, double p) {
  if (p <= 0) return w;
  if (p >= 1) return w * Scalar(0);
  Tensor keep = bernoulli(w.detach(), 1.0 - p, std::nullopt);
  return w * keep * Scalar(1.0 / (1.0 - p));
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask, double dropout_p,
                                    bool is_causal, std::optional<double> scale) {
  RT_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
           "scaled_dot_product_attention:"
           " expected query, key and value to be at least 2-D, got shapes ",
           query.sizes(), ", ", key.sizes(), " and ", value.sizes());
  RT_CHECK(query.size(-1) == key.size(-1),
           "scaled_dot_product_attention: query and key must "
           "have the same embedding size, got ",
           query.sizes(), " and ", key.sizes());
  RT_CHECK(key.size(-2) == value.size(-2),
           "scaled_dot_product_attention: key and value must "
           "have the same sequence length, got ",
           key.sizes(), " and ", value.sizes());
  RT_CHECK(!(is_causal && attn_mask),
           "scaled_dot_product_attention: explicit attn_mask should "
           "not be set when is_causal=True");
  RT_CHECK(dropout_p >= 0 && dropout_p <= 1,
           "scaled_dot_product_attention: dropout probability "
           "has to be between 0 and 1, but got ",
           dropout_p);
  double s = scale ? *scale : 1.0 / std::sqrt(double(query.size(-1)));
  Tensor attn = query.matmul(mT(key)) * Scalar(s);
  int64_t L = query.size(-2), S = key.size(-2);
  if (is_causal)
    attn = attn.masked_fill(triangle_mask(L, S, 0, true, attn.device()).logical_not(),
                            Scalar(-INFINITY));
  if (attn_mask) {
    // Boolean masks say where to attend; float masks are added to the scores.
    if (attn_mask->dtype() == kBool)
      attn = attn.masked_fill(attn_mask->logical_not(), Scalar(-INFINITY));
    else
      attn = attn + *attn_mask;
  }
  attn = attn.softmax(-1, std::nullopt);
  return attention_dropout(attn, dropout_p).matmul(value);
}

std::tuple<Tensor, Tensor> multi_head_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim_to_check,
    int64_t num_heads, const std::optional<Tensor>& in_proj_weight,
    const std::optional<Tensor>& in_proj_bias, const std::optional<Tensor>& bias_k,
    const std::optional<Tensor>& bias_v, bool add_zero_attn, double dropout_p,
    const Tensor& out_proj_weight, const std::optional<Tensor>& out_proj_bias, bool training,
    const std::optional<Tensor>& key_padding_mask, bool need_weights,
    const std::optional<Tensor>& attn_mask, bool use_separate_proj_weight,
    const std::optional<Tensor>& q_proj_weight, const std::optional<Tensor>& k_proj_weight,
    const std::optional<Tensor>& v_proj_weight, const std::optional<Tensor>& static_k,
    const std::optional<Tensor>& static_v, bool average_attn_weights) {
  const char* op = "multi_head_attention_forward";
  bool batched = query.dim() == 3;
  RT_CHECK(query.dim() == 3 || query.dim() == 2, op,
           ": query should be unbatched 2D or batched "
           "3D tensor but received ",
           query.dim(), "-D query tensor");
  RT_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), op, ": For ",
           batched ? "batched (3-D)" : "unbatched (2-D)",
           " `query`, expected `key` and `value` "
           "to be ",
           query.dim(), "-D but found ", key.dim(), "-D and ", value.dim(),
           "-D tensors respectively");
  Tensor q_in = batched ? query : query.unsqueeze(1);
  Tensor k_in = batched ? key : key.unsqueeze(1);
  Tensor v_in = batched ? value : value.unsqueeze(1);
  std::optional<Tensor> kpm = key_padding_mask;
  if (kpm && !batched) kpm = kpm->unsqueeze(0);
  int64_t tgt_len = q_in.size(0), bsz = q_in.size(1), embed_dim = q_in.size(2);
  RT_CHECK(embed_dim == embed_dim_to_check, op, ": was expecting embedding dimension of ",
           embed_dim_to_check, ", but got ", embed_dim);
  RT_CHECK(num_heads > 0 && embed_dim % num_heads == 0, op, ": embed_dim ", embed_dim,
           " not divisible by num_heads ", num_heads);
  int64_t head_dim = embed_dim / num_heads;
  RT_CHECK(k_in.sizes() == v_in.sizes() || use_separate_proj_weight, op, ": key shape ",
           k_in.sizes(), " does not match value shape ", v_in.sizes());

  // Input projections: one packed (3E, E) weight split in three, or three separate weights.
  std::optional<Tensor> bq, bk, bv;
  if (in_proj_bias) {
    auto b = in_proj_bias->chunk(3, 0);
    bq = b[0];
    bk = b[1];
    bv = b[2];
  }
  Tensor q, k, v;
  if (use_separate_proj_weight) {
    RT_CHECK(q_proj_weight && k_proj_weight && v_proj_weight, op,
             ": use_separate_proj_weight is "
             "True but q_proj_weight, k_proj_weight or v_proj_weight is None");
    q = retorch::linear(q_in, *q_proj_weight, bq);
    k = retorch::linear(k_in, *k_proj_weight, bk);
    v = retorch::linear(v_in, *v_proj_weight, bv);
  } else {
    RT_CHECK(in_proj_weight, op,
             ": use_separate_proj_weight is False but in_proj_weight is "
             "None");
    auto w = in_proj_weight->chunk(3, 0);
    q = retorch::linear(q_in, w[0], bq);
    k = retorch::linear(k_in, w[1], bk);
    v = retorch::linear(v_in, w[2], bv);
  }

  // Masks become float (-inf where masked) of shape (bsz * heads or 1, tgt, src).
  std::optional<Tensor> mask;
  if (attn_mask) {
    Tensor m = *attn_mask;
    RT_CHECK(m.dtype() == kBool || is_floating_type(m.dtype()), op,
             ": Only float and bool types "
             "are supported for attn_mask, not ",
             m.dtype());
    if (m.dim() == 2) {
      RT_CHECK(m.size(0) == tgt_len && m.size(1) == k_in.size(0), op,
               ": The shape of the 2D "
               "attn_mask is ",
               m.sizes(), ", but should be (", tgt_len, ", ", k_in.size(0), ").");
      m = m.unsqueeze(0);
    } else {
      RT_CHECK(m.dim() == 3 && m.size(0) == bsz * num_heads && m.size(1) == tgt_len &&
                   m.size(2) == k_in.size(0),
               op, ": The shape of the 3D attn_mask is ", m.sizes(), ", but should be (",
               bsz * num_heads, ", ", tgt_len, ", ", k_in.size(0), ").");
    }
    mask = m;
  }
  auto pad_last = [](const Tensor& t) {
    std::vector<int64_t> s(t.sizes().begin(), t.sizes().end());
    s.back() = 1;
    return cat({t, zeros(s, TensorOptions().dtype(t.dtype()))}, -1);
  };
  if (bias_k && bias_v) {
    RT_CHECK(!static_k && !static_v, op, ": bias cannot be added to static key/value.");
    k = cat({k, bias_k->reshape({1, 1, embed_dim}).expand({1, bsz, embed_dim})}, 0);
    v = cat({v, bias_v->reshape({1, 1, embed_dim}).expand({1, bsz, embed_dim})}, 0);
    if (mask) mask = pad_last(*mask);
    if (kpm) kpm = pad_last(*kpm);
  } else {
    RT_CHECK(!bias_k && !bias_v, op, ": bias_k and bias_v must both be given or both be None");
  }

  // (len, bsz, E) -> (bsz * heads, len, head_dim).
  auto heads = [&](const Tensor& t) {
    return t.reshape({t.size(0), bsz * num_heads, head_dim}).transpose(0, 1);
  };
  q = heads(q);
  k = static_k ? *static_k : heads(k);
  v = static_v ? *static_v : heads(v);
  if (add_zero_attn) {
    k = cat({k, zeros({bsz * num_heads, 1, head_dim}, TensorOptions().dtype(k.dtype()))}, 1);
    v = cat({v, zeros({bsz * num_heads, 1, head_dim}, TensorOptions().dtype(v.dtype()))}, 1);
    if (mask) mask = pad_last(*mask);
    if (kpm) kpm = pad_last(*kpm);
  }
  int64_t src_len = k.size(1);
  if (kpm) {
    RT_CHECK(kpm->size(0) == bsz && kpm->size(1) == src_len, op,
             ": expecting key_padding_mask "
             "shape of (",
             bsz, ", ", src_len, "), but got ", kpm->sizes());
    Tensor p = kpm->reshape({bsz, 1, 1, src_len})
                   .expand({bsz, num_heads, 1, src_len})
                   .reshape({bsz * num_heads, 1, src_len});
    if (!mask)
      mask = p;
    else if (mask->dtype() == kBool && p.dtype() == kBool)
      mask = logical_or(*mask, p);
    else if (p.dtype() == kBool)
      mask = mask->masked_fill(p, Scalar(-INFINITY));
    else
      mask = mask->dtype() == kBool ? p.masked_fill(*mask, Scalar(-INFINITY)) : *mask + p;
  }
  // Here a True mask entry means "do not attend" (the opposite of scaled_dot_product_attention).
  if (mask && mask->dtype() == kBool)
    mask = zeros_like(*mask, q.dtype()).masked_fill(*mask, Scalar(-INFINITY));

  Tensor qs = q * Scalar(1.0 / std::sqrt(double(head_dim)));
  Tensor w = qs.bmm(mT(k));
  if (mask) w = w + *mask;
  w = w.softmax(-1, std::nullopt);
  w = attention_dropout(w, training ? dropout_p : 0.0);
  Tensor out = w.bmm(v).transpose(0, 1).reshape({tgt_len * bsz, embed_dim});
  out = retorch::linear(out, out_proj_weight, out_proj_bias).reshape({tgt_len, bsz, -1});
  if (!batched) out = out.squeeze(1);
  // Python turns the empty weights into None (see retorch/linalg.py).
  if (!need_weights) return {out, zeros({0}, TensorOptions().dtype(out.dtype()))};
  Tensor weights = w.reshape({bsz, num_heads, tgt_len, src_len});
  if (average_attn_weights) weights = weights.mean(IntArrayRef{1}, false, std::nullopt);
  if (!batched) weights = weights.squeeze(0);
  return {out, weights};
}

}  // namespace retorch::composite
