"""Second derivatives through view backwards (select, slice): checked numerically and against torch."""
import numpy as np
import torch

import retorch


def _second_order(L, x_np, f):
    """d/dx of sum(grad f(x) * v), with v fixed: a Hessian-vector product through the graph."""
    x = L.from_numpy(x_np.copy()).requires_grad_(True)
    v = L.from_numpy(np.linspace(-1, 1, x_np.size).reshape(x_np.shape))
    (g,) = L.autograd.grad(f(x), [x], create_graph=True)
    assert g.requires_grad, "first-order gradient lost its history"
    (h,) = L.autograd.grad((g * v).sum(), [x])
    return h.numpy()


CASES = {
    "select": lambda x: (x.select(0, 1) ** 3).sum() + (x.select(1, -1) ** 2).sum(),
    "slice": lambda x: (x[:, 1:3] ** 3).sum() + (x[::2] ** 2).sum(),
    "index": lambda x: (x[1] * x[:, 0].sum()).sum(),
}


def test_double_backward_through_view_backwards_matches_torch():
    x = np.random.default_rng(0).uniform(-1, 1, (4, 5))
    for name, f in CASES.items():
        np.testing.assert_allclose(_second_order(retorch, x, f), _second_order(torch, x, f),
                                   rtol=1e-10, atol=1e-12, err_msg=name)


def test_gradgradcheck_select_slice():
    x = retorch.from_numpy(np.random.default_rng(1).uniform(-1, 1, (3, 4))).requires_grad_(True)
    for name, f in CASES.items():
        assert retorch.autograd.gradgradcheck(f, (x,)), name
