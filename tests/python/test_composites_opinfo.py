"""Python-composed functions against torch 1.13 where its OpInfo samples found differences:
scalar inputs (quantile, aminmax, linalg.vander), integer and bool dtypes (median, diag_embed,
addmv, addr, logspace), shapes (cov, var_mean), unsorted histogram edges, pinv's hermitian
path and gradients, matrix_rank's tensor tolerances and lstsq's four drivers."""
import numpy as np
import pytest
import torch

import retorch
from test_functional_api import assert_same, plain

RNG = np.random.RandomState(7)
M = RNG.randn(5, 5)
SYM = M + M.T
TALL = RNG.randn(4, 3)
WIDE = RNG.randn(2, 3)
BATCH = RNG.randn(2, 4, 3)
RHS = RNG.randn(4, 2)
RANK2 = RNG.randn(5, 2) @ RNG.randn(2, 3)  # (5, 3) of rank 2
SQ_RANK3 = RNG.randn(5, 3) @ RNG.randn(3, 5)
INTS = RNG.randint(-5, 5, (3, 4))
IVEC = RNG.randint(-5, 5, (4,))
EDGES = np.array([-0.5, 1.5, -1.0, 0.3, 2.0])  # unsorted, as OpInfo's random bins are


def T(m, a, dtype=None):
    t = m.from_numpy(np.array(a, order="C"))  # a copy; 0-d stays 0-d
    return t if dtype is None else t.to(getattr(m, dtype))


