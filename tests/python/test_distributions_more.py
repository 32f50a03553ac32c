"""retorch.distributions' wider families, transforms, constraints and KL registrations against
torch.distributions 1.13: log_prob, cdf, icdf, entropy, moments, mode, support, expand and
validation messages from the same parameters; sample shapes, dtypes and moments; rsample
gradients (on the same draws where the pathwise derivative is known, else statistically)."""
import math

import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(7)
F32 = np.float32
LOC = RNG.randn(3, 4).astype(F32)
POS = (RNG.rand(3, 4) * 2 + 0.5).astype(F32)
POS2 = (RNG.rand(3, 4) * 2 + 0.3).astype(F32)
SMALL = (RNG.rand(3, 4) * 0.6 + 0.05).astype(F32)  # concentrations below 1
PVAL = (RNG.rand(3, 4) * 3 + 0.1).astype(F32)
UNIT = (RNG.rand(3, 4) * 0.9 + 0.05).astype(F32)
PROB = (RNG.rand(3, 4) * 0.8 + 0.1).astype(F32)
COUNTS = RNG.randint(0, 8, (3, 4)).astype(F32)
SIMPLEX = RNG.dirichlet(np.ones(4), 3).astype(F32)
MULTI = RNG.multinomial(10, [0.25] * 4, size=3).astype(F32)
DF = np.array([[0.5, 1.5, 2.5, 5.0], [1.0, 2.0, 3.0, 30.0], [0.8, 4.0, 7.0, 12.0]], F32)
ALPHA = np.array([[0.5, 1.0, 1.5, 2.5], [3.0, 4.0, 2.0, 6.0], [0.9, 5.0, 8.0, 2.2]], F32)
CBP = np.array([[0.2, 0.4995, 0.5004, 0.7], [0.05, 0.5, 0.95, 0.3], [0.6, 0.45, 0.51, 0.9]], F32)
QUANT = (RNG.rand(3, 4) * 0.9 + 0.05).astype(F32)
W = RNG.randn(2, 3, 2).astype(F32)


def T(m, a):
    return m.tensor(np.array(a, dtype=np.asarray(a).dtype).copy())


def D(m):
    return m.distributions


def _transformed(m, parts):
    return D(m).TransformedDistribution(D(m).Normal(T(m, LOC), T(m, POS)), parts(m))


