"""The CUDA backend's LLM kernels (16-bit-row projections and the decode GEMVs, the norm fused
into them over 16-bit and block-quantized rows, fused RMSNorm and SiLU-and-mul, rotary embedding
and the cache write, paged attention, row gathers) against torch on the cpu, on a machine with a
CUDA device; skipped, never passed, without one. Each test also checks that the op ran on the
device."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import DTYPES, close, pair, ran_on_device, t_dtype, up

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")


@pytest.fixture(autouse=True)
def fresh_stats():
    retorch.reset_device_fallback_stats()
    yield


@pytest.mark.parametrize("qtype,rows", [(30, "bfloat16"), (1, "float16")])
def test_quantized_linear_of_16bit_rows_is_one_gemm_on_the_device(qtype, rows):
    """GGUF BF16/F16 rows as bytes: the activations rounded to the rows' type, float32
    accumulation and result, the float32 bias added (Note in CudaBlas.cpp), against torch."""
    x, tx = pair((2, 5, 96), "float32", seed=31)
    w = torch.tensor(np.random.default_rng(32).standard_normal((40, 96))).to(t_dtype(rows))
    w_bytes = retorch.tensor(w.view(torch.uint8).numpy()).to("cuda")  # [40, 192] uint8
    b, tb = pair((40,), "float32", seed=33)
    want = tx.to(t_dtype(rows)).double() @ w.double().t()
    got = retorch.quantized_linear(x, w_bytes, qtype, 96)
    assert got.dtype == retorch.float32 and tuple(got.shape) == (2, 5, 40)
    close(got, want, 1e-4)
    close(retorch.quantized_linear(x, w_bytes, qtype, 96, b), want + tb.double(), 1e-4)
    close(retorch.quantized_linear(x[:, 1:], w_bytes, qtype, 96), want[:, 1:], 1e-4)  # strided
    assert ran_on_device("aten::quantized_linear")
    with pytest.raises(ValueError, match="quantized_linear: 95 .* values take 190 bytes"):
        retorch.quantized_linear(x, w_bytes, qtype, 95)  # the cpu kernel's error


@pytest.mark.parametrize("qtype,rows", [(30, "bfloat16"), (1, "float16")])
@pytest.mark.parametrize("m", [1, 3, 8, 9, 17, 32, 33])
def test_few_row_projections_match_torch(qtype, rows, m):
    """Up to 32 rows run the GEMVs of Note [Few-row projections]: tensor cores for 2 to 32 rows
    where K is a multiple of 32 and N of 16 (two tiles of weight rows a block past 8 rows where N
    is a multiple of 32), else, up to 8 rows, a warp per weight row where K is a multiple of 8;
    33 rows, other shapes and an unaligned weight take cuBLAS; all give torch's."""
    rng = np.random.default_rng(50 + m)
    for n, k in ((320, 2048), (304, 2048), (301, 2048), (304, 1000), (301, 1004)):
        x, tx = pair((m, k), "float32", seed=51 + m)
        w = torch.tensor(rng.standard_normal((n, k))).to(t_dtype(rows))
        b, tb = pair((2 * n,), "float32", seed=52)
        want = tx.to(t_dtype(rows)).double() @ w.double().t()
        packed = retorch.tensor(w.view(torch.uint8).numpy()).to("cuda")
        close(retorch.quantized_linear(x, packed, qtype, k), want, 1e-3)
        close(retorch.quantized_linear(x, packed, qtype, k, b[:n]), want + tb[:n].double(), 1e-3)
        close(retorch.quantized_linear(x, packed, qtype, k, b[::2]), want + tb[::2].double(),
              1e-3)  # a strided bias, added after
        close(retorch.quantized_linear(x[:, :].t().contiguous().t(), packed, qtype, k), want,
              1e-3)
        shifted = retorch.tensor(np.concatenate([np.zeros(2, np.uint8),
                                                 w.view(torch.uint8).numpy().ravel()]))
        unaligned = shifted.to("cuda")[2:].view(n, 2 * k)  # 2 bytes past a 16-byte boundary
        close(retorch.quantized_linear(x, unaligned, qtype, k), want, 1e-3)
    assert ran_on_device("aten::quantized_linear")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_llm_row_kernels_match_their_formulas(dtype, tol):
    tol = max(tol, 1e-6)  # the cpu kernels compute float64 in float32 (the device in float64)
    # 64 and 2048 columns: rows in registers as vectors; 3001: one element at a time; 9000:
    # the looping kernel.
    for cols in (64, 2048, 3001, 9000):
        x, tx = pair((5, cols), dtype, seed=25)
        res, tres = pair((5, cols), dtype, seed=26)
        w, tw = pair((cols,), dtype, seed=27)

        def rms(h):
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * up(tw)

        out, summed = retorch.fused_rms_norm(x, res, w, 1e-6)
        close(out, rms(up(tx) + up(tres)).to(tx.dtype), tol * 4)
        close(summed, (up(tx) + up(tres)).to(tx.dtype), tol)
        out, same = retorch.fused_rms_norm(x, None, w, 1e-6)
        close(out, rms(up(tx)).to(tx.dtype), tol * 4)
        assert same.data_ptr() == x.data_ptr()
    g, tg = pair((3, 2, 80), dtype, seed=28)
    got = retorch.silu_and_mul(g)
    close(got, (torch.nn.functional.silu(up(tg)[..., :40]) * up(tg)[..., 40:]).to(tg.dtype),
          tol)
    assert ran_on_device("aten::fused_rms_norm") and ran_on_device("aten::silu_and_mul")