CASES = {
    # quantile of a scalar along dim 0 or -1
    "quantile 0-d dim0": lambda m: m.quantile(T(m, M[0, 0]), 0.5, dim=0),
    "quantile 0-d keepdim": lambda m: m.quantile(T(m, M[0, 0]), 0.3, dim=-1, keepdim=True,
                                                 interpolation="midpoint"),
    "quantile 0-d q tensor": lambda m: m.quantile(T(m, M[0, 0]), T(m, np.array([0.2, 0.9])),
                                                  dim=0, keepdim=True),
    "nanquantile 0-d": lambda m: m.nanquantile(T(m, M[0, 0]), 0.5, dim=0),
    "gradient spacing None": lambda m: m.gradient(T(m, M), spacing=None, dim=None),
    "gradient spacing None edge 2": lambda m: m.gradient(T(m, M[0]), spacing=None, dim=None,
                                                         edge_order=2),
    "diff n0 prepend append": lambda m: m.diff(T(m, M), 0, 0, T(m, M[:1]), T(m, M[:2])),
    "diff n0 append": lambda m: m.diff(T(m, INTS), 0, 1, append=T(m, INTS)),
    "cov 1xN": lambda m: m.cov(T(m, M[:1])),
    "cov 1xN weights": lambda m: m.cov(T(m, M[:1]), fweights=m.tensor([1, 2, 1, 3, 1]),
                                       aweights=T(m, np.abs(M[1]))),
    "cov int 1xN": lambda m: m.cov(T(m, INTS[:1])),
    "cov bf16 float aweights": lambda m: m.cov(T(m, M[:2], "bfloat16"),
                                               aweights=T(m, np.abs(M[2]), "float32")),
    "cov int double aweights": lambda m: m.cov(T(m, INTS), aweights=T(m, np.abs(M[0, :4]))),
    "corrcoef 1xN": lambda m: m.corrcoef(T(m, M[:1])),
    "corrcoef int 1xN": lambda m: m.corrcoef(T(m, INTS[:1])),
    "median int 0-d": lambda m: m.median(T(m, INTS[0, 0])),
    "median int 2": lambda m: m.median(T(m, INTS[0, :2])),
    "median int dim": lambda m: m.median(T(m, INTS), 1, keepdim=True),
    "median int empty": lambda m: m.median(T(m, INTS[:0, 0])),
    "nanmedian int": lambda m: m.nanmedian(T(m, INTS[0, :2])),
    "nanmedian int dim": lambda m: m.nanmedian(T(m, INTS), 0),
    "var_mean keepdim all": lambda m: m.var_mean(T(m, BATCH), dim=None, correction=0,
                                                 keepdim=True),
    "std_mean keepdim all": lambda m: m.std_mean(T(m, BATCH), dim=None, keepdim=True),
    "var_mean unbiased": lambda m: m.var_mean(T(m, BATCH), True),
    "var_mean biased": lambda m: m.var_mean(T(m, BATCH), False),
    "std_mean dim unbiased": lambda m: m.std_mean(T(m, BATCH), 1, False, True),
    "diag_embed bool": lambda m: m.diag_embed(T(m, M > 0), offset=2),
    "diag_embed bool dims": lambda m: m.diag_embed(T(m, M[:3] > 0), -1, 0, 2),
    "diag_embed inf": lambda m: m.diag_embed(T(m, np.array([np.inf, -np.inf, 1.0])), 1),
    "diag_embed dims swapped": lambda m: m.diag_embed(T(m, BATCH), -2, 2, 0),
    "addmv int float scalars": lambda m: m.addmv(T(m, IVEC[:3]), T(m, INTS[:3]), T(m, IVEC),
                                                 beta=1.7, alpha=2.5),
    "addmv int small scalars": lambda m: m.addmv(T(m, IVEC[:3]), T(m, INTS[:3]), T(m, IVEC),
                                                 beta=0.2, alpha=-1.5),
    "addr bool": lambda m: m.addr(T(m, INTS > 0), T(m, IVEC[:3] > 0), T(m, IVEC > 0)),
    "addr bool beta False": lambda m: m.addr(T(m, INTS > 0), T(m, IVEC[:3] > 0),
                                             T(m, IVEC > 0), beta=False),
    "addr bool alpha 0": lambda m: m.addr(T(m, INTS > 0), T(m, IVEC[:3] > 0), T(m, IVEC > 0),
                                          beta=3, alpha=0),
    "addr bool input int vectors": lambda m: m.addr(T(m, INTS > 0), T(m, IVEC[:3]),
                                                    T(m, IVEC)),
    "addr beta 0 promotes": lambda m: m.addr(T(m, M[:3, :4]), T(m, IVEC[:3], "float32"),
                                             T(m, IVEC, "float32"), beta=0),
    "aminmax 0-d keepdim": lambda m: m.aminmax(T(m, M[0, 0]), dim=0, keepdim=True),
    "aminmax 0-d": lambda m: m.aminmax(T(m, M[0, 0]), dim=-1),
    "tensor_split 0-d tensor": lambda m: m.tensor_split(T(m, M), m.tensor(3), dim=1),
    "tensor_split 1-d tensor": lambda m: m.tensor_split(T(m, M), m.tensor([1, 3])),
    "pinv hermitian": lambda m: m.linalg.pinv(T(m, SYM), hermitian=True),
    "pinv hermitian reads lower": lambda m: m.linalg.pinv(T(m, M), hermitian=True),
    "pinv hermitian batched": lambda m: m.linalg.pinv(T(m, np.stack([SYM, M])),
                                                      hermitian=True),
    "pinv hermitian rtol": lambda m: m.linalg.pinv(T(m, SYM), rtol=0.3, hermitian=True),
    "pinv atol": lambda m: m.linalg.pinv(T(m, RANK2), atol=0.5),
    "pinv rtol tensor": lambda m: m.linalg.pinv(T(m, np.stack([M, SYM])),
                                                rtol=T(m, np.array([0.1, 0.4]))),
    "pinv atol rtol tensors": lambda m: m.linalg.pinv(T(m, np.stack([M, SYM])),
                                                      atol=T(m, np.array([1.0, 0.0])),
                                                      rtol=T(m, np.array(0.2))),
    "pinv empty": lambda m: m.linalg.pinv(T(m, np.zeros((2, 0, 3)))),
    "matrix_rank rtol tensor": lambda m: m.linalg.matrix_rank(
        T(m, np.stack([M, SQ_RANK3])), rtol=T(m, np.array([0.3, 0.01]))),
    "matrix_rank atol tensor": lambda m: m.linalg.matrix_rank(
        T(m, np.stack([M, SQ_RANK3])), atol=T(m, np.array([2.0, 0.0]))),
    "matrix_rank both tensors": lambda m: m.linalg.matrix_rank(
        T(m, np.stack([M, SQ_RANK3])), atol=T(m, np.array([2.0, 0.0])),
        rtol=T(m, np.array(0.1))),
    "matrix_rank empty tensors": lambda m: m.linalg.matrix_rank(
        T(m, np.zeros((0, 5, 5))), rtol=T(m, np.zeros(0))),
    "matrix_rank hermitian": lambda m: m.linalg.matrix_rank(T(m, M), hermitian=True,
                                                            rtol=0.2),
    "vander 0-d": lambda m: m.linalg.vander(T(m, M[0, 0]), N=2),
    "vander int32": lambda m: m.linalg.vander(T(m, IVEC, "int32"), N=3),
    "vander batched": lambda m: m.linalg.vander(T(m, M[:2, :3])),
    "logspace int": lambda m: m.logspace(1.2, 2, 2, base=5.0, dtype=m.int64),
    "logspace int 4": lambda m: m.logspace(1.2, 4, 4, dtype=m.int64),
    "logspace int negative base": lambda m: m.logspace(-1.7, 3.9, 5, base=-2.7,
                                                       dtype=m.int64),
    "logspace int odd base": lambda m: m.logspace(0.5, 3.9, 7, base=1.1, dtype=m.int64),
    "logspace float32": lambda m: m.logspace(0.1, 2.3, 7, dtype=m.float32),
    "logspace bfloat16": lambda m: m.logspace(-3.3, 1.7, 9, base=2, dtype=m.bfloat16).float(),
    "logspace one step": lambda m: m.logspace(1.7, 3, 1, dtype=m.int64),
    "logspace uint8 descending": lambda m: m.logspace(2.6, 1.0, 4, base=5.0, dtype=m.uint8),
    "logspace empty": lambda m: m.logspace(2.6, 1.0, 0, dtype=m.int16),
    "histogram unsorted edges": lambda m: m.histogram(T(m, M[0]), T(m, EDGES)),
    "histogram unsorted edges 2d": lambda m: m.histogram(T(m, M), T(m, EDGES[::-1])),
    "histogram 0-d": lambda m: m.histogram(T(m, M[0, 0]), T(m, np.array([-3.0, 0.0, 3.0]))),
    "histogram weights density": lambda m: m.histogram(T(m, M), T(m, EDGES), weight=T(
        m, np.abs(SYM)), density=True),
    "histogram last edge": lambda m: m.histogram(T(m, np.array([0.0, 1.0, 2.0, 2.0])),
                                                 T(m, np.array([0.0, 1.0, 2.0]))),
    "histogram nan, given edges": lambda m: m.histogram(
        T(m, np.array([np.nan, 0.5, np.inf, 2.0])), T(m, np.array([0.0, 1.0, 2.0, 3.0]))),
    "histogram nan, equal bins": lambda m: m.histogram(
        T(m, np.array([np.nan, 0.5, -np.inf, np.nan])), 5, range=(0.0, 3.0)),
    "histogram nan, one bin": lambda m: m.histogram(T(m, np.array([np.nan, 5.0])), 1,
                                                    range=(-1.0, 2.0)),
    "histogram weight of another shape": lambda m: m.histogram(T(m, M[:2, :2]), 2,
                                                               weight=T(m, np.ones(4))),
    "histogramdd nan": lambda m: m.histogramdd(
        T(m, np.array([[np.nan, 0.5], [0.5, 0.5], [2.5, np.nan]])), [3, 2],
        range=[0.0, 3.0, 0.0, 1.0]),
    "histogramdd unsorted edges": lambda m: m.histogramdd(
        T(m, M[:, :2]), [T(m, EDGES), T(m, EDGES[::-1])]),
    "histogramdd weights density": lambda m: m.histogramdd(
        T(m, M[:, :2]), [T(m, np.array([-2.0, 0.0, 2.0])), T(m, EDGES)],
        weight=T(m, np.abs(M[0])), density=True),
}


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    want = plain(CASES[case](torch))
    got = plain(CASES[case](retorch))
    assert_same(got, want, case)