# name: (maker(module) -> distribution, value(module) -> a point in its support)
MAKERS = {
    "Normal": (lambda m: D(m).Normal(T(m, LOC), T(m, POS)), lambda m: T(m, PVAL - 1)),
    "Laplace": (lambda m: D(m).Laplace(T(m, LOC), T(m, POS)), lambda m: T(m, PVAL - 1)),
    "Uniform": (lambda m: D(m).Uniform(T(m, LOC) - 1, T(m, LOC) + T(m, POS)),
                lambda m: T(m, LOC - 0.5)),
    "Exponential": (lambda m: D(m).Exponential(T(m, POS)), lambda m: T(m, PVAL)),
    "Bernoulli": (lambda m: D(m).Bernoulli(probs=T(m, np.where(PROB > 0.8, 0.5, PROB))),
                  lambda m: T(m, (PROB > 0.5).astype(F32))),
    "Categorical": (lambda m: D(m).Categorical(logits=T(m, LOC)), lambda m: m.tensor([3, 0, 1])),
    "OneHotCategorical": (lambda m: D(m).OneHotCategorical(probs=T(m, POS)),
                          lambda m: m.nn.functional.one_hot(m.tensor([3, 0, 1]), 4).float()),
    "MultivariateNormal": (lambda m: D(m).MultivariateNormal(
        T(m, LOC[:2, :3]), scale_tril=T(m, np.tril(POS[:3, :3]))), lambda m: T(m, PVAL[:2, :3])),
    "Gamma": (lambda m: D(m).Gamma(T(m, POS), T(m, POS2)), lambda m: T(m, PVAL)),
    "Gamma small": (lambda m: D(m).Gamma(T(m, SMALL), T(m, POS2)), lambda m: T(m, PVAL)),
    "Gamma scalar": (lambda m: D(m).Gamma(2.0, 3.0), lambda m: T(m, PVAL)),
    "Chi2": (lambda m: D(m).Chi2(T(m, POS * 3)), lambda m: T(m, PVAL)),
    "Beta": (lambda m: D(m).Beta(T(m, POS), T(m, SMALL)), lambda m: T(m, UNIT)),
    "Beta scalar": (lambda m: D(m).Beta(2.0, 0.5), lambda m: T(m, UNIT)),
    "Dirichlet": (lambda m: D(m).Dirichlet(T(m, POS)), lambda m: T(m, SIMPLEX)),
    "Dirichlet small": (lambda m: D(m).Dirichlet(T(m, np.concatenate([SMALL[:2], POS[2:]]))),
                        lambda m: T(m, SIMPLEX)),
    "StudentT": (lambda m: D(m).StudentT(T(m, DF), T(m, LOC), T(m, POS)),
                 lambda m: T(m, PVAL - 1)),
    "StudentT df": (lambda m: D(m).StudentT(T(m, DF)), lambda m: T(m, PVAL - 1)),
    "Cauchy": (lambda m: D(m).Cauchy(T(m, LOC), T(m, POS)), lambda m: T(m, PVAL - 1)),
    "HalfCauchy": (lambda m: D(m).HalfCauchy(T(m, POS)), lambda m: T(m, PVAL)),
    "HalfNormal": (lambda m: D(m).HalfNormal(T(m, POS)), lambda m: T(m, PVAL)),
    "LogNormal": (lambda m: D(m).LogNormal(T(m, LOC), T(m, POS)), lambda m: T(m, PVAL)),
    "Gumbel": (lambda m: D(m).Gumbel(T(m, LOC), T(m, POS)), lambda m: T(m, PVAL - 1)),
    "Gumbel scalar": (lambda m: D(m).Gumbel(1.0, 2.0), lambda m: T(m, PVAL - 1)),
    "Pareto": (lambda m: D(m).Pareto(T(m, POS), T(m, ALPHA)), lambda m: T(m, POS + PVAL)),
    "Poisson": (lambda m: D(m).Poisson(T(m, POS * 3)), lambda m: T(m, COUNTS)),
    "Binomial": (lambda m: D(m).Binomial(10, probs=T(m, PROB)), lambda m: T(m, COUNTS)),
    "Binomial logits": (lambda m: D(m).Binomial(T(m, np.full((3, 4), 9, F32)), logits=T(m, LOC)),
                        lambda m: T(m, COUNTS)),
    "Binomial inhomogeneous": (lambda m: D(m).Binomial(T(m, COUNTS + 3), probs=T(m, PROB)),
                               lambda m: T(m, COUNTS)),
    "Geometric": (lambda m: D(m).Geometric(T(m, PROB)), lambda m: T(m, COUNTS)),
    "Geometric certain": (lambda m: D(m).Geometric(T(m, np.where(COUNTS > 3, 1, PROB).astype(F32))),
                          lambda m: T(m, np.where(COUNTS > 5, 0, COUNTS).astype(F32))),
    "Geometric logits": (lambda m: D(m).Geometric(logits=T(m, LOC)), lambda m: T(m, COUNTS)),
    "NegativeBinomial": (lambda m: D(m).NegativeBinomial(T(m, POS * 3), probs=T(m, PROB)),
                         lambda m: T(m, COUNTS)),
    "NegativeBinomial zero count": (lambda m: D(m).NegativeBinomial(
        T(m, np.where(COUNTS > 3, 0, POS * 3).astype(F32)), probs=T(m, PROB)),
        lambda m: T(m, np.where(COUNTS > 5, 0, COUNTS).astype(F32))),
    "NegativeBinomial logits": (lambda m: D(m).NegativeBinomial(T(m, POS), logits=T(m, LOC)),
                                lambda m: T(m, COUNTS)),
    "Multinomial": (lambda m: D(m).Multinomial(10, probs=T(m, POS)), lambda m: T(m, MULTI)),
    "Multinomial logits": (lambda m: D(m).Multinomial(10, logits=T(m, LOC)),
                           lambda m: T(m, MULTI)),
    "ContinuousBernoulli": (lambda m: D(m).ContinuousBernoulli(T(m, CBP)), lambda m: T(m, UNIT)),
    "ContinuousBernoulli logits": (lambda m: D(m).ContinuousBernoulli(logits=T(m, LOC)),
                                   lambda m: T(m, UNIT)),
    "RelaxedBernoulli": (lambda m: D(m).RelaxedBernoulli(m.tensor(0.7), probs=T(m, PROB)),
                         lambda m: T(m, UNIT)),
    "RelaxedOneHotCategorical": (lambda m: D(m).RelaxedOneHotCategorical(
        m.tensor(0.5), logits=T(m, LOC)), lambda m: T(m, SIMPLEX)),
    "LowRankMultivariateNormal": (lambda m: D(m).LowRankMultivariateNormal(
        T(m, LOC[:2, :3]), T(m, W), T(m, POS[:2, :3])), lambda m: T(m, PVAL[:2, :3])),
    "LowRankMultivariateNormal broadcast": (lambda m: D(m).LowRankMultivariateNormal(
        T(m, LOC[0, :3]), T(m, W[:, :, :1]), T(m, POS[0, :3])), lambda m: T(m, PVAL[:, :3])),
    "MixtureSameFamily": (lambda m: D(m).MixtureSameFamily(
        D(m).Categorical(logits=T(m, LOC)), D(m).Normal(T(m, LOC), T(m, POS))),
        lambda m: T(m, PVAL[:, 0])),
    "MixtureSameFamily event": (lambda m: D(m).MixtureSameFamily(
        D(m).Categorical(logits=T(m, LOC[0])),
        D(m).Independent(D(m).Normal(T(m, LOC.T[:, :2]), T(m, POS.T[:, :2])), 1)),
        lambda m: T(m, PVAL[:, :2])),
    "Transformed affine-exp": (lambda m: _transformed(m, lambda m: [
        D(m).AffineTransform(1.0, 2.0), D(m).ExpTransform()]), lambda m: T(m, PVAL)),
    "Transformed tanh": (lambda m: _transformed(m, lambda m: D(m).TanhTransform()),
                         lambda m: T(m, UNIT * 2 - 1)),
    "Transformed sigmoid-flip": (lambda m: _transformed(m, lambda m: [
        D(m).SigmoidTransform(), D(m).AffineTransform(0.0, -1.0)]), lambda m: T(m, -UNIT)),
    "Transformed stick-breaking": (lambda m: D(m).TransformedDistribution(
        D(m).Normal(T(m, LOC[:, :3]), T(m, POS[:, :3])), D(m).StickBreakingTransform()),
        lambda m: T(m, SIMPLEX)),
    "Independent Gamma": (lambda m: D(m).Independent(D(m).Gamma(T(m, POS), T(m, POS2)), 1),
                          lambda m: T(m, PVAL)),
}


def _same(got, want, what, rtol=1e-4, atol=1e-5):
    assert str(got.dtype) == str(want.dtype), f"{what}: dtype {got.dtype} vs {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {got.shape} vs {want.shape}"
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol,
                               atol=atol, err_msg=what)


def _both(r, t, fn, what, **tol):
    """fn on both distributions: equal values, or the same exception type from both."""
    try:
        want = fn(t)
    except (NotImplementedError, ValueError) as e:
        with pytest.raises(type(e)):
            fn(r)
        return
    _same(fn(r), want, what, **tol)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_matches_torch(name):
    make, value = MAKERS[name]
    t, r = make(torch), make(retorch)
    assert tuple(r.batch_shape) == tuple(t.batch_shape)
    assert tuple(r.event_shape) == tuple(t.event_shape)
    assert r.has_rsample == t.has_rsample and r.has_enumerate_support == t.has_enumerate_support
    assert repr(r.support) == repr(t.support)
    assert {k: repr(c) for k, c in r.arg_constraints.items()} == \
        {k: repr(c) for k, c in t.arg_constraints.items()}
    for attr in ("mean", "mode", "variance", "stddev"):
        _both(r, t, lambda d: getattr(d, attr), f"{name}.{attr}")
    _both(r, t, lambda d: d.log_prob(value(retorch if d is r else torch)), f"{name}.log_prob")
    _both(r, t, lambda d: d.cdf(value(retorch if d is r else torch)), f"{name}.cdf")
    _both(r, t, lambda d: d.icdf(T(retorch if d is r else torch, QUANT)), f"{name}.icdf",
          rtol=2e-4)
    _both(r, t, lambda d: d.entropy(), f"{name}.entropy")
    _both(r, t, lambda d: d.enumerate_support(), f"{name}.enumerate_support")
    _both(r, t, lambda d: d.enumerate_support(False), f"{name}.enumerate_support(False)")


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_sample_shapes_dtypes_and_support(name):
    make, _ = MAKERS[name]
    t, r = make(torch), make(retorch)
    for shape in ((), (5,), (2, 3)):
        got, want = r.sample(shape), t.sample(shape)
        assert tuple(got.shape) == tuple(want.shape), (shape, got.shape, want.shape)
        assert str(got.dtype) == str(want.dtype)
        assert not got.requires_grad
        if name != "RelaxedOneHotCategorical":  # exp of float32 log-probs: sum off by > 1e-6
            assert bool(r.support.check(got).all()), got
        if r.has_rsample:
            assert tuple(r.rsample(shape).shape) == tuple(want.shape)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_expand_matches_torch(name):
    make, _ = MAKERS[name]
    t, r = make(torch), make(retorch)
    shape = (2,) + tuple(t.batch_shape)
    te, re = t.expand(shape), r.expand(shape)
    assert type(re) is type(r) and tuple(re.batch_shape) == shape
    assert tuple(re.event_shape) == tuple(te.event_shape)
    value = te.sample()
    _same(re.log_prob(T(retorch, value.numpy())), te.log_prob(value), f"{name} expanded log_prob")
    _both(re, te, lambda d: d.mean, f"{name} expanded mean")
    assert tuple(re.sample((3,)).shape) == tuple(te.sample((3,)).shape)
    assert re._validate_args == te._validate_args


