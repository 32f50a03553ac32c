"""Oracle tests for activations and their backward ops, pointwise misc ops and sums (special
functions: test_ops_special.py; the float16/bfloat16 audit: test_ops_half.py)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import retorch
from custom_helpers import I, P, aten, both, gradcheck, gradgradcheck, grads, raises_like_torch
from oracle import DTYPES, FLOATS, pair_from_values

# test name -> the ops.yaml entries it covers (checked by test_op_coverage.py).
CUSTOM = {
    "test_activation": ["hardtanh", "relu6", "hardswish", "hardsigmoid", "mish", "elu", "selu",
                        "celu", "leaky_relu", "softsign", "tanhshrink", "threshold", "logsigmoid",
                        "hardshrink", "softshrink", "glu", "softmin", "prelu", "rrelu"],
    "test_activation_gradgradcheck": ["hardtanh", "relu6", "hardswish", "hardsigmoid", "mish",
                                      "elu", "selu", "celu", "leaky_relu", "softsign",
                                      "tanhshrink", "threshold", "logsigmoid", "hardshrink",
                                      "softshrink", "glu", "softmin", "prelu", "rrelu"],
    "test_activation_errors": ["hardtanh", "glu", "prelu", "celu", "softshrink", "rrelu",
                               "leaky_relu", "threshold"],
    "test_prelu": ["prelu"],
    "test_rrelu_training": ["rrelu"],
    "test_isclose_allclose": ["isclose", "allclose"],
    "test_histc": ["histc"],
    "test_bincount": ["bincount"],
    "test_clamp_tensor": ["clamp.Tensor"],
    "test_clamp_min_max": ["clamp_min", "clamp_min_", "clamp_min.Tensor", "clamp_min_.Tensor",
                           "clamp_max", "clamp_max_", "clamp_max.Tensor", "clamp_max_.Tensor"],
    "test_where_scalar": ["where.Scalar"],
    "test_where_condition": ["where"],
    "test_threshold_backward": ["threshold_backward"],
    "test_activation_backward_ops": ["sigmoid_backward", "tanh_backward", "silu_backward",
                                     "gelu_backward", "hardtanh_backward", "hardswish_backward",
                                     "hardsigmoid_backward", "leaky_relu_backward",
                                     "log_sigmoid_backward", "logsigmoid", "elu_backward",
                                     "elu", "selu", "celu"],
    "test_log_sigmoid_forward": ["log_sigmoid_forward"],
    "test_softmax_backward_ops": ["_softmax_backward_data", "_log_softmax_backward_data"],
    "test_signbit": ["signbit"],
    "test_sum_mean_dtype": ["sum", "sum.dim_IntList", "mean", "mean.dim"],
}

LAYOUTS = ("contig", "transposed", "sliced")


def is_torch(L):
    """True for torch (and for custom_helpers' float32 stand-in for torch)."""
    return getattr(L, "__name__", "") == "torch"


# ---------------------------------------------------------------- activations

# name -> (kwargs variants, has an in-place form, dtypes torch accepts besides floats)
ACTIVATIONS = {
    "hardtanh": ([{}, {"min_val": -0.5, "max_val": 2.0}, {"min_val": 0.2, "max_val": 0.1}],
                 True, ["int64", "int32", "uint8", "int8"]),
    "relu6": ([{}], True, ["int64", "int16"]),
    "hardswish": ([{}], True, []),
    "hardsigmoid": ([{}], True, []),
    "mish": ([{}], True, []),
    "elu": ([{}, {"alpha": 0.5}, {"alpha": 2.0}], True, []),
    "selu": ([{}], True, []),
    "celu": ([{}, {"alpha": 0.7}, {"alpha": 2.5}], True, []),
    "leaky_relu": ([{}, {"negative_slope": 0.2}, {"negative_slope": -1.5}], True, []),
    "softsign": ([{}], False, ["int64", "int32"]),
    "tanhshrink": ([{}], False, ["int64", "uint8"]),
    "threshold": ([{"threshold": 0.5, "value": -3.0}, {"threshold": -1, "value": 2}], True,
                  ["int64", "int32", "uint8"]),
    "logsigmoid": ([{}], False, []),
    "hardshrink": ([{}, {"lambd": 1.2}], False, []),
    "softshrink": ([{}, {"lambd": 1.2}, {"lambd": 0.0}], False, []),
    "glu": ([{}, {"dim": 0}], False, []),
    "softmin": ([{"dim": 1}, {"dim": 0}, {"dim": -1, "dtype": "float64"}], False, []),
    "rrelu": ([{}, {"lower": 0.1, "upper": 0.6}], True, []),
}

# elu's scale and input_scale are aten-only (torch._C._nn.elu); compared separately.
ELU_ATEN = [{"alpha": 1.0, "scale": 2.0, "input_scale": 0.5}, {"alpha": 0.3, "scale": 0.7,
                                                               "input_scale": 3.0}]


def act(L, name, inplace=False):
    """The activation as torch.nn.functional has it (inplace=True flag) or retorch's name_."""
    if is_torch(L):
        fn = getattr(F, name)
        if inplace:
            return lambda x, **kw: fn(x, inplace=True, **kw)
        return fn
    return getattr(L, name + "_" if inplace else name)


def test_inplace_composite_activations_differentiate(rng):
    """relu6_, selu_ and celu_ run the in-place kernels they are built on (inplace_composite):
    gradients through a non-leaf input as torch's."""
    for name, kw in (("relu6", {}), ("selu", {}), ("celu", {"alpha": 0.7})):
        grads(lambda L, x: act(L, name, True)(x * 1.5, **kw) * 2, P(rng, (3, 4), special=False),
              what=name)


def lkw(L, kw):
    return {k: (getattr(L, v) if k == "dtype" else v) for k, v in kw.items()}


def shape_for(name, shape):
    # glu halves a dimension; give it even sizes
    return tuple(2 * s for s in shape) if name == "glu" else shape


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(rng, name):
    kws, has_inplace, int_dtypes = ACTIVATIONS[name]
    for kw in kws:
        for dt in FLOATS:
            for lay in LAYOUTS:
                x = P(rng, shape_for(name, (3, 4)), dt, lay)
                both(lambda L, x: act(L, name)(x, **lkw(L, kw)), x, what=f"{name} {dt} {lay}")
                if has_inplace:
                    both(lambda L, x: act(L, name, True)(x.clone(), **lkw(L, kw)), x,
                         what=f"{name}_ {dt}")
            both(lambda L, x: act(L, name)(x, **lkw(L, kw)),
                 P(rng, shape_for(name, (4, 6)), dt, special=True), what="specials")
            if name not in ("glu", "softmin"):
                both(lambda L, x: act(L, name)(x, **lkw(L, kw)), P(rng, (), dt), what="0-dim")
            both(lambda L, x: act(L, name)(x, **lkw(L, kw)), P(rng, (0, 4), dt), what="empty")
        for dt in ["int64", "bool"] + int_dtypes:
            if name == "softmin" and "dtype" in kw:
                continue
            both(lambda L, x: act(L, name)(x, **lkw(L, kw)), P(rng, shape_for(name, (2, 3)), dt),
                 what=f"{name} {dt}")
        if name == "rrelu":
            continue  # the in-place/out forms below are deterministic only in eval mode
        for lay in ("contig", "transposed"):
            x = P(rng, shape_for(name, (3, 4)), "float32", lay)
            grads(lambda L, x: act(L, name)(x, **lkw(L, kw)), x, what=f"{name} grad")
            # torch refuses the backward of in-place leaky_relu with a negative slope
            if has_inplace and kw.get("negative_slope", 0) >= 0:
                grads(lambda L, x: act(L, name, True)(x * 1, **lkw(L, kw)), x,
                      what=f"{name}_ grad on a non-leaf")
        gradcheck(lambda L, x: act(L, name)(x, **lkw(L, kw)),
                  P(rng, shape_for(name, (2, 3)), "float64", domain="nonzero"))
    if name == "elu":
        for kw in ELU_ATEN:
            for dt in FLOATS:
                x = P(rng, (3, 4), dt, "transposed")
                both(lambda L, x: (torch._C._nn.elu if is_torch(L) else L.elu)(x, **kw), x)
            grads(lambda L, x: (torch._C._nn.elu if is_torch(L) else L.elu)(x, **kw),
                  P(rng, (3, 4)))
    if name == "rrelu":
        for kw in kws:
            grads(lambda L, x: act(L, name)(x, **kw), P(rng, (3, 4)), what="eval-mode grad")


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "hardswish", "hardsigmoid", "leaky_relu",
                                  "logsigmoid", "mish", "elu", "selu", "celu"])
