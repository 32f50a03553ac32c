"""torch's errors where retorch's Python-level functions refuse their arguments (the OpInfo
error_inputs of diag_embed, the flips, rot90, h/v/dsplit, the stacking functions, movedim,
aminmax, the losses, and quantile's and logspace's argument checks): each call runs on both
libraries and must raise the same exception type with the same message. Then the float64
gradients where retorch's differed from torch's derivative formulas: cholesky_solve's and
cholesky_inverse's factor, quantile's q, and det at an exactly singular matrix."""
import warnings

import numpy as np
import pytest
import torch

import retorch


def _error(L, fn):
    """(exception type name, message) of fn(L), or None when it returns."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(L)
        except Exception as e:  # noqa: BLE001 (the error is the outcome)
            return type(e).__name__, str(e)
    return None


def _dims(n):
    return [1] * n


# name -> f(lib) that torch refuses.
ERRORS = {
    "diag_embed identical dims": lambda m: m.diag_embed(m.zeros(10, 20), dim1=1, dim2=1),
    "diag_embed identical after wrapping": lambda m: m.diag_embed(m.zeros(10, 20), dim1=-1,
                                                                  dim2=2),
    "diag_embed dim1 out of range": lambda m: m.diag_embed(m.zeros(10, 20), dim1=10000),
    "diag_embed dim2 out of range": lambda m: m.diag_embed(m.zeros(10, 5, 20), dim2=10000),
    "diag_embed 0-d": lambda m: m.diag_embed(m.tensor(1.0)),
    "fliplr 1-d": lambda m: m.fliplr(m.zeros(1)),
    "fliplr method": lambda m: m.zeros(3).fliplr(),
    "flipud 0-d": lambda m: m.flipud(m.tensor(1.0)),
    "rot90 1-d": lambda m: m.rot90(m.zeros(5)),
    "rot90 same dims": lambda m: m.rot90(m.zeros(5, 5), dims=(1, 1)),
    "rot90 same dims after wrapping": lambda m: m.rot90(m.zeros(5, 5), dims=(1, -1)),
    "rot90 three dims": lambda m: m.rot90(m.zeros(5, 5), dims=(0, 1, 2)),
    "rot90 dim0 out of range": lambda m: m.rot90(m.zeros(5, 5), dims=(-3, 0)),
    "rot90 dim1 out of range": lambda m: m.rot90(m.zeros(5, 5), dims=(0, 5)),
    "hsplit 0": lambda m: m.hsplit(m.zeros(5, 5, 5), 0),
    "hsplit not divisible": lambda m: m.hsplit(m.zeros(5, 5, 5), 3),
    "vsplit 0": lambda m: m.vsplit(m.zeros(5, 5, 5), 0),
    "dsplit 0": lambda m: m.dsplit(m.zeros(5, 5, 5), 0),
    "hsplit str": lambda m: m.hsplit(m.zeros(5, 5, 5), "abc"),
    "vsplit float": lambda m: m.vsplit(m.zeros(5, 5, 5), 2.0),
    "dsplit None": lambda m: m.dsplit(m.zeros(5, 5, 5), None),
    "hsplit bool": lambda m: m.hsplit(m.zeros(4, 4), True),
    "hsplit str index": lambda m: m.hsplit(m.zeros(5, 5, 5), [1, "a"]),
    "hsplit 0-d": lambda m: m.hsplit(m.tensor(1.0), 1),
    "vsplit 1-d": lambda m: m.vsplit(m.zeros(4), 2),
    "hstack empty": lambda m: m.hstack(()),
    "vstack empty": lambda m: m.vstack([]),
    "dstack empty": lambda m: m.dstack(()),
    "column_stack empty": lambda m: m.column_stack(()),
    "hstack 1-d and 4-d": lambda m: m.hstack((m.zeros(5), m.zeros(5, 5, 5, 5))),
    "hstack 1-d and 2-d": lambda m: m.hstack((m.zeros(5), m.zeros(1, 5))),
    "vstack 1-d and 3-d": lambda m: m.vstack((m.zeros(5), m.zeros(2, 2, 5))),
    "hstack a tensor": lambda m: m.hstack(m.zeros(3, 3)),
    "vstack a generator": lambda m: m.vstack(t for t in [m.zeros(2)]),
    "column_stack of lists": lambda m: m.column_stack([[1.0], [2.0]]),
    "movedim repeated source": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), (0, 4, -5),
                                                   (1, 0, 2)),
    "movedim repeated destination": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), (1, 0, 2),
                                                        (0, 4, -5)),
    "movedim repeated both": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), (1, 0, -4),
                                                 (0, 4, -5)),
    "movedim source out of range": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), (0, 1, -6),
                                                       (1, 4, 2)),
    "movedim destination out of range": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), (1, 4, 2),
                                                            (0, 1, -6)),
    "movedim int out of range": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), -6, 1),
    "movedim counts": lambda m: m.movedim(m.zeros(2, 3, 4, 5, 6), (0, 1, -6), (2,)),
    "movedim method": lambda m: m.zeros(2, 3).movedim((0, 0), (1, 1)),
    "movedim 0-d": lambda m: m.tensor(1.0).movedim(1, 0),
    "broadcast_tensors": lambda m: m.broadcast_tensors(m.zeros(5, 4), m.zeros(5)),
    "broadcast_tensors three": lambda m: m.broadcast_tensors(m.zeros(4), m.zeros(3, 1),
                                                             m.zeros(2, 1, 1), m.zeros(5, 4)),
    "l1_loss sizes": lambda m: m.nn.functional.l1_loss(m.zeros(5, 4), m.zeros(5)),
    "mse_loss sizes": lambda m: m.nn.functional.mse_loss(m.zeros(5, 4), m.zeros(3, 1, 5)),
    "smooth_l1_loss sizes": lambda m: m.nn.functional.smooth_l1_loss(m.zeros(5), m.zeros(4)),
    "huber_loss sizes": lambda m: m.nn.functional.huber_loss(m.zeros(5), m.zeros(2, 4)),
    "margin_ranking_loss dims": lambda m: m.nn.functional.margin_ranking_loss(
        m.zeros(5, 4), m.zeros(5, 4), m.zeros(5)),
    "poisson_nll_loss reduction": lambda m: m.nn.functional.poisson_nll_loss(
        m.zeros(5, 4), m.zeros(5, 4), reduction="abc"),
    "aminmax empty": lambda m: m.aminmax(m.zeros(5, 0, 5)),
    "aminmax empty dim": lambda m: m.aminmax(m.zeros(3, 0), dim=-1),
    "aminmax dim out of range": lambda m: m.aminmax(m.zeros(3, 0), dim=5),
    "aminmax 65 dims": lambda m: m.aminmax(m.zeros(_dims(65)), dim=-1),
    "aminmax 65 dims, dim 64": lambda m: m.aminmax(m.zeros(_dims(65)), dim=64),
    "aminmax 65 dims, empty": lambda m: m.aminmax(m.zeros(_dims(64) + [0]), dim=-1),
    "aminmax out dtype": lambda m: m.aminmax(m.zeros(4, 5), dim=0, out=(
        m.empty(5), m.empty(5, dtype=m.float64))),
    "aminmax out dtype, no dim": lambda m: m.aminmax(m.zeros(4, 5), out=(
        m.empty(0, dtype=m.int64), m.empty(0))),
    "quantile empty": lambda m: m.quantile(m.zeros(2, 0), 0.5, dim=0),
    "quantile q 2-d": lambda m: m.quantile(m.zeros(3), m.zeros(1, 1)),
    "quantile integer input": lambda m: m.nanquantile(m.ones(3, dtype=m.int64), 0.5),
    "quantile q dtype": lambda m: m.quantile(m.zeros(3, dtype=m.float64), m.tensor([0.5])),
    "quantile q values": lambda m: m.quantile(m.zeros(3), m.tensor([0.5, 1.5])),
    "rsub number input": lambda m: m.rsub(2, m.ones(3)),
    "rsub numbers": lambda m: m.rsub(2, 3),
    "logspace float steps": lambda m: m.logspace(0, 3, 1.0),
    "logspace bool steps": lambda m: m.logspace(0, 3, True),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_error_matches_torch(case):
    want = _error(torch, ERRORS[case])
    assert want is not None, "torch accepts this call; the case is wrong"
    assert _error(retorch, ERRORS[case]) == want


# name -> f(lib) both accept: the checks above must not refuse these.
ACCEPTED = {
    "diag_embed dims": lambda m: m.diag_embed(m.arange(6.0).reshape(2, 3), 1, 0, 2),
    "rot90 negative dims": lambda m: m.rot90(m.arange(6.0).reshape(2, 3), 3, (-1, 0)),
    "hsplit indices": lambda m: m.hsplit(m.arange(12.0).reshape(2, 6), [1, 4]),
    "hsplit 0-d tensor sections": lambda m: m.hsplit(m.arange(12.0).reshape(2, 6),
                                                     m.tensor(3)),
    "hstack 0-d first": lambda m: m.hstack([m.tensor(1.0), m.arange(3.0)]),
    "dstack 1-d and 2-d": lambda m: m.dstack([m.arange(5.0), m.arange(5.0).reshape(1, 5)]),
    "movedim": lambda m: m.movedim(m.zeros(2, 3, 4), (0, -1), (2, 0)).shape,
    "movedim 0-d": lambda m: m.tensor(2.0).movedim(-1, 0),
    "broadcast_tensors": lambda m: m.broadcast_tensors(m.zeros(4), m.ones(3, 1),
                                                       m.ones(2, 1, 1)),
    "broadcast_shapes": lambda m: m.broadcast_shapes((3, 1), (4,)),
    "aminmax 65 dims, no dim": lambda m: tuple(m.aminmax(m.ones(_dims(65)), keepdim=True)),
    "aminmax out": lambda m: tuple(m.aminmax(m.arange(6.0).reshape(2, 3), dim=1, out=(
        m.empty(2), m.empty(2)))),
    "l1_loss broadcast": lambda m: m.nn.functional.l1_loss(m.arange(6.0).reshape(2, 3),
                                                           m.ones(3)),
    "quantile 0-d q tensor": lambda m: m.quantile(m.arange(5.0), m.tensor(0.3)),
    "rsub number other": lambda m: m.rsub(m.arange(3.0), 2, alpha=2),
    "logspace tensor steps": lambda m: m.logspace(0, 2, m.tensor(3)),
}


def _plain(x):
    if isinstance(x, (tuple, list)):
        return [type(x).__name__, [_plain(v) for v in x]]
    if isinstance(x, (torch.Tensor, retorch.Tensor)):
        return [str(x.dtype).replace("retorch", "torch"), list(x.shape), x.tolist()]
    return x


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_calls_match_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _plain(ACCEPTED[case](retorch)) == _plain(ACCEPTED[case](torch))


def test_size_mismatch_warning_matches_torch():
    def warned(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.nn.functional.mse_loss(m.zeros(5, 4), m.zeros(4))
        return [str(x.message) for x in w]
    assert warned(retorch) == warned(torch)


# Gradients --------------------------------------------------------------------------------------
def _grads(m, fn, arrays, create_graph=False):
    """fn's outputs and the gradients of sum(w * out) with respect to each array, in m."""
    leaves = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
    out = fn(m, *leaves)
    w = m.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)), dtype=m.float64)
    grads = m.autograd.grad((out * w).sum(), leaves, allow_unused=True,
                            create_graph=create_graph)
    return [out] + [m.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]


