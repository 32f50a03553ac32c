"""optim.LBFGS against torch.optim.LBFGS: from the same start, every step(closure) leaves the same
parameters, returns the same loss, calls the closure as often and keeps the same state, with the
fixed step and with the strong Wolfe line search; state_dict round trips and refused input."""
import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(5)
X = RNG.randn(12, 4)
Y = RNG.randn(12, 3)
W0 = RNG.randn(3, 4)
B0 = RNG.randn(3)
Z0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.1])


def least_squares(lib, dt):
    """A linear regression over two parameters, plus one the loss never uses (no grad)."""
    w = lib.nn.Parameter(lib.tensor(W0, dtype=dt))
    b = lib.nn.Parameter(lib.tensor(B0, dtype=dt))
    unused = lib.nn.Parameter(lib.ones(2, dtype=dt))
    x, y = lib.tensor(X, dtype=dt), lib.tensor(Y, dtype=dt)

    def loss_fn():
        return ((x.matmul(w.t()) + b - y) ** 2).mean() + 0.01 * (w * w).sum()
    return [w, b, unused], loss_fn


def rosenbrock(lib, dt):
    """The chained Rosenbrock function of a 5-vector split over two parameters."""
    a = lib.nn.Parameter(lib.tensor(Z0[:3], dtype=dt))
    c = lib.nn.Parameter(lib.tensor(Z0[3:], dtype=dt))

    def loss_fn():
        z = lib.cat([a, c])
        return (100 * (z[1:] - z[:-1] ** 2) ** 2 + (1 - z[:-1]) ** 2).sum()
    return [a, c], loss_fn


PROBLEMS = {"least_squares": least_squares, "rosenbrock": rosenbrock}


def run(lib, problem, steps, dtype="float64", **kwargs):
    """Per step: (returned loss, closure calls, flat parameters, state summary)."""
    ps, loss_fn = PROBLEMS[problem](lib, getattr(lib, dtype))
    opt = lib.optim.LBFGS(ps, **kwargs)
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss
    out = []
    for _ in range(steps):
        calls[0] = 0
        loss = opt.step(closure)
        flat = np.concatenate([p.detach().numpy().ravel() for p in ps])
        out.append((float(loss), calls[0], flat, summary(opt.state[ps[0]])))
    return out, opt, ps


def summary(state):
    """The state entries as numbers and arrays (tensors of either library become numpy)."""
    def num(v):
        return v.detach().numpy().copy() if hasattr(v, "detach") else np.asarray(v, dtype=float)
    out = {k: state[k] for k in ("func_evals", "n_iter")}
    for k in ("t", "H_diag", "prev_loss"):
        out[k] = num(state[k])
    for k in ("d", "prev_flat_grad"):
        out[k] = num(state[k])
    for k in ("old_dirs", "old_stps", "ro"):
        out[k] = [num(v) for v in state[k]]
    return out


def assert_same(got, want, rtol):
    for i, ((gl, gc, gp, gs), (wl, wc, wp, ws)) in enumerate(zip(got, want)):
        assert gc == wc, f"step {i}: {gc} closure calls, torch {wc}"
        assert gs["func_evals"] == ws["func_evals"] and gs["n_iter"] == ws["n_iter"], i
        np.testing.assert_allclose(gl, wl, rtol=rtol, atol=1e-14, err_msg=f"loss, step {i}")
        np.testing.assert_allclose(gp, wp, rtol=rtol, atol=1e-13, err_msg=f"params, step {i}")
        for k in ("t", "H_diag", "prev_loss", "d", "prev_flat_grad"):
            np.testing.assert_allclose(gs[k], ws[k], rtol=rtol, atol=1e-12,
                                       err_msg=f"state {k}, step {i}")
        for k in ("old_dirs", "old_stps", "ro"):
            assert len(gs[k]) == len(ws[k]), (k, i)
            for g, w in zip(gs[k], ws[k]):
                np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12,
                                           err_msg=f"state {k}, step {i}")