# ---------------------------------------------------------------- sample moments

MOMENT = {  # light-tailed parameters (shape (2,)) whose sample mean and variance settle fast
    "Gamma": lambda m: D(m).Gamma(T(m, [0.4, 3.0]), T(m, [2.0, 0.5])),
    "Chi2": lambda m: D(m).Chi2(T(m, [1.0, 6.0])),
    "Beta": lambda m: D(m).Beta(T(m, [0.5, 3.0]), T(m, [2.0, 1.5])),
    "Dirichlet": lambda m: D(m).Dirichlet(T(m, [0.3, 1.0, 4.0])),
    "StudentT": lambda m: D(m).StudentT(T(m, [8.0, 12.0]), T(m, [1.0, -2.0]), T(m, [0.5, 2.0])),
    "HalfNormal": lambda m: D(m).HalfNormal(T(m, [0.5, 2.0])),
    "LogNormal": lambda m: D(m).LogNormal(T(m, [0.0, 1.0]), T(m, [0.25, 0.5])),
    "Gumbel": lambda m: D(m).Gumbel(T(m, [0.0, 3.0]), T(m, [1.0, 0.5])),
    "Pareto": lambda m: D(m).Pareto(T(m, [1.0, 2.0]), T(m, [8.0, 12.0])),
    "Poisson": lambda m: D(m).Poisson(T(m, [0.5, 30.0])),
    "Binomial": lambda m: D(m).Binomial(T(m, [5.0, 100.0]), T(m, [0.3, 0.6])),
    "Geometric": lambda m: D(m).Geometric(T(m, [0.3, 0.8])),
    "NegativeBinomial": lambda m: D(m).NegativeBinomial(T(m, [3.0, 10.0]), T(m, [0.2, 0.6])),
    "Multinomial": lambda m: D(m).Multinomial(7, T(m, [0.2, 0.3, 0.5])),
    "ContinuousBernoulli": lambda m: D(m).ContinuousBernoulli(T(m, [0.2, 0.5])),
    "LowRankMultivariateNormal": lambda m: D(m).LowRankMultivariateNormal(
        T(m, [1.0, -1.0]), T(m, [[1.0], [0.5]]), T(m, [0.3, 0.2])),
    "MixtureSameFamily": lambda m: D(m).MixtureSameFamily(
        D(m).Categorical(T(m, [0.3, 0.7])), D(m).Normal(T(m, [-2.0, 2.0]), T(m, [0.5, 1.0]))),
}


def _check_sample_moments(make, name):
    """40,000 seeded draws of make(retorch): their mean within 6 standard errors of torch's mean,
    their variance within 8% of torch's variance."""
    retorch.manual_seed(1234)
    n = 40000
    t, r = make(torch), make(retorch)
    x = r.sample((n,)).double().numpy()
    mean, var = t.mean.double().numpy(), t.variance.double().numpy()
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 6 * np.sqrt(var / n),
                                 err_msg=f"{name} mean")
    np.testing.assert_allclose(x.var(0), var, rtol=0.08, err_msg=f"{name} variance")


@pytest.mark.parametrize("name", sorted(MOMENT))
def test_sample_moments(name):
    _check_sample_moments(MOMENT[name], name)


def test_relaxed_samples_approach_their_discrete_limits():
    retorch.manual_seed(8)
    n = 40000
    d = retorch.distributions
    logits = retorch.tensor([0.0, 1.0, -2.0])
    x = d.RelaxedBernoulli(retorch.tensor(0.02), logits=logits).sample((n,)).numpy()
    np.testing.assert_allclose(x.mean(0), 1 / (1 + np.exp(-logits.numpy())), atol=0.015)
    assert ((x < 0.01) | (x > 0.99)).mean() > 0.95
    y = d.RelaxedOneHotCategorical(retorch.tensor(0.02), logits=logits).sample((n,)).numpy()
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(y.mean(0), np.exp(logits.numpy()) / np.exp(logits.numpy()).sum(),
                               atol=0.015)


def test_gamma_samples_pass_kolmogorov_smirnov_against_torchs_gammainc():
    retorch.manual_seed(3)
    n = 200000
    for conc in (0.05, 0.7, 1.0, 5.0, 60.0):
        x = retorch.distributions.Gamma(retorch.tensor(conc, dtype=retorch.float64), 1.0) \
            .sample((n,)).numpy()
        cdf = torch.special.gammainc(torch.tensor(conc, dtype=torch.float64),
                                     torch.tensor(np.sort(x))).numpy()
        ecdf = np.arange(1, n + 1) / n
        ks = max(np.abs(cdf - ecdf).max(), np.abs(cdf - ecdf + 1.0 / n).max())
        assert ks < 1.95 / math.sqrt(n), (conc, ks)  # rejects at the 0.1% level


# ---------------------------------------------------------------- rsample gradients

def test_gamma_rsample_gradient_is_torchs_standard_gamma_grad():
    for dtype, np_dtype in ((retorch.float32, F32), (retorch.float64, np.float64)):
        conc_np = np.exp(RNG.uniform(-3, 4.5, 4000)).astype(np_dtype)
        rate_np = (RNG.rand(4000) + 0.5).astype(np_dtype)
        conc = retorch.tensor(conc_np, requires_grad=True)
        rate = retorch.tensor(rate_np)
        x = retorch.distributions.Gamma(conc, rate).rsample()
        assert x.dtype == dtype
        x.sum().backward()
        std = torch.tensor(x.detach().numpy() * rate_np)
        want = torch._standard_gamma_grad(torch.tensor(conc_np), std).numpy() / rate_np
        np.testing.assert_allclose(conc.grad.numpy(), want, rtol=2e-4, atol=1e-6)


