"""The blocked float16/bfloat16 loops (Note [16-bit float loops]) against PyTorch: conversions
bit for bit, and elementwise ops, sums and matmuls across block boundaries and tails."""
import numpy as np
import pytest
import torch

import retorch

# Lengths around the 8-lane vectors and the 256-element conversion blocks.
SIZES = (1, 7, 8, 9, 255, 256, 257, 1000, 4099)
HALF = ("float16", "bfloat16")


def specials():
    """float32 values that stress rounding: ties at both widths, overflow, subnormals, NaN."""
    bits = [0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001,  # bf16 ties (even/odd) and near
            0x3f801000, 0x3f803000, 0x3f800fff, 0x3f801001,  # half ties and near
            0x7f7fffff, 0x477fe000, 0x477ff000, 0x477fefff,  # bf16/half overflow edges
            0x00000001, 0x00800000, 0x33800000, 0x33000000,  # subnormals, half's smallest
            0x38800000, 0x387fffff, 0x7f800000, 0xff800000,  # half normal edge, infinities
            0x7fc00000, 0xffc00000, 0x7f800001, 0x80000000]  # NaNs (quiet, signalling), -0
    return np.array(bits, dtype=np.uint32).view(np.float32)


def values(n, seed=0):
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    sp = specials()
    v[: min(n, len(sp))] = sp[: min(n, len(sp))]
    return rng.permutation(v)


