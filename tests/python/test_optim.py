"""retorch.optim against torch.optim: optimizer steps, LR schedules, state dicts, errors."""
import numpy as np
import pytest
import torch

import retorch

DTYPES = {"float32": (np.float32, 2e-6), "float64": (np.float64, 1e-12)}
STEPS = 12

OPTIMIZER_CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.01)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True, betas=(0.5, 0.9))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, maximize=True, eps=1e-4)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]


def _case_id(case):
    name, kw = case
    return name + "-" + "-".join("{}={}".format(k, v) for k, v in kw.items())


def _make_pair(rng, np_dtype, shapes=((3, 4), (5,))):
    init = [rng.standard_normal(s).astype(np_dtype) for s in shapes]
    t = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    r = [retorch.tensor(a.copy(), requires_grad=True) for a in init]
    return t, r


def _set_grads(t_params, r_params, rng, np_dtype, skip=()):
    for i, (pt, pr) in enumerate(zip(t_params, r_params)):
        if i in skip:
            pt.grad = None
            pr.grad = None
            continue
        g = rng.standard_normal(tuple(pt.shape)).astype(np_dtype)
        pt.grad = torch.tensor(g.copy())
        pr.grad = retorch.tensor(g.copy())


def _assert_close(t_params, r_params, rtol):
    for pt, pr in zip(t_params, r_params):
        a = pt.detach().numpy()
        b = pr.detach().numpy()
        np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", OPTIMIZER_CASES, ids=_case_id)
def test_optimizer_matches_torch(case, dtype, rng):
    name, kw = case
    np_dtype, rtol = DTYPES[dtype]
    t_params, r_params = _make_pair(rng, np_dtype)
    t_opt = getattr(torch.optim, name)(t_params, **kw)
    r_opt = getattr(retorch.optim, name)(r_params, **kw)
    for _ in range(STEPS):
        _set_grads(t_params, r_params, rng, np_dtype)
        t_opt.step()
        r_opt.step()
        _assert_close(t_params, r_params, rtol)