def test_standard_gamma_grad_helper_matches_torch_on_a_grid():
    from retorch.distributions.gamma import _standard_gamma_grad
    a, x = np.meshgrid(np.geomspace(0.01, 200, 60), np.geomspace(1e-4, 400, 70))
    for np_dtype in (F32, np.float64):
        ta, tx = torch.tensor(a.astype(np_dtype)), torch.tensor(x.astype(np_dtype))
        got = _standard_gamma_grad(retorch.tensor(a.astype(np_dtype)),
                                   retorch.tensor(x.astype(np_dtype))).numpy()
        want = torch._standard_gamma_grad(ta, tx).numpy()
        ok = np.isfinite(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-7)
        assert np.array_equal(np.isfinite(got), ok)


def test_standard_gamma_edge_concentrations_like_torch():
    from retorch.distributions.gamma import _standard_gamma
    edge = [-0.9, -2.0, 0.0, math.nan, math.inf, 1e-30]
    got = _standard_gamma(retorch.tensor(edge)).numpy()
    np.testing.assert_array_equal(got, torch._standard_gamma(torch.tensor(edge)).numpy())


def _pathwise(make, params, f=lambda x: x, n=30000, seed=0):
    """Per-draw gradients of f(rsample) with respect to params (each broadcast to n draws)."""
    retorch.manual_seed(seed)
    leaves = [retorch.tensor(np.full(n, p, np.float64), requires_grad=True) for p in params]
    x = make(*leaves).rsample()
    f(x).sum().backward()
    return [leaf.grad.numpy() for leaf in leaves]


def _torch_grad(mean_fn, params):
    leaves = [torch.tensor(float(p), dtype=torch.float64, requires_grad=True) for p in params]
    return [g.item() for g in torch.autograd.grad(mean_fn(*leaves), leaves)]


STAT_GRAD = {  # make(*params) -> distribution; f of the sample; E[f] by torch in the params
    "Gamma": (lambda m, a, b: D(m).Gamma(a, b), (0.6, 1.5), lambda x: x,
              lambda a, b: a / b),
    "Gamma large": (lambda m, a, b: D(m).Gamma(a, b), (20.0, 2.0), lambda x: x * x,
                    lambda a, b: a * (a + 1) / b ** 2),
    "Chi2": (lambda m, k: D(m).Chi2(k), (3.0,), lambda x: x.sqrt(),
             lambda k: math.sqrt(2) * torch.exp(torch.lgamma((k + 1) / 2) - torch.lgamma(k / 2))),
    "Beta": (lambda m, a, b: D(m).Beta(a, b), (0.7, 2.5), lambda x: x,
             lambda a, b: a / (a + b)),
    "Beta square": (lambda m, a, b: D(m).Beta(a, b), (3.0, 1.2), lambda x: x * x,
                    lambda a, b: a * (a + 1) / ((a + b) * (a + b + 1))),
    "StudentT": (lambda m, df: D(m).StudentT(df), (9.0,), lambda x: x * x,
                 lambda df: df / (df - 2)),
    "ContinuousBernoulli": (lambda m, p: D(m).ContinuousBernoulli(p), (0.25,), lambda x: x,
                            lambda p: D(torch).ContinuousBernoulli(p).mean),
}


@pytest.mark.parametrize("name", sorted(STAT_GRAD))
def test_rsample_gradient_statistically(name):
    make, params, f, mean_fn = STAT_GRAD[name]
    grads = _pathwise(lambda *p: make(retorch, *p), params, f)
    want = _torch_grad(mean_fn, params)
    for g, w in zip(grads, want):
        se = g.std() / math.sqrt(g.size)
        assert abs(g.mean() - w) < 5 * se + 1e-3, (name, g.mean(), w, se)


def test_dirichlet_rsample_gradient_statistically():
    n = 30000
    retorch.manual_seed(5)
    conc = retorch.tensor(np.tile([0.5, 1.5, 3.0], (n, 1)), requires_grad=True)
    x = retorch.distributions.Dirichlet(conc).rsample()
    assert bool((x.sum(-1) - 1).abs().max() < 1e-12)
    x[:, 0].sum().backward()
    g = conc.grad.numpy()  # d E[x0] / d a_j = (delta_0j * a0sum - a_0) / a0sum^2
    a = np.array([0.5, 1.5, 3.0])
    want = (np.eye(3)[0] * a.sum() - a[0]) / a.sum() ** 2
    se = g.std(0) / math.sqrt(n)
    np.testing.assert_array_less(np.abs(g.mean(0) - want), 5 * se + 1e-3)


def _draw_grad(dist_fn, params, f=lambda x: x.sum()):
    leaves = [retorch.tensor(p, requires_grad=True) for p in params]
    x = dist_fn(*leaves).rsample((3,))
    f(x).backward()
    return x.detach().numpy(), [leaf.grad.numpy() for leaf in leaves]


def test_rsample_gradients_on_the_same_draw():
    d = retorch.distributions
    loc, scale = LOC[0].astype(np.float64), POS[0].astype(np.float64)
    # location-scale families: x = loc + scale * eps
    for fam in (d.Normal, d.Laplace, d.Cauchy, d.Gumbel, d.StudentT):
        args = (lambda l, s: fam(T(retorch, 6.0), l, s)) if fam is d.StudentT else fam
        x, (gl, gs) = _draw_grad(args, [loc, scale])
        np.testing.assert_allclose(gl, np.full(4, 3.0), err_msg=fam.__name__)
        np.testing.assert_allclose(gs, ((x - loc) / scale).sum(0), rtol=1e-6,
                                   err_msg=fam.__name__)
    x, (gl, gs) = _draw_grad(d.LogNormal, [loc, scale])
    np.testing.assert_allclose(gl, x.sum(0), rtol=1e-6)
    np.testing.assert_allclose(gs, (x * (np.log(x) - loc) / scale).sum(0), rtol=1e-6)
    for fam in (d.HalfNormal, d.HalfCauchy, d.Exponential):
        x, (gs,) = _draw_grad(fam, [scale])
        want = -x / scale if fam is d.Exponential else x / scale
        np.testing.assert_allclose(gs, want.sum(0), rtol=1e-6, err_msg=fam.__name__)
    x, (gs, ga) = _draw_grad(d.Pareto, [scale, scale + 1])
    np.testing.assert_allclose(gs, (x / scale).sum(0), rtol=1e-6)
    np.testing.assert_allclose(ga, (-x * np.log(x / scale) / (scale + 1)).sum(0), rtol=1e-6)
    x, (gl, gh) = _draw_grad(d.Uniform, [loc, loc + scale])
    u = (x - loc) / scale
    np.testing.assert_allclose(gl, (1 - u).sum(0), rtol=1e-6)
    np.testing.assert_allclose(gh, u.sum(0), rtol=1e-6)
    temp = T(retorch, 0.7).double()
    x, (gz, gt) = _draw_grad(lambda z, t: d.RelaxedBernoulli(t, logits=z), [loc, np.float64(0.7)])
    np.testing.assert_allclose(gz, (x * (1 - x) / 0.7).sum(0), rtol=1e-5)
    np.testing.assert_allclose(gt, (-x * (1 - x) * np.log(x / (1 - x)) / 0.7).sum(), rtol=1e-5)
    w = np.arange(4.0)
    x, (gz,) = _draw_grad(lambda z: d.RelaxedOneHotCategorical(temp, logits=z), [loc],
                          lambda x: (x * retorch.tensor(w)).sum())
    want = (x * (w - (x * w).sum(-1, keepdims=True)) / 0.7).sum(0)
    np.testing.assert_allclose(gz, want, rtol=1e-5, atol=1e-10)


