"""The CUDA kernels of ops that took the device fallback until 2026-12-04: elu, nan_to_num,
digamma, polygamma, i1, clamp with tensor bounds, masked_fill with a tensor value, the shifts,
the in-place and out= logical ops, where(condition), the factories (arange, linspace, eye),
random_ and bernoulli (the cpu's numbers for a seed), dot, and addmm / _addmm_activation through
cuBLASLt's bias epilogues. Against torch on the cpu, and retorch's cpu where the numbers are
retorch's own (random draws, shifts past the width). Skipped without a GPU."""
import numpy as np
import pytest
import torch

import retorch
from test_cuda_ops import DTYPES, close, fresh_stats, ran_on_device, up  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")


def both(x, dtype):
    """float64 numpy values as a retorch cuda tensor and a torch cpu tensor of dtype."""
    return (retorch.tensor(x).to(getattr(retorch, dtype)).to("cuda"),
            torch.tensor(x).to(getattr(torch, dtype)))


def t_dtype(name):
    """torch's dtype of that name."""
    return getattr(torch, name)


def normal(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_elu_and_its_coefficients(dtype, tol):
    F, G = retorch.nn.functional, torch.nn.functional
    r, t = both(normal((33, 47), 70, 3), dtype)
    close(F.elu(r), G.elu(up(t)).to(t.dtype), tol)
    close(retorch.elu(r, 0.7, 1.3, 0.5),
          torch.ops.aten.elu(up(t), 0.7, 1.3, 0.5).to(t.dtype), tol * 2)
    close(F.selu(r), G.selu(up(t)).to(t.dtype), tol * 2)
    c = r.clone()
    retorch.elu_(c, 0.5)
    close(c, G.elu(up(t), 0.5).to(t.dtype), tol)
    assert ran_on_device("aten::elu") and ran_on_device("aten::elu_")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_nan_to_num_defaults_and_replacements(dtype):
    x = normal((20, 30), 71)
    x.flat[:6] = [np.nan, np.inf, -np.inf, np.nan, 1e30, -np.inf]
    r, t = both(x, dtype)
    for kw in ({}, dict(nan=2.5), dict(nan=-1.0, posinf=7.0, neginf=-8.0), dict(posinf=1e30)):
        close(retorch.nan_to_num(r, **kw), torch.nan_to_num(t, **kw), 0)
    out = retorch.empty((20, 30), dtype=r.dtype, device="cuda")
    retorch.nan_to_num(r.t().contiguous().t(), nan=3.0, out=out)
    close(out, torch.nan_to_num(t, nan=3.0), 0)
    c = r.clone()
    c.nan_to_num_(neginf=0.0)
    close(c, torch.nan_to_num(t, neginf=0.0), 0)
    assert ran_on_device("aten::nan_to_num") and ran_on_device("aten::nan_to_num_")
    assert ran_on_device("aten::nan_to_num.out")


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-11)])
def test_digamma_polygamma_and_i1(dtype, tol):
    x = normal((25, 40), 72, 4)
    x.flat[:7] = [0.0, -0.0, -1.0, -2.0, 1.0, 0.5, -0.5]  # poles, zeros and exact values
    r, t = both(x, dtype)
    close(retorch.digamma(r), torch.digamma(t.double()).to(t.dtype), tol)
    c = r.clone()
    c.digamma_()
    close(c, torch.digamma(t.double()).to(t.dtype), tol)
    x.flat[:7] = [0.25, -0.25, -1.5, -2.5, 1.0, 0.5, -0.5]  # polygamma's poles' signs vary
    r, t = both(x, dtype)
    for n in range(4):
        close(retorch.polygamma(n, r), torch.polygamma(n, t.double()).to(t.dtype),
              tol * (10 if dtype == "float32" else 1000))
    close(retorch.special.i1(r), torch.special.i1(t.double()).to(t.dtype), tol)
    assert ran_on_device("aten::digamma") and ran_on_device("aten::polygamma")
    assert ran_on_device("aten::special_i1")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_clamp_with_tensor_bounds(dtype, tol):
    x = normal((30, 40), 73, 2)
    x.flat[0] = np.nan
    lo, hi = normal(40, 74) - 1, normal((30, 1), 75) + 1
    lo[3] = np.nan  # a NaN bound gives NaN, as a NaN input stays NaN
    (r, t), (rl, tl), (rh, th) = both(x, dtype), both(lo, dtype), both(hi, dtype)
    t, tl, th = up(t), up(tl), up(th)  # (torch's cpu clamp has no float16 kernel)
    both_bounds = torch.clamp(t, tl, th).to(t_dtype(dtype))
    close(retorch.clamp(r, rl, rh), both_bounds, tol)
    close(retorch.clamp(r, min=rl), torch.clamp(t, min=tl).to(t_dtype(dtype)), tol)
    close(retorch.clamp(r, max=rh), torch.clamp(t, max=th).to(t_dtype(dtype)), tol)
    c = r.clone()
    c.clamp_(rl, rh)
    close(c, both_bounds, tol)
    out = retorch.empty((30, 40), dtype=r.dtype, device="cuda")
    retorch.clamp(r, rl, rh, out=out)
    close(out, both_bounds, tol)
    assert ran_on_device("aten::clamp.Tensor") and ran_on_device("aten::clamp_.Tensor")
    assert ran_on_device("aten::clamp.Tensor_out")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_masked_fill_with_a_tensor_value(dtype):
    r, t = both(normal((12, 16), 76), dtype)
    m = normal(16, 77) > 0
    rm, tm = retorch.tensor(m).to("cuda"), torch.tensor(m)
    cpu_value = retorch.tensor(2.5)
    close(retorch.masked_fill(r, rm, cpu_value), t.masked_fill(tm, torch.tensor(2.5)), 0)
    dev_value = retorch.tensor(-4.0).to(r.dtype).to("cuda")
    close(r.masked_fill(rm, dev_value), t.masked_fill(tm, torch.tensor(-4.0)), 0)
    c = r.clone()
    c.masked_fill_(rm, dev_value)
    close(c, t.masked_fill(tm, torch.tensor(-4.0)), 0)
    assert ran_on_device("aten::masked_fill.Tensor") and ran_on_device("aten::masked_fill_.Tensor")


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_shifts_in_and_past_the_width(dtype):
    rng = np.random.default_rng(78)
    a = rng.integers(-5000, 5000, (10, 20))
    counts = rng.integers(0, 20, 20)
    rt_dtype, t_dtype = getattr(retorch, dtype), getattr(torch, dtype)
    ra, rc = retorch.tensor(a).to(rt_dtype), retorch.tensor(counts).to(rt_dtype)
    da, dc = ra.to("cuda"), rc.to("cuda")
    ta, tc = torch.tensor(a).to(t_dtype), torch.tensor(counts).to(t_dtype)
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        got = getattr(retorch, name)(da, dc)
        assert np.array_equal(got.cpu().numpy(), getattr(torch, name)(ta, tc).numpy()), name
        assert ran_on_device(f"aten::{name}.Tensor"), name
    # Counts past the width or negative: 0 for a left shift, the sign fill for a right one, as
    # the cpu kernel gives.
    wide = retorch.tensor([-1, 64, 100, 31, 63, 0, 40, -7] * 25).to(rt_dtype).view(10, 20)
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        got = getattr(retorch, name)(da, wide.to("cuda")).cpu().numpy()
        assert np.array_equal(got, getattr(retorch, name)(ra, wide).numpy()), name
    c = da.clone()
    c.bitwise_left_shift_(dc)
    assert np.array_equal(c.cpu().numpy(), (ta << tc).numpy())


