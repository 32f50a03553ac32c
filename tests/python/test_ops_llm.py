"""Oracle tests for the LLM kernels (fused RMSNorm, SiLU-and-mul, rotary, paged attention) against
the same math written in torch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import retorch

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_fused_rms_norm": ["fused_rms_norm"],
    "test_silu_and_mul": ["silu_and_mul"],
    "test_rms_norm_linear": ["rms_norm_linear"],
    "test_rms_norm_linear_errors": ["rms_norm_linear"],
    "test_rms_norm_linear_rotary_and_cache": ["rms_norm_linear_rotary_and_cache"],
    "test_rotary_embedding": ["rotary_embedding"],
    "test_rotary_and_cache": ["rotary_and_cache"],
    "test_paged_attention": ["paged_attention"],
    "test_paged_attention_long_runs_match_torch": ["paged_attention"],
    "test_paged_attention_bfloat16_cache": ["paged_attention"],
}


def R(a):
    return retorch.from_numpy(np.ascontiguousarray(a))


def N(t):
    return t.numpy()


def close(r, t, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(N(r), t.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", [(1, 8), (5, 64), (2, 3, 96), (4, 0)])
@pytest.mark.parametrize("with_residual", [False, True])
def test_fused_rms_norm(rng, shape, with_residual):
    x = rng.standard_normal(shape).astype(np.float32)
    res = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    tx, tr, tw = map(torch.from_numpy, (x, res, w))
    h = tx + tr if with_residual else tx
    # HF's LlamaRMSNorm.
    expect = tw * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6))
    out, hout = retorch.fused_rms_norm(R(x), R(res) if with_residual else None, R(w), 1e-6)
    close(out, expect)
    close(hout, h)


def test_fused_rms_norm_half_and_errors(rng):
    x = rng.standard_normal((3, 16)).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    out, _ = retorch.fused_rms_norm(R(x).to(retorch.bfloat16), None, R(w), 1e-5)
    assert out.dtype == retorch.bfloat16
    t = torch.from_numpy(x).bfloat16().float()
    expect = torch.from_numpy(w) * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5))
    np.testing.assert_allclose(N(out.float()), expect.numpy(), rtol=2e-2, atol=2e-2)
    with pytest.raises(RuntimeError, match=r"fused_rms_norm: weight of shape \[8\]"):
        retorch.fused_rms_norm(R(x), None, R(w[:8]), 1e-5)
    with pytest.raises(RuntimeError, match="residual of shape"):
        retorch.fused_rms_norm(R(x), R(x[:2]), R(w), 1e-5)
    with pytest.raises(TypeError, match="floating point 'input'"):
        retorch.fused_rms_norm(R(x).long(), None, R(w), 1e-5)


@pytest.mark.parametrize("shape", [(1, 2), (7, 128), (2, 3, 5000), (0, 4)])
def test_silu_and_mul(rng, shape):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    t = torch.from_numpy(x)
    d = shape[-1] // 2
    close(retorch.silu_and_mul(R(x)), F.silu(t[..., :d]) * t[..., d:], rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="silu_and_mul: expected an even last dim"):
        retorch.silu_and_mul(R(np.zeros((2, 3), np.float32)))


def rms_linear_case(rng, shape, n_out, qtype):
    """Inputs of rms_norm_linear and the float64 torch oracle's pieces: the normed rows and the
    weight's values (16-bit rows as bytes; Q8_0 through quantize_blocks, its values read back)."""
    x = rng.standard_normal(shape).astype(np.float32)
    res = rng.standard_normal(shape).astype(np.float32)
    nw = (1 + 0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
    w = torch.from_numpy(rng.standard_normal((n_out, shape[-1])).astype(np.float32))
    if qtype == 30 or qtype == 1:
        w = w.to(torch.bfloat16 if qtype == 30 else torch.float16)
        packed = R(w.view(torch.uint8).numpy())
        wv = w.double()
    else:
        packed = retorch.quantize_blocks(R(w.numpy()), qtype)
        wv = torch.from_numpy(N(retorch.dequantize_blocks(packed, qtype, shape[-1]))).double()
    return x, res, nw, packed, wv


@pytest.mark.parametrize("qtype", [30, 1, 8])  # BF16 and F16 rows, Q8_0 blocks
@pytest.mark.parametrize("shape", [(1, 64), (3, 64), (2, 2, 96)])
@pytest.mark.parametrize("with_residual", [False, True])
@pytest.mark.parametrize("swiglu", [False, True])
def test_rms_norm_linear(rng, qtype, shape, with_residual, swiglu):
    """fused_rms_norm, then quantized_linear of its output, then (silu_and_mul=True)
    silu_and_mul, as one op: against HF's RMSNorm and a float64 product in torch. The
    activations may be rounded on the way (to the rows' type, or 8 bits for Q8_0), so the bound
    is that rounding's: sum |x_k w_k| times its relative step."""
    x, res, nw, packed, wv = rms_linear_case(rng, shape, 10, qtype)
    b = rng.standard_normal(10).astype(np.float32)
    tx, tr, tnw = map(lambda a: torch.from_numpy(a).double(), (x, res, nw))
    h = tx + tr if with_residual else tx
    normed = tnw * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6))
    want = normed @ wv.t() + torch.from_numpy(b).double()
    step = {30: 2.0 ** -8, 1: 2.0 ** -11, 8: 2.0 / 127}[qtype]
    bound = (normed.abs() @ wv.abs().t()) * step + 1e-5
    out, sum_out = retorch.rms_norm_linear(R(x), R(res) if with_residual else None, R(nw), 1e-6,
                                           packed, qtype, shape[-1], R(b), silu_and_mul=swiglu)
    close(sum_out, h.float())
    assert out.dtype == retorch.float32 and tuple(out.shape) == shape[:-1] + ((5,) if swiglu else (10,))
    got = torch.from_numpy(N(out)).double()
    if swiglu:  # silu(g) * u moves by at most (|u| + |g| |u| bounds) times the inputs' error
        g, u = want[..., :5], want[..., 5:]
        bg, bu = bound[..., :5], bound[..., 5:]
        want = F.silu(g) * u
        bound = 1.1 * bg * (u.abs() + bu) + (g.abs() + bg) * bu + 1e-5
    assert (got - want).abs().le(bound).all(), (got - want).abs().max()
    # The op is its three parts, bit for bit on the cpu.
    n, s = retorch.fused_rms_norm(R(x), R(res) if with_residual else None, R(nw), 1e-6)
    y = retorch.quantized_linear(n, packed, qtype, shape[-1], R(b))
    assert np.array_equal(N(out), N(retorch.silu_and_mul(y) if swiglu else y))