def cu(a):
    return retorch.from_numpy(np.ascontiguousarray(a)).to("cuda")


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot", [64, 32])
def test_rotary_embedding_on_the_device(interleaved, rot):
    from test_ops_llm import rope_cache, torch_rope
    rng = np.random.default_rng(32)
    x = rng.standard_normal((7, 4, 64)).astype(np.float32)
    pos = np.array([0, 9, 3, 63, 17, 2, 40], np.int64)
    cache = rope_cache(64, rot)
    got = retorch.rotary_embedding(cu(x), cu(pos), cu(cache.numpy()), interleaved)
    close(got, torch_rope(torch.from_numpy(x), torch.from_numpy(pos), cache, interleaved), 1e-5)
    assert ran_on_device("aten::rotary_embedding")


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("kv", ["float32", "bfloat16"])
def test_rotary_and_cache_on_the_device(interleaved, kv):
    from test_ops_llm import rotary_and_cache_case, torch_rotary_and_cache
    rng = np.random.default_rng(35)
    T, Hq, Hkv, D, NB, BS = 9, 8, 2, 64, 6, 16
    qkv, pos, slots, cache, kc, vc = rotary_and_cache_case(rng, T, Hq, Hkv, D, NB, BS, 64)
    q, tk, tv = torch_rotary_and_cache(qkv, pos, slots, cache, kc, vc, Hq, interleaved,
                                       getattr(torch, kv))
    dk, dv = cu(kc).to(getattr(retorch, kv)), cu(vc).to(getattr(retorch, kv))
    got = retorch.rotary_and_cache(cu(qkv), cu(pos), cu(cache.numpy()), dk, dv, cu(slots),
                                   interleaved)
    assert got.device.type == "cuda" and dk.device.type == "cuda"
    close(got, q, 1e-5)
    tol = 1e-5 if kv == "float32" else 8e-3
    np.testing.assert_allclose(dk.float().cpu().numpy(), tk.float().numpy(), rtol=tol, atol=tol)
    np.testing.assert_array_equal(dv.float().cpu().numpy(), tv.float().numpy())
    assert ran_on_device("aten::rotary_and_cache")


@pytest.mark.parametrize("kv", ["float32", "bfloat16"])
@pytest.mark.parametrize("Hq,Hkv,window", [(8, 2, -1), (4, 4, 5), (6, 1, -1)])
def test_paged_attention_on_the_device(kv, Hq, Hkv, window):
    from test_ops_llm import paged_cache, torch_attention
    rng = np.random.default_rng(33)
    D, BS, NB = 128, 16, 20
    lens = [37, 70, 1, 16]
    kc, vc, tables, keys, vals = paged_cache(rng, lens, NB, BS, Hkv, D, 5)
    if kv == "bfloat16":  # the oracle reads the rounded cache
        kc = torch.from_numpy(kc).bfloat16().float().numpy()
        vc = torch.from_numpy(vc).bfloat16().float().numpy()
        keys = [k.bfloat16().float() for k in keys]
        vals = [v.bfloat16().float() for v in vals]
    qseq = np.array([s for s, L in enumerate(lens) for _ in range(L)], np.int64)
    qpos = np.array([p for L in lens for p in range(L)], np.int64)
    q = rng.standard_normal((len(qseq), Hq, D)).astype(np.float32)
    out = retorch.paged_attention(cu(q), cu(kc).to(getattr(retorch, kv)),
                                  cu(vc).to(getattr(retorch, kv)), cu(np.array(tables, np.int64)),
                                  cu(qseq), cu(qpos), 1 / D ** 0.5, window)
    assert out.device.type == "cuda"
    for s in range(len(lens)):
        rows = np.nonzero(qseq == s)[0]
        expect = torch_attention(torch.from_numpy(q[rows]), keys[s], vals[s],
                                 torch.from_numpy(qpos[rows]), window)
        np.testing.assert_allclose(out.cpu().numpy()[rows], expect.numpy(), rtol=1e-4, atol=1e-5)
    assert ran_on_device("aten::paged_attention")