def test_lowrank_mvn_rsample_gradient_statistically():
    n = 20000
    retorch.manual_seed(9)
    loc = retorch.zeros(n, 3, dtype=retorch.float64)
    cov_factor = retorch.tensor(np.tile([[1.0], [0.5], [-1.0]], (n, 1, 1)), requires_grad=True)
    cov_diag = retorch.tensor(np.tile([0.3, 0.2, 0.5], (n, 1)), requires_grad=True)
    x = retorch.distributions.LowRankMultivariateNormal(loc, cov_factor, cov_diag).rsample()
    (x * x).sum().backward()  # E[x_i^2] = W_i^2 + D_i: gradient 1 in D, 2 W in W
    for g, want in ((cov_diag.grad.numpy(), np.ones(3)),
                    (cov_factor.grad.numpy()[..., 0], np.array([2.0, 1.0, -2.0]))):
        se = g.std(0) / math.sqrt(n)
        np.testing.assert_array_less(np.abs(g.mean(0) - want), 5 * se + 1e-3)


# ---------------------------------------------------------------- validation

BAD = {
    "Gamma concentration": lambda m: D(m).Gamma(T(m, [1.0, -1.0]), 2.0),
    "Gamma rate": lambda m: D(m).Gamma(1.0, T(m, [0.0, 1.0])),
    "Chi2 df": lambda m: D(m).Chi2(T(m, [0.0, 1.0])),
    "Beta": lambda m: D(m).Beta(T(m, [1.0, 2.0]), T(m, [0.5, -0.5])),
    "Dirichlet": lambda m: D(m).Dirichlet(T(m, [[1.0, 0.0], [1.0, 1.0]])),
    "StudentT": lambda m: D(m).StudentT(T(m, [-1.0, 2.0])),
    "Cauchy": lambda m: D(m).Cauchy(0.0, -1.0),
    "HalfNormal": lambda m: D(m).HalfNormal(T(m, [1.0, -2.0])),
    "HalfCauchy": lambda m: D(m).HalfCauchy(T(m, [0.0])),
    "LogNormal": lambda m: D(m).LogNormal(T(m, [0.0, math.nan]), 1.0),
    "Gumbel": lambda m: D(m).Gumbel(0.0, T(m, [-1.0, 1.0])),
    "Pareto": lambda m: D(m).Pareto(T(m, [1.0, 1.0]), T(m, [0.0, 1.0])),
    "Poisson": lambda m: D(m).Poisson(T(m, [-0.5, 1.0])),
    "Binomial count": lambda m: D(m).Binomial(T(m, [2.5, 3.0]), probs=T(m, [0.5, 0.5])),
    "Binomial probs": lambda m: D(m).Binomial(5, probs=T(m, [1.5, 0.5])),
    "Geometric zero": lambda m: D(m).Geometric(T(m, [0.0, 0.5])),
    "Geometric range": lambda m: D(m).Geometric(T(m, [1.5, 0.5])),
    "NegativeBinomial": lambda m: D(m).NegativeBinomial(3.0, probs=T(m, [1.0, 0.5])),
    "Multinomial": lambda m: D(m).Multinomial(3, probs=T(m, [0.5, -0.5, 1.0])),
    "ContinuousBernoulli": lambda m: D(m).ContinuousBernoulli(T(m, [1.5]), validate_args=True),
    "RelaxedBernoulli": lambda m: D(m).RelaxedBernoulli(m.tensor(1.0), probs=T(m, [2.0])),
    "RelaxedOneHotCategorical": lambda m: D(m).RelaxedOneHotCategorical(
        m.tensor(1.0), probs=T(m, [[0.5, -0.5]])),
    "LowRank cov_diag": lambda m: D(m).LowRankMultivariateNormal(
        T(m, [0.0, 0.0]), T(m, [[1.0], [1.0]]), T(m, [1.0, 0.0])),
    "Uniform order": lambda m: D(m).Uniform(T(m, [0.0, 2.0]), T(m, [1.0, 1.0])),
    "Normal scalar": lambda m: D(m).Normal(0.0, -1.0),
    "MVN scale_tril": lambda m: D(m).MultivariateNormal(
        T(m, [0.0, 0.0]), scale_tril=T(m, [[1.0, 0.0], [0.5, -1.0]])),
    "MVN covariance": lambda m: D(m).MultivariateNormal(
        T(m, [0.0, 0.0]), T(m, [[1.0, 2.0], [2.0, 1.0]])),
    "Categorical dim": lambda m: D(m).Categorical(probs=m.tensor(0.5)),
    "Dirichlet dim": lambda m: D(m).Dirichlet(m.tensor(0.5)),
    "Binomial both": lambda m: D(m).Binomial(3, probs=0.5, logits=0.0),
    "Geometric none": lambda m: D(m).Geometric(),
    "MVN loc dim": lambda m: D(m).MultivariateNormal(m.tensor(0.0), m.eye(1)),
    "LowRank shape": lambda m: D(m).LowRankMultivariateNormal(
        m.zeros(3), m.ones(2, 1), m.ones(3)),
    "LowRank cov_diag shape": lambda m: D(m).LowRankMultivariateNormal(
        m.zeros(3), m.ones(3, 1), m.ones(2)),
    "Mixture type": lambda m: D(m).MixtureSameFamily(
        D(m).Bernoulli(0.5), D(m).Normal(m.zeros(2), m.ones(2))),
    "Mixture components": lambda m: D(m).MixtureSameFamily(
        D(m).Categorical(m.ones(3)), D(m).Normal(m.zeros(2), m.ones(2))),
    "Transformed transforms": lambda m: D(m).TransformedDistribution(D(m).Normal(0.0, 1.0), 3),
    "Transformed list": lambda m: D(m).TransformedDistribution(D(m).Normal(0.0, 1.0), [3]),
    "Independent ndims": lambda m: D(m).Independent(D(m).Normal(m.zeros(2), 1.0), 2),
    "Reshape numel": lambda m: D(m).ReshapeTransform((2, 3), (5,)),
    "cache_size": lambda m: D(m).ExpTransform(cache_size=2),
    "Multinomial count": lambda m: D(m).Multinomial(m.tensor(3), probs=m.ones(2)),
    "KL Binomial counts": lambda m: D(m).kl_divergence(D(m).Binomial(2, probs=m.tensor(0.5)),
                                                       D(m).Binomial(3, probs=m.tensor(0.5))),
    "KL unregistered": lambda m: D(m).kl_divergence(D(m).StudentT(3.0), D(m).Normal(0.0, 1.0)),
}


