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


def _writes(L, case):
    """Writes into views (Note [Direct in-place ops on views]); returns the result and grads."""
    y = L.from_numpy(np.arange(1.0, 13.0).reshape(3, 4)).requires_grad_(True)
    x = L.from_numpy(np.array([0.5, -1.0, 2.0, 3.0])).requires_grad_(True)
    w = L.from_numpy(np.linspace(-1, 1, 12).reshape(3, 4))
    if case == "copy_ into a row":
        z = y * 2
        z[1].copy_(x * 3)
    elif case == "fill_ a column":
        z = y * 2
        z[:, 2].fill_(7.0)
    elif case == "copy_ broadcast into a slice":
        z = y * 2
        z[:2, 1:3].copy_(x[:2])
    elif case == "setitem into a plain tensor":
        z = L.zeros(3, 4, dtype=L.float64)
        z[1] = x * 2
        z[2, :2] = x[2:]
    elif case == "setitem with an index tensor":
        z = L.zeros(3, 4, dtype=L.float64)
        z[L.tensor([0, 2])] = x
    elif case == "copy_ into a plain tensor's row":
        z = L.zeros(3, 4, dtype=L.float64)
        z[1].copy_(x * 3)
        z.narrow(1, 0, 2)[2].mul_(x[:2])
    elif case == "in-place ops on views of views of a plain tensor":
        z = L.ones(3, 4, dtype=L.float64)
        z.t()[1:3].mul_(y.t()[1:3])
        z[0][1:].add_(x[1:])
    elif case == "copy_ into a plain tensor's diagonal":
        z = L.zeros(3, 4, dtype=L.float64)
        z.diagonal(1).copy_(x[:3] * 2)
    elif case == "setitem of a scalar into a tracked tensor":
        z = y * 2
        z[0, 1:] = 0.0
    (z * w).sum().backward()
    return z.detach().numpy(), y.grad, x.grad


def test_writes_into_views_match_torch():
    """copy_ and fill_ into views of tensors with history rebase the base's history (a copy_
    into a row used to leave the base's gradient flowing through the overwritten row); values
    that require grad written into any view of a plain tensor (indexing, select, narrow, t())
    give it their history (TensorImpl::view_base)."""
    for case in ("copy_ into a row", "fill_ a column", "copy_ broadcast into a slice",
                 "setitem into a plain tensor", "setitem with an index tensor",
                 "copy_ into a plain tensor's row",
                 "in-place ops on views of views of a plain tensor",
                 "copy_ into a plain tensor's diagonal",
                 "setitem of a scalar into a tracked tensor"):
        ours, theirs = _writes(retorch, case), _writes(torch, case)
        np.testing.assert_allclose(ours[0], theirs[0], err_msg=case)
        for a, b, n in ((ours[1], theirs[1], "y"), (ours[2], theirs[2], "x")):
            assert (a is None) == (b is None), f"{case}: grad of {n}"
            if a is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=f"{case}: grad of {n}")


def test_view_of_a_leaf_taken_without_grad_cannot_be_written_with_grad():
    """A view of a leaf that requires grad, taken under no_grad, is still that leaf's view: an
    in-place op on it with grad mode on raises (in torch as well), and the leaf stays a leaf."""
    for L in (torch, retorch):
        w = L.ones(3, requires_grad=True)
        with L.no_grad():
            v = w[0:2]
        try:
            v.mul_(L.ones(2, requires_grad=True))
        except RuntimeError:
            pass
        else:
            raise AssertionError(f"{L.__name__}: no error")
        assert w.is_leaf and w.grad_fn is None