def test_rms_norm_linear_errors(rng):
    x, res, nw, packed, _ = rms_linear_case(rng, (2, 64), 9, 30)
    with pytest.raises(RuntimeError, match=r"fused_rms_norm: weight of shape \[32\]"):
        retorch.rms_norm_linear(R(x), None, R(nw[:32]), 1e-6, packed, 30, 64)
    with pytest.raises(ValueError, match="quantized_linear: 60 .* values take 120 bytes"):
        retorch.rms_norm_linear(R(x[:, :60]), None, R(nw[:60]), 1e-6, packed, 30, 60)
    with pytest.raises(RuntimeError, match="silu_and_mul: expected an even last dim"):
        retorch.rms_norm_linear(R(x), R(res), R(nw), 1e-6, packed, 30, 64, silu_and_mul=True)
    # Without a residual the residual output is the input.
    _, s = retorch.rms_norm_linear(R(x), None, R(nw), 1e-6, packed, 30, 64)
    assert np.array_equal(N(s), x)


def rope_cache(n, rot, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))
    ang = torch.arange(n).float()[:, None] * inv[None, :]
    return torch.cat([ang.cos(), ang.sin()], dim=-1)


def torch_rope(x, pos, cache, interleaved):
    rot = cache.shape[1]
    cos, sin = cache[pos, : rot // 2], cache[pos, rot // 2:]
    cos, sin = cos[:, None, :], sin[:, None, :]
    xr, rest = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        o = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
    else:
        # HF's rotate_half form: x * cat(cos, cos) + rotate_half(x) * cat(sin, sin).
        c, s = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        x1, x2 = xr[..., : rot // 2], xr[..., rot // 2:]
        o = xr * c + torch.cat([-x2, x1], -1) * s
    return torch.cat([o, rest], -1)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot", [16, 8])
def test_rotary_embedding(rng, interleaved, rot):
    T, H, D = 6, 3, 16
    x = rng.standard_normal((T, H, D)).astype(np.float32)
    pos = np.array([0, 5, 1, 31, 7, 2], np.int64)
    cache = rope_cache(32, rot)
    out = retorch.rotary_embedding(R(x), R(pos), R(cache.numpy()), interleaved)
    close(out, torch_rope(torch.from_numpy(x), torch.from_numpy(pos), cache, interleaved))
    with pytest.raises(IndexError, match="position 32 is outside the cos/sin cache of 32"):
        retorch.rotary_embedding(R(x), R(np.full(T, 32, np.int64)), R(cache.numpy()), False)
    with pytest.raises(RuntimeError, match="positions of shape"):
        retorch.rotary_embedding(R(x), R(pos[:2]), R(cache.numpy()), False)


def rotary_and_cache_case(rng, T, Hq, Hkv, D, NB, BS, rot):
    """qkv rows, positions, distinct slots, a cos/sin cache and random starting caches."""
    qkv = rng.standard_normal((T, (Hq + 2 * Hkv) * D)).astype(np.float32)
    pos = rng.integers(0, 40, T).astype(np.int64)
    slots = rng.permutation(NB * BS)[:T].astype(np.int64)
    kc = rng.standard_normal((NB, BS, Hkv, D)).astype(np.float32)
    vc = rng.standard_normal((NB, BS, Hkv, D)).astype(np.float32)
    return qkv, pos, slots, rope_cache(40, rot), kc, vc


def torch_rotary_and_cache(qkv, pos, slots, cache, kc, vc, Hq, interleaved, dtype):
    """rotary_embedding of q and k, then index_put of k and v into the caches, in torch."""
    T, D, Hkv = qkv.shape[0], kc.shape[3], kc.shape[2]
    x = torch.from_numpy(qkv)
    q, k, v = x.split([Hq * D, Hkv * D, Hkv * D], dim=1)
    tp = torch.from_numpy(pos)
    q = torch_rope(q.reshape(T, Hq, D), tp, cache, interleaved)
    k = torch_rope(k.reshape(T, Hkv, D), tp, cache, interleaved)
    tk, tv = torch.from_numpy(kc).to(dtype), torch.from_numpy(vc).to(dtype)
    at = torch.from_numpy(slots)
    tk.view(-1, Hkv, D)[at] = k.to(dtype)
    tv.view(-1, Hkv, D)[at] = v.reshape(T, Hkv, D).to(dtype)
    return q, tk, tv


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot,dtype", [(16, "float32"), (8, "float32"), (16, "bfloat16")])
def test_rotary_and_cache(rng, interleaved, rot, dtype):
    T, Hq, Hkv, D, NB, BS = 5, 6, 2, 16, 4, 3
    qkv, pos, slots, cache, kc, vc = rotary_and_cache_case(rng, T, Hq, Hkv, D, NB, BS, rot)
    tdt = getattr(torch, dtype)
    q, tk, tv = torch_rotary_and_cache(qkv, pos, slots, cache, kc, vc, Hq, interleaved, tdt)
    rk, rv = R(kc).to(getattr(retorch, dtype)), R(vc).to(getattr(retorch, dtype))
    v0 = rk._version
    out = retorch.rotary_and_cache(R(qkv), R(pos), R(cache.numpy()), rk, rv, R(slots),
                                   interleaved)
    assert out.shape == (T, Hq, D) and out.dtype == retorch.float32
    close(out, q)
    assert rk._version > v0
    # bfloat16 rows: the rounding of torch's rotation (another order of the same products) may
    # land one bfloat16 step away; float32 rows match to float32 rounding.
    tol = 1e-5 if dtype == "float32" else 8e-3
    np.testing.assert_allclose(N(rk.float()), tk.float().numpy(), rtol=tol, atol=tol)
    np.testing.assert_array_equal(N(rv.float()), tv.float().numpy())
    # Rows no slot names keep their values.
    keep = np.setdiff1d(np.arange(NB * BS), slots)
    np.testing.assert_array_equal(N(rk.float()).reshape(NB * BS, -1)[keep],
                                  tk.float().numpy().reshape(NB * BS, -1)[keep])


def normed_qkv_case(rng, T, Hq, Hkv, D, NB, BS, H, rot):
    """rms_norm_linear_rotary_and_cache's inputs (BF16 rows) and its oracle's pieces: the
    residual sum h and HF's RMSNorm of it in float64, the weight's values."""
    x, res, nw, packed, wv = rms_linear_case(rng, (T, H), (Hq + 2 * Hkv) * D, 30)
    b = rng.standard_normal((Hq + 2 * Hkv) * D).astype(np.float32)
    _, pos, slots, cache, kc, vc = rotary_and_cache_case(rng, T, Hq, Hkv, D, NB, BS, rot)
    tx, tr, tnw = map(lambda a: torch.from_numpy(a).double(), (x, res, nw))
    h = tx + tr
    normed = tnw * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6))
    return x, res, nw, packed, wv, b, pos, slots, cache, kc, vc, h, normed


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot,dtype,T", [(16, "float32", 1), (8, "float32", 3),
                                         (16, "bfloat16", 1)])
