"""torch.set_float32_matmul_precision (Note [float32 matmul precision]): the setting's names,
errors and its tie to torch.backends.cuda.matmul.allow_tf32, against torch; on the cpu, "medium"
products (mm, addmm, bmm, matmul, linear, the fused linear + activation, a bfloat16 model's
linear layers at prefill size) equal torch's products of the operands rounded to bfloat16 where
the CPU multiplies bfloat16 natively, and the float32 products elsewhere."""
import os
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retorch
import retorch.nn.functional as RF

NATIVE_BF16 = ("avx512_bf16" in open("/proc/cpuinfo").read()
               and os.environ.get("RETORCH_ONEDNN") != "0")


@pytest.fixture(autouse=True)
def restore_precision():
    yield
    retorch.set_float32_matmul_precision("highest")
    torch.set_float32_matmul_precision("highest")


def test_names_default_and_errors_match_torch():
    assert retorch.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    for p in ("medium", "high", "highest"):
        retorch.set_float32_matmul_precision(p)
        torch.set_float32_matmul_precision(p)
        assert retorch.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == p
    retorch.set_float32_matmul_precision("medium")
    with pytest.warns(UserWarning, match="'highest', 'high', or 'medium'"):
        retorch.set_float32_matmul_precision("HIGH")  # torch's names are lower case only
    assert retorch.get_float32_matmul_precision() == "medium"
    for lib in (retorch, torch):
        with pytest.raises(RuntimeError, match="expects a str, but got int"):
            lib.set_float32_matmul_precision(3)


def test_allow_tf32_is_the_same_setting_as_torchs():
    steps = [("precision", "medium"), ("tf32", False), ("tf32", True), ("precision", "highest"),
             ("precision", "high"), ("tf32", False)]
    for kind, value in steps:
        for lib in (retorch, torch):
            if kind == "precision":
                lib.set_float32_matmul_precision(value)
            else:
                lib.backends.cuda.matmul.allow_tf32 = value
        assert retorch.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
        assert retorch.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32


def arr(*shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def rounded(x):
    """torch float64 of the float32 array x rounded to bfloat16."""
    return torch.tensor(x).bfloat16().double()


def check(got, exact, rounded_ref, k):
    """A "medium" result against the product of the rounded operands (native bfloat16) or the
    exact one (elsewhere), within float32 accumulation over k terms of magnitude ~1."""
    want = rounded_ref if NATIVE_BF16 else exact
    g = torch.tensor(got.numpy()).double()
    assert g.shape == want.shape
    tol = 1e-5 * k ** 0.5 * (1 + want.abs())
    assert bool(((g - want).abs() <= tol).all()), (g - want).abs().max()
    if NATIVE_BF16:  # the rounding shows: further from the exact product than float32 is
        assert (g - exact).abs().max() > 1e-3


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False)])
def test_medium_mm_and_addmm(ta, tb):
    M, K, N = 96, 320, 160
    a, b, c = arr(M, K, seed=1), arr(K, N, seed=2), arr(M, N, seed=3)
    ra = retorch.tensor(a.T.copy()).t() if ta else retorch.tensor(a)
    rb = retorch.tensor(b.T.copy()).t() if tb else retorch.tensor(b)
    exact = torch.tensor(a).double() @ torch.tensor(b).double()
    ref = rounded(a) @ rounded(b)
    retorch.set_float32_matmul_precision("medium")
    check(retorch.mm(ra, rb), exact, ref, K)
    tc = torch.tensor(c).double()
    got = retorch.addmm(retorch.tensor(c), ra, rb, beta=0.5, alpha=2.0)
    check(got, 0.5 * tc + 2 * exact, 0.5 * tc + 2 * ref, K)
    retorch.set_float32_matmul_precision("highest")
    g = torch.tensor(retorch.mm(ra, rb).numpy()).double()
    assert torch.allclose(g, exact, rtol=1e-5, atol=1e-4)


def test_medium_bmm_matmul_linear_and_fused_activation():
    B, M, K, N = 3, 128, 256, 128  # 4M multiply-adds a product
    a, b, w, bias = arr(B, M, K, seed=4), arr(B, K, N, seed=5), arr(N, K, seed=6), arr(N, seed=7)
    retorch.set_float32_matmul_precision("medium")
    exact = torch.tensor(a).double() @ torch.tensor(b).double()
    ref = rounded(a) @ rounded(b)
    check(retorch.bmm(retorch.tensor(a), retorch.tensor(b)), exact, ref, K)
    check(retorch.matmul(retorch.tensor(a), retorch.tensor(b)), exact, ref, K)
    x = a.reshape(B * M, K)
    tw, tbias = torch.tensor(w).double(), torch.tensor(bias).double()
    exact = torch.tensor(x).double() @ tw.t() + tbias
    ref = rounded(x) @ rounded(w).t() + tbias
    check(RF.linear(retorch.tensor(x), retorch.tensor(w), retorch.tensor(bias)), exact, ref, K)
    got = retorch._addmm_activation(retorch.tensor(bias), retorch.tensor(x),
                                    retorch.tensor(w).t())
    check(got, exact.relu(), ref.relu(), K)


def test_medium_rounds_a_bfloat16_models_activations_once():
    """A bfloat16 model's linear layer at prefill size (GGUF BF16 rows, qtype 30): its
    activations split in two bfloat16 terms by default (Note [Split bfloat16 activations]),
    rounded once under "medium", as PyTorch's bfloat16 model rounds them."""
    M, K, N = 32, 256, 80
    x = arr(M, K, seed=8)
    w16 = torch.tensor(arr(N, K, seed=9)).bfloat16()
    w_bytes = retorch.tensor(w16.view(torch.uint8).numpy())
    exact = torch.tensor(x).double() @ w16.double().t()
    ref = rounded(x) @ w16.double().t()
    retorch.set_float32_matmul_precision("medium")
    check(retorch.quantized_linear(retorch.tensor(x), w_bytes, 30, K), exact, ref, K)
    retorch.set_float32_matmul_precision("highest")
    g = torch.tensor(retorch.quantized_linear(retorch.tensor(x), w_bytes, 30, K).numpy())
    bound = 2.0 ** -16 * (torch.tensor(x).double().abs() @ w16.double().abs().t())
    assert bool(((g.double() - exact).abs() <= bound + 1e-5 * exact.abs()).all())


def test_one_row_and_small_products_stay_float32():
    """One row is a GEMV and products under 4M multiply-adds gain nothing from rounding: both
    stay float32 under "medium"."""
    retorch.set_float32_matmul_precision("medium")
    for shape_a, shape_b in (((1, 4096), (4096, 2048)), ((64, 64), (64, 64))):
        a, b = arr(*shape_a, seed=10), arr(*shape_b, seed=11)
        g = torch.tensor(retorch.mm(retorch.tensor(a), retorch.tensor(b)).numpy()).double()
        exact = torch.tensor(a).double() @ torch.tensor(b).double()
        assert torch.allclose(g, exact, rtol=1e-5, atol=1e-4)


def test_setting_is_read_at_each_call():
    a, b = retorch.randn(128, 512), retorch.randn(512, 128)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retorch.set_float32_matmul_precision("medium")
        m = retorch.mm(a, b)
        retorch.set_float32_matmul_precision("highest")
        h = retorch.mm(a, b)
    assert retorch.equal(h, retorch.mm(a, b))
    assert retorch.equal(m, h) != NATIVE_BF16