def _message(fn, module):
    with pytest.raises(Exception) as info:
        fn(module)
    text = str(info.value)
    return info.type, text


def _same_error(fn):
    want_type, want = _message(fn, torch)
    got_type, got = _message(fn, retorch)
    assert got_type is want_type
    assert got.replace("retorch.", "") == want.replace("retorch.", "")


@pytest.mark.parametrize("name", sorted(BAD))
def test_invalid_arguments_raise_like_torch(name):
    _same_error(BAD[name])


def test_validation_can_be_turned_off():
    d = retorch.distributions
    g = d.Gamma(retorch.tensor([-1.0]), 1.0, validate_args=False)
    tg = torch.distributions.Gamma(torch.tensor([-1.0]), 1.0, validate_args=False)
    assert not g._validate_args
    _same(g.log_prob(retorch.tensor([-1.0])), tg.log_prob(torch.tensor([-1.0])), "unchecked")
    d.Distribution.set_default_validate_args(False)
    try:
        d.Poisson(retorch.tensor([-1.0]))
    finally:
        d.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        d.Poisson(retorch.tensor([-1.0]))
    with pytest.raises(ValueError):
        d.Distribution.set_default_validate_args("yes")


SAMPLE_ERRORS = {
    "support": ("Gamma", lambda m: T(m, -PVAL)),
    "event shape": ("Dirichlet", lambda m: T(m, SIMPLEX[:, :3])),
    "broadcast": ("Poisson", lambda m: T(m, COUNTS[:, :2])),
    "not a tensor": ("Cauchy", lambda m: 1.0),
    "simplex": ("Dirichlet", lambda m: T(m, SIMPLEX * 2)),
    "integer": ("Binomial", lambda m: T(m, COUNTS + 0.5)),
    "count bound": ("Binomial inhomogeneous", lambda m: T(m, COUNTS + 4)),
    "pareto lower bound": ("Pareto", lambda m: T(m, POS * 0.5)),
    "multinomial": ("Multinomial", lambda m: T(m, MULTI * 2)),
    "mixture": ("MixtureSameFamily event", lambda m: T(m, PVAL[:, :3])),
}


@pytest.mark.parametrize("case", sorted(SAMPLE_ERRORS))
def test_invalid_values_raise_like_torch(case):
    name, value = SAMPLE_ERRORS[case]
    _same_error(lambda m: MAKERS[name][0](m).log_prob(value(m)))


# ---------------------------------------------------------------- KL divergence

KL_PAIRS = [
    ("Gamma", "Gamma small"), ("Chi2", "Gamma"), ("Beta", "Beta scalar"),
    ("Dirichlet", "Dirichlet small"), ("Poisson", "Poisson"), ("Geometric", "Geometric logits"),
    ("Binomial", "Binomial"), ("Cauchy", "Cauchy"), ("HalfNormal", "HalfNormal"),
    ("LogNormal", "LogNormal"), ("Gumbel", "Gumbel scalar"), ("Pareto", "Pareto"),
    ("ContinuousBernoulli", "ContinuousBernoulli logits"),
    ("LowRankMultivariateNormal", "LowRankMultivariateNormal broadcast"),
    ("LowRankMultivariateNormal", "MultivariateNormal"),
    ("MultivariateNormal", "LowRankMultivariateNormal"),
    ("Independent Gamma", "Independent Gamma"), ("Bernoulli", "Poisson"),
    ("Beta", "ContinuousBernoulli"), ("Beta", "Pareto"), ("Beta", "Exponential"),
    ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Uniform"),
    ("ContinuousBernoulli", "Pareto"), ("ContinuousBernoulli", "Exponential"),
    ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
    ("Exponential", "Beta"), ("Exponential", "Gamma"), ("Exponential", "Gumbel"),
    ("Exponential", "Normal"), ("Gamma", "Exponential"), ("Gamma", "Gumbel"),
    ("Gamma", "Normal"), ("Gamma", "Uniform"), ("Gumbel", "Normal"), ("Gumbel", "Gamma"),
    ("Laplace", "Normal"), ("Laplace", "Beta"), ("Normal", "Gumbel"), ("Normal", "Laplace"),
    ("Normal", "Gamma"), ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
    ("Pareto", "Uniform"), ("Poisson", "Binomial"), ("Uniform", "Beta"),
    ("Uniform", "ContinuousBernoulli"), ("Uniform", "Exponential"), ("Uniform", "Gamma"),
    ("Uniform", "Gumbel"), ("Uniform", "Normal"), ("Uniform", "Pareto"),
    ("Laplace", "Laplace"), ("Exponential", "Exponential"), ("Uniform", "Uniform"),
    ("HalfCauchy", "HalfCauchy"), ("Chi2", "Exponential"),
]
_NARROW = lambda m: D(m).Uniform(T(m, UNIT * 0.5), T(m, UNIT * 0.5 + 0.4))  # noqa: E731
KL_OVERRIDES = {  # (p, q): other p (and q) parameters, where the defaults give an infinite KL
    ("Uniform", "Beta"): (_NARROW,), ("Uniform", "ContinuousBernoulli"): (_NARROW,),
    ("Uniform", "Exponential"): (lambda m: D(m).Uniform(T(m, PVAL - 0.5), T(m, PVAL + 1)),),
    ("Uniform", "Gamma"): (lambda m: D(m).Uniform(T(m, PVAL - 0.5), T(m, PVAL + 1)),),
    ("Uniform", "Pareto"): (lambda m: D(m).Uniform(T(m, PVAL), T(m, PVAL + 1)),),
    ("Beta", "Uniform"): (lambda m: D(m).Beta(T(m, POS), T(m, POS2)),
                          lambda m: D(m).Uniform(T(m, LOC * 0 - 0.5), T(m, 1 + UNIT))),
}


