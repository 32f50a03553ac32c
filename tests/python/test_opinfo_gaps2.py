"""Against torch 1.13 where its OpInfo samples found differences: segment_reduce along any axis
with N-D lengths/offsets, degenerate results that stay in the graph (combinations, pdist,
householder_product, matrix_power), cov's float32 weight sums, bfloat16 bilinear and
matrix_exp, grid_sample's nearest-mode grid gradient and grid_sampler_3d."""
import warnings

import numpy as np
import pytest
import torch

import retorch
from oracle import assert_close, assert_matches, round_to

RNG = np.random.RandomState(11)


def T(m, a, dtype=None):
    t = m.from_numpy(np.array(a, order="C"))  # a copy; 0-d stays 0-d
    return t if dtype is None else t.to(getattr(m, dtype))


def _both(fn, *arrays, dtype=None, **kw):
    """fn(module, *tensors) for torch and retorch."""
    return [fn(m, *[T(m, a, dtype) for a in arrays], **kw) for m in (torch, retorch)]


def _grads(fn, arrays, seed=0):
    """The outputs of fn(module, *float64 leaves) and the leaves' gradients of a random-weighted
    sum of them (None for an unused leaf), for torch then retorch."""
    out = []
    for m in (torch, retorch):
        xs = [T(m, a).requires_grad_(True) for a in arrays]
        y = fn(m, *xs)
        rng = np.random.RandomState(seed)
        w = T(m, rng.randn(*y.shape))
        grads = m.autograd.grad((y * w).sum(), xs, allow_unused=True) if y.requires_grad \
            else [None] * len(xs)
        out.append((y, list(grads)))
    return out


def _assert_same_grads(fn, arrays, what, seed=0):
    (ty, tg), (ry, rg) = _grads(fn, arrays, seed)
    assert ry.requires_grad == ty.requires_grad, what
    assert_close(ry, ty, what)
    for i, (r, t) in enumerate(zip(rg, tg)):  # None and zeros are the same gradient
        t = torch.zeros(arrays[i].shape, dtype=torch.float64) if t is None else t
        r = retorch.zeros(*arrays[i].shape, dtype=retorch.float64) if r is None else r
        assert_close(r, t, f"{what}: grad {i}", rtol=1e-6, atol=1e-8)


def _raises_like(fn):
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(Exception) as got:
        fn(retorch)
    assert type(got.value) is type(want.value), (got.value, want.value)


# ---------------------------------------------------------------- segment_reduce