def test_activation_kernels_on_long_rows(rng, name):
    # The one-pass kernels' vector loops and tails, with NaN/inf/zeros/bounds inside, and their
    # gradients there (where each kernel's derivative formula decides the edges).
    kws, has_inplace, _ = ACTIVATIONS[name]
    for kw in kws:
        for dt in FLOATS:
            x = P(rng, (67, 33), dt, special=True)
            both(lambda L, x: act(L, name)(x, **lkw(L, kw)), x, what=f"{name} {dt} {kw}")
            if has_inplace:
                both(lambda L, x: act(L, name, True)(x.clone(), **lkw(L, kw)), x,
                     what=f"{name}_")
        # 64 elements: all inside torch's vector loop, whose edge rules ours follow.
        edges = I([-3.0, 3.0, -1.0, 1.0, 0.0, -0.0, 6.0, -0.5, 2.0, 0.2, 0.1] * 5 +
                  [float("nan"), float("inf"), -float("inf"), 0.7] + [0.3] * 5, "float32")
        for x in (P(rng, (67, 33), "float32", special=True), edges):
            grads(lambda L, x: act(L, name)(x, **lkw(L, kw)), x, what=f"{name} grad {kw}")


def test_softplus_vector_path_on_long_rows(rng):
    # The chunked vector exp/log1p path: chunk edges, the threshold switch, specials, in place.
    for dt in FLOATS:
        x = P(rng, (9, 131), dt, special=True)
        for beta, threshold in ((1, 20), (2, 1), (0.5, 3), (-1, 20)):
            both(lambda L, x: L.nn.functional.softplus(x, beta, threshold), x,
                 what=f"softplus {dt} {beta} {threshold}")
        both(lambda L, x: L.nn.functional.softplus(x[:, ::2], 1, 20), x, what="strided")
    grads(lambda L, x: L.nn.functional.softplus(x, 2, 1), P(rng, (9, 131), "float32"))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradgradcheck(rng, name):
    kws, _, _ = ACTIVATIONS[name]
    for kw in kws:
        x = P(rng, shape_for(name, (2, 3)), "float64", domain="nonzero")
        gradgradcheck(lambda L, x: act(L, name)(x, **lkw(L, kw)), x)
    if name == "elu":
        for kw in ELU_ATEN:
            gradgradcheck(lambda L, x: L.elu(x, **kw), P(rng, (2, 3), "float64", domain="nonzero"))
    if name == "rrelu":
        # training mode: the slopes are constants, so the second derivative is 0 (checked
        # numerically with the same generator state for every evaluation)
        x = P(rng, (2, 3), "float64", domain="nonzero")

        def f(L, x):
            return L.rrelu(x, training=True, generator=L.Generator().manual_seed(3))
        gradgradcheck(f, x)
        gradcheck(f, x)


