"""The CUDA kernels of the counting ops (histc, bincount, searchsorted, repeat_interleave and
_unique2, with their composites bucketize and unique) against torch on the cpu, each checked to
have run on the device; edge cases (empty inputs, bad arguments) through the device fallback
give the cpu's results and errors. Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import fresh_stats, ran_on_device  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")

DEV = "cuda"
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]


def both(x, dtype):
    """numpy values as a retorch tensor on DEV and a torch cpu tensor, both of dtype."""
    x = np.asarray(x, dtype=np.float64)
    return (retorch.tensor(x).to(getattr(retorch, dtype)).to(DEV),
            torch.tensor(x).to(getattr(torch, dtype)))


def values(got):
    """A retorch result's values as a torch float64 (or int64) cpu tensor."""
    g = got.cpu()
    floating = str(g.dtype).split(".")[-1] in FLOATS
    return torch.tensor(g.to(retorch.float64 if floating else retorch.int64).numpy())


def same(got, want, tol=0.0):
    """got (retorch, on DEV) has want's dtype, shape and values (within tol)."""
    assert got.device.type == DEV
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    g = values(got)
    assert tuple(g.shape) == tuple(want.shape), (g.shape, want.shape)
    w = want.to(g.dtype)
    if tol == 0:
        assert torch.equal(g, w) or torch.allclose(g, w, rtol=0, atol=0, equal_nan=True), (g, w)
    else:
        assert torch.allclose(g, w, rtol=tol, atol=tol, equal_nan=True), (g - w).abs().max()


def rng(seed):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_ranges_edges_and_nan(dtype):
    x = rng(80).standard_normal(2000) * 2
    x[:6] = [1.5, -1.5, 3.0, -3.0, 0.0, 2.25]  # both edges and values outside
    r, t = both(x, dtype)

    def oracle(v, *args):  # (torch 1.13's cpu histc has no 16-bit kernels: float32, rounded)
        return torch.histc(v.float() if dtype in ("float16", "bfloat16") else v, *args).to(t.dtype)

    for bins, lo, hi in [(100, 0, 0), (7, -1.5, 1.5), (1, -1, 1), (5000, -2, 2), (10, 5, 6),
                         (13, 1.0, 1.0)]:
        same(retorch.histc(r, bins, lo, hi), oracle(t, bins, lo, hi))
    same(r.histc(), oracle(t))
    same(retorch.histc(r[::3], 17), oracle(t[::3], 17))
    assert ran_on_device("aten::histc")


def test_histc_nan_counts_in_the_first_bin_and_constant_input():
    r, t = both([np.nan, 0.5, 0.25, np.nan, 2.0], "float32")
    same(retorch.histc(r, 4, 0, 1), torch.tensor([2.0, 1.0, 1.0, 0.0]))  # PyTorch 1.13's counts
    r, t = both([3.0] * 10, "float64")
    same(retorch.histc(r, 4), torch.histc(t, 4))  # min == max: the range [2, 4]
    assert ran_on_device("aten::histc")


def test_histc_errors_and_empty_input_take_the_fallback():
    r, _ = both([np.nan, 1.0], "float32")
    with pytest.raises(Exception):
        retorch.histc(r, 4)  # a NaN range: the cpu's error
    r, _ = both([1.0, 2.0], "float32")
    with pytest.raises(Exception):
        retorch.histc(r, 4, 3, 1)
    with pytest.raises(Exception):
        retorch.histc(r, 0)
    e, t = both(np.zeros(0), "float32")
    same(retorch.histc(e, 5), torch.histc(t, 5))


@pytest.mark.parametrize("dtype", INTS)
def test_bincount_counts_and_minlength(dtype):
    x = rng(81).integers(0, 100, 5000)
    r, t = both(x, dtype)
    same(retorch.bincount(r), torch.bincount(t))
    same(retorch.bincount(r, minlength=300), torch.bincount(t, minlength=300))
    same(r.bincount(minlength=3), t.bincount(minlength=3))
    same(retorch.bincount(r[::2]), torch.bincount(t[::2]))
    assert ran_on_device("aten::bincount")