def test_row_gathers_and_the_cache_write():
    rng = np.random.default_rng(34)
    table = rng.standard_normal((50, 3, 8)).astype(np.float32)
    idx = np.array([4, 0, 49, 4, 17], np.int64)
    got = retorch.index_select(cu(table), 0, cu(idx))
    assert (got.cpu().numpy() == table[idx]).all()
    emb = retorch.nn.functional.embedding(cu(idx.reshape(5, 1)), cu(table.reshape(50, 24)))
    assert (emb.cpu().numpy() == table.reshape(50, 24)[idx.reshape(5, 1)]).all()
    cache = retorch.zeros((50, 3, 8), device="cuda")
    slots = np.array([7, 3, 40], np.int64)
    vals = rng.standard_normal((3, 3, 8)).astype(np.float32)
    cache.index_put_([cu(slots)], cu(vals))
    want = np.zeros((50, 3, 8), np.float32)
    want[slots] = vals
    assert (cache.cpu().numpy() == want).all()
    # Values that are a view (a fused projection's value rows, as a batch's are) write too.
    fused = rng.standard_normal((3, 2, 3, 8)).astype(np.float32)
    cache.index_put_([cu(slots)], cu(fused)[:, 1])
    want[slots] = fused[:, 1]
    assert (cache.cpu().numpy() == want).all()
    for op in ("aten::index_select", "aten::embedding", "aten::index_put_"):
        assert ran_on_device(op)


@pytest.mark.parametrize("qtype,rows", [(30, "bfloat16"), (1, "float16")])
@pytest.mark.parametrize("swiglu", [False, True])
def test_rms_norm_linear_fuses_one_rows_norm_into_the_gemv(qtype, rows, swiglu):
    """One row over 16-bit rows runs Note [Normed decode projections]'s kernel: the same values
    as its three ops on the device and as torch; other calls (3 rows, an unaligned weight) run
    the three ops. The norm's scale is summed in another order than torch's (or the unfused
    kernel's), and a last-bit difference can round an activation to the neighbouring bfloat16:
    about 2^-8 of one term, hence 2e-2 (the values are sums of 2048 terms of size ~1)."""
    rng = np.random.default_rng(60)
    for n, k, m in ((304, 2048, 1), (37, 1000, 1), (16, 64, 1), (304, 2048, 3), (37, 1000, 3)):
        x, tx = pair((m, k), "float32", seed=61)
        res, tres = pair((m, k), "float32", seed=62)
        nw = retorch.tensor(1 + 0.1 * rng.standard_normal(k)).float().to("cuda")
        w = torch.tensor(rng.standard_normal((2 * n, k))).to(t_dtype(rows))
        packed = retorch.tensor(w.view(torch.uint8).numpy()).to("cuda")
        b, tb = pair((2 * n,), "float32", seed=63)
        h = tx + tres
        normed = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)) * \
            torch.tensor(nw.cpu().numpy())
        proj = normed.to(t_dtype(rows)).double() @ w.double().t() + tb.double()
        want = (torch.nn.functional.silu(proj[:, :n]) * proj[:, n:]) if swiglu else proj
        for bias in (b, None):
            got, summed = retorch.rms_norm_linear(x, res, nw, 1e-5, packed, qtype, k, bias,
                                                  silu_and_mul=swiglu)
            if bias is None:
                p0 = normed.to(t_dtype(rows)).double() @ w.double().t()
                want0 = (torch.nn.functional.silu(p0[:, :n]) * p0[:, n:]) if swiglu else p0
                close(got, want0, 2e-2)
            else:
                close(got, want, 2e-2)
            close(summed, h, 1e-6)
            n1, s1 = retorch.fused_rms_norm(x, res, nw, 1e-5)
            y1 = retorch.quantized_linear(n1, packed, qtype, k, bias)
            close(got, torch.tensor((retorch.silu_and_mul(y1) if swiglu else y1).cpu().numpy()),
                  2e-2)
        got, same = retorch.rms_norm_linear(x, None, nw, 1e-5, packed, qtype, k)
        assert same.data_ptr() == x.data_ptr()
        hx = tx
        nx = (hx * torch.rsqrt(hx.pow(2).mean(-1, keepdim=True) + 1e-5)) * \
            torch.tensor(nw.cpu().numpy())
        close(got, nx.to(t_dtype(rows)).double() @ w.double().t(), 2e-2)
        shifted = retorch.tensor(np.concatenate([np.zeros(2, np.uint8),
                                                 w.view(torch.uint8).numpy().ravel()]))
        unaligned = shifted.to("cuda")[2:].view(2 * n, 2 * k)
        close(retorch.rms_norm_linear(x, res, nw, 1e-5, unaligned, qtype, k, b,
                                      silu_and_mul=swiglu)[0], want, 2e-2)
    assert ran_on_device("aten::rms_norm_linear")
    assert fused_call(x[:1], res[:1], nw, packed, qtype, k, swiglu)
    assert not fused_call(retorch.cat([x[:1]] * 3), retorch.cat([res[:1]] * 3), nw, packed,
                          qtype, k, swiglu)  # 3 rows: the parts
    with pytest.raises(RuntimeError, match="silu_and_mul: expected an even last dim"):
        retorch.rms_norm_linear(x, None, nw, 1e-5, packed[:7], qtype, k, silu_and_mul=True)