def test_activation_errors(rng):
    x = P(rng, (3, 5))
    both(lambda L, x: F.glu(x) if is_torch(L) else L.glu(x), x, what="glu odd dim")
    both(lambda L, x: F.glu(x, 3) if is_torch(L) else L.glu(x, 3), x, what="glu bad dim")
    both(lambda L, x: F.glu(x) if is_torch(L) else L.glu(x), P(rng, ()), what="glu scalar")
    both(lambda L, x: F.hardtanh(x) if is_torch(L) else L.hardtanh(x), P(rng, (3,), "bool"))
    both(lambda L, x: F.threshold(x, 0, 1) if is_torch(L) else L.threshold(x, 0, 1),
         P(rng, (3,), "bool"))
    for dt, th, v in [("uint8", -1, 2), ("uint8", 1.5, 7), ("uint8", 300, 7), ("uint8", 1, -3),
                      ("int8", -1.5, 7), ("int8", 200, 7), ("int8", 0, 200), ("int64", 2.5, -1)]:
        both(lambda L, x: F.threshold(x, th, v) if is_torch(L) else L.threshold(x, th, v),
             I([0, 1, 2, 3, 100, 127], dt), what=f"threshold {dt} {th} {v}")
    both(lambda L, x: F.celu(x, 0.0) if is_torch(L) else L.celu(x, 0.0), x, what="celu alpha 0")
    both(lambda L, x: F.softshrink(x, -1.0) if is_torch(L) else L.softshrink(x, -1.0), x,
         what="softshrink negative lambda")
    both(lambda L, x: F.rrelu(x, 0.5, 0.1) if is_torch(L) else L.rrelu(x, 0.5, 0.1), x,
         what="rrelu lower > upper")
    both(lambda L, x: F.leaky_relu(x) if is_torch(L) else L.leaky_relu(x), P(rng, (3,), "int64"))
    both(lambda L, x: F.leaky_relu(x, inplace=True) if is_torch(L) else L.leaky_relu_(x),
         P(rng, (3,), "int32"), what="int in-place")
    with pytest.raises(RuntimeError, match="glu"):
        retorch.glu(retorch.ones(3, 5))
    with pytest.raises(RuntimeError, match=r"\[3, 5\]|3, 5"):
        retorch.glu(retorch.ones(3, 5))
    # in-place on a leaf that requires grad is refused, like torch
    raises_like_torch(lambda L, x: act(L, "elu", True)(x.requires_grad_(True)),
                      P(rng, (3,)), what="in-place on a leaf")


def test_prelu(rng):
    for dt in FLOATS:
        for shape, wshape in [((2, 3, 4), (3,)), ((2, 3), (3,)), ((2, 3, 4, 5), (1,)),
                              ((4,), (1,)), ((), (1,)), ((2, 3, 4), ()), ((0, 3), (3,))]:
            x = P(rng, shape, dt)
            w = P(rng, wshape, dt)
            both(lambda L, x, w: L.prelu(x, w), x, w, what=f"prelu {shape} {wshape} {dt}")
            both(lambda L, x, w: x.prelu(w), x, w)
    x = P(rng, (2, 3, 4), layout="transposed")
    for wshape in [(3,), (1,), ()]:
        grads(lambda L, x, w: L.prelu(x, w), x, P(rng, wshape))
        gradcheck(lambda L, x, w: L.prelu(x, w), P(rng, (2, 3, 2), "float64", domain="nonzero"),
                  P(rng, wshape, "float64"))
        gradgradcheck(lambda L, x, w: L.prelu(x, w),
                      P(rng, (2, 3, 2), "float64", domain="nonzero"), P(rng, wshape, "float64"))
    both(lambda L, x, w: L.prelu(x, w), P(rng, (2, 3)), P(rng, (4,)), what="channel mismatch")
    both(lambda L, x, w: L.prelu(x, w), P(rng, (2, 3)), P(rng, (3, 1)), what="2-d weight")
    both(lambda L, x, w: L.prelu(x, w), P(rng, (2, 3), "int64"), P(rng, (3,), "int64"),
         what="integer")


def test_rrelu_training(rng):
    lo, hi = 0.1, 0.4
    x = retorch.from_numpy(rng.uniform(-2, 2, (200, 50)))
    g = retorch.Generator().manual_seed(11)
    y = retorch.rrelu(x, lo, hi, True, generator=g)
    xs, ys = x.numpy(), y.numpy()
    pos = xs > 0
    assert np.array_equal(ys[pos], xs[pos]), "positive inputs pass unchanged"
    slopes = ys[~pos] / xs[~pos]
    assert slopes.min() >= lo and slopes.max() <= hi
    assert abs(slopes.mean() - (lo + hi) / 2) < 0.01
    assert abs(slopes.var() - (hi - lo) ** 2 / 12) < 0.002
    assert len(np.unique(slopes)) > 100, "one slope per element"
    y2 = retorch.rrelu(x, lo, hi, True, generator=retorch.Generator().manual_seed(11))
    assert np.array_equal(y2.numpy(), ys), "same seed, same slopes"
    retorch.manual_seed(5)
    a = retorch.rrelu(x, training=True).numpy()
    retorch.manual_seed(5)
    assert np.array_equal(retorch.rrelu(x, training=True).numpy(), a)
    # in-place, and gradients given the drawn slopes
    xr = x.clone().requires_grad_(True)
    out = retorch.rrelu(xr, lo, hi, True, generator=retorch.Generator().manual_seed(2))
    gout = rng.uniform(-1, 1, xs.shape)
    (gx,) = retorch.autograd.grad([out], [xr], [retorch.from_numpy(gout)])
    slope = np.where(pos, 1.0, out.detach().numpy() / np.where(pos, 1.0, xs))
    np.testing.assert_allclose(gx.numpy(), gout * slope, rtol=1e-12)
    z = x.clone()
    r = retorch.rrelu_(z, lo, hi, True, generator=retorch.Generator().manual_seed(2))
    assert np.array_equal(z.numpy(), out.detach().numpy()) and r.data_ptr() == z.data_ptr()
    for dt in ("float16", "bfloat16", "float32"):
        h = retorch.rrelu(x.to(getattr(retorch, dt)), lo, hi, True)
        assert h.dtype == getattr(retorch, dt)
    # eval mode is deterministic: the mean slope, as in torch
    both(lambda L, x: L.rrelu(x, lo, hi, False), P(rng, (3, 4)))


# ---------------------------------------------------------------- pointwise misc

