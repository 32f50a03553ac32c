"""Oracle tests for _addmm_activation (a linear layer with its relu/GELU fused into the GEMM)."""
import pytest
import torch

import retorch
from custom_helpers import P, both, gradcheck, gradgradcheck, grads

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_addmm_activation_values": ["_addmm_activation"],
    "test_addmm_activation_grads": ["_addmm_activation"],
}

TOL = {"rtol": 1e-4, "atol": 1e-4}


def act(L, c, a, b, gelu=False, **kw):
    """_addmm_activation for retorch; for torch the same through relu/gelu of addmm, whose
    autograd torch has (1.13 gives _addmm_activation no derivative). torch's CPU kernel applies
    the erf GELU, not the tanh approximation (checked by test_addmm_activation_values)."""
    if L is torch:
        y = torch.addmm(c, a, b, **kw)
        return torch.nn.functional.gelu(y) if gelu else torch.relu(y)
    return L._addmm_activation(c, a, b, use_gelu=gelu, **kw)


def test_addmm_activation_values(rng):
    kws = ({}, {"beta": 0.5, "alpha": -2}, {"beta": 0}, {"alpha": 0})
    for dt in ("float32", "float64"):
        for gelu in (False, True):
            for m, k, n in [(3, 4, 5), (1, 1, 1), (7, 1, 9), (64, 128, 128)]:
                for lay in ("contig", "transposed"):
                    a, b = P(rng, (m, k), dt, lay), P(rng, (k, n), dt, lay)
                    for c in (P(rng, (n,), dt), P(rng, (m, n), dt, lay), P(rng, (1, n), dt),
                              P(rng, (m, 1), dt), P(rng, (), dt)):
                        for kw in kws:
                            both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=gelu,
                                                                        **kw),
                                 c, a, b, what=f"{m}x{k}x{n} {dt} gelu={gelu} {kw}", **TOL)
            # The method and out= variants; a sliced (strided) bias.
            a, b, c = P(rng, (3, 4), dt), P(rng, (4, 5), dt, "sliced"), P(rng, (5,), dt, "sliced")
            both(lambda L, c, a, b: c._addmm_activation(a, b, use_gelu=gelu), c, a, b, **TOL)
            both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=gelu,
                                                        out=L.empty(0, dtype=a.dtype)),
                 c, a, b, **TOL)
            # The same values as the unfused ops, with torch's own (unfused) composition.
            both(lambda L, c, a, b: act(L, c, a, b, gelu, beta=2, alpha=0.5), c, a, b, **TOL)
            # Empty products: [0, n], [m, 0] and an empty inner dim (beta * self alone).
            both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=gelu),
                 P(rng, (5,), dt), P(rng, (0, 4), dt), P(rng, (4, 5), dt))
            both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=gelu),
                 P(rng, (3, 1), dt), P(rng, (3, 4), dt), P(rng, (4, 0), dt))
            both(lambda L, c, a, b: L._addmm_activation(c, a, b, beta=2, use_gelu=gelu),
                 P(rng, (2, 5), dt), P(rng, (2, 0), dt), P(rng, (0, 5), dt))
        # beta=0 ignores nan/inf in self; relu and GELU keep nan from the product.
        both(lambda L, c, a, b: L._addmm_activation(c, a, b, beta=0), P(rng, (3, 5), dt,
             special=True), P(rng, (3, 4), dt), P(rng, (4, 5), dt), what="beta=0 ignores nan")
        for gelu in (False, True):
            both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=gelu),
                 P(rng, (5,), dt, special=True), P(rng, (3, 4), dt), P(rng, (4, 5), dt),
                 what=f"nan/inf in self, gelu={gelu}")
    # Integers (relu only) and the 16-bit floats take addmm + the activation.
    for dt in ("int64", "int32", "bfloat16", "float16"):
        for gelu in ((False,) if dt.startswith("int") else (False, True)):
            both(lambda L, c, a, b: L._addmm_activation(c, a, b, beta=2, use_gelu=gelu),
                 P(rng, (5,), dt), P(rng, (3, 4), dt, "transposed"), P(rng, (4, 5), dt),
                 rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_addmm_activation_split_across_threads(rng, threads):
    """Large products split into per-thread row or column blocks, each with its own epilogue,
    and blocks over kEpilogueBytes in row chunks (Note [GEMM epilogue])."""
    old = retorch.get_num_threads()
    retorch.set_num_threads(threads)
    try:
        for m, k, n in [(256, 512, 512), (100, 784, 256), (301, 600, 10), (9, 700, 3000),
                        (1100, 64, 300)]:
            for dt in ("float32", "float64"):
                a, b, c = P(rng, (m, k), dt), P(rng, (k, n), dt), P(rng, (n,), dt)
                for gelu in (False, True):
                    both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=gelu), c, a, b,
                         what=f"{m}x{k}x{n} {dt} gelu={gelu}", rtol=1e-4, atol=1e-3)
                at, bt = P(rng, (m, k), dt, "transposed"), P(rng, (k, n), dt, "transposed")
                both(lambda L, c, a, b: L._addmm_activation(c, a, b, beta=0.5, alpha=-2), c, at,
                     bt, what=f"transposed {m}x{k}x{n} {dt}", rtol=1e-4, atol=1e-3)
                cm = P(rng, (m, n), dt, "transposed")
                both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=True), cm, a, b,
                     what=f"[m, n] bias {m}x{k}x{n} {dt}", rtol=1e-4, atol=1e-3)
    finally:
        retorch.set_num_threads(old)


