"""retorch.autograd.functional against torch.autograd.functional: vjp, jvp, vhp, hvp, jacobian
and hessian of the same functions at the same points, tensor and tuple forms, and create_graph
results that differentiate again."""
import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(17)
A = RNG.randn(3).astype(np.float64)
B = RNG.randn(2, 3).astype(np.float64)
V3 = RNG.randn(3).astype(np.float64)
V2 = RNG.randn(2).astype(np.float64)


def f_vec(m):
    return lambda x: (x ** 3).tanh() * x.sum()


def f_two(m):
    return lambda x, w: (w.matmul(x).sin(), (x * x).sum())


def f_scalar(m):
    return lambda x: (x.exp() * x.flip([0])).sum() + (x ** 4).sum()


def f_scalar2(m):
    return lambda x, w: (w.matmul(x) ** 2).sum() + x.prod()


def T(m, a):
    return m.tensor(a.copy())


CASES = {
    "vjp": lambda m, F: F.vjp(f_vec(m), T(m, A), T(m, V3)),
    "vjp tuple": lambda m, F: F.vjp(f_two(m), (T(m, A), T(m, B)), (T(m, V2), m.tensor(1.5))),
    "vjp scalar v None": lambda m, F: F.vjp(f_scalar(m), T(m, A)),
    "jvp": lambda m, F: F.jvp(f_vec(m), T(m, A), T(m, V3)),
    "jvp tuple": lambda m, F: F.jvp(f_two(m), (T(m, A), T(m, B)), (T(m, V3), T(m, B * 0.5))),
    "jacobian": lambda m, F: F.jacobian(f_vec(m), T(m, A)),
    "jacobian tuple": lambda m, F: F.jacobian(f_two(m), (T(m, A), T(m, B))),
    "hessian": lambda m, F: F.hessian(f_scalar(m), T(m, A)),
    "hessian tuple": lambda m, F: F.hessian(f_scalar2(m), (T(m, A), T(m, B))),
    "vhp": lambda m, F: F.vhp(f_scalar(m), T(m, A), T(m, V3)),
    "hvp": lambda m, F: F.hvp(f_scalar2(m), (T(m, A), T(m, B)), (T(m, V3), T(m, B))),
}


def flatten(v):
    if isinstance(v, (tuple, list)):
        return [x for e in v for x in flatten(e)]
    return [v.detach().numpy()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    want = flatten(CASES[case](torch, torch.autograd.functional))
    got = flatten(CASES[case](retorch, retorch.autograd.functional))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (case, i)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{case}[{i}]")


def test_create_graph_results_differentiate_again():
    grads = []
    for m in (torch, retorch):
        x = m.tensor(A.copy(), requires_grad=True)
        h = m.autograd.functional.hessian(f_scalar(m), x, create_graph=True)
        h.trace().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


def test_errors_like_torch():
    F = retorch.autograd.functional
    with pytest.raises(RuntimeError, match="can only be None"):
        F.vjp(lambda x: x * 2, retorch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="single Tensor with a single element"):
        F.hessian(lambda x: x * 2, retorch.tensor([1.0, 2.0]))