@pytest.mark.filterwarnings("ignore::UserWarning")
def test_isclose_allclose(rng):
    for dt in DTYPES:
        a = P(rng, (3, 4), dt, "transposed")
        b = P(rng, (3, 4), dt)
        c = pair_close(a, dt)
        for kw in ({}, {"rtol": 0.1, "atol": 0.5}, {"rtol": 0, "atol": 0}, {"equal_nan": True},
                   {"rtol": 1e-3}, {"atol": 1.0}):
            both(lambda L, a, b: L.isclose(a, b, **kw), a, b, what=f"isclose {dt} {kw}")
            both(lambda L, a, b: a.isclose(b, **kw), a, c)
            both(lambda L, a, b: L.allclose(a, b, **kw), a, b)
            both(lambda L, a, b: a.allclose(b, **kw), a, c)
        both(lambda L, a, b: L.isclose(a, b), a, P(rng, (4,), dt), what="broadcast")
        both(lambda L, a: L.allclose(a, a), a)
        both(lambda L, a, b: L.isclose(a, b), P(rng, (0, 2), dt), P(rng, (0, 2), dt))
    for dt in FLOATS:
        s = P(rng, (4, 5), dt, special=True)
        for kw in ({}, {"equal_nan": True}, {"rtol": 0.5, "atol": 2.0}):
            both(lambda L, a: L.isclose(a, a, **kw), s)
            both(lambda L, a: L.allclose(a, a, **kw), s)
            both(lambda L, a, b: L.isclose(a, b, **kw), s, P(rng, (4, 5), dt, special=True))
    assert retorch.allclose(retorch.ones(3), retorch.ones(3)) is True
    both(lambda L, a, b: L.isclose(a, b), P(rng, (3,)), P(rng, (3,), "float64"),
         what="dtype mismatch")
    both(lambda L, a, b: L.isclose(a, b, rtol=-1.0), P(rng, (3,)), P(rng, (3,)),
         what="negative rtol")
    both(lambda L, a, b: L.allclose(a, b, atol=-1.0), P(rng, (3,)), P(rng, (3,)),
         what="negative atol")


def pair_close(a, dt):
    """A pair with values near a's (within 1e-6 relative, or equal for integers)."""
    v = np.asarray(a.values)
    if dt in FLOATS:
        v = v * (1 + 1e-6)
    return pair_from_values(v.astype(v.dtype), dt)


def test_histc(rng):
    for dt in FLOATS:
        for lay in LAYOUTS:
            x = P(rng, (5, 7), dt, lay)
            for args in [(), (4,), (10, -1, 1), (3, 0, 0), (5, -3, 3), (1, -0.5, 0.5),
                         (7, -1.75, 1.25), (100, -2, 2)]:
                both(lambda L, x: L.histc(x, *args), x, what=f"histc {dt} {args}")
                both(lambda L, x: x.histc(*args), x)
        both(lambda L, x: L.histc(x, bins=4, min=0, max=3),
             I([0.0, 1.0, 2.0, 3.0, 0.75, 1.5, 2.25, 3.5, -0.1], dt), what="edges")
        both(lambda L, x: L.histc(x, 3, -1, 1), P(rng, (4, 5), dt, special=True),
             what="nan/inf outside the range")
        both(lambda L, x: L.histc(x, 5), I([2.0, 2.0, 2.0], dt), what="constant data")
        both(lambda L, x: L.histc(x, 5), P(rng, (0,), dt), what="empty")
        both(lambda L, x: L.histc(x, 3), P(rng, (), dt), what="0-dim")
    both(lambda L, x: L.histc(x, 3), P(rng, (4,), "int64"), what="integer input")
    both(lambda L, x: L.histc(x, 3, 2, 1), P(rng, (4,)), what="min > max")
    both(lambda L, x: L.histc(x, 0), P(rng, (4,)), what="bins 0")
    both(lambda L, x: L.histc(x, -2), P(rng, (4,)), what="negative bins")
    both(lambda L, x: L.histc(x, 3), I([1.0, float("nan")], "float32"), what="nan auto range")
    both(lambda L, x: L.histc(x, 3), I([1.0, float("inf")], "float32"), what="inf auto range")
    both(lambda L, x: L.histc(x, 3, 0, float("inf")), P(rng, (4,)), what="infinite max")


def test_bincount(rng):
    for dt in ("uint8", "int8", "int16", "int32", "int64"):
        for vals in ([0, 1, 1, 3, 7, 3], [5], [0, 0, 0], [2, 9, 4, 4, 1]):
            x = I(vals, dt)
            both(lambda L, x: L.bincount(x), x, what=f"bincount {dt} {vals}")
            both(lambda L, x: x.bincount(), x)
            for ml in (0, 3, 12):
                both(lambda L, x: L.bincount(x, minlength=ml), x)
            for wdt in ("float32", "float64", "int64", "float16", "bool", "int32"):
                w = P(rng, (len(vals),), wdt)
                both(lambda L, x, w: L.bincount(x, w), x, w, what=f"weights {wdt}")
                both(lambda L, x, w: L.bincount(x, weights=w, minlength=10), x, w)
        both(lambda L, x: L.bincount(x, minlength=4), I([], dt), what="empty")
        both(lambda L, x, w: L.bincount(x, w, 2), I([], dt), I([], "float32"),
             what="empty with weights")
    big = I(rng.integers(0, 50, 5000))
    both(lambda L, x: L.bincount(x), big)
    both(lambda L, x, w: L.bincount(x, w), big, P(rng, (5000,), "float64"))
    both(lambda L, x: L.bincount(x), I([1, -1, 2]), what="negative values")
    both(lambda L, x: L.bincount(x), I([[1, 2]]), what="2-d input")
    both(lambda L, x: L.bincount(x), I([1.0, 2.0], "float32"), what="float input")
    both(lambda L, x: L.bincount(x), I([True, False], "bool"), what="bool input")
    both(lambda L, x: L.bincount(x), I(5), what="0-dim input")
    both(lambda L, x, w: L.bincount(x, w), I([1, 2]), P(rng, (3,)), what="weights length")
    both(lambda L, x, w: L.bincount(x, w), I([1, 2]), P(rng, (2, 1)), what="2-d weights")
    both(lambda L, x: L.bincount(x, minlength=-1), I([1, 2]), what="negative minlength")


