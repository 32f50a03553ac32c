"""The vector math (Note [Vectorized math]) on each instruction set the CPU has, against PyTorch:
float32/float64 unary functions over lengths around the 8- and 16-lane steps and IEEE specials,
softmax rows (the exp-and-sum loop), and the same bits from the AVX2 and AVX-512 forms of
retorch's own polynomials (tanh, sigmoid, SiLU, GELU)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import retorch
from custom_helpers import cpu_isa, supported_isas

# Lengths around the vector widths (8 and 16 floats, 4 and 8 doubles) and the masked tails.
SIZES = (1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 1000)
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.7, 89.0, -87.3, -104.0, 0.4999,
            0.5, -0.5, 8.99, 9.0, 30.0, -30.0]

# op name -> (retorch fn, torch fn, rtol, atol) for float32 (PyTorch's float32 defaults of
# assert_close, looser in rtol for retorch's few-ulp polynomials); float64 is held to 1e-12.
FUNCS = {
    "exp": (retorch.exp, torch.exp, 1.3e-6, 1e-5),
    "expm1": (retorch.expm1, torch.expm1, 1.3e-6, 1e-5),
    "log": (retorch.log, torch.log, 1.3e-6, 1e-5),
    "log1p": (retorch.log1p, torch.log1p, 1.3e-6, 1e-5),
    "sin": (retorch.sin, torch.sin, 1.3e-6, 1e-5),
    "cos": (retorch.cos, torch.cos, 1.3e-6, 1e-5),
    "atan": (retorch.atan, torch.atan, 1.3e-6, 1e-5),
    "erf": (retorch.erf, torch.erf, 1.3e-6, 1e-5),
    "tanh": (retorch.tanh, torch.tanh, 4e-6, 1e-5),
    "sigmoid": (retorch.sigmoid, torch.sigmoid, 4e-6, 1e-5),
    "silu": (retorch.nn.functional.silu, F.silu, 4e-6, 1e-5),
    "gelu": (retorch.nn.functional.gelu, F.gelu, 4e-6, 1e-5),
    "gelu_tanh": (lambda x: retorch.nn.functional.gelu(x, approximate="tanh"),
                  lambda x: F.gelu(x, approximate="tanh"), 4e-6, 1e-5),
}
OWN = ("tanh", "sigmoid", "silu", "gelu", "gelu_tanh")  # retorch's polynomials, not SLEEF's


def inputs(n, dtype, seed):
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(n) * np.exp2(rng.integers(-6, 5, n))).astype(dtype)
    k = min(n, len(SPECIALS))
    v[:k] = np.array(SPECIALS[:k], dtype=dtype)
    return rng.permutation(v)


def domain(name, v):
    """Log-type functions away from their poles: PyTorch and SLEEF agree there only up to the
    sign of an infinity or NaN payloads, which the sweep checks elsewhere."""
    return np.abs(v) if name in ("log", "log1p") else v


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_matches_torch(each_cpu_isa, name, dtype):
    fn, tfn, rtol, atol = FUNCS[name]
    if dtype == "float64":
        rtol, atol = 1e-12, 1e-300
    for n in SIZES:
        v = domain(name, inputs(n, dtype, n))
        got = fn(retorch.from_numpy(v.copy())).numpy()
        want = tfn(torch.from_numpy(v.copy())).numpy()
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{name} {dtype} n={n} on {each_cpu_isa}")


@pytest.mark.parametrize("shape", [(3, 1), (4, 7), (5, 16), (2, 17), (3, 1000)])
def test_softmax_rows_match_torch(each_cpu_isa, shape):
    rng = np.random.default_rng(shape[1])
    v = (rng.standard_normal(shape) * 4).astype(np.float32)
    v[0, 0] = -np.inf  # a masked score becomes exactly 0
    for f, tf in ((retorch.softmax, torch.softmax), (retorch.log_softmax, torch.log_softmax)):
        got = f(retorch.from_numpy(v.copy()), 1).numpy()
        want = tf(torch.from_numpy(v.copy()), 1).numpy()
        np.testing.assert_allclose(got, want, rtol=1.3e-6, atol=1e-5)


def test_softmax_down_columns_matches_torch(each_cpu_isa):
    """Note [Column softmax]: softmax and log_softmax over a dim that is not the last of a
    contiguous float32 tensor (blocks of 256 columns and a narrower tail, several outer
    slices), with an all -inf column (NaN, as torch), a -inf score (exactly 0), large values;
    gradients through the unchanged backward."""
    rng = np.random.default_rng(31)
    v = (rng.standard_normal((3, 40, 300)) * 8).astype(np.float32)
    v[1, :, 7] = -np.inf
    v[0, 5, 9] = -np.inf
    v[2, 3, 11] = 80.0
    for dim in (0, 1, -2):
        for f, tf in ((retorch.softmax, torch.softmax), (retorch.log_softmax, torch.log_softmax)):
            got = f(retorch.from_numpy(v.copy()), dim).numpy()
            want = tf(torch.from_numpy(v.copy()), dim).numpy()
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            ok = ~np.isnan(want)
            np.testing.assert_allclose(got[ok], want[ok], rtol=1.3e-6, atol=1e-5)
    x = retorch.from_numpy(v[:, :, :20].copy() / 8).requires_grad_()
    tx = torch.from_numpy(v[:, :, :20].copy() / 8).requires_grad_()
    (retorch.log_softmax(x, 1) * retorch.arange(20.0)).sum().backward()
    (torch.log_softmax(tx, 1) * torch.arange(20.0)).sum().backward()
    g, tg = x.grad.numpy(), tx.grad.numpy()
    np.testing.assert_allclose(g[~np.isnan(tg)], tg[~np.isnan(tg)], rtol=1e-5, atol=1e-5)


def test_avx2_and_avx512_forms_agree_bit_for_bit():
    if "AVX512" not in supported_isas():
        pytest.skip("this CPU has no AVX512")
    v = retorch.from_numpy(inputs(4099, "float32", 7) * 3)
    for name in OWN:
        outs = []
        for isa in ("AVX2", "AVX512"):
            with cpu_isa(isa):
                outs.append(FUNCS[name][0](v).numpy().view(np.uint32))
        np.testing.assert_array_equal(outs[0], outs[1], err_msg=name)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_sums_match_torch_and_agree_across_isas(dtype):
    # Note [Float sum accumulation]: blocks of 64 added in float, then 16 lanes of double;
    # 16-bit inputs widened in registers on AVX-512 and in blocks otherwise, the same adds in
    # the same order, so the same bits.
    have = supported_isas()
    for n in (1, 31, 32, 33, 63, 64, 65, 255, 256, 257, 321, 4099, 200003):
        v = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        t = torch.from_numpy(v).to(getattr(torch, dtype))
        want = t.double().sum().item()
        outs = []
        for isa in have:
            with cpu_isa(isa):
                r = retorch.from_numpy(v).to(getattr(retorch, dtype))
                outs.append(r.sum().item())
            np.testing.assert_allclose(outs[-1], want, rtol=1e-2 if dtype != "float32"
                                       else 1e-6, atol=1e-2, err_msg=f"{dtype} n={n} {isa}")
        assert len(set(outs)) == 1, f"{dtype} n={n}: {dict(zip(have, outs))}"
        # The error bound of the note: two float roundings per element at most.
        exact = t.double().sum().item()
        bound = 2.0 ** -23 * t.double().abs().sum().item() if dtype == "float32" else None
        if bound is not None:
            assert abs(outs[0] - exact) <= bound + abs(exact) * 2.0 ** -24, (n, outs[0], exact)


def test_float_sum_error_bound_on_hard_inputs():
    # Large values that cancel and small ones between them: the float pre-adds of Note [Float
    # sum accumulation] keep within 2^-23 of sum(|x|) (and so within PyTorch's own error here).
    rng = np.random.default_rng(7)
    for n in (64, 4096, 1 << 20):
        v = (rng.standard_normal(n) * np.where(rng.random(n) < 0.5, 1e6, 1e-3)).astype(np.float32)
        exact = v.astype(np.float64).sum()
        got = retorch.from_numpy(v).sum().item()
        rows = retorch.from_numpy(v).reshape(-1, 64).sum(1).numpy().astype(np.float64)
        row_exact = v.reshape(-1, 64).astype(np.float64).sum(1)
        bound = 2.0 ** -23 * np.abs(v.astype(np.float64)).sum()
        assert abs(got - exact) <= bound + abs(exact) * 2.0 ** -24, (n, got, exact, bound)
        row_bound = 2.0 ** -23 * np.abs(v.reshape(-1, 64).astype(np.float64)).sum(1)
        assert np.all(np.abs(rows - row_exact) <= row_bound + np.abs(row_exact) * 2.0 ** -24)