def fused_call(x, res, nw, w, qtype, k, swiglu):
    """Whether rms_norm_linear ran as one kernel: its parts (fused_rms_norm, quantized_linear)
    are not dispatched."""
    from retorch.profiler import profile
    with profile() as p:
        retorch.rms_norm_linear(x, res, nw, 1e-5, w, qtype, k, silu_and_mul=swiglu)
    names = {e["name"] for e in p.events()}
    assert "aten::rms_norm_linear" in names
    return "aten::quantized_linear" not in names and "aten::fused_rms_norm" not in names


@pytest.mark.parametrize("name", ["Q8_0", "Q4_0", "Q4_K", "Q6_K"])
@pytest.mark.parametrize("swiglu", [False, True])
def test_rms_norm_linear_fuses_the_norm_over_block_quantized_rows(name, swiglu):
    """One row over GGUF block rows runs the fused kernel too (QuantRows, Note [Quantized
    decode projections]): the norm staged as float32 and the rows taken as the quantized GEMV
    takes them, so against the parts on the device and torch's float64 over the dequantized
    weight it is within a float32 sum's error of the magnitudes summed."""
    from test_cuda_misc_ops import QTYPES, random_block_rows
    qtype = QTYPES[name][0]
    rng = np.random.default_rng(64)
    n, k = 48, 512
    raw = random_block_rows(rng, name, 2 * n, k)
    w = retorch.tensor(raw.astype(np.int64)).to(retorch.uint8)
    wd = torch.tensor(retorch.dequantize_blocks(w, qtype, k).numpy()).double()
    w = w.to("cuda")
    x, tx = pair((1, k), "float32", seed=65)
    res, tres = pair((1, k), "float32", seed=66)
    nw = retorch.tensor(1 + 0.1 * rng.standard_normal(k)).float().to("cuda")
    b, tb = pair((2 * n,), "float32", seed=67)
    h = tx.double() + tres.double()
    normed = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * \
        torch.tensor(nw.cpu().numpy()).double()
    bound = 1e-5 * (normed.abs() @ wd.abs().t()) + 1e-6  # of each projection
    for bias in (b, None):
        proj = normed @ wd.t() + (tb.double() if bias is not None else 0)
        got, summed = retorch.rms_norm_linear(x, res, nw, 1e-5, w, qtype, k, bias,
                                              silu_and_mul=swiglu)
        n1, _ = retorch.fused_rms_norm(x, res, nw, 1e-5)
        parts = torch.tensor(retorch.quantized_linear(n1, w, qtype, k, bias).cpu().numpy())
        g = torch.tensor(got.cpu().numpy()).double()
        for want in (proj, parts.double()):
            if swiglu:  # silu(g) u moves by at most 1.1 |u| dg + (|silu(g)| + dg) du
                gate, up = want[:, :n], want[:, n:]
                err = 1.1 * up.abs() * bound[:, :n] + \
                    (torch.nn.functional.silu(gate).abs() + bound[:, :n]) * bound[:, n:]
                want = torch.nn.functional.silu(gate) * up
            else:
                err = bound
            assert g.shape == want.shape and ((g - want).abs() <= err + 1e-6).all(), \
                (g - want).abs().max()
        close(summed, h, 1e-6)
    got, same = retorch.rms_norm_linear(x, None, nw, 1e-5, w, qtype, k)
    assert same.data_ptr() == x.data_ptr()
    assert ran_on_device("aten::rms_norm_linear")
    assert fused_call(x, res, nw, w, qtype, k, swiglu)