def test_addmm_activation_errors(rng):
    a, b, c = P(rng, (3, 4)), P(rng, (4, 5)), P(rng, (5,))
    f = lambda L, c, a, b: L._addmm_activation(c, a, b)  # noqa: E731
    both(f, c, a, P(rng, (5, 4)), what="inner size mismatch")
    both(f, c, a, P(rng, (4, 5), "float64"), what="mat dtype mismatch")
    both(f, P(rng, (5,), "float64"), a, b, what="self dtype mismatch")
    both(f, c, P(rng, (4,)), b, what="1-D mat1")
    both(f, c, a, P(rng, (4,)), what="1-D mat2")
    both(f, P(rng, (3,)), a, b, what="bias not broadcastable")
    both(f, P(rng, (2, 5)), a, b, what="bias rows not broadcastable")
    both(f, P(rng, (5,), "bool"), P(rng, (3, 4), "bool"), P(rng, (4, 5), "bool"), what="bool")
    both(lambda L, c, a, b: L._addmm_activation(c, a, b, use_gelu=True), P(rng, (5,), "int64"),
         P(rng, (3, 4), "int64"), P(rng, (4, 5), "int64"), what="gelu of integers")


def test_addmm_activation_grads(rng):
    for gelu in (False, True):
        for lay in ("contig", "transposed"):
            for cs in [(5,), (3, 5), (1, 5), (3, 1), ()]:
                for kw in ({}, {"beta": 0.5, "alpha": -2}):
                    grads(lambda L, c, a, b: act(L, c, a, b, gelu, **kw), P(rng, cs),
                          P(rng, (3, 4), layout=lay), P(rng, (4, 5), layout=lay),
                          what=f"grad gelu={gelu} bias {cs} {kw}")
        # Large enough for the threaded split; only some inputs requiring grad.
        a, b, c = P(rng, (100, 78)), P(rng, (78, 256)), P(rng, (256,))
        grads(lambda L, c, a, b: act(L, c, a, b, gelu), c, a, b)
        grads(lambda L, c, a, b: act(L, c, a.detach(), b, gelu), c, a, b)
        grads(lambda L, c, a, b: act(L, c.detach(), a, b.detach(), gelu), c, a, b)
        d = lambda *s: P(rng, s, "float64", distinct=True)  # noqa: E731
        gradcheck(lambda L, c, a, b: L._addmm_activation(c, a, b, beta=0.5, alpha=2,
                                                         use_gelu=gelu), d(3,), d(2, 4), d(4, 3))
    # Second order (create_graph) through GELU's derivative, with the pre-activation recomputed.
    d = lambda *s: P(rng, s, "float64")  # noqa: E731
    gradgradcheck(lambda L, c, a, b: L._addmm_activation(c, a, b, alpha=0.5, use_gelu=True),
                  d(3,), d(2, 4), d(4, 3))
    # relu's saved output: an in-place change to it is refused at backward, as for relu.
    x = retorch.randn(3, 4, requires_grad=True)
    y = retorch._addmm_activation(retorch.zeros(5), x, retorch.randn(4, 5))
    y.mul_(2)
    with pytest.raises(RuntimeError):
        y.sum().backward()
