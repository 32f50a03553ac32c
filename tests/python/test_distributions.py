"""retorch.distributions against torch.distributions: log_prob, entropy, cdf, mean, variance,
shapes and KL divergences from the same parameters and values, gradients through log_prob and
rsample, and the moments of samples."""
import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(11)
LOC = RNG.randn(3, 4).astype(np.float32)
SCALE = (RNG.rand(3, 4) + 0.5).astype(np.float32)
VAL = RNG.randn(3, 4).astype(np.float32)
P = RNG.rand(3, 4).astype(np.float32)
LOGITS = RNG.randn(2, 5).astype(np.float32)
A = RNG.randn(3, 3)
COV = (A @ A.T + 3 * np.eye(3)).astype(np.float32)
MVLOC = RNG.randn(2, 3).astype(np.float32)


def T(m, a):
    return m.tensor(np.array(a).copy())


def D(m):
    return m.distributions


MAKERS = {
    "Normal": lambda m: D(m).Normal(T(m, LOC), T(m, SCALE)),
    "Normal scalar scale": lambda m: D(m).Normal(T(m, LOC), 2.0),
    "Laplace": lambda m: D(m).Laplace(T(m, LOC), T(m, SCALE)),
    "Uniform": lambda m: D(m).Uniform(T(m, LOC) - 1, T(m, LOC) + T(m, SCALE)),
    "Exponential": lambda m: D(m).Exponential(T(m, SCALE)),
    "Bernoulli probs": lambda m: D(m).Bernoulli(probs=T(m, P)),
    "Bernoulli logits": lambda m: D(m).Bernoulli(logits=T(m, LOC)),
    "Categorical probs": lambda m: D(m).Categorical(probs=T(m, np.abs(LOGITS))),
    "Categorical logits": lambda m: D(m).Categorical(logits=T(m, LOGITS)),
    "OneHotCategorical": lambda m: D(m).OneHotCategorical(logits=T(m, LOGITS)),
    "MultivariateNormal cov": lambda m: D(m).MultivariateNormal(T(m, MVLOC), T(m, COV)),
    "MultivariateNormal tril": lambda m: D(m).MultivariateNormal(
        T(m, MVLOC), scale_tril=T(m, np.linalg.cholesky(COV).astype(np.float32))),
    "MultivariateNormal precision": lambda m: D(m).MultivariateNormal(
        T(m, MVLOC), precision_matrix=T(m, np.linalg.inv(COV).astype(np.float32))),
    "Independent Normal": lambda m: D(m).Independent(D(m).Normal(T(m, LOC), T(m, SCALE)), 1),
}
VALUES = {
    "Uniform": lambda m: T(m, LOC) + 0.3 * T(m, SCALE) - 0.5,
    "Exponential": lambda m: T(m, np.abs(VAL)),
    "Bernoulli probs": lambda m: T(m, (P > 0.5).astype(np.float32)),
    "Bernoulli logits": lambda m: T(m, (VAL > 0).astype(np.float32)),
    "Categorical probs": lambda m: m.tensor([4, 0]),
    "Categorical logits": lambda m: m.tensor([[1, 3], [0, 2], [4, 4]]),
    "OneHotCategorical": lambda m: m.nn.functional.one_hot(m.tensor([2, 1]), 5).float(),
    "MultivariateNormal cov": lambda m: T(m, VAL[:2, :3]),
    "MultivariateNormal tril": lambda m: T(m, VAL[:1, :3]),
    "MultivariateNormal precision": lambda m: T(m, VAL[:2, :3]),
}


def close(g, w, what):
    np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=2e-5, atol=2e-6,
                               err_msg=what)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_matches_torch(name):
    t, r = MAKERS[name](torch), MAKERS[name](retorch)
    assert tuple(r.batch_shape) == tuple(t.batch_shape)
    assert tuple(r.event_shape) == tuple(t.event_shape)
    value = VALUES.get(name, lambda m: T(m, VAL))
    close(r.log_prob(value(retorch)), t.log_prob(value(torch)), "log_prob")
    close(r.entropy(), t.entropy(), "entropy")
    if not name.startswith("Categorical"):
        close(r.mean, t.mean, "mean")
        close(r.variance, t.variance, "variance")
    if name.startswith("Normal"):
        close(r.cdf(T(retorch, VAL)), t.cdf(T(torch, VAL)), "cdf")
    s = r.sample((7,))
    assert tuple(s.shape) == tuple(t.sample((7,)).shape)


KL = [("Normal", "Normal scalar scale"), ("Bernoulli probs", "Bernoulli logits"),
      ("Categorical probs", "Categorical logits"),
      ("MultivariateNormal cov", "MultivariateNormal precision"),
      ("Independent Normal", "Independent Normal")]


@pytest.mark.parametrize("p,q", KL)
def test_kl_divergence_matches_torch(p, q):
    want = torch.distributions.kl_divergence(MAKERS[p](torch), MAKERS[q](torch))
    got = retorch.distributions.kl_divergence(MAKERS[p](retorch), MAKERS[q](retorch))
    close(got, want, f"KL({p} || {q})")


def test_gradients_through_log_prob_and_rsample():
    grads = []
    for m in (torch, retorch):
        loc = m.tensor(LOC.copy(), requires_grad=True)
        scale = m.tensor(SCALE.copy(), requires_grad=True)
        m.distributions.Normal(loc, scale).log_prob(T(m, VAL)).sum().backward()
        grads.append((loc.grad.numpy(), scale.grad.numpy()))
    for g, w in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    loc = retorch.tensor([1.0, 2.0], requires_grad=True)
    retorch.distributions.Normal(loc, 0.5).rsample((3,)).sum().backward()
    assert loc.grad.tolist() == [3.0, 3.0]  # d(loc + eps * scale)/d loc, three samples


def test_sample_moments():
    retorch.manual_seed(2)
    n = 20000
    d = retorch.distributions
    x = d.Normal(retorch.tensor([1.0, -2.0]), retorch.tensor([0.5, 2.0])).sample((n,))
    np.testing.assert_allclose(x.mean(0).numpy(), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(x.std(0).numpy(), [0.5, 2.0], rtol=0.03)
    c = d.Categorical(probs=retorch.tensor([0.2, 0.0, 0.8])).sample((n,))
    np.testing.assert_allclose(np.bincount(c.numpy(), minlength=3) / n, [0.2, 0.0, 0.8],
                               atol=0.02)
    mv = d.MultivariateNormal(retorch.zeros(3), retorch.tensor(COV)).sample((n,))
    np.testing.assert_allclose(np.cov(mv.numpy().T), COV, rtol=0.08, atol=0.15)
    for dist, mean in ((d.Laplace(1.0, 2.0), 1.0), (d.Uniform(-1.0, 3.0), 1.0),
                       (d.Exponential(4.0), 0.25), (d.Bernoulli(probs=0.3), 0.3)):
        assert abs(dist.sample((n,)).mean().item() - mean) < 0.06, type(dist).__name__


def test_errors_like_torch():
    d = retorch.distributions
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        d.Bernoulli(probs=0.5, logits=0.0)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        d.MultivariateNormal(retorch.zeros(2))
    with pytest.raises(NotImplementedError, match="No KL"):
        d.kl_divergence(d.Normal(0.0, 1.0), d.StudentT(3.0))  # torch: KL(Normal, Uniform) = inf