CASES = [
    ("least_squares", dict(max_iter=4)),
    ("least_squares", dict(max_iter=5, line_search_fn="strong_wolfe")),
    ("least_squares", dict(lr=0.5, max_iter=6, history_size=2)),
    ("rosenbrock", dict(max_iter=6, lr=0.2)),
    ("rosenbrock", dict(max_iter=8, line_search_fn="strong_wolfe")),
    ("rosenbrock", dict(max_iter=10, history_size=3, line_search_fn="strong_wolfe")),
    ("rosenbrock", dict(max_iter=20, max_eval=12, line_search_fn="strong_wolfe")),
]


@pytest.mark.parametrize("problem,kwargs", CASES)
def test_steps_match_torch(problem, kwargs):
    want, _, _ = run(torch, problem, 5, **kwargs)
    got, opt, _ = run(retorch, problem, 5, **kwargs)
    assert_same(got, want, rtol=1e-10)
    assert isinstance(opt, retorch.optim.Optimizer)


def test_float32_follows_torch():
    kwargs = dict(max_iter=5, line_search_fn="strong_wolfe")
    want, _, _ = run(torch, "rosenbrock", 2, dtype="float32", **kwargs)
    got, _, _ = run(retorch, "rosenbrock", 2, dtype="float32", **kwargs)
    for (gl, gc, gp, _), (wl, wc, wp, _) in zip(got, want):
        assert gc == wc
        np.testing.assert_allclose(gp, wp, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gl, wl, rtol=1e-4)


def test_converged_start_returns_after_one_evaluation():
    for lib in (torch, retorch):
        p = lib.nn.Parameter(lib.zeros(3, dtype=lib.float64))
        opt = lib.optim.LBFGS([p])

        def closure():
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss
        assert float(opt.step(closure)) == 0.0
        assert opt.state[p]["func_evals"] == 1 and opt.state[p]["n_iter"] == 0


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_state_dict_round_trip_continues_like_torch(line_search_fn):
    kwargs = dict(max_iter=3, line_search_fn=line_search_fn)
    want, _, _ = run(torch, "rosenbrock", 3, **kwargs)
    _, opt, ps = run(retorch, "rosenbrock", 2, **kwargs)
    saved = opt.state_dict()
    assert len(saved["param_groups"]) == 1 and saved["param_groups"][0]["max_iter"] == 3
    assert sorted(saved["state"][0]) == sorted(
        ["func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
         "prev_flat_grad", "prev_loss", "al"])
    fresh, loss_fn = rosenbrock(retorch, retorch.float64)
    with retorch.no_grad():
        for f, p in zip(fresh, ps):
            f.copy_(p)
    opt2 = retorch.optim.LBFGS(fresh, max_iter=99, line_search_fn=line_search_fn)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["max_iter"] == 3
    assert opt2.state[fresh[0]]["old_dirs"] is not saved["state"][0]["old_dirs"]

    def closure():
        opt2.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss
    loss = opt2.step(closure)
    np.testing.assert_allclose(float(loss), want[2][0], rtol=1e-10)
    np.testing.assert_allclose(np.concatenate([p.detach().numpy() for p in fresh]), want[2][2],
                               rtol=1e-10)
    assert opt2.state[fresh[0]]["func_evals"] == want[2][3]["func_evals"]


def test_errors():
    p = retorch.nn.Parameter(retorch.zeros(2))
    q = retorch.nn.Parameter(retorch.zeros(2))
    tp = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(TypeError):  # torch: step() missing 'closure'
        torch.optim.LBFGS([tp]).step()
    with pytest.raises(TypeError, match="requires a closure"):
        retorch.optim.LBFGS([p]).step()
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        torch.optim.LBFGS([{"params": [tp]}, {"params": [torch.nn.Parameter(torch.zeros(1))]}])
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        retorch.optim.LBFGS([{"params": [p]}, {"params": [q]}])
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        retorch.optim.LBFGS([p]).add_param_group({"params": [q]})
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        retorch.optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(ValueError, match="empty parameter list"):
        retorch.optim.LBFGS([])