def test_clamp_tensor(rng):
    for dt in DTYPES:
        x = P(rng, (3, 4), dt, "transposed")
        lo, hi = P(rng, (3, 1), dt), P(rng, (4,), dt, "sliced")
        both(lambda L, x, lo, hi: L.clamp(x, lo, hi), x, lo, hi, what=f"clamp.Tensor {dt}")
        both(lambda L, x, lo, hi: x.clamp(min=lo, max=hi), x, lo, hi)
        both(lambda L, x, lo: L.clamp(x, min=lo), x, lo, what=f"min only {dt}")
        both(lambda L, x, hi: L.clamp(x, max=hi), x, hi, what=f"max only {dt}")
        both(lambda L, x, lo, hi: x.clone().clamp_(lo, hi), x, lo, hi)
        both(lambda L, x, lo: x.clone().clamp_(min=lo), x, lo)
        both(lambda L, x, lo, hi: L.clamp(x, lo, hi, out=L.empty(0, dtype=x.dtype)), x, lo, hi)
        both(lambda L, x, lo, hi: L.clamp(x, lo, hi), P(rng, (4,), dt), P(rng, (2, 1, 1), dt),
             P(rng, (), dt), what="broadcast beyond self")
        both(lambda L, x, lo, hi: x.clone().clamp_(lo, hi), P(rng, (4,), dt),
             P(rng, (2, 4), dt), P(rng, (4,), dt), what="in-place broadcast self")
        both(lambda L, x, lo, hi: L.clamp(x, lo, hi), P(rng, (0, 4), dt), P(rng, (4,), dt),
             P(rng, (1,), dt))
    for d1, d2 in [("int64", "float32"), ("float32", "float64"), ("int32", "int64"),
                   ("float16", "float32"), ("uint8", "int8")]:
        both(lambda L, x, lo, hi: L.clamp(x, lo, hi), P(rng, (3, 4), d1), P(rng, (3, 4), d2),
             P(rng, (4,), d2), what=f"mixed {d1} {d2}")
        both(lambda L, x, lo: L.clamp(x, min=lo), P(rng, (3, 4), d1), P(rng, (), d2))
        both(lambda L, x, lo, hi: x.clamp_(lo, hi), P(rng, (3, 4), d1), P(rng, (3, 4), d2),
             P(rng, (4,), d2), what=f"mixed in-place {d1} {d2}")
    s = P(rng, (3, 4), special=True)
    both(lambda L, x, lo, hi: L.clamp(x, lo, hi), s, P(rng, (3, 4), special=True),
         P(rng, (3, 4), special=True), what="nan/inf")
    both(lambda L, x: L.clamp(x, x.new_full((), float("nan")), None) if is_torch(L) else
         L.clamp(x, L.full((), float("nan")), None), P(rng, (3,)), what="nan min")
    both(lambda L, x: L.clamp(x, None, None) if is_torch(L) else L.clamp(x, None, None),
         P(rng, (3,)), what="no bounds")
    grads_cases = [(P(rng, (3, 4), layout="transposed"), P(rng, (3, 1)), P(rng, (4,))),
                   (P(rng, (3, 4)), P(rng, (3, 4), domain="positive"), P(rng, (3, 4)))]
    for x, lo, hi in grads_cases:
        grads(lambda L, x, lo, hi: L.clamp(x, lo, hi), x, lo, hi)
        grads(lambda L, x, lo: L.clamp(x, min=lo), x, lo)
        grads(lambda L, x, hi: L.clamp(x, max=hi), x, hi)
        grads(lambda L, x, lo, hi: (x * 1).clamp_(lo, hi), x, lo, hi, what="in-place grads")
    args = (P(rng, (2, 3), "float64"), P(rng, (2, 1), "float64"), P(rng, (3,), "float64"))
    gradcheck(lambda L, x, lo, hi: L.clamp(x, lo, hi), *args)
    gradcheck(lambda L, x, lo: L.clamp(x, min=lo), *args[:2])
    gradcheck(lambda L, x, hi: L.clamp(x, max=hi), args[0], args[2])
    gradgradcheck(lambda L, x, lo, hi: L.clamp(x, lo, hi), *args)


def test_clamp_min_max(rng):
    for dt in DTYPES:
        x = P(rng, (3, 4), dt, "transposed")
        for name in ("clamp_min", "clamp_max"):
            for v in (0, 1.5, -1, True):
                both(lambda L, x: getattr(L, name)(x, v), x, what=f"{name} {dt} {v}")
                both(lambda L, x: getattr(x, name)(v), x)
                both(lambda L, x: getattr(L, name + "_")(x.clone(), v), x)
                both(lambda L, x: getattr(x.clone(), name + "_")(v), x)
            b = P(rng, (4,), dt)
            both(lambda L, x, b: getattr(L, name)(x, b), x, b, what=f"{name}.Tensor {dt}")
            both(lambda L, x, b: getattr(x, name)(b), x, b)
            both(lambda L, x, b: getattr(x.clone(), name + "_")(b), x, b)
            both(lambda L, x, b: getattr(L, name + "_")(x.clone(), b), x, b)
            both(lambda L, x, b: getattr(L, name)(x, b), x, P(rng, (3, 4), "float64"),
                 what="promoting tensor bound")
            both(lambda L, x, b: getattr(x.clone(), name + "_")(b), x,
                 P(rng, (3, 4), "float64"), what="promoting in-place")
    for name in ("clamp_min", "clamp_max"):
        both(lambda L, x: getattr(L, name)(x, float("nan")), P(rng, (3,)), what="nan bound")
        both(lambda L, x: getattr(L, name)(x, 0.0), P(rng, (3, 4), special=True))
        grads(lambda L, x: getattr(L, name)(x, 0.2), P(rng, (3, 4), layout="transposed"))
        grads(lambda L, x, b: getattr(L, name)(x, b), P(rng, (3, 4)), P(rng, (4,)))
        grads(lambda L, x, b: getattr(L, name + "_")(x * 1, b), P(rng, (3, 4)), P(rng, (4,)))
        gradcheck(lambda L, x, b: getattr(L, name)(x, b), P(rng, (2, 3), "float64"),
                  P(rng, (3,), "float64"))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_where_scalar(rng):
    c = P(rng, (3, 4), "bool", "transposed")
    for a, b in [(1.0, 0), (1, 0), (True, False), (2.5, -1.5), (True, 3), (-2, 7.5), (0, True)]:
        both(lambda L, c: L.where(c, a, b), c, what=f"where({a}, {b})")
        both(lambda L, c: L.where(c, a, b), P(rng, (), "bool"))
        both(lambda L, c: L.where(c, a, b), P(rng, (0, 2), "bool"))
    both(lambda L, c: L.where(c, 1.0, 0.0), P(rng, (3,), "uint8"), what="uint8 condition")
    both(lambda L, c: L.where(c, 1.0, 0.0), P(rng, (3,)), what="float condition")
    retorch.set_default_dtype(retorch.float64)
    try:
        assert retorch.where(retorch.ones(2, dtype=retorch.bool), 1.5, 0).dtype == retorch.float64
    finally:
        retorch.set_default_dtype(retorch.float32)