LSTSQ_INPUTS = {
    "wide": (WIDE, RNG.randn(2, 2)),
    "square": (M[:3, :3], RNG.randn(3, 1)),
    "tall": (TALL, RHS),
    "tall vector": (TALL, RHS[:, 0]),
    "batched": (BATCH, RNG.randn(2, 4, 2)),
    "rank deficient": (RANK2, RNG.randn(5, 2)),
    "no columns": (np.zeros((4, 0)), RHS),
    "no rows": (np.zeros((0, 3)), np.zeros((0, 2))),
}


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("case", sorted(LSTSQ_INPUTS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstsq_drivers_match_torch(driver, case, dtype):
    if driver in (None, "gels", "gelsy") and case == "rank deficient":
        return  # gels returns LAPACK's garbage for a singular R; gelsy's pivoting differs
    a, b = LSTSQ_INPUTS[case]
    want = torch.linalg.lstsq(T(torch, a, dtype), T(torch, b, dtype), driver=driver)
    got = retorch.linalg.lstsq(T(retorch, a, dtype), T(retorch, b, dtype), driver=driver)
    assert type(got).__name__ == "linalg_lstsq"
    tol = 1e-4 if dtype == "float32" else 1e-9
    for w, g in zip(want, got):
        assert str(g.dtype) == str(w.dtype) and tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


def test_lstsq_rcond_cuts_singular_values_as_gelss():
    a, b = RANK2 + 1e-3 * RNG.randn(5, 3), RNG.randn(5, 2)
    for driver in ("gelsd", "gelss"):
        for rcond in (None, 1e-2):
            want = torch.linalg.lstsq(T(torch, a), T(torch, b), rcond, driver=driver)
            got = retorch.linalg.lstsq(T(retorch, a), T(retorch, b), rcond, driver=driver)
            assert_same(plain(list(got)), plain(list(want)), f"{driver} rcond={rcond}")


def _grads(fn, inputs, seed=0):
    """fn's outputs (float64) and the gradients of a weighted sum of them, for each library."""
    out = {}
    for m in (torch, retorch):
        xs = [T(m, a).requires_grad_(True) for a in inputs]
        y = fn(m, *xs)
        ys = list(y) if isinstance(y, tuple) else [y]
        rng = np.random.RandomState(seed)
        total = sum((v * T(m, rng.randn(*v.shape))).sum() for v in ys if v.requires_grad)
        total.backward()
        out[m] = [v.detach().numpy() for v in ys] + [
            None if x.grad is None else x.grad.numpy() for x in xs]
    return out[torch], out[retorch]


GRAD_CASES = {
    "quantile 0-d": (lambda m, x: m.quantile(x, 0.4, dim=0, keepdim=True), [M[0, 0]]),
    "diff n0": (lambda m, x, p: m.diff(x, 0, 0, prepend=p), [M, M[:1]]),
    "gradient spacing None": (lambda m, x: m.gradient(x, spacing=None, dim=None), [M]),
    "cov 1xN": (lambda m, x, w: m.cov(x, aweights=w.abs()), [M[:1], M[1]]),
    "corrcoef": (lambda m, x: m.corrcoef(x), [M[:3]]),
    "var_mean keepdim": (lambda m, x: m.var_mean(x, dim=None, keepdim=True), [BATCH]),
    "std_mean unbiased": (lambda m, x: m.std_mean(x, False), [BATCH]),
    "diag_embed": (lambda m, x: m.diag_embed(x, -1, 0, 2), [BATCH]),
    "addr": (lambda m, i, a, b: m.addr(i, a, b, beta=0.5, alpha=2.0), [M[:3], M[0, :3], M[1]]),
    "addmv": (lambda m, i, a, v: m.addmv(i, a, v, beta=0.5, alpha=2.0), [M[0], M, M[1]]),
    "vander at zero": (lambda m, x: m.linalg.vander(x, N=4), [np.array([0.0, 2.0, -1.5])]),
    "pinv hermitian": (lambda m, x: m.linalg.pinv(x, hermitian=True), [SYM]),
    "pinv tall": (lambda m, x: m.linalg.pinv(x), [TALL]),
    "pinv wide batched": (lambda m, x: m.linalg.pinv(x), [BATCH.transpose(0, 2, 1)]),
    "pinv orthogonal": (lambda m, x: m.linalg.pinv(x), [np.linalg.qr(M)[0]]),
    "pinv of a rank-2 product": (lambda m, a, b: m.linalg.pinv(a @ b.transpose(-2, -1)),
                                 [np.linalg.qr(RNG.randn(6, 2))[0],
                                  np.linalg.qr(RNG.randn(4, 2))[0]]),
    "lstsq gels": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gels").solution, [TALL, RHS]),
    "lstsq gelsd wide": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd")[0],
                         [WIDE, RHS[:2]]),
    "lstsq gelss batched": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gelss")[0],
                            [BATCH, RNG.randn(2, 4, 2)]),
    # (torch 1.13's backward fails for a vector b, so a matrix here)
    "lstsq gelsy": (lambda m, a, b: m.linalg.lstsq(a, b)[0], [TALL, RHS]),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_torch(case):
    fn, inputs = GRAD_CASES[case]
    want, got = _grads(fn, inputs)
    for w, g in zip(want, got):
        if w is None or g is None:  # an input the result does not depend on
            assert w is None and g is None, case
            continue
        assert g.shape == w.shape, case
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-8, err_msg=case)