def test_logical_and_bitwise_not_in_place_and_out_and_where_of_a_condition():
    x, y = normal((15, 25), 79), normal(25, 80)
    y[::4] = 0.0
    (r, t), (ry, ty) = both(x, "float32"), both(y, "float32")
    mask, tmask = retorch.tensor(x > 0.2).to("cuda"), torch.tensor(x > 0.2)
    for name in ("logical_and", "logical_or", "logical_xor"):
        out = retorch.empty((15, 25), dtype=retorch.bool, device="cuda")
        getattr(retorch, name)(r, ry, out=out)
        assert np.array_equal(out.cpu().numpy(), getattr(torch, name)(t, ty).numpy()), name
        c = mask.clone()
        getattr(c, name + "_")(ry)
        assert np.array_equal(c.cpu().numpy(), getattr(torch, name)(tmask, ty).numpy()), name
        assert ran_on_device(f"aten::{name}.out") and ran_on_device(f"aten::{name}_"), name
    c = mask.clone()
    c.logical_not_()
    assert np.array_equal(c.cpu().numpy(), (~tmask).numpy())
    out = retorch.empty((15, 25), dtype=retorch.bool, device="cuda")
    retorch.signbit(r, out=out)
    assert np.array_equal(out.cpu().numpy(), torch.signbit(t).numpy())
    ints = retorch.tensor(np.arange(-6, 6)).to("cuda")
    c = ints.clone()
    c.bitwise_not_()
    assert np.array_equal(c.cpu().numpy(), ~np.arange(-6, 6))
    out = retorch.empty(12, dtype=retorch.int64, device="cuda")
    retorch.bitwise_not(ints, out=out)
    assert np.array_equal(out.cpu().numpy(), ~np.arange(-6, 6))
    for op in ("logical_not_", "signbit.out", "bitwise_not_", "bitwise_not.out"):
        assert ran_on_device(f"aten::{op}"), op
    got = retorch.where(mask)
    want = torch.where(tmask)
    assert len(got) == 2
    for g, w in zip(got, want):
        assert g.device.type == "cuda" and np.array_equal(g.cpu().numpy(), w.numpy())
    assert ran_on_device("aten::where")