def test_where_condition(rng):
    for dt in DTYPES:
        for shape in [(3, 4), (5,), (), (0, 3), (2, 3, 4)]:
            for lay in ("contig", "transposed", "expanded"):
                both(lambda L, c: L.where(c), P(rng, shape, dt, lay), what=f"where {dt} {shape}")
    both(lambda L, c: L.where(c), I([float("nan"), 0.0, -0.0, 1.0], "float32"), what="nan")
    both(lambda L, c: L.where(c), I(True, "bool"))
    both(lambda L, c: L.where(c), I(0, "int64"))


def test_threshold_backward(rng):
    """relu's fused backward against torch.ops.aten.threshold_backward."""
    tb = lambda th: lambda L, g, x: aten(L, "threshold_backward")(g, x, th)  # noqa: E731
    for dt in FLOATS + ["int64", "int32", "uint8"]:
        for lay in LAYOUTS:
            for th in (0, 0.5, -1):
                both(tb(th), P(rng, (3, 5), dt, lay), P(rng, (3, 5), dt, lay),
                     what=f"threshold_backward {dt} {lay} {th}")
    x = I([float("nan"), 0.0, -0.0, 1.0, -2.0, 1e-30], "float32")
    both(tb(0), P(rng, (6,)), x, what="NaN and signed zeros in self")
    both(tb(0.25), P(rng, (4, 6), "float64"), P(rng, (6,), "float64"), what="broadcast self")
    both(tb(0), P(rng, (6,), "float32"), P(rng, (4, 6), "float64"), what="promotion")
    both(tb(0), P(rng, (0, 3)), P(rng, (0, 3)), what="empty")
    raises_like_torch(tb(0), P(rng, (3,), "bool"), P(rng, (3,), "bool"), what="bool")
    raises_like_torch(tb(0), P(rng, (3,)), P(rng, (4,)), what="shape mismatch")
    g, x = P(rng, (4, 5), "float64"), P(rng, (4, 5), "float64")
    grads(tb(0.1), g, x)
    gradcheck(tb(0.1), g, x)


def _log_sigmoid_backward(L, g, x):
    """log_sigmoid_backward with the buffer log_sigmoid_forward saves; torch's refuses mixed
    dtypes (retorch's promotes), so both get them promoted."""
    dt = L.result_type(g, x)
    g, x = g.to(dt), x.to(dt)
    return aten(L, "log_sigmoid_backward")(g, x, aten(L, "log_sigmoid_forward")(x)[1])


# name -> (the op with its extra arguments as f(L, g, x), the saved tensor's domain)
ACTIVATION_BACKWARDS = {
    "sigmoid_backward": (lambda L, g, y: aten(L, "sigmoid_backward")(g, y), "unit"),
    "tanh_backward": (lambda L, g, y: aten(L, "tanh_backward")(g, y), "unit"),
    "silu_backward": (lambda L, g, x: aten(L, "silu_backward")(g, x), None),
    "gelu_backward": (lambda L, g, x: aten(L, "gelu_backward")(g, x), None),
    "gelu_backward tanh": (lambda L, g, x: aten(L, "gelu_backward")(g, x, approximate="tanh"),
                           None),
    "hardtanh_backward": (lambda L, g, x: aten(L, "hardtanh_backward")(g, x, -0.5, 1.25), None),
    "hardswish_backward": (lambda L, g, x: aten(L, "hardswish_backward")(g, x), None),
    "hardsigmoid_backward": (lambda L, g, x: aten(L, "hardsigmoid_backward")(g, x), None),
    "leaky_relu_backward": (lambda L, g, x: aten(L, "leaky_relu_backward")(g, x, 0.2, False),
                            None),
    "elu_backward": (lambda L, g, x: aten(L, "elu_backward")(g, 1.0, 1.0, 1.0, False, x), None),
    "elu_backward selu": (lambda L, g, x: aten(L, "elu_backward")(
        g, 1.6732632423543772, 1.0507009873554805, 1.0, False, x), None),
    "elu_backward celu result": (lambda L, g, y: aten(L, "elu_backward")(
        g, 0.5, 1.0, 2.0, True, y), "unit"),
    "log_sigmoid_backward": (_log_sigmoid_backward, None),
}