@pytest.mark.parametrize("p,q", KL_PAIRS)
def test_kl_divergence_matches_torch(p, q):
    over = KL_OVERRIDES.get((p, q), ())
    pm, qm = (over + (MAKERS[p][0],))[0], (over[1:] + (MAKERS[q][0],))[0]
    want = torch.distributions.kl_divergence(pm(torch), qm(torch))
    got = retorch.distributions.kl_divergence(pm(retorch), qm(retorch))
    _same(got, want, f"KL({p} || {q})", rtol=2e-4, atol=2e-5)


def test_kl_dispatch_picks_the_most_specific_registration():
    d = retorch.distributions

    class MyGamma(d.Gamma):
        pass

    calls = []

    @d.register_kl(MyGamma, d.Gamma)
    def _kl_mine(p, q):
        calls.append(1)
        return retorch.zeros(())

    try:
        assert d.kl_divergence(MyGamma(2.0, 1.0), d.Chi2(3.0)).item() == 0.0
        assert calls == [1]
        assert d.kl_divergence(d.Chi2(3.0), MyGamma(2.0, 1.0)).item() != 0.0
    finally:
        from retorch.distributions import kl
        del kl._KL_REGISTRY[MyGamma, d.Gamma]
        kl._KL_MEMOIZE.clear()


# ---------------------------------------------------------------- transforms

X = RNG.randn(3, 4).astype(F32)
TRANSFORMS = {
    "Exp": (lambda m: D(m).ExpTransform(), X),
    "Affine": (lambda m: D(m).AffineTransform(T(m, LOC[0]), T(m, -POS[0])), X),
    "Affine scalar": (lambda m: D(m).AffineTransform(1.5, -2.0), X),
    "Affine event": (lambda m: D(m).AffineTransform(0.5, T(m, POS[0]), event_dim=1), X),
    "Sigmoid": (lambda m: D(m).SigmoidTransform(), X),
    "Tanh": (lambda m: D(m).TanhTransform(), X),
    "Softplus": (lambda m: D(m).SoftplusTransform(), X),
    "Power": (lambda m: D(m).PowerTransform(T(m, POS[0])), np.abs(X) + 0.1),
    "Abs": (lambda m: D(m).AbsTransform(), X),
    "Softmax": (lambda m: D(m).SoftmaxTransform(), X),
    "StickBreaking": (lambda m: D(m).StickBreakingTransform(), X),
    "LowerCholesky": (lambda m: D(m).LowerCholeskyTransform(), X[:, :3].reshape(1, 3, 3)),
    "CorrCholesky": (lambda m: D(m).CorrCholeskyTransform(), X[:, :3]),
    "Compose": (lambda m: D(m).ComposeTransform([D(m).AffineTransform(0.5, 2.0),
                                                 D(m).ExpTransform(), D(m).PowerTransform(
                                                     T(m, 0.5))]), X),
    "Compose vector": (lambda m: D(m).ComposeTransform([D(m).ExpTransform(),
                                                        D(m).StickBreakingTransform()]), X),
    "Independent": (lambda m: D(m).IndependentTransform(D(m).SigmoidTransform(), 1), X),
    "Reshape": (lambda m: D(m).ReshapeTransform((4,), (2, 2)), X),
    "Inverse exp": (lambda m: D(m).ExpTransform().inv, np.abs(X) + 0.1),
    "Cat": (lambda m: D(m).CatTransform([D(m).ExpTransform(), D(m).SigmoidTransform()], 1,
                                        [1, 3]), X),
    "Stack": (lambda m: D(m).StackTransform([D(m).ExpTransform(), D(m).TanhTransform(),
                                             D(m).AffineTransform(1.0, 3.0)], 0), X),
    "identity": (lambda m: D(m).identity_transform, X),
}


def _attr(obj, attr):
    """getattr as plain data, or the type of the error it raises."""
    try:
        value = getattr(obj, attr)
    except (NotImplementedError, ValueError) as e:
        return type(e).__name__
    return value.tolist() if hasattr(value, "tolist") else value


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_match_torch(name):
    make, x = TRANSFORMS[name]
    t, r = make(torch), make(retorch)
    tx, rx = T(torch, x), T(retorch, x)
    ty, ry = t(tx), r(rx)
    _same(ry, ty, f"{name} forward")
    _same(r.inv(ry), t.inv(ty), f"{name} inverse", rtol=2e-4, atol=2e-5)
    _both(r, t, lambda tr: tr.log_abs_det_jacobian(rx if tr is r else tx, ry if tr is r else ty),
          f"{name} log_abs_det_jacobian", rtol=2e-4, atol=2e-5)
    for c in ("domain", "codomain"):
        rc, tc = getattr(r, c), getattr(t, c)
        assert repr(rc) == repr(tc) and rc.event_dim == tc.event_dim, c
    for attr in ("sign", "event_dim", "bijective"):
        assert _attr(r, attr) == _attr(t, attr), attr
    shape = tuple(tx.shape)
    assert tuple(r.forward_shape(shape)) == tuple(t.forward_shape(torch.Size(shape)))
    yshape = tuple(ty.shape)
    assert tuple(r.inverse_shape(yshape)) == tuple(t.inverse_shape(torch.Size(yshape)))
    assert (r == make(retorch)) == (t == make(torch))
    assert repr(r) == repr(t)