def test_rms_norm_linear_rotary_and_cache(rng, interleaved, rot, dtype, T):
    """rms_norm_linear of the q/k/v rows, then rotary_and_cache: against HF's RMSNorm, a float64
    product and the rotations and cache writes in torch (within the activations' bfloat16
    rounding, rotated: at most the sum of a pair's bounds), and equal to its two parts."""
    Hq, Hkv, D, NB, BS, H = 4, 2, 16, 4, 3, 64
    x, res, nw, packed, wv, b, pos, slots, cache, kc, vc, h, normed = normed_qkv_case(
        rng, T, Hq, Hkv, D, NB, BS, H, rot)
    qkv = normed @ wv.t() + torch.from_numpy(b).double()
    bound = float(((normed.abs() @ wv.abs().t()) * 2.0 ** -8).max()) * 2 + 1e-5
    tdt, rdt = getattr(torch, dtype), getattr(retorch, dtype)
    q, tk, tv = torch_rotary_and_cache(qkv.float().numpy(), pos, slots, cache, kc, vc, Hq,
                                       interleaved, tdt)
    rk, rv = R(kc).to(rdt), R(vc).to(rdt)
    v0 = rk._version
    got, summed = retorch.rms_norm_linear_rotary_and_cache(
        R(x), R(res), R(nw), 1e-6, packed, 30, H, R(b), R(pos), R(cache.numpy()), rk, rv,
        R(slots), interleaved)
    assert tuple(got.shape) == (T, Hq, D) and got.dtype == retorch.float32
    assert rk._version > v0 and rv._version > v0
    close(summed, h.float())
    assert (torch.from_numpy(N(got)).double() - q.double()).abs().max() <= bound
    tol = bound + (0 if dtype == "float32" else 2e-2 * float(qkv.abs().max()))
    assert (torch.from_numpy(N(rk.float())).double() - tk.double()).abs().max() <= tol
    assert (torch.from_numpy(N(rv.float())).double() - tv.double()).abs().max() <= tol
    keep = np.setdiff1d(np.arange(NB * BS), slots)  # rows no slot names keep their values
    np.testing.assert_array_equal(N(rk.float()).reshape(NB * BS, -1)[keep],
                                  tk.float().numpy().reshape(NB * BS, -1)[keep])
    # Its two parts give the same bits.
    pk, pv = R(kc).to(rdt), R(vc).to(rdt)
    y, s2 = retorch.rms_norm_linear(R(x), R(res), R(nw), 1e-6, packed, 30, H, R(b))
    q2 = retorch.rotary_and_cache(y, R(pos), R(cache.numpy()), pk, pv, R(slots), interleaved)
    for a, c in ((got, q2), (rk, pk), (rv, pv), (summed, s2)):
        assert np.array_equal(N(a.float()), N(c.float()))
    with pytest.raises(IndexError, match="rotary_and_cache: slot 12 is outside"):
        retorch.rms_norm_linear_rotary_and_cache(
            R(x), None, R(nw), 1e-6, packed, 30, H, None, R(pos), R(cache.numpy()), rk, rv,
            R(np.full(T, 12, np.int64)), interleaved)