@pytest.mark.parametrize("dtype,tol", DTYPES + [("int64", 0)])
def test_cumprod_logcumsumexp_cummax_and_cummin(dtype, tol):
    rng = np.random.default_rng(81)
    x = rng.uniform(0.8, 1.25, (3, 600, 5)) * np.sign(rng.standard_normal((3, 600, 5)))
    if dtype == "int64":
        x = rng.integers(-2, 3, (3, 600, 5))
    r, t = both(x, dtype)
    for dim in (0, 1, -1):
        got = retorch.cumprod(r, dim)
        assert got.dtype == r.dtype
        want = torch.cumprod(up(t) if tol else t, dim).to(t.dtype)
        close(got, want, max(tol, 1e-12) * 100)
        for name in ("cummax", "cummin"):
            values, indices = getattr(retorch, name)(r, dim)
            want_values, want_indices = getattr(torch, name)(up(t) if tol else t, dim)
            close(values, want_values.to(t.dtype), 0)
            assert np.array_equal(indices.cpu().numpy(), want_indices.numpy()), (name, dim)
        if tol:
            close(retorch.logcumsumexp(r * 3, dim),
                  torch.logcumsumexp(up(t) * 3, dim).to(t.dtype), tol * 10)
    # Ties move to the later index and a NaN sticks until the next one, as torch's.
    if dtype != "int64":
        ties = [1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, 0.0, 3.0, -np.inf]
        r, t = both(np.array(ties * 40), dtype)
        for name in ("cummax", "cummin"):
            values, indices = getattr(retorch, name)(r, 0)
            want_values, want_indices = getattr(torch, name)(up(t), 0)  # (no float16 cummax)
            close(values, want_values.to(t.dtype), 0)
            assert np.array_equal(indices.cpu().numpy(), want_indices.numpy()), name
    for op in ("cumprod", "cummax", "cummin") + (("logcumsumexp",) if tol else ()):
        assert ran_on_device(f"aten::{op}"), op


FACTORY_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16",
                  "int32", "int64"]