@pytest.mark.parametrize("wdtype", ["float32", "float64", "float16", "int64"])
def test_bincount_weights_keep_the_cpu_result_dtype(wdtype):
    x = rng(82).integers(0, 40, 3000)
    w = rng(83).standard_normal(3000) if wdtype != "int64" else rng(83).integers(-5, 5, 3000)
    r, t = both(x, "int64")
    rw, tw = both(w, wdtype)
    want = torch.bincount(t, tw, minlength=50)
    same(retorch.bincount(r, rw, minlength=50), want, 1e-3 if wdtype == "float32" else 1e-9)
    assert ran_on_device("aten::bincount")


def test_bincount_edge_cases():
    e, t = both(np.zeros(0), "int64")
    same(retorch.bincount(e), torch.bincount(t))
    same(retorch.bincount(e, minlength=4), torch.bincount(t, minlength=4))
    r, t = both([0, 0, 0], "int32")
    same(retorch.bincount(r), torch.bincount(t))
    r, _ = both([1, -1, 2], "int64")
    with pytest.raises(Exception):
        retorch.bincount(r)  # negative: found on the device, raised by the cpu kernel
    r2, _ = both([[1, 2]], "int64")
    with pytest.raises(Exception):
        retorch.bincount(r2)
    r, _ = both([1, 2], "int64")
    rw, _ = both([1.0], "float32")
    with pytest.raises(Exception):
        retorch.bincount(r, rw)


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int32"])
def test_searchsorted_sides_and_out_int32(dtype):
    g = rng(84)
    seq = np.sort(np.round(g.standard_normal(300) * 8))  # with repeats
    vals = np.round(g.standard_normal((7, 50)) * 10)
    vals[0, :3] = [seq[0], seq[-1], seq[150]]
    rs, ts = both(seq, dtype)
    rv, tv = both(vals, dtype)
    for kw in [{}, dict(right=True), dict(side="right"), dict(side="left"), dict(out_int32=True),
               dict(out_int32=True, right=True)]:
        same(retorch.searchsorted(rs, rv, **kw), torch.searchsorted(ts, tv, **kw))
    same(retorch.bucketize(rv, rs), torch.bucketize(tv, ts))
    same(retorch.bucketize(rv, rs, right=True, out_int32=True),
         torch.bucketize(tv, ts, right=True, out_int32=True))
    assert ran_on_device("aten::searchsorted.Tensor")


def test_searchsorted_batched_sorter_and_nan():
    g = rng(85)
    seq = np.sort(g.standard_normal((3, 4, 40)), axis=-1)
    vals = g.standard_normal((3, 4, 25)) * 2
    vals[0, 0, :2] = [np.nan, np.inf]
    rs, ts = both(seq, "float32")
    rv, tv = both(vals, "float32")
    for kw in [{}, dict(right=True), dict(out_int32=True)]:
        same(retorch.searchsorted(rs, rv, **kw), torch.searchsorted(ts, tv, **kw))
    # the rows shuffled, the sorter putting them back in order
    perm = np.argsort(g.standard_normal((3, 4, 40)), axis=-1)
    shuffled = np.take_along_axis(seq, perm, -1)
    sorter = np.argsort(shuffled, axis=-1, kind="stable")
    rsh, tsh = both(shuffled, "float32")
    rso = retorch.tensor(sorter).to(retorch.int64).to(DEV)
    tso = torch.tensor(sorter)
    for kw in [{}, dict(side="right")]:
        same(retorch.searchsorted(rsh, rv, sorter=rso, **kw),
             torch.searchsorted(tsh, tv, sorter=tso, **kw))
    # promotion: int64 boundaries, float values; a 0-dim value
    ri, ti = both(np.arange(0, 40, 3), "int64")
    rf, tf = both([-1.0, 2.5, 3.0, 100.0], "float32")
    same(retorch.searchsorted(ri, rf), torch.searchsorted(ti, tf))
    r0, t0 = both(7.0, "float32")
    same(retorch.searchsorted(ri, r0), torch.searchsorted(ti, t0))
    assert ran_on_device("aten::searchsorted.Tensor")