def test_rotary_and_cache_errors(rng):
    T, Hq, Hkv, D, NB, BS = 3, 4, 2, 8, 2, 4
    qkv, pos, slots, cache, kc, vc = rotary_and_cache_case(rng, T, Hq, Hkv, D, NB, BS, 8)
    c = R(cache.numpy())

    def call(qkv=qkv, pos=pos, slots=slots, kc=kc, vc=vc):
        return retorch.rotary_and_cache(R(qkv), R(pos), c, R(kc), R(vc), R(slots))
    with pytest.raises(IndexError, match="rotary_and_cache: slot 8 is outside the cache's 8 rows"):
        call(slots=np.array([0, 8, 1], np.int64))
    with pytest.raises(IndexError, match="rotary_and_cache: position 40 is outside"):
        call(pos=np.array([0, 40, 1], np.int64))
    with pytest.raises(RuntimeError, match=r"expected qkv \[tokens, \(heads \+ 2 x 2\) x 8\]"):
        call(qkv=qkv[:, :-1])
    with pytest.raises(RuntimeError, match="one entry per qkv row"):
        call(slots=slots[:2])
    with pytest.raises(TypeError, match="contiguous float32 or bfloat16"):
        call(kc=kc.astype(np.float64), vc=vc.astype(np.float64))