def _assert_grads_match(fn, arrays, create_graph=False):
    got = _grads(retorch, fn, arrays, create_graph)
    want = _grads(torch, fn, arrays, create_graph)
    for g, e in zip(got, want):
        torch.testing.assert_close(torch.from_numpy(g.detach().numpy()), e.detach(),
                                   rtol=1e-7, atol=1e-9, equal_nan=True)


def _factor(rng, *batch, n=4, upper=False):
    a = rng.standard_normal(batch + (n, n))
    L = np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + n * np.eye(n))
    return np.ascontiguousarray(np.swapaxes(L, -1, -2)) if upper else L


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_gradients_match_torch(rng, upper):
    # The factor's gradient covers the triangle the solves never read, as torch's formula has it.
    _assert_grads_match(lambda m, b, l: m.cholesky_solve(b, l, upper),
                        [rng.standard_normal((2, 4, 3)), _factor(rng, 2, upper=upper)])
    # batch dims broadcast: both gradients are summed back to their inputs' shapes
    _assert_grads_match(lambda m, b, l: m.cholesky_solve(b, l, upper=upper),
                        [rng.standard_normal((3, 1, 4, 2)), _factor(rng, 2, upper=upper)])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_gradients_match_torch(rng, upper):
    _assert_grads_match(lambda m, l: m.cholesky_inverse(l, upper), [_factor(rng, upper=upper)])
    _assert_grads_match(lambda m, l: l.cholesky_inverse(upper=upper),
                        [_factor(rng, 3, upper=upper)])