def test_searchsorted_bad_arguments_and_empty():
    rs, _ = both([1.0, 2.0], "float32")
    rv, _ = both([1.5], "float32")
    with pytest.raises(Exception):
        retorch.searchsorted(rs, rv, side="middle")
    with pytest.raises(Exception):
        retorch.searchsorted(rs, rv, right=True, side="left")
    b2, _ = both(np.zeros((2, 3)), "float32")
    v2, _ = both(np.zeros((3, 3)), "float32")
    with pytest.raises(Exception):
        retorch.searchsorted(b2, v2)
    e, te = both(np.zeros(0), "float32")
    same(retorch.searchsorted(rs, e), torch.searchsorted(torch.tensor([1.0, 2.0]), te))
    same(retorch.searchsorted(e, rv), torch.searchsorted(te, torch.tensor([1.5])))


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_repeat_interleave_counts_and_output_size(dtype):
    reps = rng(86).integers(0, 5, 300)
    r, t = both(reps, dtype)
    same(retorch.repeat_interleave(r), torch.repeat_interleave(t))
    total = int(reps.sum())
    same(retorch.repeat_interleave(r, output_size=total),
         torch.repeat_interleave(t, output_size=total))
    r0, t0 = both([0, 0, 3, 0], dtype)
    same(retorch.repeat_interleave(r0), torch.repeat_interleave(t0))
    assert ran_on_device("aten::repeat_interleave.Tensor")


def test_repeat_interleave_composites_and_edge_cases():
    x, tx = both(rng(87).standard_normal((4, 5)), "float32")
    rr, tr = both([1, 0, 3, 2], "int64")
    same(retorch.repeat_interleave(x, rr, dim=0), torch.repeat_interleave(tx, tr, dim=0))
    rc, tc = both([2, 1, 0, 1, 3], "int64")
    same(x.repeat_interleave(rc, dim=1), tx.repeat_interleave(tc, dim=1))
    assert ran_on_device("aten::repeat_interleave.Tensor")
    e, te = both(np.zeros(0), "int64")
    same(retorch.repeat_interleave(e), torch.repeat_interleave(te))
    n, _ = both([1, -2, 3], "int64")
    with pytest.raises(Exception):
        retorch.repeat_interleave(n)  # negative: flagged on the device, raised by the cpu kernel


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_unique_values_inverse_and_counts(dtype):
    g = rng(88)
    x = np.round(g.standard_normal((30, 70)) * 6)
    if dtype in ("uint8", "bool"):
        x = np.abs(x)
    r, t = both(x, dtype)
    tu = t if dtype not in ("float16", "bfloat16") else t.float()  # (torch 1.13's cpu kernels)
    for inv in (False, True):
        for cnt in (False, True):
            got = retorch._unique2(r, True, inv, cnt)
            want = torch._unique2(tu, True, inv, cnt)
            same(got[0], want[0].to(t.dtype))
            same(got[1], want[1]) if inv else same(got[1], torch.zeros(0, dtype=torch.int64))
            same(got[2], want[2]) if cnt else same(got[2], torch.zeros(0, dtype=torch.int64))
    out, inverse, counts = retorch.unique(r.t(), return_inverse=True, return_counts=True)
    w_out, w_inv, w_cnt = torch.unique(tu.t(), return_inverse=True, return_counts=True)
    same(out, w_out.to(t.dtype))
    same(inverse, w_inv)
    same(counts, w_cnt)
    assert ran_on_device("aten::_unique2")


def test_unique_nan_large_and_empty():
    x = rng(89).integers(-1000, 1000, 200_000).astype(np.float64)
    x[:5] = [np.nan, np.nan, 3.0, np.nan, -0.0]
    r, t = both(x, "float64")
    got = retorch._unique2(r, True, True, True)
    # each NaN its own value, last (as torch's CUDA kernel): retorch's cpu kernel is the oracle
    # (torch 1.13's cpu hash set sorts NaNs anywhere)
    want = [values(w) for w in retorch._unique2(r.cpu(), True, True, True)]
    assert int(torch.isnan(want[0]).sum()) == 3
    for g, w in zip(got, want):
        same(g, w)
    r0, t0 = both(5.0, "float32")  # 0-dim: inverse 0-dim too
    got, want = retorch._unique2(r0, True, True, True), torch._unique2(t0, True, True, True)
    for g, w in zip(got, want):
        same(g, w)
    assert ran_on_device("aten::_unique2")
    e, te = both(np.zeros((0, 3)), "int64")
    got, want = retorch._unique2(e, True, True, True), torch._unique2(te, True, True, True)
    for g, w in zip(got, want):
        same(g, w)