def test_transform_cache_and_log_det_gradients():
    d = retorch.distributions
    t = d.ExpTransform(cache_size=1)
    x = retorch.tensor([0.5, 1.0], requires_grad=True)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert d.ExpTransform().with_cache(1)._cache_size == 1
    assert d.ExpTransform().inv.with_cache(1)._cache_size == 1
    assert d.ExpTransform()(x) is not d.ExpTransform()(x)
    # log|det J| of a bijection equals the log-abs-derivative autograd finds
    for tr in (d.SigmoidTransform(), d.TanhTransform(), d.SoftplusTransform(),
               d.AffineTransform(1.0, -3.0), d.PowerTransform(retorch.tensor(2.5))):
        x = retorch.tensor([0.2, 0.7, 1.3], dtype=retorch.float64, requires_grad=True)
        y = tr(x)
        (g,) = retorch.autograd.grad(y.sum(), [x])
        np.testing.assert_allclose(tr.log_abs_det_jacobian(x, y).detach().numpy(),
                                   np.log(np.abs(g.numpy())), rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- constraints and registry

C = retorch.distributions.constraints
CONSTRAINTS = {
    "real": lambda c: c.real, "positive": lambda c: c.positive,
    "nonnegative": lambda c: c.nonnegative, "unit_interval": lambda c: c.unit_interval,
    "simplex": lambda c: c.simplex, "boolean": lambda c: c.boolean,
    "nonnegative_integer": lambda c: c.nonnegative_integer,
    "positive_integer": lambda c: c.positive_integer,
    "integer_interval": lambda c: c.integer_interval(0, 3),
    "interval": lambda c: c.interval(-1.0, 0.5),
    "half_open_interval": lambda c: c.half_open_interval(-1.0, 0.0),
    "greater_than": lambda c: c.greater_than(0.5),
    "greater_than_eq": lambda c: c.greater_than_eq(0.0),
    "less_than": lambda c: c.less_than(0.0), "real_vector": lambda c: c.real_vector,
    "positive_definite": lambda c: c.positive_definite,
    "positive_semidefinite": lambda c: c.positive_semidefinite,
    "lower_cholesky": lambda c: c.lower_cholesky, "lower_triangular": lambda c: c.lower_triangular,
    "corr_cholesky": lambda c: c.corr_cholesky,
    "independent": lambda c: c.independent(c.positive, 1), "one_hot": lambda c: c.one_hot,
    "multinomial": lambda c: c.multinomial(4), "square": lambda c: c.square,
    "symmetric": lambda c: c.symmetric,
    "cat": lambda c: c.cat([c.positive, c.real, c.unit_interval], 1, [1, 2, 1]),
    "stack": lambda c: c.stack([c.positive, c.real, c.unit_interval, c.nonnegative], 1),
}
VALS = np.array([[0.0, 1.0, 0.25, 3.0], [-0.5, 0.5, 1.0, 0.0], [2.0, -1.0, math.nan, 1.0],
                 [0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.251]], F32)
MATS = np.stack([np.eye(4), np.tril(np.nan_to_num(VALS[:4]) + 1, -1) + np.eye(4) * 2,
                 np.nan_to_num(VALS[:4]), np.diag([1.0, 0.0, 1.0, 1.0]),
                 np.eye(4) + np.diag([2.0, 0.0, 0.0], 1) + np.diag([2.0, 0.0, 0.0], -1),
                 np.diag([0.6, 0.8, 1.0, 1.0]) + np.diag([0.8, 0.0, 0.0], -1)]).astype(F32)


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_constraints_match_torch(name):
    t, r = CONSTRAINTS[name](torch.distributions.constraints), CONSTRAINTS[name](C)
    assert repr(r) == repr(t)
    assert r.is_discrete == t.is_discrete and r.event_dim == t.event_dim
    value = MATS if t.event_dim == 2 else VALS
    got, want = r.check(T(retorch, value)), t.check(T(torch, value))
    assert got.dtype == retorch.bool
    np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_dependent_constraints():
    d = retorch.distributions
    assert C.is_dependent(C.dependent) and C.is_dependent(d.Uniform.support)
    assert C.is_dependent(d.Binomial.support) and d.Binomial.support.is_discrete
    with pytest.raises(ValueError, match="Cannot determine validity"):
        C.dependent.check(retorch.zeros(1))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        C.dependent.event_dim
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1
    u = d.Uniform(retorch.tensor([0.0]), retorch.tensor([2.0]))
    assert repr(u.support) == "Interval(lower_bound=tensor([0.]), upper_bound=tensor([2.]))"


REGISTRY = ["real", "positive", "nonnegative", "unit_interval", "simplex", "interval",
            "half_open_interval", "greater_than", "greater_than_eq", "less_than", "real_vector",
            "independent", "lower_cholesky", "corr_cholesky", "cat", "stack"]


@pytest.mark.parametrize("name", REGISTRY)
@pytest.mark.parametrize("which", ["biject_to", "transform_to"])
def test_biject_to_and_transform_to_match_torch(name, which):
    tc, rc = CONSTRAINTS[name](torch.distributions.constraints), CONSTRAINTS[name](C)
    try:
        t = getattr(torch.distributions, which)(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(retorch.distributions, which)(rc)
        return
    r = getattr(retorch.distributions, which)(rc)
    assert type(r).__name__ == type(t).__name__
    shape = {2: (2, 3, 3), 1: (2, 3)}.get(tc.event_dim, (2, 4))
    if name in ("simplex", "corr_cholesky") or (name == "lower_cholesky"):
        x = RNG.randn(*{"simplex": (2, 3 if which == "biject_to" else 4),
                        "corr_cholesky": (2, 3),
                        "lower_cholesky": (2, 3, 3)}[name]).astype(F32)
    else:
        x = RNG.randn(*shape).astype(F32)
    ry, ty = r(T(retorch, x)), t(T(torch, x))
    _same(ry, ty, f"{which}({name})")
    assert bool(rc.check(ry).all())
    if r.bijective:
        _same(r.inv(ry), t.inv(ty), f"{which}({name}).inv", rtol=1e-3, atol=1e-4)


def test_constraint_registry_errors():
    d = retorch.distributions
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        d.biject_to(C.boolean)
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        d.biject_to.register(3, lambda c: None)
    reg = d.constraint_registry.ConstraintRegistry()
    reg.register(C.positive, lambda c: d.SoftplusTransform())
    assert isinstance(reg(C.positive), d.SoftplusTransform)


def test_log_prob_gradients_match_torch():
    cases = [
        ("Gamma", lambda m, a, b: D(m).Gamma(a, b), (POS, POS2), PVAL),
        ("Beta", lambda m, a, b: D(m).Beta(a, b), (POS, SMALL), UNIT),
        ("StudentT", lambda m, a, b: D(m).StudentT(a, 0.5, b), (POS, POS2), PVAL - 1),
        ("Binomial", lambda m, a, b: D(m).Binomial(10, logits=a + b), (LOC, LOC), COUNTS),
        ("NegativeBinomial", lambda m, a, b: D(m).NegativeBinomial(a, logits=b), (POS, LOC),
         COUNTS),
        ("LowRank", lambda m, a, b: D(m).LowRankMultivariateNormal(a, b.unsqueeze(-1), b.exp()),
         (LOC, LOC), PVAL),
        ("Mixture", lambda m, a, b: D(m).MixtureSameFamily(D(m).Categorical(logits=a),
                                                           D(m).Normal(b, 1.0)),
         (LOC, LOC), PVAL[:, 0]),
    ]
    for name, make, params, value in cases:
        grads = []
        for m in (torch, retorch):
            leaves = [m.tensor(p.copy(), requires_grad=True) for p in params]
            make(m, *leaves).log_prob(T(m, value)).sum().backward()
            grads.append([leaf.grad.numpy() for leaf in leaves])
        for g, w in zip(grads[1], grads[0]):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5, err_msg=name)