@pytest.mark.parametrize("name", sorted(ACTIVATION_BACKWARDS))
def test_activation_backward_ops(rng, name):
    """The activations' one-pass backward kernels against torch.ops.aten's: dtypes, layouts,
    broadcasting and promotion, rows long enough for the vector chunks (3 x 1100), values
    around the piecewise bounds, and the derivatives of the backward ops themselves."""
    f, domain = ACTIVATION_BACKWARDS[name]
    kw = {"domain": domain} if domain else {}
    for dt in FLOATS:
        tol = {"rtol": 2e-2, "atol": 2e-2} if dt in ("float16", "bfloat16") else {}
        for lay in LAYOUTS:
            both(f, P(rng, (3, 1100), dt, lay), P(rng, (3, 1100), dt, lay, **kw),
                 what=f"{name} {dt} {lay}", **tol)
    x = np.linspace(-4, 4, 65).astype(np.float32)  # the bounds -3, 3, -0.5, 1.25 and 0 on it
    y = np.linspace(-0.99, 0.99, 65).astype(np.float32)
    both(f, P(rng, (65,)), pair_from_values(y if domain else x, "float32"), what="bounds")
    both(f, P(rng, (4, 6), "float64"), P(rng, (6,), "float64", **kw), what="broadcast x")
    both(f, P(rng, (6,)), P(rng, (4, 6), "float64", **kw), what="promotion")
    both(f, P(rng, (0, 3)), P(rng, (0, 3), **kw), what="empty")
    raises_like_torch(f, P(rng, (3,), "int64"), P(rng, (3,), "int64"), what="integers")
    raises_like_torch(f, P(rng, (3,)), P(rng, (4,), **kw), what="shape mismatch")
    g, x = P(rng, (4, 5), "float64"), P(rng, (4, 5), "float64", **kw)
    if name not in ("silu_backward", "hardsigmoid_backward"):  # torch 1.13 has no derivative
        grads(f, g, x, what=f"{name} double backward")
    gradcheck(f, g, x)
    if name.startswith(("silu", "gelu", "sigmoid", "tanh", "log_sigmoid")) or \
            name == "elu_backward selu":  # smooth (away from 0): a third order too
        gradgradcheck(f, g, x)


def test_log_sigmoid_forward(rng):
    """log_sigmoid_forward's output and buffer against torch.ops.aten's, values and strides
    (the buffer is laid out as the output), across dtypes, layouts, large and NaN values; only
    the output is differentiable, its node named as torch's; logsigmoid's gradient reads the
    buffer."""
    f = lambda L, x: aten(L, "log_sigmoid_forward")(x)
    for dt in ("float32", "float64"):  # float16/bfloat16: HALF_CASES
        for lay in LAYOUTS:
            both(f, P(rng, (3, 1100), dt, lay), what=f"{dt} {lay}", view=True)
    x = np.array([-200, -90, -20, -1e-3, 0, 1e-3, 20, 90, 200, np.nan, np.inf, -np.inf],
                 np.float32)
    both(f, pair_from_values(x, "float32"), what="extremes")
    both(f, P(rng, (0, 3)), what="empty")
    both(f, P(rng, ()), what="0-dim")
    raises_like_torch(f, P(rng, (3,), "int64"), what="integers")
    for L in (torch, retorch):
        x = L.tensor([-1.0, 0.5, 3.0], requires_grad=True)
        out, buf = aten(L, "log_sigmoid_forward")(x)
        assert (out.requires_grad, buf.requires_grad) == (True, False)
        assert out.grad_fn.name() == "LogSigmoidBackward0"
        assert L.nn.functional.logsigmoid(x).grad_fn.name() == "LogSigmoidBackward0"
    grads(lambda L, x: aten(L, "log_sigmoid_forward")(x)[0], P(rng, (4, 5), "float64"))
    gradcheck(lambda L, x: L.nn.functional.logsigmoid(x), P(rng, (4, 5), "float64"))


@pytest.mark.parametrize("name", ["_softmax_backward_data", "_log_softmax_backward_data"])
def test_softmax_backward_ops(rng, name):
    """softmax's and log_softmax's one-pass row backward against torch.ops.aten's: every dim
    (moved last when it is not), dtypes, input_dtype conversion, long rows (the summing lanes),
    empty and 0-dim inputs, and the backward of the backward."""
    log = name.startswith("_log")

    def f(dim, in_dt=None):
        def run(L, g, x):
            y = (L.log_softmax if log else L.softmax)(x, dim)
            dt = getattr(L, in_dt) if in_dt else y.dtype
            return aten(L, name)(g, y, dim, dt)
        return run
    for dt in FLOATS:
        tol = {"rtol": 2e-2, "atol": 2e-2} if dt in ("float16", "bfloat16") else {}
        for dim in (0, 1, -1):
            both(f(dim), P(rng, (6, 1100), dt, "transposed"), P(rng, (6, 1100), dt),
                 what=f"{name} {dt} dim {dim}", **tol)
    # torch's CPU kernels return grad_output's dtype whatever input_dtype says
    both(f(1, "float32"), P(rng, (3, 5), "float64"), P(rng, (3, 5), "float64"),
         what="input_dtype float32 with float64 gradients")
    both(f(1), P(rng, (3, 4, 5)), P(rng, (3, 4, 5), "float32", "sliced"), what="3-d, sliced")
    for dt in ("float32", "float64", "bfloat16"):  # columns of 24 (Note [Column softmax])
        both(f(1), P(rng, (2, 5, 4, 6), dt, "transposed"), P(rng, (2, 5, 4, 6), dt),
             what=f"4-d over dim 1, {dt}", **({"rtol": 2e-2, "atol": 2e-2}
                                             if dt == "bfloat16" else {}))
    both(f(0), P(rng, ()), P(rng, ()), what="0-dim")
    both(f(1), P(rng, (0, 3)), P(rng, (0, 3)), what="empty")
    if log:  # torch 1.13's log form reads mismatched shapes without a check; ours refuses them
        with pytest.raises(RuntimeError, match="does not match the output of size"):
            aten(retorch, name)(retorch.ones(3, 4), retorch.ones(3, 5), 1, retorch.float32)
    else:
        raises_like_torch(lambda L, g, y: aten(L, name)(g, y, 1, y.dtype), P(rng, (3, 4)),
                          P(rng, (3, 5)), what="shape mismatch")
    g, x = P(rng, (3, 5), "float64"), P(rng, (3, 5), "float64")
    grads(f(1), g, x, what=f"{name} double backward")
    gradcheck(f(1), g, x)
    gradgradcheck(f(0), g, x)