CHAIN = r"""
import sys, numpy as np, retorch
rng = np.random.default_rng(70)
w = (rng.standard_normal((2048, 2048)) / 45).astype(np.float32)
u = w.view(np.uint32)
bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # bfloat16, to nearest even
packed = retorch.tensor(bits.view(np.uint8).reshape(2048, 4096)).to("cuda")
nw = retorch.ones(2048).to("cuda")
x = retorch.tensor(rng.standard_normal((1, 2048)).astype(np.float32)).to("cuda")
for i in range(40):  # each GEMV reads what the kernel just before it wrote
    x = retorch.quantized_linear(x, packed, 30, 2048)
    x, _ = retorch.rms_norm_linear(x, x, nw, 1e-6, packed, 30, 2048)
np.save(sys.argv[1], x.cpu().numpy())
"""


def test_dependent_launches_give_the_plain_launches_values(tmp_path):
    """Note [Dependent launches]: GEMVs that each read the previous GEMV's output, launched as
    programmatic dependents (the default on sm_90) and plainly (RETORCH_CUDA_PDL=0), give the
    same bits: each waits for the kernel before it before reading or writing."""
    import os
    import subprocess
    import sys
    outs = []
    for flag in ("1", "0"):
        path = str(tmp_path / f"chain{flag}.npy")
        subprocess.run([sys.executable, "-c", CHAIN, path], check=True,
                       env=dict(os.environ, RETORCH_CUDA_PDL=flag))
        outs.append(np.load(path))
    assert np.isfinite(outs[0]).all() and np.abs(outs[0]).max() > 0
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rot,kv,T", [(64, "float32", 1), (32, "float32", 1),
                                      (64, "bfloat16", 1), (64, "float32", 3)])
def test_rms_norm_linear_rotary_and_cache_on_the_device(interleaved, rot, kv, T):
    """One token's norm, q/k/v projection, rotations and cache write in one kernel (Note [Normed
    decode projections]); 3 tokens run its parts. Against its parts on the device (the same
    formulas; the norm's scale summed in another order can move an activation by one bfloat16
    step) and torch's rotations of the float64 projection."""
    from test_ops_llm import normed_qkv_case, torch_rotary_and_cache
    rng = np.random.default_rng(80)
    Hq, Hkv, D, NB, BS, H = 8, 2, 64, 6, 16, 512
    x, res, nw, packed, wv, b, pos, slots, cache, kc, vc, h, normed = normed_qkv_case(
        rng, T, Hq, Hkv, D, NB, BS, H, rot)
    qkv = normed.to(torch.bfloat16).double() @ wv.t() + torch.from_numpy(b).double()
    q, tk, tv = torch_rotary_and_cache(qkv.float().numpy(), pos, slots, cache, kc, vc, Hq,
                                       interleaved, getattr(torch, kv))
    rdt = getattr(retorch, kv)

    def cu(a):
        return retorch.from_numpy(np.ascontiguousarray(a)).to("cuda")
    dk, dv = cu(kc).to(rdt), cu(vc).to(rdt)
    got, summed = retorch.rms_norm_linear_rotary_and_cache(
        cu(x), cu(res), cu(nw), 1e-6, packed.to("cuda"), 30, H, cu(b), cu(pos),
        cu(cache.numpy()), dk, dv, cu(slots), interleaved)
    assert got.device.type == "cuda" and tuple(got.shape) == (T, Hq, D)
    tol = 2e-2 if kv == "float32" else 5e-2
    close(got, q, tol)
    close(summed, h, 1e-6)
    for dev, want in ((dk, tk), (dv, tv)):
        np.testing.assert_allclose(dev.float().cpu().numpy(), want.float().numpy(), rtol=tol,
                                   atol=tol)
    pk, pv = cu(kc).to(rdt), cu(vc).to(rdt)
    y, _ = retorch.rms_norm_linear(cu(x), cu(res), cu(nw), 1e-6, packed.to("cuda"), 30, H, cu(b))
    q2 = retorch.rotary_and_cache(y, cu(pos), cu(cache.numpy()), pk, pv, cu(slots), interleaved)
    close(got, torch.tensor(q2.cpu().numpy()), tol)
    keep = np.setdiff1d(np.arange(NB * BS), slots)
    assert np.array_equal(dk.float().cpu().numpy().reshape(NB * BS, -1)[keep],
                          kc.reshape(NB * BS, -1)[keep].astype(np.float32)
                          if kv == "float32" else
                          pk.float().cpu().numpy().reshape(NB * BS, -1)[keep])
    assert ran_on_device("aten::rms_norm_linear_rotary_and_cache")