def test_pinv_second_derivatives_match_torch():
    out = {}
    for m in (torch, retorch):
        a = T(m, TALL).requires_grad_(True)
        g, = m.autograd.grad(m.linalg.pinv(a).pow(2).sum(), a, create_graph=True)
        g.pow(2).sum().backward()
        out[m] = (g.detach().numpy(), a.grad.numpy())
    for w, g in zip(out[torch], out[retorch]):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)
    assert retorch.linalg.pinv(T(retorch, M).requires_grad_()).grad_fn.name() == \
        "LinalgPinvBackward0"


def test_lstsq_only_the_solution_has_gradients():
    a = T(retorch, TALL).requires_grad_(True)
    r = retorch.linalg.lstsq(a, T(retorch, RHS), driver="gelsd")
    assert r.solution.requires_grad
    assert not (r.residuals.requires_grad or r.singular_values.requires_grad)


ERROR_CASES = {
    "quantile 0-d dim 1": lambda m: m.quantile(T(m, M[0, 0]), 0.5, dim=1),
    "diff 0-d": lambda m: m.diff(T(m, M[0, 0])),
    "logspace negative steps": lambda m: m.logspace(0, 1, -1),
    "logspace bool": lambda m: m.logspace(0, 1, 3, dtype=m.bool),
    "logspace one step overflows": lambda m: m.logspace(2.4, 0, 1, base=-2.0, dtype=m.int32),
    "logspace start overflows": lambda m: m.logspace(-2.0, 1, 3, base=2.0, dtype=m.uint8),
    "addmv int nan beta": lambda m: m.addmv(T(m, IVEC[:3]), T(m, INTS[:3]), T(m, IVEC),
                                            beta=float("nan")),
    "addr int float beta": lambda m: m.addr(T(m, INTS), T(m, IVEC[:3]), T(m, IVEC),
                                            beta=0.5),
    "addr int float alpha": lambda m: m.addr(T(m, INTS), T(m, IVEC[:3]), T(m, IVEC),
                                             alpha=1.5),
    "addr bool float beta": lambda m: m.addr(T(m, INTS > 0), T(m, IVEC[:3] > 0),
                                             T(m, IVEC > 0), beta=0.5),
    "addr float bool beta": lambda m: m.addr(T(m, M[:3, :4]), T(m, M[0, :3]), T(m, M[1, :4]),
                                             beta=True),
    "tensor_split float tensor": lambda m: m.tensor_split(T(m, M), m.tensor(2.0)),
    "tensor_split 2-d tensor": lambda m: m.tensor_split(T(m, M), m.tensor([[1, 2]])),
    "vander bool": lambda m: m.linalg.vander(T(m, M[0] > 0)),
    "vander bfloat16": lambda m: m.linalg.vander(T(m, M[0], "bfloat16")),
    "vander N 1": lambda m: m.linalg.vander(T(m, M[0]), N=1),
    "cov 3-d": lambda m: m.cov(T(m, BATCH)),
    "corrcoef 3-d": lambda m: m.corrcoef(T(m, BATCH)),
    "histogram int input": lambda m: m.histogram(T(m, INTS)),
    "histogram nan range": lambda m: m.histogram(T(m, np.array([0.5, np.nan])), 3),
    "histogram inf range": lambda m: m.histogram(T(m, M[0]), 3, range=(0.0, np.inf)),
    "histogram range order": lambda m: m.histogram(T(m, M[0]), 3, range=(2.0, 1.0)),
    "histogram no bins": lambda m: m.histogram(T(m, M[0]), 0),
    "histogram edges dtype": lambda m: m.histogram(T(m, M[0], "float32"), T(m, EDGES)),
    "histogram edges 2-d": lambda m: m.histogram(T(m, M[0]), T(m, EDGES.reshape(1, 5))),
    "histogram weight dtype": lambda m: m.histogram(T(m, M[0]), 3,
                                                    weight=T(m, M[1], "float32")),
    "histogram weight size": lambda m: m.histogram(T(m, M[0]), 3, weight=T(m, M[1, :3])),
    "histogramdd weight shape": lambda m: m.histogramdd(T(m, BATCH), 2,
                                                        weight=T(m, BATCH[0, :, 0])),
    "histogramdd empty edges": lambda m: m.histogramdd(T(m, M[:, :2]),
                                                       [T(m, EDGES), T(m, EDGES[:0])]),
    "histogramdd range length": lambda m: m.histogramdd(T(m, M[:, :2]), 2, range=[0.0, 1.0]),
    "lstsq driver": lambda m: m.linalg.lstsq(T(m, TALL), T(m, RHS), driver="gelsx"),
    "lstsq dtypes": lambda m: m.linalg.lstsq(T(m, TALL, "float32"), T(m, RHS)),
    "lstsq 1-d input": lambda m: m.linalg.lstsq(T(m, TALL[0]), T(m, RHS[0])),
    "lstsq rows": lambda m: m.linalg.lstsq(T(m, TALL), T(m, RHS[:3])),
    "lstsq vector rows": lambda m: m.linalg.lstsq(T(m, TALL), T(m, RHS[:3, 0])),
    "lstsq batched input, 2-d other": lambda m: m.linalg.lstsq(T(m, BATCH), T(m, RHS)),
    "lstsq ints": lambda m: m.linalg.lstsq(T(m, INTS), T(m, INTS)),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_match_torch(case):
    with pytest.raises(Exception) as want:
        ERROR_CASES[case](torch)
    with pytest.raises(type(want.value)) as got:
        ERROR_CASES[case](retorch)
    first = str(want.value).split("\n")[0]
    assert str(got.value).split("\n")[0] == first, case