def test_activation_backward_errors(rng):
    g, x = P(rng, (3,)), P(rng, (3,))
    raises_like_torch(lambda L, g, x: aten(L, "gelu_backward")(g, x, approximate="fast"), g, x)
    raises_like_torch(lambda L, g, x: aten(L, "leaky_relu_backward")(g, x, -0.1, True), g, x,
                      what="in-place forward with a negative slope")


def test_sum_mean_dtype(rng):
    """sum/mean with dtype=: every input dtype x every requested dtype that torch allows, and
    the same errors where it refuses."""
    for dt in DTYPES:
        x = P(rng, (3, 4), dt, "transposed")
        for out in DTYPES + [None]:
            kw = (lambda L: {}) if out is None else (lambda L: {"dtype": getattr(L, out)})
            both(lambda L, x: L.sum(x, **kw(L)), x, what=f"sum {dt}->{out}")
            both(lambda L, x: x.sum(1, **kw(L)), x, what=f"sum dim {dt}->{out}")
            both(lambda L, x: L.sum(x, (0, 1), True, **kw(L)), x)
            both(lambda L, x: L.mean(x, **kw(L)), x, what=f"mean {dt}->{out}")
            both(lambda L, x: x.mean(0, **kw(L)), x, what=f"mean dim {dt}->{out}")
            both(lambda L, x: L.sum(x, 0, out=L.empty(0, dtype=getattr(L, out or dt)),
                                    **kw(L)), x, what=f"sum out {dt}->{out}")
    for out in FLOATS:
        grads(lambda L, x: L.sum(x, 1, dtype=getattr(L, out)).to(L.float32), P(rng, (3, 4)))
        grads(lambda L, x: L.mean(x, dtype=getattr(L, out)).to(L.float32), P(rng, (3, 4)))


@pytest.mark.parametrize("dt", FLOATS)
def test_sum_over_leading_dims(rng, dt):
    """Column sums (Note [Column sums]): leading dims of contiguous inputs, keepdim or not, a
    block boundary (600 columns), empty rows; mean too."""
    for shape, dims in [((300, 600), 0), ((4, 5, 600), (0, 1)), ((6, 3, 2, 7), (-4, 1)),
                        ((0, 5), 0), ((7, 1), 0)]:
        x = P(rng, shape, dt)
        for keep in (False, True):
            both(lambda L, x: x.sum(dims, keepdim=keep), x, what=f"sum {shape} {dims} {dt}")
            both(lambda L, x: x.mean(dims, keepdim=keep), x, what=f"mean {shape} {dims} {dt}")



@pytest.mark.parametrize("dt", FLOATS)
def test_sum_over_both_sides_of_kept_dims(rng, dt):
    """Plane sums (Note [Plane sums]): reduced dims before and after a kept block of a contiguous
    input (a conv bias gradient), rows of 64+ elements that end in a tail, empty leading dims;
    short rows (the general path) and a kept dim between two reduced ones (not a block) too."""
    for shape, dims in [((5, 16, 9, 9), (0, 2, 3)), ((3, 4, 2, 100), (0, 3)),
                        ((2, 3, 5, 7, 70), (0, 1, 4)), ((0, 3, 64), (0, 2)),
                        ((4, 6, 8), (0, 2)), ((3, 4, 5, 80), (0, 2))]:
        x = P(rng, shape, dt)
        for keep in (False, True):
            both(lambda L, x: x.sum(dims, keepdim=keep), x, what=f"sum {shape} {dims} {dt}")
            both(lambda L, x: x.mean(dims, keepdim=keep), x, what=f"mean {shape} {dims} {dt}")
    grads(lambda L, x: x.sum((0, 2, 3)), P(rng, (3, 4, 8, 8)))

@pytest.mark.parametrize("dt", FLOATS)
def test_sum_over_size_one_dims(rng, dt):
    """Sums over dims of size 1 only are each element plus 0: -0 comes out +0 as in torch, NaN
    and inf stay, the result is a new tensor of the reduced shape; mean too; grads flow."""
    for shape, dims in [((5, 1), 1), ((1, 4, 1), (0, 2)), ((3, 1, 2), -2), ((), 0),
                        ((2, 1, 3), (1,)), ((8, 64, 1), 2)]:
        x = P(rng, shape, dt)
        for keep in (False, True):
            both(lambda L, x: x.sum(dims, keepdim=keep), x, what=f"sum {shape} {dims} {dt}")
            both(lambda L, x: x.mean(dims, keepdim=keep), x, what=f"mean {shape} {dims} {dt}")
    special = [-0.0, 0.0, float("nan"), float("inf"), -float("inf"), -2.5]
    for L in (torch, retorch):
        x = L.tensor(special, dtype=getattr(L, dt)).reshape(6, 1)
        r = x.sum(1).float()
        assert [str(v) for v in r.tolist()] == ["0.0", "0.0", "nan", "inf", "-inf", "-2.5"], L
        assert not r[0].signbit().item() and x.sum(1).data_ptr() != x.data_ptr()
    grads(lambda L, x: x.sum(1) * 2, P(rng, (4, 1)))


@pytest.mark.parametrize("dt", DTYPES)
def test_signbit(rng, dt):
    """signbit against torch on every dtype: -0.0 and -inf set, NaN as its sign bit says (except
    bfloat16, where torch's conversion from float32 sets a NaN's sign bit: finite values there)."""
    special = dt in ("float32", "float64", "float16")
    for shape in [(3, 4), (), (1500,)]:
        x = P(rng, shape, dt, special=special and shape != ())
        both(lambda L, a: L.signbit(a), x, what=f"signbit {dt} {shape}")
        both(lambda L, a: a.signbit(), x, what=f"Tensor.signbit {dt} {shape}")
    if dt in FLOATS:
        z = pair_from_values(np.array([-0.0, 0.0, -1e-30, 1e-30, -np.inf, np.inf]), dt)
        both(lambda L, a: L.signbit(a), z, what=f"signbit {dt} zeros and infinities")
    out = P(rng, (3, 4), "bool")
    both(lambda L, a, o: L.signbit(a, out=o), P(rng, (3, 4), dt), out, what="signbit out=")