@pytest.mark.parametrize("dtype", FACTORY_DTYPES)
def test_arange_linspace_and_eye(dtype):
    rd, td = getattr(retorch, dtype), getattr(torch, dtype)
    signed, floating = dtype != "uint8", dtype.startswith(("float", "bfloat"))

    def same(got, want, what):
        """Integers exactly; floats to a double's last bit (the device's fused multiply-adds)."""
        g, w = got.cpu().to(retorch.float64).numpy(), want.to(retorch.float64).numpy()
        assert np.allclose(g, w, rtol=1e-15, atol=1e-15) if floating else np.array_equal(g, w), what

    ranges = [(0, 50, 1), (3, 40, 7)] + ([(20, -15, -3)] if signed else [])
    ranges += [(0, 10, 0.5), (-2.5, 3.5, 0.25)] if floating else []
    for start, end, step in ranges:
        got = retorch.arange(start, end, step, dtype=rd, device="cuda")
        same(got, retorch.arange(start, end, step, dtype=rd), (start, end, step))  # the cpu's
        if dtype in ("float32", "float64", "int64"):
            close(got, torch.arange(start, end, step, dtype=td), 1e-6)
    for start, end, steps in [(0, 10, 11), (-3, 7, 6), (2, 2, 1), (0, 1, 0), (-1, 1, 101)]:
        if not signed and start < 0:
            continue
        got = retorch.linspace(start, end, steps, dtype=rd, device="cuda")
        same(got, retorch.linspace(start, end, steps, dtype=rd), (start, end, steps))
        if floating:
            close(got, torch.linspace(start, end, steps, dtype=td), 1e-6 if dtype != "float16"
                  and dtype != "bfloat16" else 1e-2)
    for n, m in [(4, None), (3, 5), (6, 2), (0, 3)]:
        got = retorch.eye(n, m, dtype=rd, device="cuda") if m else retorch.eye(n, dtype=rd,
                                                                              device="cuda")
        want = torch.eye(n, m if m else n, dtype=torch.float64)  # (no cpu bfloat16 eye in torch)
        assert np.array_equal(got.cpu().to(retorch.float64).numpy(), want.numpy())
    for op in ("arange.start_step", "linspace", "eye"):
        assert ran_on_device(f"aten::{op}"), op


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int32", "int64"])
def test_random_and_bernoulli_draw_the_cpu_numbers(dtype):
    rd = getattr(retorch, dtype)
    for low, high in ((0, 10), (-50, 50), (5, 6)):
        retorch.manual_seed(91)
        got = retorch.empty((30, 17), dtype=rd, device="cuda").random_(low, high)
        retorch.manual_seed(91)
        want = retorch.empty((30, 17), dtype=rd).random_(low, high)
        assert np.array_equal(got.cpu().to(retorch.float64).numpy(),
                              want.to(retorch.float64).numpy()), (low, high)
        assert got.min().item() >= low and got.max().item() < high
    assert ran_on_device("aten::random_.from")
    if dtype in ("int32", "int64"):
        return
    p = retorch.tensor(np.random.default_rng(92).uniform(size=(40, 50))).to(rd)
    retorch.manual_seed(93)
    got = retorch.bernoulli(p.to("cuda"))
    retorch.manual_seed(93)
    want = retorch.bernoulli(p)
    assert got.device.type == "cuda"
    assert np.array_equal(got.cpu().to(retorch.float64).numpy(), want.to(retorch.float64).numpy())
    assert ran_on_device("aten::bernoulli")
    with pytest.raises(RuntimeError, match="bernoulli"):
        retorch.bernoulli(retorch.tensor([0.5, 1.5]).to(rd).to("cuda"))


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_dot_addmm_bias_epilogue_and_addmm_activation(dtype, tol):
    rng = np.random.default_rng(94)
    v, w = both(rng.standard_normal(300), dtype), both(rng.standard_normal(300), dtype)
    close(retorch.dot(v[0], w[0]), torch.dot(up(v[1]), up(w[1])).to(v[1].dtype), tol * 30)
    close(retorch.dot(v[0][::3], w[0][::3]),
          torch.dot(up(v[1][::3]), up(w[1][::3])).to(v[1].dtype), tol * 30)
    assert ran_on_device("aten::dot")
    x, tx = both(rng.standard_normal((37, 64)), dtype)
    wt, twt = both(rng.standard_normal((48, 64)) / 8, dtype)
    b, tb = both(rng.standard_normal(48), dtype)
    ptol = tol * 30
    lin = torch.addmm(up(tb), up(tx), up(twt).t())
    # The bias epilogue (a [N] bias, beta 1), through nn.functional.linear and addmm itself,
    # then the unfused forms (beta 2, a 2-D self).
    close(retorch.nn.functional.linear(x, wt, b), lin.to(tx.dtype), ptol)
    close(retorch.addmm(b, x, wt.t(), alpha=0.5),
          torch.addmm(up(tb), up(tx), up(twt).t(), alpha=0.5).to(tx.dtype), ptol)
    close(retorch.addmm(b, x, wt.t(), beta=2.0),
          torch.addmm(up(tb), up(tx), up(twt).t(), beta=2.0).to(tx.dtype), ptol)
    full, tfull = both(rng.standard_normal((37, 48)), dtype)
    close(retorch.addmm(full, x, wt.t()), torch.addmm(up(tfull), up(tx), up(twt).t()).to(tx.dtype),
          ptol)
    assert ran_on_device("aten::addmm")
    # relu, and GELU's tanh form (PyTorch's CUDA _addmm_activation), fused and unfused.
    for self_r, self_t, beta in ((b, tb, 1.0), (full, tfull, 1.0), (b, tb, 0.5)):
        want = torch.addmm(up(self_t), up(tx), up(twt).t(), beta=beta)
        got = retorch._addmm_activation(self_r, x, wt.t(), beta=beta)
        close(got, torch.relu(want).to(tx.dtype), ptol)
        got = retorch._addmm_activation(self_r, x, wt.t(), beta=beta, use_gelu=True)
        close(got, torch.nn.functional.gelu(want, approximate="tanh").to(tx.dtype), ptol)
    assert ran_on_device("aten::_addmm_activation")


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_prod_mse_smooth_l1_index_select_out_and_euclidean_dist(dtype, tol):
    F, G = retorch.nn.functional, torch.nn.functional
    rng = np.random.default_rng(95)
    r, t = both(rng.uniform(0.9, 1.1, (13, 17)), dtype)
    close(retorch.prod(r), torch.prod(up(t)).to(t.dtype), tol * 20)
    close(retorch.prod(r, dtype=retorch.float64), torch.prod(t.double()), tol * 20)
    assert ran_on_device("aten::prod")
    (a, ta), (b, tb) = both(rng.standard_normal((40, 30)), dtype), both(
        rng.standard_normal((40, 30)), dtype)
    close(F.mse_loss(a, b, reduction="sum"),
          G.mse_loss(ta.double(), tb.double(), reduction="sum").to(ta.dtype), tol * 10)
    close(retorch._mse_sum(a, b), ((ta.double() - tb.double()) ** 2).sum().to(ta.dtype), tol * 10)
    assert ran_on_device("aten::_mse_sum")
    for beta in (1.0, 0.5):
        close(F.smooth_l1_loss(a, b, reduction="none", beta=beta),
              G.smooth_l1_loss(up(ta), up(tb), reduction="none", beta=beta).to(ta.dtype), tol)
    close(F.smooth_l1_loss(a, b), G.smooth_l1_loss(up(ta), up(tb)).to(ta.dtype), tol * 10)
    assert ran_on_device("aten::_smooth_l1")
    index = retorch.tensor([3, 0, 29, 3]).to("cuda")
    out = retorch.empty((40, 4), dtype=a.dtype, device="cuda")
    retorch.index_select(a, 1, index, out=out)
    close(out, ta.index_select(1, torch.tensor([3, 0, 29, 3])), 0)
    assert ran_on_device("aten::index_select.out")
    if dtype != "float16":  # (torch's cpu cdist has no float16 kernel)
        x1, y1 = both(rng.standard_normal((2, 9, 6)), dtype)
        x2, y2 = both(rng.standard_normal((2, 7, 6)), dtype)
        close(retorch._euclidean_dist(x1, x2), torch.cdist(up(y1), up(y2)).to(y1.dtype),
              tol * 30)
        assert ran_on_device("aten::_euclidean_dist")


QTYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "BF16": (30, 1, 2), "Q8_0": (8, 32, 34),
          "Q4_0": (2, 32, 18), "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210),
          "Q4_0x16": (1002, 32, 18)}


def random_block_rows(rng, name, rows, cols):
    """[rows, row bytes] uint8 of format `name` (QTYPES): random bytes with finite fp16 scales
    of a modest size in each block's scale bytes; 16-bit and F32 rows of normal values."""
    qtype, block, nbytes = QTYPES[name]
    rb = cols // block * nbytes
    raw = rng.integers(0, 256, (rows, rb), dtype=np.uint8)
    if block > 1:
        scales = np.float16(rng.uniform(-0.05, 0.05, raw.shape[0] * (rb // nbytes))).view(np.uint8)
        at = {8: [0], 2: [0], 1002: [], 12: [0, 2], 14: [208]}[qtype]
        blocks = raw.reshape(rows, rb // nbytes, nbytes)
        for off in at:
            blocks[:, :, off:off + 2] = scales.reshape(rows, rb // nbytes, 2)
        if qtype == 1002:  # 16 rows' scales lead each group's 288-byte block
            g = raw.reshape(rows // 16, cols // 32, 288)
            g[:, :, :32] = np.float16(rng.uniform(-0.05, 0.05, g[:, :, :32].size // 2)).view(
                np.uint8).reshape(g[:, :, :32].shape)
    elif qtype != 0:
        raw = (np.float32(rng.standard_normal((rows, cols))).view(np.uint32) >> 16).astype(
            np.uint16).view(np.uint8).reshape(rows, rb) if qtype == 30 else np.float16(
            rng.standard_normal((rows, cols))).view(np.uint8).reshape(rows, rb)
    else:
        raw = np.float32(rng.standard_normal((rows, cols))).view(np.uint8).reshape(rows, rb)
    return raw


@pytest.mark.parametrize("name", sorted(QTYPES))
def test_dequantize_blocks_and_quantized_linear_of_every_block_format(name):
    qtype = QTYPES[name][0]
    rng = np.random.default_rng(96)
    rows, cols = 48, 512
    raw = random_block_rows(rng, name, rows, cols)
    w = retorch.tensor(raw.astype(np.int64)).to(retorch.uint8)
    want = retorch.dequantize_blocks(w, qtype, cols)  # the cpu's
    got = retorch.dequantize_blocks(w.to("cuda"), qtype, cols)
    assert got.device.type == "cuda" and got.dtype == retorch.float32
    assert np.array_equal(got.cpu().numpy(), want.numpy(), equal_nan=True)  # bit for bit
    assert ran_on_device("aten::dequantize_blocks")
    # Up to 8 rows of Q8_0/Q4_0/Q4_K/Q6_K run the quantized GEMV (Note [Quantized decode
    # projections]), more rows the dequantized weight's GEMM: both the exact dequantized products
    # summed in float32, so within a float32 sum's error of the magnitudes summed.
    bias = rng.standard_normal(2 * rows).astype(np.float32)
    wd = torch.tensor(want.numpy()).double()
    for m in (1, 5, 8, 9, 40):
        x = torch.tensor(rng.standard_normal((m, cols)).astype(np.float32)).double()
        bound = 1e-5 * (x.abs() @ wd.abs().t()) + 1e-6
        for b in (bias[:rows], bias[::2], None):  # contiguous, strided, none
            y = retorch.quantized_linear(retorch.tensor(x.numpy()).float().to("cuda"),
                                         w.to("cuda"), qtype, cols,
                                         None if b is None else retorch.tensor(b).to("cuda"))
            assert y.device.type == "cuda" and tuple(y.shape) == (m, rows)
            ref = x @ wd.t() + (0 if b is None else torch.tensor(b).double())
            err = (torch.tensor(y.cpu().numpy()).double() - ref).abs()
            assert (err <= bound).all(), (m, err.max())
    assert ran_on_device("aten::quantized_linear")


@pytest.mark.parametrize("qtype", [8, 2, 0, 1, 30])  # the formats quantize_blocks writes
def test_quantize_blocks_writes_the_cpu_bytes(qtype):
    rng = np.random.default_rng(97)
    x = (rng.standard_normal((16, 256)) * rng.choice([1e-3, 1, 50], (16, 256))).astype(np.float32)
    x[0, :32] = 0
    x[1, 5], x[2, 7], x[3, 40] = np.nan, np.inf, -np.inf
    x[4, 64:96] = 1e-42  # subnormal
    x[5, 3] = 70000.0  # past float16's range
    x[6, :2] = [-3.0, 3.0]  # a tie of magnitudes: Q4_0 keeps the first
    r = retorch.tensor(x)
    for src in (r, r.to(retorch.bfloat16).to(retorch.float32)):
        want = retorch.quantize_blocks(src, qtype)
        got = retorch.quantize_blocks(src.to("cuda"), qtype)
        assert got.device.type == "cuda" and got.dtype == retorch.uint8
        assert np.array_equal(got.cpu().numpy(), want.numpy())
    got = retorch.quantize_blocks(r.to("cuda").to(retorch.bfloat16), qtype)  # a 16-bit input
    assert np.array_equal(got.cpu().numpy(),
                          retorch.quantize_blocks(r.to(retorch.bfloat16), qtype).numpy())
    assert ran_on_device("aten::quantize_blocks")


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-10)])
def test_ctc_loss_and_its_gradient(dtype, tol):
    F = retorch.nn.functional
    rng = np.random.default_rng(98)
    T, N, C = 40, 5, 9
    x = rng.standard_normal((T, N, C))
    il, tl = [40, 33, 20, 1, 12], [8, 12, 5, 0, 7]
    targets = rng.integers(1, C, (N, 12))
    targets[0, 2] = targets[0, 1]  # a repeated label needs a blank between
    flat = np.concatenate([targets[b, :tl[b]] for b in range(N)])
    for tg in (targets, flat):
        for zero_infinity in (False, True):
            for reduction in ("none", "mean", "sum"):
                r = retorch.tensor(x).to(getattr(retorch, dtype)).to("cuda").requires_grad_()
                t = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
                lp, tlp = F.log_softmax(r, 2), torch.log_softmax(t, 2)
                got = F.ctc_loss(lp, retorch.tensor(tg).to("cuda"), retorch.tensor(il),
                                 retorch.tensor(tl), reduction=reduction,
                                 zero_infinity=zero_infinity)
                want = torch.nn.functional.ctc_loss(
                    tlp, torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                    reduction=reduction, zero_infinity=zero_infinity)
                close(got, want.detach(), tol)
                if reduction != "none":
                    got.backward()
                    want.backward()
                    close(r.grad, t.grad, tol * 10)
    # An impossible alignment (2 steps for 4 labels): an infinite loss, zeroed with its gradient
    # by zero_infinity.
    il[3], tl[3], targets[3, :4] = 2, 4, [1, 2, 3, 4]
    for zero_infinity in (False, True):
        r = retorch.tensor(x).to(getattr(retorch, dtype)).to("cuda").requires_grad_()
        t = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
        got = F.ctc_loss(F.log_softmax(r, 2), retorch.tensor(targets).to("cuda"),
                         retorch.tensor(il), retorch.tensor(tl), reduction="sum",
                         zero_infinity=zero_infinity)
        want = torch.nn.functional.ctc_loss(torch.log_softmax(t, 2), torch.tensor(targets),
                                            torch.tensor(il), torch.tensor(tl), reduction="sum",
                                            zero_infinity=zero_infinity)
        close(got, want.detach(), tol)
        if zero_infinity:
            got.backward()
            want.backward()
            close(r.grad, t.grad, tol * 10)
    assert ran_on_device("aten::_ctc_loss") and ran_on_device("aten::_ctc_loss_backward")


CAST_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32",
               "int64", "bool"]


@pytest.mark.parametrize("src", CAST_DTYPES)
def test_casts_between_every_pair_of_dtypes(src):
    rng = np.random.default_rng(99)
    floating = src.startswith(("float", "bfloat"))
    for dst in CAST_DTYPES:
        if src == "uint8" or (floating and dst == "uint8"):
            x = rng.uniform(0, 200, 300)  # (a negative float to uint8 has no C++ meaning)
        else:
            x = rng.uniform(-100, 100, 300)
        x = x if floating else np.round(x)
        x[:4] = [0.0, 1.0, 2.75 if floating else 3.0, -0.0]
        if dst == "uint8" or src == "uint8":
            x[3] = 7.0
        base = retorch.tensor(x).to(getattr(retorch, src))
        want = base.to(getattr(retorch, dst))  # the cpu's cast
        got = base.to("cuda").to(getattr(retorch, dst))
        assert got.device.type == "cuda" and got.dtype == want.dtype
        assert np.array_equal(got.cpu().to(retorch.float64).numpy(),
                              want.to(retorch.float64).numpy()), (src, dst)
        strided = base.to("cuda")[::3].to(getattr(retorch, dst))
        assert np.array_equal(strided.cpu().to(retorch.float64).numpy(),
                              want[::3].to(retorch.float64).numpy()), (src, dst)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_remainder_and_mixed_promotion(dtype):
    rng = np.random.default_rng(100)
    a = rng.integers(-1000, 1000, (20, 30))
    b = rng.integers(-9, 10, 30)
    b[b == 0] = 7
    rd, td = getattr(retorch, dtype), getattr(torch, dtype)
    ra, rb = retorch.tensor(a).to(rd).to("cuda"), retorch.tensor(b).to(rd).to("cuda")
    ta, tb = torch.tensor(a).to(td), torch.tensor(b).to(td)
    for mode in ("trunc", "floor"):
        got = retorch.div(ra, rb, rounding_mode=mode)
        assert got.dtype == rd
        assert np.array_equal(got.cpu().numpy(), torch.div(ta, tb, rounding_mode=mode).numpy())
        got = retorch.div(ra, -3, rounding_mode=mode)
        assert np.array_equal(got.cpu().numpy(), torch.div(ta, -3, rounding_mode=mode).numpy())
    for name in ("remainder", "fmod"):
        got = getattr(retorch, name)(ra, rb)
        assert np.array_equal(got.cpu().numpy(), getattr(torch, name)(ta, tb).numpy()), name
        got = getattr(retorch, name)(ra, 7)
        assert np.array_equal(got.cpu().numpy(), getattr(torch, name)(ta, 7).numpy()), name
    assert np.array_equal((ra // rb).cpu().numpy(), (ta // tb).numpy())
    assert np.array_equal((ra % 5).cpu().numpy(), (ta % 5).numpy())
    # true division of integers, and integers with floats, in floating point on the device
    close(ra / rb, ta / tb, 1e-6)
    close(ra * 0.5, ta * 0.5, 1e-6)
    f = retorch.tensor(b.astype(np.float64)).to("cuda")
    close(ra + f, ta + torch.tensor(b.astype(np.float64)), 1e-12)
    close((ra < 0.5).to(retorch.float32), (ta < 0.5).float(), 0)
    assert ran_on_device("aten::div.Tensor_mode") and ran_on_device("aten::remainder.Tensor")
    assert ran_on_device("aten::fmod.Tensor") and ran_on_device("aten::div.Tensor")
    for op in (lambda: retorch.div(ra, rb * 0, rounding_mode="floor"),
               lambda: retorch.remainder(ra, 0)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op()


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "uint8"])
def test_unary_ops_of_integer_tensors(dtype):
    rng = np.random.default_rng(101)
    x = rng.integers(0 if dtype in ("bool", "uint8") else -50, 50, (12, 17))
    if dtype == "bool":
        x = x > 20
    rd = getattr(retorch, dtype)
    cpu = retorch.tensor(x).to(rd)
    dev = cpu.to("cuda")
    for name in ("exp", "sqrt", "sigmoid", "tanh", "log1p", "erf", "sin"):  # give floats
        got, want = getattr(retorch, name)(dev), getattr(retorch, name)(cpu)
        assert got.dtype == want.dtype == retorch.float32, name
        close(got, torch.tensor(want.numpy()), 1e-6)
        assert ran_on_device(f"aten::{name}"), name
    # A floating exponent or bound gives floats (the default dtype), as torch's result_type.
    tx = torch.tensor(x).to(getattr(torch, dtype))
    for name, args, kw in (("clamp", (), dict(min=0.5)), ("clamp", (), dict(min=-3, max=2.5)),
                           ("clamp_min", (0.5,), {}), ("clamp_max", (-1.5,), {}),
                           ("pow", (0.5,), {})):
        got = getattr(retorch, name)(dev, *args, **kw)
        want = getattr(torch, name)(tx, *args, **kw)
        assert got.dtype == retorch.float32 and want.dtype == torch.float32, name
        close(got, want, 1e-6)
        assert ran_on_device(f"aten::{name}" + (".Tensor_Scalar" if name == "pow" else "")), name
    with pytest.raises(RuntimeError, match="can't be cast"):
        dev.clone().clamp_(min=0.5)  # the cpu kernel's error
    if dtype not in ("int32", "int64"):
        return
    for name in ("neg", "abs", "relu", "sign", "floor", "ceil", "round", "trunc"):  # keep it
        want = getattr(retorch, name)(cpu)
        got = getattr(retorch, name)(dev)
        assert got.dtype == rd and np.array_equal(got.cpu().numpy(), want.numpy()), name
        c = dev.clone()
        getattr(c, name + "_")()
        assert np.array_equal(c.cpu().numpy(), want.numpy()), name
        assert ran_on_device(f"aten::{name}") and ran_on_device(f"aten::{name}_"), name
    for kw in (dict(min=-10, max=20), dict(min=5), dict(max=-3), dict(min=30, max=10)):
        want = retorch.clamp(cpu, **kw)
        got = retorch.clamp(dev, **kw)
        assert got.dtype == rd and np.array_equal(got.cpu().numpy(), want.numpy()), kw
        c = dev.clone()
        c.clamp_(**kw)
        assert np.array_equal(c.cpu().numpy(), want.numpy()), kw
    for name in ("clamp_min", "clamp_max"):
        got, want = getattr(retorch, name)(dev, 3), getattr(retorch, name)(cpu, 3)
        assert np.array_equal(got.cpu().numpy(), want.numpy()), name
    # pow of integers stays integral (torch's powi: products wrap; a negative exponent tensor
    # gives 1 or -1 for bases 1 and -1, else 0; a negative scalar exponent raises).
    tx = torch.tensor(x).to(getattr(torch, dtype))
    for e in (0, 1, 2, 3, 7, 13):
        got = retorch.pow(dev, e)
        assert got.dtype == rd and np.array_equal(got.cpu().numpy(), torch.pow(tx, e).numpy()), e
    c = dev.clone()
    c.pow_(3)
    assert np.array_equal(c.cpu().numpy(), torch.pow(tx, 3).numpy())
    ex = rng.integers(-3, 9, (12, 17))
    texp = torch.tensor(ex).to(tx.dtype)
    small = torch.tensor(rng.integers(-2, 3, (12, 17))).to(tx.dtype)  # bases 1 and -1 among them
    for base, tb in ((dev, tx), (retorch.tensor(small.numpy()).to(rd).to("cuda"), small)):
        got = retorch.pow(base, retorch.tensor(ex).to(rd).to("cuda"))
        assert got.dtype == rd and np.array_equal(got.cpu().numpy(), torch.pow(tb, texp).numpy())
    assert ran_on_device("aten::pow.Tensor_Scalar") and ran_on_device("aten::pow.Tensor_Tensor")
    assert ran_on_device("aten::sign") and ran_on_device("aten::pow_.Tensor_Scalar")
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        retorch.pow(dev, -2)
    got = retorch.pow(dev, 0.5)  # a floating exponent gives floats
    assert got.dtype == retorch.float32
    close(got, torch.pow(tx, 0.5), 1e-6)
    assert ran_on_device("aten::clamp") and ran_on_device("aten::clamp_")
    extreme = retorch.tensor([np.iinfo(np.dtype(dtype)).min, -1, 0, 5]).to(rd)
    assert np.array_equal(retorch.abs(extreme.to("cuda")).cpu().numpy(),
                          torch.abs(torch.tensor(extreme.numpy())).numpy())