def test_cholesky_second_order_gradients_match_torch(rng):
    def grad_norm(m, b, l):
        g = m.autograd.grad(m.cholesky_solve(b, l, True).sum(), [b, l], create_graph=True)
        return (g[0] * g[0]).sum() + (g[1] * g[1]).sum() + m.cholesky_inverse(l).sum()
    _assert_grads_match(grad_norm, [rng.standard_normal((4, 2)), _factor(rng, upper=True)])


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_q_gradients_match_torch(rng, interpolation):
    x = rng.standard_normal((3, 5))
    _assert_grads_match(lambda m, x, q: m.quantile(x, q, dim=1, keepdim=True,
                                                   interpolation=interpolation),
                        [x, np.array([0.2, 0.7])])
    x[0, 1] = x[2, :] = np.nan  # NaN results: the gradient reaches the NaN read, as torch's
    _assert_grads_match(lambda m, x, q: m.quantile(x, q, dim=1, interpolation=interpolation),
                        [x, np.array([0.3, 0.6])])
    _assert_grads_match(lambda m, x, q: m.nanquantile(x, q, interpolation=interpolation),
                        [x, np.array(0.35)])
    _assert_grads_match(lambda m, x, q: m.nanquantile(x, q, dim=1, interpolation=interpolation),
                        [x, np.array([0.1, 0.9])])


def test_det_gradient_at_an_exactly_singular_matrix_is_the_adjugate():
    # torch 1.13's first-order shortcut (an LU solve scaled by det) gives zeros here; its
    # create_graph path gives the adjugate through an SVD, which retorch gives always.
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    _assert_grads_match(lambda m, a: m.linalg.det(a), [a], create_graph=True)