def to_np(x):
    """float32 numpy copy of a torch or retorch 16-bit tensor (the widening is exact)."""
    if isinstance(x, torch.Tensor):
        return x.to(torch.float32).numpy()
    return x.to(retorch.float32).numpy()


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("n", SIZES)
def test_narrow_and_widen_bit_exact(dt, n):
    v = values(n)
    t = torch.from_numpy(v).to(getattr(torch, dt))
    r = retorch.tensor(v).to(getattr(retorch, dt))
    np.testing.assert_array_equal(to_np(r), to_np(t))  # NaN positions must agree too
    # Widening back to float32 and to float64, contiguous and strided.
    np.testing.assert_array_equal(r.to(retorch.float64).numpy(), t.to(torch.float64).numpy())
    np.testing.assert_array_equal(to_np(r[::2]), to_np(t[::2]))


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("n", SIZES)
def test_elementwise_across_blocks(dt, n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ta, tb = (torch.from_numpy(x).to(getattr(torch, dt)) for x in (a, b))
    ra, rb = (retorch.tensor(x).to(getattr(retorch, dt)) for x in (a, b))
    cases = {
        "add": lambda L, x, y: x + y,
        "mul scalar": lambda L, x, y: x * 2.5,
        "scalar rsub": lambda L, x, y: 1 - y,
        "maximum": lambda L, x, y: L.maximum(x, y),
        "gt": lambda L, x, y: x > y,
    }
    if dt == "bfloat16":  # PyTorch 1.13 has no float16 relu/exp/tanh/sigmoid on CPU
        cases.update({"relu": lambda L, x, y: x.relu(), "exp": lambda L, x, y: x.exp(),
                      "tanh": lambda L, x, y: x.tanh(), "sigmoid": lambda L, x, y: x.sigmoid()})
    for name, f in cases.items():
        want, got = f(torch, ta, tb), f(retorch, ra, rb)
        assert str(got.dtype) == str(want.dtype), name
        if want.dtype == torch.bool:
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
        else:
            # One rounding step of the 16-bit type apart at most.
            tol = 1e-2 if dt == "bfloat16" else 1e-3
            np.testing.assert_allclose(to_np(got), to_np(want), rtol=tol, atol=tol, err_msg=name)
    # In place, through an out= view and with a strided operand.
    ra2, ta2 = ra.clone(), ta.clone()
    ra2.mul_(3).add_(rb)
    ta2.mul_(3).add_(tb)
    np.testing.assert_allclose(to_np(ra2), to_np(ta2), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(to_np(ra[::3] + rb[::3]), to_np(ta[::3] + tb[::3]), rtol=1e-2)


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("n", SIZES + (300000,))
def test_sum_across_blocks(dt, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    t = torch.from_numpy(x).to(getattr(torch, dt))
    r = retorch.tensor(x).to(getattr(retorch, dt))
    # Both accumulate in float or wider; the final rounding to the 16-bit type dominates.
    want = t.to(torch.float64).sum().item()
    got = r.sum()
    assert str(got.dtype) == str(t.sum().dtype)
    tol = (8e-3 if dt == "bfloat16" else 1e-3) * max(1.0, abs(want))
    assert abs(got.to(retorch.float64).item() - want) <= tol
    m = r.reshape(1, n).mean(1)
    assert abs(m.item() - want / n) <= tol / n + 1e-3


def close_to(got, want, dt, what, rel=None):
    """got (a retorch 16-bit tensor) within a few roundings of the float64 reference want."""
    assert str(got.dtype) == "torch." + dt, what
    scale = want.abs().max().item() + 1
    tol = (rel or (2e-2 if dt == "bfloat16" else 2e-3)) * scale
    err = np.abs(to_np(got).astype(np.float64) - want.numpy()).max()
    assert err <= tol, f"{what}: max error {err} > {tol}"


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 7), (64, 300, 33), (257, 128, 96)])
def test_matmul(dt, shape):
    m, k, n = shape
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal((1, n)).astype(np.float32)
    ra, rb, rc = (retorch.tensor(x).to(getattr(retorch, dt)) for x in (a, b, c))
    # The reference: the exactly widened operands multiplied in float64 (PyTorch 1.13 has no
    # float16 matmul on CPU; its bfloat16 one is compared directly below).
    ta, tb, tc = (torch.from_numpy(to_np(x)).double() for x in (ra, rb, rc))
    close_to(ra @ rb, ta @ tb, dt, "mm")
    close_to(ra.t().contiguous().t() @ rb.t().contiguous().t(), ta @ tb, dt, "transposed operands")
    close_to(retorch.addmm(rc, ra, rb, beta=0.5, alpha=2), 0.5 * tc + 2 * (ta @ tb), dt, "addmm")
    if dt == "bfloat16":
        want = torch.from_numpy(a).bfloat16() @ torch.from_numpy(b).bfloat16()
        # PyTorch 1.13's CPU bfloat16 GEMM (without oneDNN's AVX-512 path) rounds partial sums
        # to bfloat16 on the way, so it strays further from the exact product than retorch.
        close_to(ra @ rb, want.double(), dt, "against torch's bfloat16 mm", rel=1e-1)
    # Batched, including strided batches.
    x = retorch.tensor(rng.standard_normal((4, m, k)).astype(np.float32)).to(getattr(retorch, dt))
    y = retorch.tensor(rng.standard_normal((4, k, n)).astype(np.float32)).to(getattr(retorch, dt))
    tx, ty = (torch.from_numpy(to_np(v)).double() for v in (x, y))
    close_to(retorch.bmm(x, y), torch.bmm(tx, ty), dt, "bmm")
    close_to(retorch.bmm(x[::2], y[::2].transpose(1, 2).contiguous().transpose(1, 2)),
             torch.bmm(tx[::2], ty[::2]), dt, "bmm strided")


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("n", (9, 511, 512, 513, 4099))
@pytest.mark.parametrize("fn", ["gelu", "gelu_tanh", "silu"])
def test_activation_backward_chunks(dt, n, fn):
    """16-bit activation backward runs the float32 vector chunks on widened values and rounds
    once: within a 16-bit ulp of torch's float32 gradient of the same rounded values (torch
    1.13 has no float16 gelu on the cpu, and rounds its bfloat16 silu's intermediates)."""
    rng = np.random.default_rng(n)
    x, g = (rng.standard_normal(n).astype(np.float32) * 3 for _ in range(2))
    res = []
    for L, dtype in ((torch, torch.float32), (retorch, getattr(retorch, dt))):
        F = L.nn.functional
        # the values rounded to the 16-bit dtype, then held in the computing dtype
        xt = L.tensor(x).to(getattr(L, dt)).to(dtype).requires_grad_(True)
        y = {"gelu": lambda: F.gelu(xt), "gelu_tanh": lambda: F.gelu(xt, approximate="tanh"),
             "silu": lambda: F.silu(xt)}[fn]()
        y.backward(L.tensor(g).to(getattr(L, dt)).to(dtype))
        res.append(to_np(xt.grad.to(getattr(L, dt))))
    t, r = res
    ulp = 2.0 ** (-7 if dt == "bfloat16" else -10)
    # near the derivative's zeros the float32 formulas cancel: float32 accuracy of the scale
    np.testing.assert_allclose(r, t, rtol=ulp, atol=4e-6 * np.abs(t).max())


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("shape", [(1024, 4096), (3, 100, 40), (64, 9)])
def test_converting_copies_of_transposed_tensors(dt, shape):
    """A transposed tensor cast to or from float32 (autocast's weight casts and their gradients),
    into a contiguous result and into its own layout: the values exactly, as torch's."""
    v = values(int(np.prod(shape))).reshape(shape)
    t = torch.from_numpy(v).to(getattr(torch, dt)).transpose(-2, -1)
    r = retorch.tensor(v).to(getattr(retorch, dt)).transpose(-2, -1)
    np.testing.assert_array_equal(retorch._to_copy(r, dtype=retorch.float32).numpy(),
                                  t.to(torch.float32).numpy())
    same = retorch.empty_strided(r.shape, r.stride(), dtype=retorch.float32).copy_(r)
    np.testing.assert_array_equal(same.numpy(), t.to(torch.float32).numpy())
    f = retorch.tensor(v).transpose(-2, -1)
    np.testing.assert_array_equal(to_np(retorch._to_copy(f, dtype=getattr(retorch, dt))),
                                  to_np(torch.from_numpy(v).transpose(-2, -1).to(getattr(torch, dt))))