# Halves and repeats: ties for max/min, zeros for prod.
DATA3 = np.round(RNG.uniform(-2, 2, (2, 6, 3)) * 2) / 2
DATA1 = np.round(RNG.uniform(-2, 2, (6, 2)) * 2) / 2
DATA_LAST = np.round(RNG.uniform(-2, 2, (2, 3, 5)) * 2) / 2
DATA_NAN = DATA1.copy()
DATA_NAN[[1, 4], [0, 1]] = np.nan
LENGTHS = {  # (data, axis, lengths): rows of their own segments, empty ones among them
    "axis0": (DATA1, 0, [2, 0, 3, 1]),
    "axis1": (DATA3, 1, [[2, 0, 3, 1], [1, 4, 0, 1]]),
    "axis1 shared": (DATA3, 1, [[3, 3], [3, 3]]),
    "axis-1": (DATA_LAST, -1, [[[2, 3], [5, 0], [1, 4]], [[0, 5], [4, 1], [3, 2]]]),
    "nan": (DATA_NAN, 0, [2, 4]),
}
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def _offsets(lengths):
    a = np.asarray(lengths)
    return np.concatenate([np.zeros(a.shape[:-1] + (1,), np.int64), np.cumsum(a, -1)], -1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("initial", [None, 1.5])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("case", sorted(LENGTHS))
def test_segment_reduce_values(case, reduce, initial, dtype):
    data, axis, lengths = LENGTHS[case]
    for kind, seg in (("lengths", np.array(lengths)), ("offsets", _offsets(lengths))):
        want, got = (m.segment_reduce(T(m, data, dtype), reduce, axis=axis, initial=initial,
                                      **{kind: T(m, seg)}) for m in (torch, retorch))
        alt = lambda: torch.segment_reduce(T(torch, data), reduce, axis=axis,  # noqa: E731
                                           initial=initial, **{kind: T(torch, seg)})
        assert_matches(got, want, alt, f"{case} {kind}")


def test_segment_reduce_offsets_win_and_may_skip_data():
    # offsets that start late and end early; both given: torch takes the offsets
    for m_kw in ({"offsets": [1, 3, 4]}, {"lengths": [3, 3], "offsets": [0, 2, 6]}):
        want, got = (m.segment_reduce(T(m, DATA1), "sum", **{k: T(m, np.array(v))
                                                             for k, v in m_kw.items()})
                     for m in (torch, retorch))
        assert_close(got, want, str(m_kw))


def test_segment_reduce_unsafe_lengths_short_of_the_data():
    want, got = _both(lambda m, d: m.segment_reduce(d, "max", lengths=m.tensor([2, 1]),
                                                    unsafe=True), DATA1)
    assert_close(got, want)


GRAD_CASES = [(c, r, i) for c in sorted(LENGTHS) if c != "nan" for r in REDUCTIONS
              for i in (None, 0.0, 1.0)]


@pytest.mark.parametrize("case,reduce,initial", GRAD_CASES)
def test_segment_reduce_gradients(case, reduce, initial):
    # max/min: ties share a positive gradient, a negative one goes whole to each (torch's
    # kernel); an initial bound that wins gives no element a gradient. prod: zeros included.
    data, axis, lengths = LENGTHS[case]
    for kind, seg in (("lengths", np.array(lengths)), ("offsets", _offsets(lengths))):
        def fn(m, d):
            return m.segment_reduce(d, reduce, axis=axis, initial=initial, **{kind: T(m, seg)})
        _assert_same_grads(fn, [data], f"{case} {kind} {reduce} {initial}")


def test_segment_reduce_gradients_with_nan():
    for reduce in ("max", "min", "prod", "sum"):
        _assert_same_grads(lambda m, d: m.segment_reduce(d, reduce, lengths=m.tensor([2, 4])),
                           [DATA_NAN], reduce)


SEGMENT_ERRORS = {
    "axis not the last of lengths": lambda m: m.segment_reduce(
        T(m, DATA3), "sum", lengths=T(m, np.array(LENGTHS["axis1"][2])), axis=0),
    "axis out of range": lambda m: m.segment_reduce(T(m, DATA1), "sum",
                                                    lengths=m.tensor([6]), axis=2),
    "empty data": lambda m: m.segment_reduce(m.zeros(0), "sum", lengths=m.tensor([0])),
    "indices": lambda m: m.segment_reduce(T(m, DATA1), "sum", indices=m.tensor([0])),
    "no lengths": lambda m: m.segment_reduce(T(m, DATA1), "sum"),
    "bad reduce": lambda m: m.segment_reduce(T(m, DATA1), "any", lengths=m.tensor([6])),
    "lengths of more dims": lambda m: m.segment_reduce(m.ones(3), "sum",
                                                       lengths=m.tensor([[3]])),
    "negative length": lambda m: m.segment_reduce(T(m, DATA1), "sum", lengths=m.tensor([-1, 7])),
    "negative unsafe": lambda m: m.segment_reduce(T(m, DATA1), "sum", lengths=m.tensor([-1, 7]),
                                                  unsafe=True),
    "wrong total": lambda m: m.segment_reduce(T(m, DATA3), "sum", axis=1,
                                              lengths=m.tensor([[3, 3], [3, 2]])),
    "float lengths": lambda m: m.segment_reduce(T(m, DATA1), "sum", lengths=m.tensor([6.0])),
    "int16 offsets": lambda m: m.segment_reduce(T(m, DATA1), "sum",
                                                offsets=m.tensor([0, 6]).to(m.int16)),
    "int data": lambda m: m.segment_reduce(m.ones(3, dtype=m.int64), "sum",
                                           lengths=m.tensor([3])),
    "empty lengths": lambda m: m.segment_reduce(T(m, DATA1), "sum", lengths=m.tensor([]).long()),
    "decreasing offsets": lambda m: m.segment_reduce(T(m, DATA1), "sum",
                                                     offsets=m.tensor([0, 4, 2])),
    "empty offsets": lambda m: m.segment_reduce(T(m, DATA1), "sum", offsets=m.tensor([]).long()),
}


@pytest.mark.parametrize("case", sorted(SEGMENT_ERRORS))
def test_segment_reduce_errors(case):
    _raises_like(SEGMENT_ERRORS[case])


# ---------------------------------------------------------------- degenerate results in the graph

DEGENERATE = {
    "combinations r2 of one": (lambda m, x: m.combinations(x, 2), [np.array([0.5])]),
    "combinations r4 of one": (lambda m, x: m.combinations(x, 4), [np.array([0.5])]),
    "combinations of none": (lambda m, x: m.combinations(x, 2), [np.zeros(0)]),
    "combinations r0": (lambda m, x: m.combinations(x, 0), [np.array([0.5, 1.0])]),
    "combinations replacement": (lambda m, x: m.combinations(x, 3, with_replacement=True),
                                 [np.array([0.5])]),
    "pdist 1x1": (lambda m, x: m.nn.functional.pdist(x), [np.array([[0.5]])]),
    "pdist 1x5": (lambda m, x: m.nn.functional.pdist(x), [RNG.randn(1, 5)]),
    "pdist 2x0": (lambda m, x: m.nn.functional.pdist(x), [np.zeros((2, 0))]),
    "householder empty": (lambda m, a, t: m.linalg.householder_product(a, t),
                          [np.zeros((0, 0)), np.zeros(0)]),
    "householder no reflectors": (lambda m, a, t: m.linalg.householder_product(a, t),
                                  [RNG.randn(5, 5), np.zeros(0)]),
    "householder batched": (lambda m, a, t: m.linalg.householder_product(a, t),
                            [RNG.randn(2, 4, 3), np.zeros((2, 0))]),
    "matrix_power 0": (lambda m, x: m.linalg.matrix_power(x, 0), [np.array([[2.0]])]),
    "matrix_power 0 batched": (lambda m, x: m.linalg.matrix_power(x, 0), [RNG.randn(2, 3, 3)]),
    "matrix_power 0 nan": (lambda m, x: m.linalg.matrix_power(x, 0),
                           [np.array([[np.nan, 1.0], [np.inf, 0.0]])]),
}


@pytest.mark.parametrize("case", sorted(DEGENERATE))
def test_degenerate_results_stay_in_the_graph(case):
    fn, arrays = DEGENERATE[case]
    _assert_same_grads(fn, arrays, case)


def test_householder_tau_alone_requires_grad():
    for m in (torch, retorch):
        t = m.zeros(2, 0, dtype=m.float64, requires_grad=True)
        assert m.linalg.householder_product(T(m, RNG.randn(2, 4, 3)), t).requires_grad


# ---------------------------------------------------------------- cov

COV_X = RNG.randn(3, 2) * 4
COV_X3 = RNG.randn(2, 3) * 4
AW2 = RNG.uniform(0.1, 1.0, 2)
AW3 = RNG.uniform(0.1, 1.0, 3)
AW_DYADIC = np.array([0.25, 0.5, 0.75])  # exact sums: only the divisions round
COV_CASES = {
    # float32 aweights: torch sums them (and w * aweights) and divides in float32 even for
    # float64 input. Two observations, or dyadic weights: float32 sums that round the same in
    # both libraries (torch adds a few float32s in sequence, retorch rounds the exact sum once).
    "f32 aweights c1": lambda m: m.cov(T(m, COV_X), correction=1, aweights=T(m, AW2, "float32")),
    "f32 aweights c0": lambda m: m.cov(T(m, COV_X), correction=0, aweights=T(m, AW2, "float32")),
    "f32 dyadic aweights c2": lambda m: m.cov(T(m, COV_X3), correction=2,
                                              aweights=T(m, AW_DYADIC, "float32")),
    "f64 aweights c2": lambda m: m.cov(T(m, COV_X3), correction=2, aweights=T(m, AW3)),
    "fweights and aweights": lambda m: m.cov(T(m, COV_X3), fweights=m.tensor([1, 3, 2]),
                                             aweights=T(m, AW3, "float32")),
    "fweights only": lambda m: m.cov(T(m, COV_X3), correction=3, fweights=m.tensor([1, 3, 2])),
    "float32 input f64 aweights": lambda m: m.cov(T(m, COV_X3, "float32"), aweights=T(m, AW3)),
}


@pytest.mark.parametrize("case", sorted(COV_CASES))
def test_cov_values(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = COV_CASES[case](torch), COV_CASES[case](retorch)
    assert_close(got, want, case)


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_gradients(correction):
    _assert_same_grads(lambda m, x, w: m.cov(x, correction=correction, aweights=w.abs()),
                       [COV_X3, AW3], f"correction {correction}")


def test_cov_warns_when_no_degrees_of_freedom_are_left():
    for m in (torch, retorch):
        with pytest.warns(UserWarning, match="degrees of freedom"):
            m.cov(T(m, COV_X3), correction=5, aweights=T(m, np.ones(3)))


COV_ERRORS = {
    "bool input": lambda m: m.cov(m.ones(2, 3, dtype=m.bool)),
    "weights sum to zero": lambda m: m.cov(T(m, COV_X3), aweights=m.zeros(3, dtype=m.float64)),
    "negative fweights": lambda m: m.cov(T(m, COV_X3), fweights=m.tensor([1, -1, 2])),
    "float fweights": lambda m: m.cov(T(m, COV_X3), fweights=m.tensor([1.0, 1, 2])),
    "int aweights": lambda m: m.cov(T(m, COV_X3), aweights=m.tensor([1, 1, 2])),
    "negative aweights": lambda m: m.cov(T(m, COV_X3), aweights=m.tensor([1.0, -1, 2])),
    "aweights length": lambda m: m.cov(T(m, COV_X3), aweights=m.tensor([1.0, 2])),
    "aweights 2-d": lambda m: m.cov(T(m, COV_X3), aweights=m.ones(1, 3)),
    "fweights 2-d": lambda m: m.cov(T(m, COV_X3), fweights=m.ones(1, 3, dtype=m.int64)),
}


@pytest.mark.parametrize("case", sorted(COV_ERRORS))
def test_cov_errors(case):
    _raises_like(COV_ERRORS[case])


# ---------------------------------------------------------------- bfloat16 bilinear, matrix_exp

BILINEAR = {
    "8x8": ([8, 8], [8, 8], [8, 8, 8], None),
    "batched bias": ([2, 3, 8], [2, 3, 8], [8, 8, 8], [8]),
    "rectangular": ([8, 3], [8, 4], [5, 3, 4], None),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64"])
@pytest.mark.parametrize("case", sorted(BILINEAR))
def test_bilinear_matches_torch_or_its_exact_result(case, dtype):
    # torch's bfloat16 _trilinear rounds both partial contractions; retorch rounds once, so it
    # matches torch's float64 result rounded to bfloat16.
    # OpInfo's range, in values bfloat16 holds: every dtype sees the same numbers
    arrays = [round_to(RNG.uniform(-9, 9, s), "bfloat16").astype(np.float64) if s else None
              for s in BILINEAR[case]]

    def call(m, dt):
        ts = [None if a is None else T(m, a, dt) for a in arrays]
        return m.nn.functional.bilinear(*ts)
    if dtype == "float32":  # sums of 64 products up to 81 that may cancel: the harness's tolerance
        assert_close(call(retorch, dtype), call(torch, dtype), case, rtol=1e-4, atol=1e-3)
        return
    assert_matches(call(retorch, dtype), call(torch, dtype),
                   lambda: call(torch, "float64").to(getattr(torch, dtype)), case)


def test_bilinear_gradients():
    _assert_same_grads(lambda m, a, b, w, c: m.nn.functional.bilinear(a, b, w, c),
                       [RNG.randn(2, 3, 4), RNG.randn(2, 3, 5), RNG.randn(6, 4, 5), RNG.randn(6)],
                       "bilinear")


def test_matrix_exp_bfloat16_is_finite_where_torchs_is_not():
    a = np.round(RNG.uniform(-9, 9, (5, 5, 5)))
    got = retorch.matrix_exp(T(retorch, a, "bfloat16"))
    exact = torch.matrix_exp(T(torch, a)).to(torch.bfloat16)
    assert_close(got, exact, "vs torch in float64")
    # torch 1.13's own bfloat16 kernel: NaN (or inf) even for a matrix of 1-norm 0.01
    small = torch.tensor([[0.004, -0.003, 0.002], [0.001, 0.005, -0.002], [0.0, 0.001, 0.003]])
    assert not torch.matrix_exp(small.bfloat16()).isfinite().all()
    assert_close(retorch.matrix_exp(T(retorch, small.numpy(), "bfloat16")),
                 torch.matrix_exp(small).bfloat16(), "small")


def test_matrix_exp_bfloat16_gradient_flows():
    x = T(retorch, RNG.randn(3, 3) * 0.3, "bfloat16").requires_grad_(True)
    retorch.matrix_exp(x).sum().backward()
    assert x.grad.dtype == retorch.bfloat16 and bool(x.grad.isfinite().all())


# ---------------------------------------------------------------- grid sampling

def _grid_case(dims, mode, padding, align):
    x = RNG.randn(*([2, 3] + [4, 5, 3][:dims]))
    g = RNG.uniform(-1.2, 1.2, [2] + [3, 2, 2][:dims] + [dims])

    def fn(m, a, b):
        return m.nn.functional.grid_sample(a, b, mode=mode, padding_mode=padding,
                                           align_corners=align)
    return fn, [x, g]


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("dims", [2, 3])
def test_grid_sample_nearest_gives_the_grid_a_zero_gradient(dims, padding, align):
    fn, arrays = _grid_case(dims, "nearest", padding, align)
    (ty, tg), (ry, rg) = _grads(fn, arrays)
    assert rg[1] is not None and tg[1] is not None
    assert not bool(rg[1].abs().sum())
    _assert_same_grads(fn, arrays, f"{dims}-d {padding}")


SAMPLER_3D = [(i, p, a) for i in (0, 1) for p in (0, 1, 2) for a in (False, True)]


@pytest.mark.parametrize("interp,pad,align", SAMPLER_3D)
def test_grid_sampler_3d_matches_torch(interp, pad, align):
    x = RNG.randn(2, 3, 4, 5, 3)
    g = RNG.uniform(-1.2, 1.2, (2, 3, 2, 2, 3))
    _assert_same_grads(lambda m, a, b: m.grid_sampler_3d(a, b, interp, pad, align), [x, g],
                       f"{interp} {pad} {align}")
    _assert_same_grads(lambda m, a, b: m.grid_sampler(a, b, interp, pad, align), [x, g],
                       f"grid_sampler {interp} {pad} {align}")


SAMPLER_3D_ERRORS = {
    "bicubic": lambda m: m.grid_sampler_3d(m.zeros(1, 1, 2, 2, 2), m.zeros(1, 2, 2, 2, 3), 2, 0,
                                           False),
    "4-d input": lambda m: m.grid_sampler_3d(m.zeros(1, 1, 2, 2), m.zeros(1, 2, 2, 2), 0, 0,
                                             False),
    "align None": lambda m: m.grid_sampler_3d(m.zeros(1, 1, 2, 2, 2), m.zeros(1, 2, 2, 2, 3), 0,
                                              0, None),
    "batch": lambda m: m.grid_sampler_3d(m.zeros(2, 1, 2, 2, 2), m.zeros(1, 2, 2, 2, 3), 0, 0,
                                         False),
    "dtype": lambda m: m.grid_sampler_3d(m.zeros(1, 1, 2, 2, 2),
                                         m.zeros(1, 2, 2, 2, 3, dtype=m.float64), 0, 0, False),
}


@pytest.mark.parametrize("case", sorted(SAMPLER_3D_ERRORS))
def test_grid_sampler_3d_errors(case):
    _raises_like(SAMPLER_3D_ERRORS[case])
