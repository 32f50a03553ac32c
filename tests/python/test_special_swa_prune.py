"""retorch.special (the functions composed in Python), retorch.optim.swa_utils and
retorch.nn.utils.prune against torch 1.13: values, gradients, errors, masks, lr sequences."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import retorch
import retorch.nn.utils.prune as rprune

INF, NAN = math.inf, math.nan


def _r(a, dtype="float64"):
    return retorch.tensor(np.asarray(a, dtype=np.float64), dtype=getattr(retorch, dtype))


def _t(a, dtype="float64"):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=getattr(torch, dtype))


def _np(x):
    return np.array(x.detach().tolist(), dtype=np.float64)


def _assert_close(got, want, rtol, atol, what):
    """Values equal within rtol/atol, with NaN and infinities (and their signs) in the same
    places."""
    got, want = _np(got), _np(want)
    assert got.shape == want.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(want)), (what, got, want)
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf]), (what, got[inf], want[inf])
    fin = ~np.isnan(want) & ~inf
    bad = ~(np.abs(got[fin] - want[fin]) <= atol + rtol * np.abs(want[fin]))
    assert not bad.any(), (what, got[fin][bad][:5], want[fin][bad][:5])


# --- retorch.special -------------------------------------------------------------------------

def test_special_has_torch_names():
    assert sorted(retorch.special.__all__) == sorted(torch.special.__all__)
    for name in torch.special.__all__:
        assert callable(getattr(retorch.special, name)), name


_WIDE = np.concatenate([np.linspace(-40, 40, 321), [0.0, -0.0, 1e-30, -1e-30, 1e-6, 1e10, -1e10,
                                                   1e300, -1e300, INF, -INF, NAN]])
_MODERATE = np.concatenate([np.linspace(-30, 30, 241), [0.0, 1e-6, -1e-6, 2.09, -2.09, 5.0,
                                                       -5.0, 8.0, -8.0, INF, -INF, NAN]])
# (name, float64 points, float32 points): float32 points stay where torch's float kernels are
# themselves accurate (argument reduction of sin/cos in float loses digits far out).
UNARY = [
    ("ndtr", _WIDE, _WIDE),
    ("log_ndtr", _WIDE, _WIDE),
    ("erfcx", np.concatenate([_WIDE, [-26.7, -26.6, 25.9, 26.0, 26.1, 49.9, 50.1, 6e7]]),
     _MODERATE),
    ("ndtri", np.concatenate([np.linspace(-0.1, 1.1, 241), [1e-300, 1e-20, 1e-14, 0.5,
                                                          1 - 1e-15, 5e-324, NAN]]),
     np.linspace(-0.1, 1.1, 241)),
    ("entr", _WIDE, _WIDE),
    ("i0e", _WIDE, _WIDE),
    ("i1e", _WIDE, _WIDE),
    ("bessel_j0", np.concatenate([_WIDE, [1e-6, 4.99, 5.01, 1e5]]), _MODERATE),
    ("bessel_j1", np.concatenate([_WIDE, [4.99, 5.01, 1e5]]), _MODERATE),
    ("bessel_y0", np.concatenate([_WIDE, [4.99, 5.01, 1e5]]), _MODERATE),
    ("bessel_y1", np.concatenate([_WIDE, [4.99, 5.01, 1e5]]), _MODERATE),
    ("modified_bessel_i0", np.concatenate([_WIDE, [700.0, 720.0]]), _MODERATE),
    ("modified_bessel_i1", np.concatenate([_WIDE, [700.0, -720.0]]), _MODERATE),
    ("modified_bessel_k0", np.concatenate([_WIDE, [2.0, 700.0, 1e-300]]), _WIDE),
    ("modified_bessel_k1", np.concatenate([_WIDE, [2.0, 700.0]]), _WIDE),
    ("scaled_modified_bessel_k0", np.concatenate([_WIDE, [2.0, 1e5]]), _WIDE),
    ("scaled_modified_bessel_k1", np.concatenate([_WIDE, [2.0, 1e5]]), _WIDE),
    ("spherical_bessel_j0", np.concatenate([_WIDE, [0.49, 0.5, -0.5]]), _MODERATE),
    ("airy_ai", np.concatenate([np.linspace(-60, 110, 341), [-2.09, 2.09, 8.32, 8.33, 103.89,
                                                           103.9, INF, -INF, NAN]]),
     np.linspace(-20, 20, 161)),
]


@pytest.mark.parametrize("name,points64,points32", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values(name, points64, points32):
    fr, ft = getattr(retorch.special, name), getattr(torch.special, name)
    _assert_close(fr(_r(points64)), ft(_t(points64)), 1e-9, 1e-300, name + " float64")
    got = fr(_r(points32, "float32"))
    assert got.dtype == retorch.float32
    _assert_close(got, ft(_t(points32, "float32")), 1e-4, 1e-6, name + " float32")


def test_log_ndtr_far_tail_does_not_underflow():
    x = _r([-10.0, -40.0, -1e5])
    got = _np(retorch.special.log_ndtr(x))
    assert np.isfinite(got).all()
    _assert_close(retorch.special.log_ndtr(x), torch.special.log_ndtr(_t([-10.0, -40.0, -1e5])),
                  1e-12, 0, "log_ndtr tail")


def test_integer_inputs_compute_in_the_default_dtype():
    for name in ("ndtr", "i0e", "entr", "bessel_j0", "airy_ai", "erfcx"):
        got = getattr(retorch.special, name)(retorch.tensor([1, 2, 3]))
        want = getattr(torch.special, name)(torch.tensor([1, 2, 3]))
        assert got.dtype == retorch.float32, name
        _assert_close(got, want, 1e-5, 1e-7, name)
    got = retorch.special.xlog1py(retorch.tensor([1, 2]), retorch.tensor([3, 4]))
    assert got.dtype == retorch.float32


_GAMMA_POINTS = np.array([0.0, 1e-300, 1e-10, 1e-3, 0.1, 0.5, 0.7, 1.0, 1.05, 1.1, 1.5, 2.0, 3.7,
                          10.0, 19.0, 21.0, 25.0, 30.0, 50.0, 100.0, 150.0, 199.0, 201.0, 250.0,
                          1000.0, 1e4, 1e5, INF, NAN, -1.0])


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_values(name, rng):
    # Every regime: series, continued fraction, Temme's expansion (a in (20, 200) and above),
    # the boundary values (0, inf, NaN, negatives) in torch's order.
    a, x = np.meshgrid(_GAMMA_POINTS, _GAMMA_POINTS)
    fr, ft = getattr(retorch.special, name), getattr(torch.special, name)
    _assert_close(fr(_r(a), _r(x)), ft(_t(a), _t(x)), 1e-9, 1e-300, name)
    a = rng.uniform(0.01, 300, 400)
    x = a * rng.uniform(0.5, 1.5, 400)
    _assert_close(fr(_r(a), _r(x)), ft(_t(a), _t(x)), 1e-9, 1e-300, name + " a ~ x")
    _assert_close(fr(_r(a, "float32"), _r(x, "float32")), ft(_t(a, "float32"), _t(x, "float32")),
                  1e-4, 1e-6, name + " float32")


def test_zeta_values():
    xs = np.array([1.0, 0.5, 1.0001, 1.5, 2.0, 2.5, 3.0, 7.0, 20.0, 100.0, INF, NAN, -2.0])
    qs = np.array([0.0, -1.0, -2.5, -10.5, 1e-5, 0.1, 0.5, 1.0, 2.0, 8.5, 9.0, 100.0, 1e10, INF,
                   NAN, -INF])
    x, q = np.meshgrid(xs, qs)
    _assert_close(retorch.special.zeta(_r(x), _r(q)), torch.special.zeta(_t(x), _t(q)),
                  1e-12, 1e-300, "zeta")
    _assert_close(retorch.special.zeta(_r(x, "float32"), _r(q, "float32")),
                  torch.special.zeta(_t(x, "float32"), _t(q, "float32")), 1e-6, 0, "zeta f32")
    # The Number overloads.
    _assert_close(retorch.special.zeta(2, _r([1.0, 2.0])), torch.special.zeta(2, _t([1.0, 2.0])),
                  1e-12, 0, "zeta(Number, Tensor)")
    _assert_close(retorch.special.zeta(_r([2.0, 3.0]), 1.5),
                  torch.special.zeta(_t([2.0, 3.0]), 1.5), 1e-12, 0, "zeta(Tensor, Number)")


def test_xlog1py_values_and_overloads():
    x = np.array([[0.0], [1.5], [-2.0], [NAN]])
    y = np.array([0.5, -0.5, -1.0, -2.0, 3.0, NAN, INF])
    _assert_close(retorch.special.xlog1py(_r(x), _r(y)), torch.special.xlog1py(_t(x), _t(y)),
                  1e-12, 0, "xlog1py")
    _assert_close(retorch.special.xlog1py(2, _r(y)), torch.special.xlog1py(2, _t(y)), 1e-12, 0,
                  "xlog1py(Number, Tensor)")
    _assert_close(retorch.special.xlog1py(_r(x), 0.5), torch.special.xlog1py(_t(x), 0.5), 1e-12, 0,
                  "xlog1py(Tensor, Number)")
    got = retorch.special.xlog1py(_r([1.0], "float64"), _r([2.0], "float32"))
    assert got.dtype == retorch.float64


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_values(name):
    xs = np.concatenate([np.linspace(-2.5, 2.5, 51), [0.0, 1.0, -1.0, 0.5, 0.9999999, INF, -INF,
                                                      NAN]])
    ns = np.array([-2.0, -0.5, 0.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 13.0, 20.0, 2.7, NAN])
    x, n = np.meshgrid(xs, ns)
    fr, ft = getattr(retorch.special, name), getattr(torch.special, name)
    _assert_close(fr(_r(x), _r(n)), ft(_t(x), _t(n)), 1e-10, 1e-10, name)
    _assert_close(fr(_r(x, "float32"), _r(n, "float32")), ft(_t(x, "float32"), _t(n, "float32")),
                  1e-4, 1e-4, name + " float32")
    # Number for n or for x; integer tensors become the default dtype.
    _assert_close(fr(_r(xs), 4), ft(_t(xs), 4), 1e-10, 1e-10, name + "(x, 4)")
    _assert_close(fr(0.3, _r(ns)), ft(0.3, _t(ns)), 1e-10, 1e-10, name + "(0.3, n)")
    got = fr(retorch.tensor([1, 2]), retorch.tensor([3, 4]))
    assert got.dtype == retorch.float32
    _assert_close(got, ft(torch.tensor([1, 2]), torch.tensor([3, 4])), 1e-6, 0, name + " int")
    with pytest.raises(TypeError):
        fr(1, 2)


def test_polynomials_large_degree():
    x = np.linspace(-0.99, 0.99, 21)
    for name in ("chebyshev_polynomial_t", "legendre_polynomial_p",
                 "shifted_chebyshev_polynomial_w"):
        fr, ft = getattr(retorch.special, name), getattr(torch.special, name)
        _assert_close(fr(_r(x), 100), ft(_t(x), 100), 1e-8, 1e-10, name)


def test_multigammaln_and_round():
    values = [2.5, 3.0, 7.25]
    _assert_close(retorch.special.multigammaln(_r(values), 3),
                  torch.special.multigammaln(_t(values), 3), 1e-12, 0, "mvlg")
    _assert_close(retorch.special.multigammaln(_r([0.5, 1.0]), 3),
                  torch.special.multigammaln(_t([0.5, 1.0]), 3), 0, 0, "mvlg poles")
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        retorch.special.multigammaln(_r([2.0]), 0)
    values = [1.25, -2.5, 3.567]
    _assert_close(retorch.special.round(_r(values)), torch.special.round(_t(values)), 0, 0,
                  "round")
    _assert_close(retorch.special.round(_r(values), decimals=2),
                  torch.special.round(_t(values), decimals=2), 1e-12, 0, "round 2")


def test_out_argument():
    out = retorch.empty(0, dtype=retorch.float64)
    res = retorch.special.erfcx(_r([0.5, 1.5]), out=out)
    assert res is out
    _assert_close(out, torch.special.erfcx(_t([0.5, 1.5])), 1e-12, 0, "out")
    out = retorch.empty(2, dtype=retorch.float64)
    retorch.special.gammainc(_r([1.0, 2.0]), _r([0.5, 0.5]), out=out)
    _assert_close(out, torch.special.gammainc(_t([1.0, 2.0]), _t([0.5, 0.5])), 1e-12, 0, "out2")


DIFFERENTIABLE = [
    ("ndtr", [-40.0, -5.0, -0.3, 0.0, 1.0, 9.0]),
    ("log_ndtr", [-40.0, -5.0, -1.5, -0.3, 0.0, 1.0, 9.0]),
    ("ndtri", [1e-10, 0.01, 0.3, 0.5, 0.9, 0.999]),
    ("erfcx", [-5.0, -1.0, 0.0, 0.7, 3.0, 30.0]),
    ("entr", [0.1, 0.5, 1.0, 3.0]),
    ("i0e", [-9.0, -1.0, 0.0, 0.5, 3.0, 30.0]),
    ("i1e", [-9.0, -1.0, 0.0, 0.5, 3.0, 30.0]),
]


@pytest.mark.parametrize("name,points", DIFFERENTIABLE, ids=[d[0] for d in DIFFERENTIABLE])
def test_unary_gradients_first_and_second_order(name, points):
    grads = []
    for mod in (retorch, torch):
        x = mod.tensor(points, dtype=mod.float64, requires_grad=True)
        y = getattr(mod.special, name)(x)
        g, = mod.autograd.grad((y * y).sum(), x, create_graph=True)
        gg, = mod.autograd.grad(g.sum(), x)
        grads.append((g, gg))
    _assert_close(grads[0][0], grads[1][0], 1e-10, 1e-300, name + " grad")
    _assert_close(grads[0][1], grads[1][1], 1e-8, 1e-300, name + " grad grad")


def test_unary_grad_fn_names_and_float32_gradient():
    for name, node in [("erfcx", "SpecialErfcxBackward0"), ("log_ndtr", "SpecialLogNdtrBackward0"),
                       ("i1e", "SpecialI1EBackward0"), ("entr", "SpecialEntrBackward0")]:
        x = retorch.tensor([0.5, 2.0], requires_grad=True)
        y = getattr(retorch.special, name)(x)
        assert y.grad_fn.name() == node
        y.sum().backward()
        xt = torch.tensor([0.5, 2.0], requires_grad=True)
        getattr(torch.special, name)(xt).sum().backward()
        assert x.grad.dtype == retorch.float32
        _assert_close(x.grad, xt.grad, 1e-5, 0, name)


def _binary_grad(mod, name, a, b, which):
    a = mod.tensor(a, dtype=mod.float64, requires_grad=which == 0)
    b = mod.tensor(b, dtype=mod.float64, requires_grad=which == 1)
    y = getattr(mod.special, name)(a, b)
    g, = mod.autograd.grad((y * y).sum(), [a, b][which], create_graph=True)
    gg, = mod.autograd.grad(g.sum(), [a, b][which])
    return g, gg


@pytest.mark.parametrize("name,a,b,which", [
    ("xlog1py", [[0.0], [1.5], [-2.0]], [0.5, -0.5, 3.0], 0),
    ("xlog1py", [[0.0], [1.5], [-2.0]], [0.5, -0.5, 3.0], 1),
    ("zeta", [[2.0], [3.5]], [0.5, 1.0, 4.0], 1),
    ("gammainc", [[0.5], [3.0], [40.0]], [0.2, 1.0, 5.0, 41.0], 1),
    ("gammaincc", [[0.5], [3.0], [40.0]], [0.2, 1.0, 5.0, 41.0], 1),
])
def test_binary_gradients_with_broadcasting(name, a, b, which):
    if name == "xlog1py" and which == 0:  # linear in x: check the first derivative only
        got = []
        for mod in (retorch, torch):
            x = mod.tensor(a, dtype=mod.float64, requires_grad=True)
            y = mod.special.xlog1py(x, mod.tensor(b, dtype=mod.float64))
            got.append(mod.autograd.grad((y * y).sum(), x)[0])
        assert tuple(got[0].shape) == (3, 1)
        _assert_close(got[0], got[1], 1e-10, 0, "xlog1py grad x")
        return
    (g, gg), (tg, tgg) = _binary_grad(retorch, name, a, b, which), _binary_grad(torch, name, a, b,
                                                                               which)
    assert tuple(g.shape) == tuple(tg.shape)
    _assert_close(g, tg, 1e-9, 1e-300, name + " grad")
    _assert_close(gg, tgg, 1e-7, 1e-300, name + " grad grad")


@pytest.mark.parametrize("name,what", [("zeta", "zeta"), ("gammainc", "igamma: input"),
                                       ("gammaincc", "igammac: input")])
def test_not_implemented_derivatives(name, what):
    a = retorch.tensor([2.0, 3.0], dtype=retorch.float64, requires_grad=True)
    y = getattr(retorch.special, name)(a, retorch.tensor([1.5, 2.5], dtype=retorch.float64))
    assert y.requires_grad
    with pytest.raises(NotImplementedError,
                       match=f"the derivative for '{what}' is not implemented"):
        y.sum().backward()


def test_non_differentiable_functions_return_no_graph():
    x = retorch.tensor([0.5, 1.5], requires_grad=True)
    for name in ("bessel_j0", "modified_bessel_k1", "airy_ai", "spherical_bessel_j0"):
        y = getattr(retorch.special, name)(x)
        assert not y.requires_grad and y.grad_fn is None, name
    assert not retorch.special.legendre_polynomial_p(x, 3).requires_grad


def test_argument_errors():
    with pytest.raises(TypeError,
                       match="argument 'input' \\(position 1\\) must be Tensor, not float"):
        retorch.special.ndtr(1.0)
    with pytest.raises(TypeError, match="argument 'other' \\(position 2\\) must be Tensor"):
        retorch.special.gammainc(_r([1.0]), 2.0)
    with pytest.raises(TypeError, match="argument 'input' \\(position 1\\) must be Tensor"):
        retorch.special.gammaincc(1.0, _r([1.0]))
    with pytest.raises(TypeError):
        retorch.special.xlog1py(1.0, 2.0)


# --- retorch.optim.swa_utils -----------------------------------------------------------------

def _pair_models(seed=0, bn=True):
    """The same small model (Linear, BatchNorm1d, Linear) in retorch and torch."""
    rs = np.random.RandomState(seed)
    tensors = [rs.randn(5, 3), rs.randn(5), rs.randn(2, 5), rs.randn(2)]
    models = []
    for mod in (retorch, torch):
        layers = [mod.nn.Linear(3, 5)] + ([mod.nn.BatchNorm1d(5)] if bn else []) + \
            [mod.nn.Linear(5, 2)]
        m = mod.nn.Sequential(*layers)
        with mod.no_grad():
            for p, v in zip([layers[0].weight, layers[0].bias, layers[-1].weight, layers[-1].bias],
                            tensors):
                p.copy_(mod.tensor(v, dtype=mod.float32))
        models.append(m)
    return models


def _perturb(models, step):
    rs = np.random.RandomState(100 + step)
    for (name, rp), (_, tp) in zip(models[0].named_parameters(), models[1].named_parameters()):
        v = rs.randn(*tuple(tp.shape))
        with retorch.no_grad():
            rp.copy_(retorch.tensor(v, dtype=retorch.float32))
        with torch.no_grad():
            tp.copy_(torch.tensor(v, dtype=torch.float32))


def _assert_state_dicts_equal(r_sd, t_sd):
    assert list(r_sd) == list(t_sd)
    for k in t_sd:
        _assert_close(r_sd[k].to(retorch.float64), t_sd[k].to(torch.float64), 1e-6, 1e-7, k)


@pytest.mark.parametrize("use_buffers,ema", [(False, False), (True, True)])
def test_averaged_model_matches_torch(use_buffers, ema):
    models = _pair_models()
    avg_fn = (lambda avg, cur, n: 0.25 * avg + 0.75 * cur) if ema else None
    r_swa = retorch.optim.swa_utils.AveragedModel(models[0], avg_fn=avg_fn,
                                                  use_buffers=use_buffers)
    t_swa = torch.optim.swa_utils.AveragedModel(models[1], avg_fn=avg_fn, use_buffers=use_buffers)
    x = np.random.RandomState(7).randn(4, 3)
    for step in range(4):
        _perturb(models, step)
        for m in models:  # a training forward moves the BatchNorm buffers
            m.train()
        models[0](retorch.tensor(x, dtype=retorch.float32))
        models[1](torch.tensor(x, dtype=torch.float32))
        r_swa.update_parameters(models[0])
        t_swa.update_parameters(models[1])
    assert int(r_swa.n_averaged) == 4 and r_swa.n_averaged.dtype == retorch.int64
    _assert_state_dicts_equal(r_swa.state_dict(), t_swa.state_dict())
    r_swa.eval()
    t_swa.eval()
    _assert_close(r_swa(retorch.tensor(x, dtype=retorch.float32)),
                  t_swa(torch.tensor(x, dtype=torch.float32)), 1e-5, 1e-6, "forward")
    # The copy is independent of the model it was made from.
    assert r_swa.module[0].weight is not models[0][0].weight


def test_averaged_model_state_dict_round_trip():
    models = _pair_models()
    r_swa = retorch.optim.swa_utils.AveragedModel(models[0])
    r_swa.update_parameters(models[0])
    sd = r_swa.state_dict()
    assert list(sd)[0] == "n_averaged" and all(k.startswith("module.") for k in list(sd)[1:])
    other = retorch.optim.swa_utils.AveragedModel(_pair_models(seed=3)[0])
    other.load_state_dict(sd)
    assert int(other.n_averaged) == 1
    _assert_close(other.module[0].weight, models[0][0].weight, 0, 0, "loaded")


def _swalr_lrs(mod, n_steps=14, **kw):
    p = [mod.zeros(2, requires_grad=True), mod.zeros(2, requires_grad=True)]
    opt = mod.optim.SGD([{"params": p[:1]}, {"params": p[1:], "lr": 0.3}], lr=1.0)
    sched = mod.optim.swa_utils.SWALR(opt, **kw)
    out = [list(sched.get_last_lr())]
    for step in range(n_steps):
        opt.step()
        sched.step()
        if step == 5:  # another scheduler (or the user) changing lr mid-anneal
            for g in opt.param_groups:
                g["lr"] = g["lr"] * 0.5
        out.append(list(sched.get_last_lr()))
    return np.array(out), [g["swa_lr"] for g in opt.param_groups]


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05),
                                dict(swa_lr=[0.1, 0.01], anneal_epochs=3, anneal_strategy="linear"),
                                dict(swa_lr=0.2, anneal_epochs=0),
                                dict(swa_lr=0.5, anneal_epochs=1, anneal_strategy="cos")])
def test_swalr_sequence_matches_torch(kw):
    got, swa_r = _swalr_lrs(retorch, **kw)
    want, swa_t = _swalr_lrs(torch, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert swa_r == swa_t


def test_swalr_errors_and_get_lr_warning():
    opt = retorch.optim.SGD([retorch.zeros(2, requires_grad=True)], lr=0.1)
    SWALR = retorch.optim.swa_utils.SWALR
    with pytest.raises(ValueError, match="anneal_strategy must by one of 'cos' or 'linear'"):
        SWALR(opt, swa_lr=0.01, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        SWALR(opt, swa_lr=0.01, anneal_epochs=-1)
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        SWALR(opt, swa_lr=0.01, anneal_epochs=2.5)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        SWALR(opt, swa_lr=[0.01, 0.02])
    sched = SWALR(opt, swa_lr=0.01)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def _loader(mod, tuples):
    rs = np.random.RandomState(11)
    batches = [mod.tensor(rs.randn(6, 3), dtype=mod.float32) for _ in range(3)]
    return [(b, mod.zeros(6)) for b in batches] if tuples else batches


@pytest.mark.parametrize("tuples", [False, True])
def test_update_bn_matches_torch(tuples):
    models = _pair_models()
    for m in models:
        m.eval()
        m[1].momentum = 0.3
    retorch.optim.swa_utils.update_bn(_loader(retorch, tuples), models[0])
    torch.optim.swa_utils.update_bn(_loader(torch, tuples), models[1])
    _assert_state_dicts_equal(models[0].state_dict(), models[1].state_dict())
    assert int(models[0][1].num_batches_tracked) == 3
    assert models[0][1].momentum == 0.3 and not models[0].training


def test_update_bn_without_batchnorm_is_a_no_op():
    model = _pair_models(bn=False)[0]
    before = [p.clone() for p in model.parameters()]
    retorch.optim.swa_utils.update_bn(_loader(retorch, False), model)
    for a, b in zip(before, model.parameters()):
        _assert_close(a, b, 0, 0, "unchanged")


def test_swa_names():
    assert sorted(retorch.optim.swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)


# --- retorch.nn.utils.prune ------------------------------------------------------------------

def _pair_layers(kind="linear", seed=0):
    """The same Linear(6, 5) or Conv2d(3, 4, 3) in retorch and torch."""
    out = []
    for mod in (retorch, torch):
        m = mod.nn.Linear(6, 5) if kind == "linear" else mod.nn.Conv2d(3, 4, 3)
        with mod.no_grad():
            for p in (m.weight, m.bias):
                p.copy_(mod.tensor(np.random.RandomState(seed + p.dim()).randn(
                    *tuple(p.shape)), dtype=mod.float32))
        out.append(m)
    return out


def _same_mask(rm, tm, name="weight"):
    np.testing.assert_array_equal(_np(getattr(rm, name + "_mask")),
                                  _np(getattr(tm, name + "_mask")))
    np.testing.assert_allclose(_np(getattr(rm, name)), _np(getattr(tm, name)), rtol=0, atol=0)


@pytest.mark.parametrize("amount", [0.3, 7, 0, 1.0])
def test_l1_unstructured_matches_torch(amount):
    rm, tm = _pair_layers()
    assert rprune.l1_unstructured(rm, "weight", amount=amount) is rm
    tprune.l1_unstructured(tm, "weight", amount=amount)
    _same_mask(rm, tm)
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in rm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert list(rm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert type(rm.weight).__name__ == "Tensor" and "weight" not in rm._parameters
    x = np.random.RandomState(1).randn(2, 6)
    _assert_close(rm(retorch.tensor(x, dtype=retorch.float32)),
                  tm(torch.tensor(x, dtype=torch.float32)), 1e-5, 1e-6, "forward")


def test_l1_unstructured_importance_scores_and_gradient():
    rm, tm = _pair_layers()
    scores = np.random.RandomState(5).randn(5, 6)
    rprune.l1_unstructured(rm, "weight", amount=0.5,
                           importance_scores=retorch.tensor(scores, dtype=retorch.float32))
    tprune.l1_unstructured(tm, "weight", amount=0.5,
                           importance_scores=torch.tensor(scores, dtype=torch.float32))
    _same_mask(rm, tm)
    x = np.random.RandomState(2).randn(3, 6)
    rm(retorch.tensor(x, dtype=retorch.float32)).sum().backward()
    tm(torch.tensor(x, dtype=torch.float32)).sum().backward()
    _assert_close(rm.weight_orig.grad, tm.weight_orig.grad, 1e-5, 1e-6, "grad")
    assert (_np(rm.weight_orig.grad)[_np(rm.weight_mask) == 0] == 0).all()


@pytest.mark.parametrize("kind,n,dim", [("conv", 1, 0), ("conv", 2, 1), ("conv", INF, -1),
                                        ("conv", -INF, 0), ("conv", 3, -3), ("linear", "fro", 1)])
def test_ln_structured_matches_torch(kind, n, dim):
    rm, tm = _pair_layers(kind)
    rprune.ln_structured(rm, "weight", amount=0.5, n=n, dim=dim)
    tprune.ln_structured(tm, "weight", amount=0.5, n=n, dim=dim)
    _same_mask(rm, tm)


def test_iterative_pruning_builds_a_container_like_torch():
    rm, tm = _pair_layers("conv")
    for prune_mod, m in ((rprune, rm), (tprune, tm)):
        prune_mod.l1_unstructured(m, "weight", amount=0.2)
        prune_mod.ln_structured(m, "weight", amount=1, n=2, dim=0)
        prune_mod.l1_unstructured(m, "weight", amount=10)
    _same_mask(rm, tm)
    hooks = list(rm._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], rprune.PruningContainer)
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "LnStructured",
                                                    "L1Unstructured"]
    assert len(hooks[0]) == 3 and hooks[0][1].dim == 0


def test_custom_from_mask_and_identity():
    rm, tm = _pair_layers()
    mask = (np.random.RandomState(3).rand(5) > 0.5).astype(np.float32)
    rprune.custom_from_mask(rm, "bias", mask=retorch.tensor(mask))
    tprune.custom_from_mask(tm, "bias", mask=torch.tensor(mask))
    _same_mask(rm, tm, "bias")
    rprune.identity(rm, "weight")
    assert (_np(rm.weight_mask) == 1).all()
    assert rprune.is_pruned(rm)


def test_global_unstructured_matches_torch():
    (r1, t1), (r2, t2) = _pair_layers(seed=0), _pair_layers("conv", seed=4)
    rprune.l1_unstructured(r1, "weight", amount=3)  # an existing mask is respected
    tprune.l1_unstructured(t1, "weight", amount=3)
    rprune.global_unstructured([(r1, "weight"), (r2, "weight"), (r2, "bias")],
                               pruning_method=rprune.L1Unstructured, amount=0.4)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t2, "bias")],
                               pruning_method=tprune.L1Unstructured, amount=0.4)
    _same_mask(r1, t1)
    _same_mask(r2, t2)
    _same_mask(r2, t2, "bias")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        rprune.global_unstructured([(r1, "bias")], pruning_method=rprune.LnStructured, amount=1,
                                   n=2, dim=0)


def test_random_methods_prune_the_right_counts():
    rm, _ = _pair_layers("conv")
    rprune.random_unstructured(rm, "weight", amount=0.25)
    n = rm.weight.numel()
    assert int((_np(rm.weight_mask) == 0).sum()) == round(0.25 * n)
    first = _np(rm.weight_mask)
    rprune.random_structured(rm, "weight", amount=2, dim=0)
    mask = _np(rm.weight_mask)
    channel_sums = mask.reshape(4, -1).sum(1)
    assert int((channel_sums == 0).sum()) >= 2
    assert (mask[first == 0] == 0).all()  # earlier pruning stays
    rb, _ = _pair_layers()
    rprune.random_unstructured(rb, "bias", amount=2)
    assert int((_np(rb.bias_mask) == 0).sum()) == 2


def test_remove_makes_pruning_permanent():
    rm, tm = _pair_layers()
    for prune_mod, m in ((rprune, rm), (tprune, tm)):
        prune_mod.l1_unstructured(m, "weight", amount=0.5)
        prune_mod.remove(m, "weight")
    assert not rprune.is_pruned(rm)
    assert isinstance(rm.weight, retorch.nn.Parameter)
    assert list(rm.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    _assert_close(rm.weight, tm.weight, 0, 0, "pruned weight")
    assert len(rm._forward_pre_hooks) == 0
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned"):
        rprune.remove(rm, "weight")


def test_prune_method_prune_on_a_tensor():
    t = np.random.RandomState(9).randn(4, 4)
    got = rprune.L1Unstructured(amount=5).prune(retorch.tensor(t, dtype=retorch.float32))
    want = tprune.L1Unstructured(amount=5).prune(torch.tensor(t, dtype=torch.float32))
    _assert_close(got, want, 0, 0, "prune")


def test_pruning_argument_errors():
    rm, _ = _pair_layers()
    with pytest.raises(ValueError, match="should either be a float in the range \\[0, 1\\]"):
        rprune.l1_unstructured(rm, "weight", amount=1.5)
    with pytest.raises(ValueError, match="should either be a float"):
        rprune.l1_unstructured(rm, "weight", amount=-1)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        rprune.l1_unstructured(rm, "weight", amount="half")
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        rprune.l1_unstructured(rm, "weight", amount=31)
    # The failed attempt rolled the reparametrization back.
    assert "weight" in rm._parameters and "weight_orig" not in rm._parameters
    with pytest.raises(ValueError, match="Structured pruning can only be applied to"):
        rprune.ln_structured(rm, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2 for tensor of size"):
        rprune.ln_structured(rm, "weight", amount=1, n=2, dim=2)
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        method = rprune.Identity()
        method._tensor_name = "weight"
        rprune.PruningContainer(method).add_pruning_method(object())
    other = rprune.Identity()
    other._tensor_name = "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter"):
        rprune.PruningContainer(method).add_pruning_method(other)


def test_prune_names():
    assert sorted(n for n in dir(tprune) if not n.startswith("_") and n not in (
        "ABC", "Iterable", "Tuple", "abstractmethod", "numbers", "torch")) == \
        sorted(rprune.__all__)


def test_pruned_module_survives_deepcopy_and_to():
    import copy
    rm, _ = _pair_layers()
    rprune.l1_unstructured(rm, "weight", amount=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = copy.deepcopy(rm).double()
    x = retorch.randn(2, 6, dtype=retorch.float64)
    assert c(x).dtype == retorch.float64
    _assert_close(c.weight, rm.weight.to(retorch.float64), 0, 0, "copied")