@pytest.mark.parametrize("case", OPTIMIZER_CASES, ids=_case_id)
def test_large_parameters_match_torch(case, rng):
    """The fused update loops' vector bodies, tails and thread split (Note [Vectorized updates]):
    parameters of 77,100 (two threads' shares), 1,037 and 3 floats, three steps."""
    name, kw = case
    t_params, r_params = _make_pair(rng, np.float32, shapes=((300, 257), (1037,), (3,)))
    t_opt = getattr(torch.optim, name)(t_params, **kw)
    r_opt = getattr(retorch.optim, name)(r_params, **kw)
    for _ in range(3):
        _set_grads(t_params, r_params, rng, np.float32)
        t_opt.step()
        r_opt.step()
        _assert_close(t_params, r_params, 2e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_loss_closure_and_backward(name, rng):
    x = rng.standard_normal((8, 3)).astype(np.float32)
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    kw = dict(lr=0.05, momentum=0.9) if name != "Adam" else dict(lr=0.05)
    pt = torch.tensor(w0.copy(), requires_grad=True)
    pr = retorch.tensor(w0.copy(), requires_grad=True)
    xt, xr = torch.tensor(x), retorch.tensor(x)
    t_opt = getattr(torch.optim, name)([pt], **kw)
    r_opt = getattr(retorch.optim, name)([pr], **kw)

    def closure_t():
        t_opt.zero_grad()
        loss = (xt.matmul(pt) ** 2).sum()
        loss.backward()
        return loss

    def closure_r():
        r_opt.zero_grad()
        loss = (xr.matmul(pr) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(10):
        lt = t_opt.step(closure_t)
        lr_ = r_opt.step(closure_r)
        assert abs(lt.item() - lr_.item()) <= 1e-4 * max(1.0, abs(lt.item()))
    _assert_close([pt], [pr], 1e-5)
    assert not pr.grad_fn  # the update is not recorded by autograd


@pytest.mark.parametrize("name,kw", [("SGD", dict(momentum=0.9)), ("Adam", {}),
                                     ("AdamW", {}), ("RMSprop", dict(momentum=0.5)),
                                     ("Adagrad", {})])
def test_two_param_groups_and_skipped_param(name, kw, rng):
    t_params, r_params = _make_pair(rng, np.float64, shapes=((3, 4), (5,), (2, 2)))
    t_opt = getattr(torch.optim, name)(
        [{"params": t_params[:2]}, {"params": t_params[2:], "lr": 0.003}], lr=0.05, **kw)
    r_opt = getattr(retorch.optim, name)(
        [{"params": r_params[:2]}, {"params": r_params[2:], "lr": 0.003}], lr=0.05, **kw)
    assert r_opt.param_groups[1]["lr"] == 0.003
    assert r_opt.param_groups[0]["lr"] == 0.05
    before = r_params[1].detach().numpy().copy()
    for step in range(STEPS):
        # Parameter 1 never gets a gradient: it must be left untouched (and stateless).
        _set_grads(t_params, r_params, rng, np.float64, skip=(1,))
        t_opt.step()
        r_opt.step()
        _assert_close(t_params, r_params, 1e-12)
    np.testing.assert_array_equal(r_params[1].detach().numpy(), before)
    assert not any(k.startswith("state.0.1.") for k in r_opt.state_dict())


def test_param_group_lr_assignment_reaches_cpp(rng):
    t_params, r_params = _make_pair(rng, np.float64)
    t_opt = torch.optim.SGD(t_params, lr=0.1, momentum=0.9)
    r_opt = retorch.optim.SGD(r_params, lr=0.1, momentum=0.9)
    for step in range(STEPS):
        for g in t_opt.param_groups:
            g["lr"] = 0.1 / (step + 1)
        for g in r_opt.param_groups:
            g["lr"] = 0.1 / (step + 1)
        _set_grads(t_params, r_params, rng, np.float64)
        t_opt.step()
        r_opt.step()
    _assert_close(t_params, r_params, 1e-12)
    assert r_opt.param_groups[0]["lr"] == pytest.approx(0.1 / STEPS)


def test_add_param_group_and_betas(rng):
    t_params, r_params = _make_pair(rng, np.float32)
    t_opt = torch.optim.Adam(t_params[:1], lr=0.01)
    r_opt = retorch.optim.Adam(r_params[:1], lr=0.01)
    t_opt.add_param_group({"params": t_params[1], "betas": (0.5, 0.9)})
    r_opt.add_param_group({"params": r_params[1], "betas": (0.5, 0.9)})
    assert r_opt.param_groups[1]["betas"] == (0.5, 0.9)
    assert r_opt.param_groups[1]["amsgrad"] is False
    for _ in range(STEPS):
        _set_grads(t_params, r_params, rng, np.float32)
        t_opt.step()
        r_opt.step()
    _assert_close(t_params, r_params, 2e-6)
    with pytest.raises(ValueError, match="more than one parameter group"):
        r_opt.add_param_group({"params": [r_params[0]]})


def test_zero_grad():
    p = retorch.tensor([1.0, 2.0], requires_grad=True)
    opt = retorch.optim.SGD([p], lr=0.1)
    p.grad = retorch.tensor([3.0, 4.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_state_dict_round_trip_is_exact(name, kw, dtype, rng):
    np_dtype, _ = DTYPES[dtype]
    init = [rng.standard_normal(s).astype(np_dtype) for s in ((3, 4), (5,))]
    grads = [[rng.standard_normal(a.shape).astype(np_dtype) for a in init] for _ in range(10)]
    cls = getattr(retorch.optim, name)

    def run(params, opt, steps):
        for gs in steps:
            for p, g in zip(params, gs):
                p.grad = retorch.tensor(g.copy())
            opt.step()

    straight = [retorch.tensor(a.copy(), requires_grad=True) for a in init]
    run(straight, cls(straight, **kw), grads)

    first = [retorch.tensor(a.copy(), requires_grad=True) for a in init]
    opt1 = cls(first, **kw)
    run(first, opt1, grads[:5])
    saved = {k: v.clone() for k, v in opt1.state_dict().items()}
    resumed = [p.detach().clone().requires_grad_(True) for p in first]
    opt2 = cls(resumed, **kw)
    opt2.load_state_dict(saved)
    run(resumed, opt2, grads[5:])
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_load_state_dict_errors(rng):
    p = retorch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    opt = retorch.optim.Adam([p], lr=0.01)
    p.grad = retorch.ones(3, 4, dtype=retorch.float64)
    opt.step()
    sd = opt.state_dict()
    bad = dict(sd)
    bad["state.0.0.exp_avg"] = retorch.zeros(4, dtype=retorch.float64)
    with pytest.raises(ValueError, match=r"state\.0\.0\.exp_avg.*\[4\].*\[3, 4\]"):
        opt.load_state_dict(bad)
    missing = {k: v for k, v in sd.items() if k != "param_groups.0.eps"}
    with pytest.raises(ValueError, match=r"missing keys: param_groups\.0\.eps"):
        opt.load_state_dict(missing)
    extra = dict(sd, **{"state.0.7.exp_avg": retorch.zeros(3, 4)})
    with pytest.raises(ValueError, match=r"unexpected keys: state\.0\.7\.exp_avg"):
        opt.load_state_dict(extra)


INVALID_OPTIONS = [
    ("SGD", dict(lr=-1.0), "learning rate"),
    ("SGD", dict(lr=0.1, momentum=-0.5), "momentum"),
    ("SGD", dict(lr=0.1, weight_decay=-1e-3), "weight_decay"),
    ("SGD", dict(lr=0.1, nesterov=True), "Nesterov"),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    ("Adam", dict(lr=-0.1), "learning rate"),
    ("Adam", dict(eps=-1e-8), "epsilon"),
    ("Adam", dict(betas=(1.0, 0.999)), "beta parameter at index 0"),
    ("Adam", dict(betas=(0.9, -0.1)), "beta parameter at index 1"),
    ("AdamW", dict(weight_decay=-0.01), "weight_decay"),
    ("RMSprop", dict(alpha=-0.5), "alpha"),
    ("RMSprop", dict(momentum=-0.5), "momentum"),
    ("Adagrad", dict(lr_decay=-0.5), "lr_decay"),
    ("Adagrad", dict(initial_accumulator_value=-1.0), "initial_accumulator_value"),
]


@pytest.mark.parametrize("name,kw,word", INVALID_OPTIONS)
def test_invalid_options_match_torch(name, kw, word):
    with pytest.raises(Exception) as t_err:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(Exception) as r_err:
        getattr(retorch.optim, name)([retorch.zeros(2, requires_grad=True)], **kw)
    assert type(r_err.value) is type(t_err.value)
    assert word in str(t_err.value)
    assert word in str(r_err.value)
    assert str(r_err.value).split(":")[0] == str(t_err.value).split(":")[0]


def test_invalid_params():
    with pytest.raises(ValueError, match="empty parameter list"):
        retorch.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        retorch.optim.SGD(retorch.zeros(2, requires_grad=True), lr=0.1)
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        retorch.optim.SGD([retorch.zeros(2, requires_grad=True)])