def torch_attention(q, keys, values, pos, window):
    """Causal GQA attention for one sequence's queries at `pos` over keys [L, Hkv, D]."""
    T, Hq, D = q.shape
    group = Hq // keys.shape[1]
    k = keys.repeat_interleave(group, dim=1)
    v = values.repeat_interleave(group, dim=1)
    s = torch.einsum("thd,lhd->htl", q, k) / D ** 0.5
    j = torch.arange(keys.shape[0])
    mask = j[None, :] <= pos[:, None]
    if window > 0:
        mask &= j[None, :] > pos[:, None] - window
    s = s.masked_fill(~mask[None], float("-inf"))
    return torch.einsum("htl,lhd->thd", s.softmax(-1), v)


def paged_cache(rng, lens, NB, BS, Hkv, D, width, key_scale=1.0):
    """Sequences of the given lengths scattered over shuffled blocks of a [NB, BS, Hkv, D] cache:
    the caches, block tables padded to `width` and each sequence's keys and values (torch)."""
    kc = np.zeros((NB, BS, Hkv, D), np.float32)
    vc = np.zeros((NB, BS, Hkv, D), np.float32)
    free = list(rng.permutation(NB))
    tables, keys, vals = [], [], []
    for L in lens:
        blocks = [free.pop() for _ in range((L + BS - 1) // BS)]
        k = rng.standard_normal((L, Hkv, D)).astype(np.float32) * key_scale
        v = rng.standard_normal((L, Hkv, D)).astype(np.float32)
        for p in range(L):
            kc[blocks[p // BS], p % BS] = k[p]
            vc[blocks[p // BS], p % BS] = v[p]
        tables.append(blocks + [0] * (width - len(blocks)))
        keys.append(torch.from_numpy(k))
        vals.append(torch.from_numpy(v))
    return kc, vc, tables, keys, vals


def assert_matches_torch(out, q, qseq, qpos, keys, vals, window, atol):
    """Each sequence's rows of paged_attention's output against torch_attention."""
    tq = torch.from_numpy(q)
    for s in range(len(keys)):
        rows = np.nonzero(qseq == s)[0]
        expect = torch_attention(tq[rows], keys[s], vals[s], torch.from_numpy(qpos[rows]), window)
        np.testing.assert_allclose(N(out)[rows], expect.numpy(), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("Hq,Hkv", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("window", [-1, 3])
def test_paged_attention(rng, Hq, Hkv, window):
    D, BS, NB = 8, 4, 12
    lens = [5, 9, 1]  # three sequences scattered over shuffled blocks
    kc, vc, tables, keys, vals = paged_cache(rng, lens, NB, BS, Hkv, D, 3)
    # Every position of every sequence as a query, in one mixed batch.
    qseq = np.array([s for s, L in enumerate(lens) for _ in range(L)], np.int64)
    qpos = np.array([p for L in lens for p in range(L)], np.int64)
    q = rng.standard_normal((len(qseq), Hq, D)).astype(np.float32)
    out = retorch.paged_attention(R(q), R(kc), R(vc), R(np.array(tables, np.int64)), R(qseq),
                                  R(qpos), 1 / D ** 0.5, window)
    assert_matches_torch(out, q, qseq, qpos, keys, vals, window, 1e-5)
    bad = np.array(tables, np.int64)
    bad[1, 0] = NB
    with pytest.raises(IndexError, match=r"block_tables\[1\]\[0\] = 12 is outside"):
        retorch.paged_attention(R(q), R(kc), R(vc), R(bad), R(qseq), R(qpos), 1.0, -1)
    with pytest.raises(IndexError, match="query_pos"):
        retorch.paged_attention(R(q), R(kc), R(vc), R(np.array(tables, np.int64)), R(qseq),
                                R(qpos + 12), 1.0, -1)
    if Hq % 4 == 0:
        with pytest.raises(RuntimeError, match="multiple of the cache's kv heads"):
            retorch.paged_attention(R(q[:, :3]), R(kc), R(vc), R(np.array(tables, np.int64)),
                                    R(qseq), R(qpos), 1.0, -1)


@pytest.mark.parametrize("window", [-1, 5, 150])
def test_paged_attention_long_runs_match_torch(rng, window):
    # Runs of 8+ consecutive positions take the tiled path (Note [Attention tiles]): tiles of 64
    # tokens, keys 128 at a time, rows masked to their own window. A prefill of 200 tokens, a
    # chunked prefill (positions 130..199 of a 200-key sequence), a short run and a decode token,
    # all in one batch.
    Hq, Hkv, D, BS = 4, 2, 16, 16
    lens = [200, 200, 5, 40]
    NB = sum((L + BS - 1) // BS for L in lens)
    kc, vc, tables, keys, vals = paged_cache(rng, lens, NB, BS, Hkv, D, 13, key_scale=2)
    queries = [range(200), range(130, 200), range(5), [39]]
    qseq = np.array([s for s, ps in enumerate(queries) for _ in ps], np.int64)
    qpos = np.array([p for ps in queries for p in ps], np.int64)
    q = rng.standard_normal((len(qseq), Hq, D)).astype(np.float32)
    out = retorch.paged_attention(R(q), R(kc), R(vc), R(np.array(tables, np.int64)), R(qseq),
                                  R(qpos), 1 / D ** 0.5, window)
    assert_matches_torch(out, q, qseq, qpos, keys, vals, window, 2e-6)


@pytest.mark.parametrize("isa", ["AVX512", "DEFAULT"])
@pytest.mark.parametrize("window", [-1, 150])
@pytest.mark.parametrize("decode", [[0], [0, 1]])
def test_paged_attention_decode_over_key_ranges(rng, isa, window, decode):
    # Decode tokens with long contexts split their keys into ranges of blocks whose partial
    # softmaxes are merged (Note [Decode attention in key ranges]); a window starts a range
    # mid-block; GQA groups of 4; D = 40 ends on a masked tail; float32 and bfloat16 caches.
    from retorch.backends import cpu
    Hq, Hkv, D, BS = 8, 2, 40, 16
    lens = [300, 77]
    NB = sum((L + BS - 1) // BS for L in lens) + 3
    kc, vc, tables, keys, vals = paged_cache(rng, lens, NB, BS, Hkv, D, 19, key_scale=2)
    qseq = np.array(decode, np.int64)
    qpos = np.array([lens[s] - 1 for s in decode], np.int64)
    q = rng.standard_normal((len(qseq), Hq, D)).astype(np.float32)
    args = (R(np.array(tables, np.int64)), R(qseq), R(qpos), 1 / D ** 0.5, window)
    before = cpu.get_cpu_capability()
    try:
        cpu.set_cpu_capability(isa)
        out = retorch.paged_attention(R(q), R(kc), R(vc), *args)
        k16, v16 = R(kc).to(retorch.bfloat16), R(vc).to(retorch.bfloat16)
        got16 = retorch.paged_attention(R(q), k16, v16, *args)
    finally:
        cpu.set_cpu_capability(before)
    assert_matches_torch(out, q, qseq, qpos, keys, vals, window, 2e-6)
    rounded = [torch.from_numpy(N(R(k.numpy()).to(retorch.bfloat16).to(retorch.float32)))
               for k in keys]
    rounded_v = [torch.from_numpy(N(R(v.numpy()).to(retorch.bfloat16).to(retorch.float32)))
                 for v in vals]
    assert_matches_torch(got16, q, qseq, qpos, rounded, rounded_v, window, 2e-6)


@pytest.mark.parametrize("isa", ["AVX512", "AVX2", "DEFAULT"])
def test_paged_attention_bfloat16_cache(rng, isa):
    # A bfloat16 cache (half the bytes a decode step reads) gives what a float32 cache holding
    # the same rounded values gives: rows widen exactly and the arithmetic stays float32. Through
    # the tiles (a 40-token prefill), the per-token loop (decode tokens), and each instruction
    # set's form of that loop (Note [Decode attention]).
    from retorch.backends import cpu
    Hq, Hkv, D, BS = 6, 2, 24, 8  # D not a multiple of 16: the masked tails
    lens = [40, 23, 9]
    NB = sum((L + BS - 1) // BS for L in lens)
    k = rng.standard_normal((NB, BS, Hkv, D)).astype(np.float32)
    v = rng.standard_normal((NB, BS, Hkv, D)).astype(np.float32)
    k16, v16 = R(k).to(retorch.bfloat16), R(v).to(retorch.bfloat16)
    kr, vr = k16.to(retorch.float32), v16.to(retorch.float32)  # the rounded values
    blocks = list(rng.permutation(NB))
    tables, at = [], 0
    for L in lens:
        n = (L + BS - 1) // BS
        tables.append(blocks[at:at + n] + [0] * (5 - n))
        at += n
    queries = [range(40), [22], [3, 8]]
    qseq = R(np.array([s for s, ps in enumerate(queries) for _ in ps], np.int64))
    qpos = R(np.array([p for ps in queries for p in ps], np.int64))
    q = R(rng.standard_normal((len(qseq), Hq, D)).astype(np.float32))
    tab = R(np.array(tables, np.int64))
    before = cpu.get_cpu_capability()
    try:
        cpu.set_cpu_capability(isa)
        got = retorch.paged_attention(q, k16, v16, tab, qseq, qpos, 0.2, -1)
        want = retorch.paged_attention(q, kr, vr, tab, qseq, qpos, 0.2, -1)
    finally:
        cpu.set_cpu_capability(before)
    np.testing.assert_allclose(N(got), N(want), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        retorch.paged_attention(q, k16, vr, tab, qseq, qpos, 0.2, -1)
