"""Oracle tests for the loss functions against torch.nn.functional (reduction as a string)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import retorch
from custom_helpers import I, P, aten, both, gradcheck, gradgradcheck, grads, raises_like_torch

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_regression_losses": ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"],
    "test_smooth_l1_huber_kernel": ["_smooth_l1", "smooth_l1_loss", "huber_loss"],
    "test_smooth_l1_backward_kernel": ["_smooth_l1_backward", "smooth_l1_loss", "huber_loss"],
    "test_mse_sum_kernel": ["_mse_sum", "mse_loss"],
    "test_nll_loss": ["nll_loss"],
    "test_cross_entropy": ["cross_entropy", "_cross_entropy_fused",
                           "_cross_entropy_fused_backward"],
    "test_binary_cross_entropy": ["binary_cross_entropy", "binary_cross_entropy_with_logits"],
    "test_kl_div_poisson": ["kl_div", "poisson_nll_loss"],
    "test_margin_losses": ["soft_margin_loss", "multi_margin_loss", "margin_ranking_loss",
                           "hinge_embedding_loss", "cosine_embedding_loss",
                           "triplet_margin_loss"],
    "test_ctc_loss": ["ctc_loss", "_ctc_loss", "_ctc_loss_backward"],
}

REDUCTIONS = ["none", "mean", "sum"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
LAYOUTS = ["contig", "transposed", "sliced"]


def T(L):
    return L.__name__ == "torch"


def fn(L, name):
    """F.<name> for torch, retorch.<name> for retorch (same signature minus the deprecated)."""
    return getattr(F, name) if T(L) else getattr(retorch, name)


def tol(dt):
    return {"rtol": 1e-5, "atol": 1e-6} if dt in ("float32", "float64") else \
        {"rtol": 2e-2, "atol": 2e-2}


def test_regression_losses(rng):
    for name, kws in [("mse_loss", [{}]), ("l1_loss", [{}]),
                      ("smooth_l1_loss", [{}, {"beta": 0.5}, {"beta": 0.0}]),
                      ("huber_loss", [{}, {"delta": 0.7}])]:
        for dt in FLOATS:
            for lay in LAYOUTS:
                x, y = P(rng, (4, 5), dt, lay), P(rng, (4, 5), dt)
                for red in REDUCTIONS:
                    for kw in kws:
                        both(lambda L, x, y: fn(L, name)(x, y, reduction=red, **kw), x, y,
                             **tol(dt))
        both(lambda L, x, y: fn(L, name)(x, y), P(rng, (0, 3)), P(rng, (0, 3)))
        both(lambda L, x, y: fn(L, name)(x, y, reduction="max"), P(rng, (3,)), P(rng, (3,)),
             what="bad reduction")
        for red in REDUCTIONS:
            grads(lambda L, x, y: fn(L, name)(x, y, reduction=red), P(rng, (3, 4)),
                  P(rng, (3, 4)))
        gradcheck(lambda L, x, y: fn(L, name)(x, y), P(rng, (3, 4), "float64"),
                  P(rng, (3, 4), "float64"))
    both(lambda L, x, y: fn(L, "smooth_l1_loss")(x, y, beta=-1.0), P(rng, (3,)), P(rng, (3,)))
    both(lambda L, x, y: fn(L, "huber_loss")(x, y, delta=0.0), P(rng, (3,)), P(rng, (3,)))


@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16"])
def test_smooth_l1_huber_kernel(rng, dt):
    """The one-pass elementwise term behind smooth_l1_loss and huber_loss: long inputs, values on
    both sides of beta and exactly at +-beta, NaN and infinities, broadcasting, and gradients
    for input and target."""
    d = rng.uniform(-3, 3, 1500)
    d[::50], d[1::50], d[2::50] = 0.5, -0.5, 0.0
    t = rng.uniform(-1, 1, 1500)
    x = d + t
    x[7], x[8], t[9] = np.nan, np.inf, -np.inf
    X, T = I(x, dt), I(t, dt)
    for name, kw in [("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {}),
                     ("huber_loss", {"delta": 0.5}), ("huber_loss", {"delta": 2.0})]:
        for red in REDUCTIONS:
            both(lambda L, x, y: fn(L, name)(x, y, reduction=red, **kw), X, T,
                 what=f"{name} {kw} {red}", **tol(dt))
    if dt == "bfloat16":
        return
    x2, t2 = I(d[:600].reshape(20, 30) + 0.1, dt), I(t[:30], dt)
    for name, kw in [("smooth_l1_loss", {"beta": 0.5}), ("huber_loss", {"delta": 0.5})]:
        both(lambda L, x, y: fn(L, name)(x, y, reduction="none", **kw), x2, t2,
             what=f"{name} broadcast")
        for red in REDUCTIONS:
            grads(lambda L, x, y: fn(L, name)(x, y, reduction=red, **kw),
                  I(d[:300] + t[:300], dt), I(t[:300], dt))
    gradcheck(lambda L, x, y: L._smooth_l1(x, y, 0.7) if L.__name__ == "retorch" else
              L.nn.functional.smooth_l1_loss(x, y, reduction="none", beta=0.7),
              P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64"))


@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16"])
def test_smooth_l1_backward_kernel(rng, dt):
    """_smooth_l1's one-pass derivative against torch's smooth_l1_loss_backward without a
    reduction: values on both sides of beta and exactly at +-beta, NaN and infinities, beta 0
    (a sign), layouts, a broadcast scalar gradient (a reduction's), bad dtypes, and its own
    derivatives."""
    def f(beta):
        return lambda L, g, x, y: (L.ops.aten.smooth_l1_loss_backward(g, x, y, 0, beta) if T(L)
                                   else L._smooth_l1_backward(g, x, y, beta))
    d = rng.uniform(-3, 3, 1500)
    d[::50], d[1::50], d[2::50] = 0.5, -0.5, 0.0
    t = rng.uniform(-1, 1, 1500)
    x = d + t
    x[7], x[8], t[9] = np.nan, np.inf, -np.inf
    G, X, Y = P(rng, (1500,), dt), I(x, dt), I(t, dt)
    for beta in (0.5, 1.0, 0.0):
        both(f(beta), G, X, Y, what=f"beta {beta}", **tol(dt))
        both(f(beta), G, Y, X, what=f"beta {beta}, swapped (the target's)", **tol(dt))
        both(f(beta), I(np.array(0.37), dt), X, Y, what=f"beta {beta}, 0-dim gradient",
             **tol(dt))
    for lay in LAYOUTS:
        both(f(0.7), P(rng, (30, 40), dt, lay), P(rng, (30, 40), dt, "transposed"),
             P(rng, (30, 40), dt, lay), what=lay, **tol(dt))
    both(f(0.7), P(rng, (4, 6), dt), P(rng, (4, 6), dt), P(rng, (6,), dt), what="broadcast")
    both(f(0.7), P(rng, (0, 3), dt), P(rng, (0, 3), dt), P(rng, (0, 3), dt), what="empty")
    if dt != "float32":
        return
    # (torch's computes integers; smooth_l1_loss refuses them on both sides, so nothing reaches
    # this with integers but a direct call, which gets a clear error here)
    with pytest.raises(RuntimeError, match="smooth_l1_loss_backward.*int64"):
        retorch._smooth_l1_backward(*(retorch.ones(3, dtype=retorch.int64) for _ in range(3)), 0.7)
    raises_like_torch(f(0.7), P(rng, (3,)), P(rng, (4,)), P(rng, (3,)), what="shape mismatch")
    g, a, b = (P(rng, (3, 4), "float64") for _ in range(3))
    for beta in (0.7, 0.0):
        grads(f(beta), g, a, b, what=f"double backward, beta {beta}")
    gradcheck(f(0.7), g, a, b)
    gradgradcheck(f(0.7), g, a, b)


@pytest.mark.parametrize("dt", FLOATS)
def test_mse_sum_kernel(rng, dt):
    """mse_loss's one-pass sum of squared differences (Note [Squared difference sums]): sizes
    across its 16 lanes and 64K chunks, strided inputs, NaN and infinities, gradients for input
    and target, the composite path for broadcasting and mixed dtypes, and bad inputs."""
    for n in (1, 15, 16, 17, 1000, 65536 + 33, 200003):
        x, y = P(rng, (n,), dt), P(rng, (n,), dt)
        for red in ("mean", "sum"):
            both(lambda L, x, y: fn(L, "mse_loss")(x, y, reduction=red), x, y,
                 what=f"n={n} {red}", **({"rtol": 1e-5, "atol": 1e-6} if dt != "float16" and
                                         dt != "bfloat16" else {"rtol": 3e-2, "atol": 3e-2}))
    x, y = P(rng, (30, 40), dt, "transposed"), P(rng, (30, 40), dt, "sliced")
    both(lambda L, x, y: fn(L, "mse_loss")(x, y), x, y, what="strided", **tol(dt))
    a = rng.standard_normal(40)
    a[3], a[5] = np.nan, np.inf
    both(lambda L, x, y: fn(L, "mse_loss")(x, y), I(a, dt), P(rng, (40,), dt), what="nan")
    if dt in ("float16", "bfloat16"):
        return
    # against float64 sums: retorch's double accumulation holds to float rounding
    u = rng.standard_normal(300001).astype(dt)
    v = rng.standard_normal(300001).astype(dt)
    got = retorch.mse_loss(retorch.from_numpy(u), retorch.from_numpy(v), reduction="sum").item()
    want = ((u - v).astype(np.float64) ** 2).sum()
    assert abs(got - want) <= want * (1e-6 if dt == "float32" else 1e-13)
    for red in ("mean", "sum"):
        grads(lambda L, x, y: fn(L, "mse_loss")(x, y, reduction=red), P(rng, (7, 9), dt),
              P(rng, (7, 9), dt))
    gradcheck(lambda L, x, y: L._mse_sum(x, y) if L.__name__ == "retorch" else
              L.nn.functional.mse_loss(x, y, reduction="sum"),
              P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64"))
    both(lambda L, x, y: fn(L, "mse_loss")(x, y), P(rng, (5, 4), dt), P(rng, (4,), dt),
         what="broadcast")
    both(lambda L, x, y: fn(L, "mse_loss")(x, y), P(rng, (5, 4), dt), P(rng, (5, 4), "float32"),
         what="mixed dtypes")
    with pytest.raises(RuntimeError, match="_mse_sum"):
        retorch._mse_sum(retorch.ones(3), retorch.ones(4))
    with pytest.raises(RuntimeError, match="_mse_sum"):
        retorch._mse_sum(retorch.ones(3, dtype=retorch.int64), retorch.ones(3, dtype=retorch.int64))


def _targets(rng, shape, C, ignore=None):
    t = rng.integers(0, C, shape)
    if ignore is not None and t.size > 1:
        t.reshape(-1)[1] = ignore
    return I(t)


def test_nll_loss(rng):
    for dt in ("float32", "float64"):
        for shape, tshape in [((6, 5), (6,)), ((5,), ()), ((3, 5, 4), (3, 4)),
                              ((2, 5, 3, 2), (2, 3, 2))]:
            x = P(rng, shape, dt, "transposed")
            C = shape[1] if len(shape) > 1 else shape[0]
            w = P(rng, (C,), dt, domain="positive")
            for red in REDUCTIONS:
                for ign in (-100, 2):
                    t = _targets(rng, tshape, C, ign)
                    both(lambda L, x, t: F.nll_loss(x, t, reduction=red, ignore_index=ign)
                         if T(L) else retorch.nll_loss(x, t, None, ign, red), x, t, rtol=1e-5)
                    both(lambda L, x, t, w: fn(L, "nll_loss")(x, t, w, ignore_index=ign,
                                                              reduction=red), x, t, w, rtol=1e-5)
    x, t, w = P(rng, (4, 3)), _targets(rng, (4,), 3, -100), P(rng, (3,), domain="positive")
    for red in REDUCTIONS:
        # (torch does not differentiate class weights, so they are constants here)
        grads(lambda L, x: fn(L, "nll_loss")(x, t.t if T(L) else t.r, w.t if T(L) else w.r,
                                            reduction=red), x)
    gradcheck(lambda L, x: fn(L, "nll_loss")(x, t.r), P(rng, (4, 3), "float64"))
    for red in REDUCTIONS:  # an empty batch (mean: nan), no target ignored, unweighted
        both(lambda L, x, t: fn(L, "nll_loss")(x, t, reduction=red), P(rng, (0, 3)), I([]))
    # Errors like torch: class out of range (IndexError), batch mismatch (ValueError), target
    # dtype and weight size (RuntimeError).
    both(lambda L, x, t: fn(L, "nll_loss")(x, t), P(rng, (3, 4)), I([0, 5, 1]))
    both(lambda L, x, t: fn(L, "nll_loss")(x, t), P(rng, (3, 4)), I([0, -1, 1]))
    both(lambda L, x, t: fn(L, "nll_loss")(x, t), P(rng, (3, 4)), I([0, 1]))
    both(lambda L, x, t: fn(L, "nll_loss")(x, t), P(rng, (3, 4)), I([0.0, 1.0, 1.0], "float32"))
    both(lambda L, x, t: fn(L, "nll_loss")(x, t), P(rng, (3, 4)), I([0, 1, 1], "int32"))
    both(lambda L, x, t, w: fn(L, "nll_loss")(x, t, w), P(rng, (3, 4)), I([0, 1, 1]),
         P(rng, (3,)))


def test_cross_entropy(rng):
    for dt in FLOATS:
        for shape, tshape in [((6, 5), (6,)), ((5,), ()), ((3, 5, 4), (3, 4))]:
            for lay in LAYOUTS:
                x = P(rng, shape, dt, lay)
                C = shape[1] if len(shape) > 1 else shape[0]
                w = P(rng, (C,), dt, domain="positive")
                for red in REDUCTIONS:
                    for ls in (0.0, 0.3):
                        for ign in (-100, 1):
                            t = _targets(rng, tshape, C, ign)
                            both(lambda L, x, t: fn(L, "cross_entropy")(
                                x, t, ignore_index=ign, reduction=red, label_smoothing=ls),
                                x, t, **tol(dt))
                            both(lambda L, x, t, w: fn(L, "cross_entropy")(
                                x, t, w, ignore_index=ign, reduction=red, label_smoothing=ls),
                                x, t, w, **tol(dt))
                        # Class-probability targets.
                        q = P(rng, shape, dt, domain="positive")
                        both(lambda L, x, q, w: fn(L, "cross_entropy")(
                            x, q / q.sum(1 if len(shape) > 1 else 0, keepdim=True), w,
                            reduction=red, label_smoothing=ls), x, q, w, **tol(dt))
    # Gradients (fused 2-D path and the N-d composite), gradcheck and double backward.
    t2, t3 = _targets(rng, (4,), 5, -100), _targets(rng, (2, 3), 5, 1)
    for red in REDUCTIONS:
        for ls in (0.0, 0.2):
            cw = P(rng, (5,), domain="positive")
            grads(lambda L, x: fn(L, "cross_entropy")(x, t2.t if T(L) else t2.r,
                                                     cw.t if T(L) else cw.r, reduction=red,
                                                     label_smoothing=ls), P(rng, (4, 5)))
            grads(lambda L, x: fn(L, "cross_entropy")(x, t3.t if T(L) else t3.r, ignore_index=1,
                                                     reduction=red, label_smoothing=ls),
                  P(rng, (2, 5, 3)))
            grads(lambda L, x, q: fn(L, "cross_entropy")(x, q.softmax(1), reduction=red,
                                                        label_smoothing=ls),
                  P(rng, (4, 5)), P(rng, (4, 5)))
    gradcheck(lambda L, x, w: L.cross_entropy(x, t2.r, w, label_smoothing=0.1),  # and d/dw
              P(rng, (4, 5), "float64"), P(rng, (5,), "float64", domain="positive"))
    x = retorch.from_numpy(rng.standard_normal((4, 5))).requires_grad_(True)
    v = retorch.from_numpy(rng.uniform(-1, 1, (4,)))

    def first(x):
        with retorch.enable_grad():
            x = x if x.requires_grad else x.detach().requires_grad_(True)
            o = retorch.cross_entropy(x, t2.r, reduction="none", label_smoothing=0.1)
            return retorch.autograd.grad([o], [x], [v], create_graph=True)[0]
    assert retorch.autograd.gradcheck(first, [x])
    # The fused kernel agrees with the composite log_softmax + nll_loss path.
    xs = retorch.from_numpy(rng.standard_normal((6, 7)))
    ts = retorch.from_numpy(rng.integers(0, 7, 6))
    for red, r in (("none", 0), ("mean", 1), ("sum", 2)):
        fused = retorch._cross_entropy_fused(xs, ts, None, -100, r, 0.0)[0]
        comp = retorch.nll_loss(xs.log_softmax(1), ts, None, -100, red)
        np.testing.assert_allclose(fused.numpy(), comp.numpy(), rtol=1e-12, atol=1e-12)
    # The fused backward kernel (used without create_graph) against torch's autograd.
    for dt in ("float32", "float64"):
        for (red, r), ls, ign in [(("none", 0), 0.0, -100), (("mean", 1), 0.2, 2),
                                  (("sum", 2), 0.1, -100)]:
            xp, w = P(rng, (6, 7), dt, "transposed"), P(rng, (7,), dt, domain="positive")
            tp = _targets(rng, (6,), 7, ign)
            g = P(rng, (6,) if r == 0 else (), dt)

            def ce_back(L, x, g, w):
                if T(L):
                    x = x.detach().requires_grad_(True)
                    loss = F.cross_entropy(x, tp.t, w, ignore_index=ign, reduction=red,
                                           label_smoothing=ls)
                    return torch.autograd.grad(loss, x, g)[0]
                lse = retorch._cross_entropy_fused(x, tp.r, w, ign, r, ls)[1]
                return retorch._cross_entropy_fused_backward(g, x, tp.r, w, ign, r, ls, lse)
            both(ce_back, xp, g, w, rtol=1e-5, atol=1e-6)
    # Errors like torch.
    for tv in ([0, 5, 1], [0, -2, 1]):
        both(lambda L, x, t: fn(L, "cross_entropy")(x, t), P(rng, (3, 4)), I(tv))
    both(lambda L, x, t: fn(L, "cross_entropy")(x, t), P(rng, (3, 4)), I([0, 1]))
    both(lambda L, x, t, w: fn(L, "cross_entropy")(x, t, w), P(rng, (3, 4)), I([0, 1, 1]),
         P(rng, (5,)))
    both(lambda L, x, t: fn(L, "cross_entropy")(x, t, label_smoothing=1.5), P(rng, (3, 4)),
         I([0, 1, 1]))
    both(lambda L, x, t: fn(L, "cross_entropy")(x, t), P(rng, (3, 4)), I([0, 1, 1], "int32"))


def test_binary_cross_entropy(rng):
    for dt in ("float32", "float64"):
        for lay in LAYOUTS:
            x, y = P(rng, (4, 5), dt, lay, domain="unit"), P(rng, (4, 5), dt, domain="unit")
            w = P(rng, (4, 5), dt, domain="positive")
            for red in REDUCTIONS:
                both(lambda L, x, y, w: fn(L, "binary_cross_entropy")(
                    (x + 1) / 2, (y + 1) / 2, w, reduction=red), x, y, w, rtol=1e-5)
                pw = P(rng, (5,), dt, domain="positive")
                xl = P(rng, (4, 5), dt, lay)
                both(lambda L, x, y, w, pw: fn(L, "binary_cross_entropy_with_logits")(
                    x * 20, (y + 1) / 2, w, reduction=red, pos_weight=pw), xl, y, w, pw,
                    rtol=1e-5)
                both(lambda L, x, y: fn(L, "binary_cross_entropy_with_logits")(
                    x, (y + 1) / 2, reduction=red), xl, y, rtol=1e-5)
    both(lambda L: fn(L, "binary_cross_entropy")(L.tensor([0.0, 1.0, 0.5]),
                                                 L.tensor([1.0, 0.0, 0.5])), what="saturated")
    both(lambda L: fn(L, "binary_cross_entropy")(L.tensor([1.5]), L.tensor([1.0])),
         what="input outside [0, 1]")
    both(lambda L, x, y: fn(L, "binary_cross_entropy")(x, y), P(rng, (3,), domain="unit"),
         P(rng, (4,)), what="size mismatch")
    both(lambda L, x, y: fn(L, "binary_cross_entropy_with_logits")(x, y), P(rng, (3,)),
         P(rng, (4,)), what="size mismatch")
    for red in REDUCTIONS:
        bw = P(rng, (3, 4), domain="positive")
        grads(lambda L, x, y: fn(L, "binary_cross_entropy")(x.sigmoid(), y.sigmoid(),
                                                            bw.t if T(L) else bw.r, reduction=red),
              P(rng, (3, 4)), P(rng, (3, 4)))
        pw = P(rng, (4,), domain="positive")
        grads(lambda L, x, y: fn(L, "binary_cross_entropy_with_logits")(
            x, y.sigmoid(), reduction=red, pos_weight=pw.t if T(L) else pw.r), P(rng, (3, 4)),
            P(rng, (3, 4)))
    gradcheck(lambda L, x, y: L.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
              P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64"))
    gradcheck(lambda L, x, y, pw: L.binary_cross_entropy_with_logits(x, y, None, "mean", pw),
              P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64", domain="unit"),
              P(rng, (4,), "float64", domain="positive"))
    # their own derivatives (FunctionsManualNN.cpp): every input, broadcast weights, every
    # reduction, numerically (torch 1.13 has none for weight and pos_weight)
    for red in REDUCTIONS:
        gradcheck(lambda L, x, y, w, pw: L.binary_cross_entropy_with_logits(x, y, w, red, pw),
                  P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64", domain="unit"),
                  P(rng, (4,), "float64", domain="positive"),
                  P(rng, (4,), "float64", domain="positive"))
        gradcheck(lambda L, x, y, w: L.binary_cross_entropy_with_logits(x, y, w, red),
                  P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64", domain="unit"),
                  P(rng, (3, 1), "float64", domain="positive"))
        gradcheck(lambda L, x, y, w: L.binary_cross_entropy(x.sigmoid(), y, w, red),
                  P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64", domain="unit"),
                  P(rng, (4,), "float64", domain="positive"))
    gradgradcheck(lambda L, x, y: L.binary_cross_entropy(x.sigmoid(), y),
                  P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64", domain="unit"))
    gradgradcheck(lambda L, x, y: L.binary_cross_entropy_with_logits(x, y),
                  P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64", domain="unit"))


def test_kl_div_poisson(rng):
    for dt in ("float32", "float64"):
        x, y = P(rng, (4, 5), dt, "transposed"), P(rng, (4, 5), dt, domain="positive")
        for red in REDUCTIONS + ["batchmean"]:
            for log_target in (False, True):
                both(lambda L, x, y: fn(L, "kl_div")(x, y if log_target else y - 0.5,
                                                     reduction=red, log_target=log_target),
                     x, y, rtol=1e-5)
        both(lambda L, x: fn(L, "kl_div")(x, L.tensor([[0.0, 0.5], [0.2, 0.0]])), P(rng, (2, 2)),
             what="zero targets")
        for red in REDUCTIONS:
            for log_input in (True, False):
                for full in (False, True):
                    both(lambda L, x, y: fn(L, "poisson_nll_loss")(
                        x if log_input else x.abs(), y * 2, log_input, full, reduction=red),
                        x, y, rtol=1e-5)
    for red in ("mean", "batchmean"):
        grads(lambda L, x, y: fn(L, "kl_div")(x, y, reduction=red), P(rng, (3, 4)),
              P(rng, (3, 4), domain="positive"))
    grads(lambda L, x, y: fn(L, "kl_div")(x, y, log_target=True), P(rng, (3, 4)), P(rng, (3, 4)))
    grads(lambda L, x, y: fn(L, "poisson_nll_loss")(x, y, full=True), P(rng, (3, 4)),
          P(rng, (3, 4), domain="positive"))
    grads(lambda L, x, y: fn(L, "poisson_nll_loss")(x.abs(), y, False), P(rng, (3, 4)),
          P(rng, (3, 4), domain="positive"))
    gradcheck(lambda L, x, y: L.kl_div(x, y), P(rng, (3, 4), "float64"),
              P(rng, (3, 4), "float64", domain="positive"))
    gradcheck(lambda L, x: L.poisson_nll_loss(x, L.ones(3, 4, dtype=L.float64) * 3, True, True),
              P(rng, (3, 4), "float64"))
    both(lambda L, x, y: fn(L, "poisson_nll_loss")(x, y, reduction="bad"), P(rng, (3,)),
         P(rng, (3,)))


def test_margin_losses(rng):
    sign = lambda shape: I(rng.choice([-1, 1], shape), "float32")  # noqa: E731
    for dt in ("float32", "float64"):
        x, y = P(rng, (4, 5), dt, "transposed"), sign((4, 5))
        for red in REDUCTIONS:
            both(lambda L, x, y: fn(L, "soft_margin_loss")(x, y.to(x.dtype), reduction=red),
                 x, y, rtol=1e-5)
            for margin in (0.5, 1.5):
                both(lambda L, x, y: fn(L, "hinge_embedding_loss")(x, y.to(x.dtype), margin,
                                                                   reduction=red), x, y)
                a, b, t = P(rng, (6,), dt), P(rng, (6,), dt), sign((6,))
                both(lambda L, a, b, t: fn(L, "margin_ranking_loss")(a, b, t.to(a.dtype),
                                                                     margin, reduction=red),
                     a, b, t)
                a, b = P(rng, (4, 5), dt, "transposed"), P(rng, (4, 5), dt)
                both(lambda L, a, b, t: fn(L, "cosine_embedding_loss")(
                    a, b, t.to(a.dtype), margin - 1.0, reduction=red), a, b, sign((4,)),
                    rtol=1e-5)
                both(lambda L, a, b, t: fn(L, "cosine_embedding_loss")(
                    a, b, t.to(a.dtype), reduction=red), P(rng, (5,), dt), P(rng, (5,), dt),
                    I(1.0, "float32"), rtol=1e-5)
                for p in (1, 2):
                    w = P(rng, (5,), dt, domain="positive")
                    for xs, ts in [((4, 5), (4,)), ((5,), ())]:
                        t = I(rng.integers(0, 5, ts))
                        both(lambda L, x, t, w: fn(L, "multi_margin_loss")(
                            x, t, p, margin, w, reduction=red), P(rng, xs, dt), t, w, rtol=1e-5)
                for p, swap in ((2.0, False), (1.0, True), (3.0, False)):
                    both(lambda L, a, b, c: fn(L, "triplet_margin_loss")(
                        a, b, c, margin, p, swap=swap, reduction=red), P(rng, (4, 5), dt),
                        P(rng, (4, 5), dt), P(rng, (4, 5), dt), rtol=1e-5)
    y, t = sign((3, 4)), I(rng.integers(0, 4, 3))
    grads(lambda L, x: fn(L, "soft_margin_loss")(x, y.t if T(L) else y.r), P(rng, (3, 4)))
    grads(lambda L, x: fn(L, "hinge_embedding_loss")(x, y.t if T(L) else y.r), P(rng, (3, 4)))
    grads(lambda L, a, b: fn(L, "margin_ranking_loss")(a, b, y.t[0] if T(L) else y.r[0], 0.3),
          P(rng, (4,)), P(rng, (4,)))
    grads(lambda L, a, b: fn(L, "cosine_embedding_loss")(a, b, y.t[:, 0] if T(L) else y.r[:, 0],
                                                         0.1), P(rng, (3, 4)), P(rng, (3, 4)))
    for p in (1, 2):
        mw = P(rng, (4,), domain="positive")
        grads(lambda L, x: fn(L, "multi_margin_loss")(x, t.t if T(L) else t.r, p, 0.9,
                                                     mw.t if T(L) else mw.r), P(rng, (3, 4)))
    grads(lambda L, a, b, c: fn(L, "triplet_margin_loss")(a, b, c, swap=True), P(rng, (3, 4)),
          P(rng, (3, 4)), P(rng, (3, 4)))
    gradcheck(lambda L, a, b, c: L.triplet_margin_loss(a, b, c, 2.0), P(rng, (3, 4), "float64"),
              P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64"))
    gradcheck(lambda L, a, b: L.cosine_embedding_loss(a, b, y.r[:, 0].to(L.float64)),
              P(rng, (3, 4), "float64"), P(rng, (3, 4), "float64"))
    gradcheck(lambda L, x: L.soft_margin_loss(x, y.r.to(L.float64)), P(rng, (3, 4), "float64"))
    # Errors like torch.
    both(lambda L, x, t: fn(L, "multi_margin_loss")(x, t, 3), P(rng, (3, 4)), t)
    both(lambda L, x, t: fn(L, "multi_margin_loss")(x, t), P(rng, (3, 4)), I([0, 4, 1]))
    both(lambda L, a, b: fn(L, "cosine_embedding_loss")(a, b, L.ones(3, 4)), P(rng, (3, 4)),
         P(rng, (3, 4)))
    both(lambda L, a, b, c: fn(L, "triplet_margin_loss")(a, b, c), P(rng, (3, 4)),
         P(rng, (3, 4)), P(rng, (4,)))


def _ctc_case(rng, T_, N, C, S, concat=False):
    lp = torch.from_numpy(rng.standard_normal((T_, N, C))).log_softmax(2)
    tl = rng.integers(1, S + 1, N)
    il = np.maximum(rng.integers(T_ // 2, T_ + 1, N), 2 * tl + 1)
    il[0] = T_
    tg = rng.integers(1, C, (N, S))
    if concat:
        tg = np.concatenate([tg[i, :tl[i]] for i in range(N)])
    return lp.numpy(), I(tg), I(il), I(tl)


def test_ctc_loss(rng):
    for dt in ("float32", "float64"):
        for concat in (False, True):
            lpv, tg, il, tl = _ctc_case(rng, 12, 3, 5, 4, concat)
            lp = P(rng, (1,))  # placeholder for the pair type
            lp = type(lp)(torch.from_numpy(lpv).to(getattr(torch, dt)),
                          retorch.from_numpy(lpv).to(getattr(retorch, dt)), lpv)
            for red in REDUCTIONS:
                for zi in (False, True):
                    both(lambda L, lp, tg, il, tl: fn(L, "ctc_loss")(
                        lp, tg, il, tl, reduction=red, zero_infinity=zi), lp, tg, il, tl,
                        rtol=1e-5, atol=1e-5)
                grads(lambda L, lp: fn(L, "ctc_loss")(lp, tg.t if T(L) else tg.r,
                                                      il.t if T(L) else il.r,
                                                      tl.t if T(L) else tl.r, reduction=red),
                      lp)
    # blank other than 0, an impossible alignment (inf, or 0 with zero_infinity).
    lpv, tg, il, tl = _ctc_case(rng, 6, 2, 4, 3)
    lp = torch.from_numpy(lpv)
    for zi in (False, True):
        both(lambda L, lp, tg: fn(L, "ctc_loss")(lp, tg, L.tensor([6, 2]), L.tensor([3, 3]),
                                                 blank=0, reduction="none", zero_infinity=zi),
             type(tg)(lp, retorch.from_numpy(lpv), lpv), tg)
    tgb = I(np.where(tg.values == 3, 1, tg.values))
    both(lambda L, lp, tg, il, tl: fn(L, "ctc_loss")(lp, tg, il, tl, blank=3),
         type(tg)(lp, retorch.from_numpy(lpv), lpv), tgb, il, tl, rtol=1e-5)
    # The primitive's backward against aten's, and gradcheck.
    lpv, tg, il, tl = _ctc_case(rng, 8, 2, 4, 3)
    lp = type(tg)(torch.from_numpy(lpv), retorch.from_numpy(lpv), lpv)
    both(lambda L, lp: aten(L, "_ctc_loss")(lp, tg.t if T(L) else tg.r, il.values.tolist(),
                                            tl.values.tolist())[0], lp, rtol=1e-6)
    gr = torch.from_numpy(rng.uniform(0.5, 1.5, 2))

    def back(L, lp):
        nll, alpha = aten(L, "_ctc_loss")(lp, tg.t if T(L) else tg.r, il.values.tolist(),
                                          tl.values.tolist())
        g = gr if T(L) else retorch.from_numpy(gr.numpy())
        return aten(L, "_ctc_loss_backward")(g, lp, tg.t if T(L) else tg.r, il.values.tolist(),
                                             tl.values.tolist(), nll, alpha, 0)
    both(back, lp, rtol=1e-6, atol=1e-7)
    gradcheck(lambda L, x: L.ctc_loss(x.log_softmax(2), tg.r, il.r, tl.r), P(rng, (8, 2, 4),
                                                                             "float64"))
    both(lambda L, lp: fn(L, "ctc_loss")(lp, tg.t if T(L) else tg.r, L.tensor([9, 8]),
                                         tl.t if T(L) else tl.r), lp, what="input length > T")
