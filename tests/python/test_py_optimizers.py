"""The Python optimizers (optim/_py_optimizers.py) against torch.optim: the same parameters after
every step of a small regression, from the same start, with two param groups."""
import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(13)
W0 = RNG.randn(3, 4).astype(np.float32)
B0 = RNG.randn(3).astype(np.float32)
X = RNG.randn(16, 4).astype(np.float32)
Y = RNG.randn(16, 3).astype(np.float32)

CASES = {
    "Adadelta": dict(lr=0.5, rho=0.8, weight_decay=0.01),
    "Adamax": dict(lr=0.02, betas=(0.8, 0.95), weight_decay=0.01),
    "NAdam": dict(lr=0.01, momentum_decay=0.01),
    "RAdam": dict(lr=0.01, weight_decay=0.01),
    "Rprop": dict(lr=0.01, etas=(0.4, 1.3)),
    "ASGD": dict(lr=0.05, lambd=1e-3, t0=5, weight_decay=0.01),
}


def trajectory(lib, name, kwargs, steps=25):
    w = lib.nn.Parameter(lib.tensor(W0.copy()))
    b = lib.nn.Parameter(lib.tensor(B0.copy()))
    opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": kwargs["lr"] / 2}],
                                   **kwargs)
    x, y = lib.tensor(X), lib.tensor(Y)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((x.matmul(w.t()) + b - y) ** 2).mean()
        loss.backward()
        opt.step()
        out.append(np.concatenate([w.detach().numpy().ravel(), b.detach().numpy()]))
    return out, opt


class _NAdam2(torch.optim.Optimizer):
    """NAdam as PyTorch 2 computes it, in torch ops: 1.13's NAdam has mu_product * mu * mu_next
    where the algorithm (and PyTorch 2) has mu_product * mu_next, so 1.13 cannot be the oracle
    for that term."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                st = self.state[p]
                if not st:
                    st.update(step=0, prod=1.0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                st["step"] += 1
                t = st["step"]
                mu = b1 * (1.0 - 0.5 * 0.96 ** (t * g["momentum_decay"]))
                mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * g["momentum_decay"]))
                st["prod"] *= mu
                st["m"].mul_(b1).add_(p.grad, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                denom = st["v"].div(1 - b2 ** t).sqrt().add_(g["eps"])
                p.addcdiv_(p.grad, denom, value=-g["lr"] * (1 - mu) / (1 - st["prod"]))
                p.addcdiv_(st["m"], denom,
                           value=-g["lr"] * mu_next / (1 - st["prod"] * mu_next))


@pytest.mark.parametrize("name", sorted(CASES))
def test_steps_match_torch(name):
    if name == "NAdam":
        torch.optim.NAdam2 = _NAdam2
        try:
            want, _ = trajectory(torch, "NAdam2", CASES[name])
        finally:
            del torch.optim.NAdam2
    else:
        want, _ = trajectory(torch, name, CASES[name])
    got, opt = trajectory(retorch, name, CASES[name])
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"{name} step {i}")
    assert isinstance(opt, retorch.optim.Optimizer)


def test_state_dict_round_trip_continues_the_same_way():
    _, opt = trajectory(retorch, "NAdam", CASES["NAdam"], steps=5)
    state = opt.state_dict()
    assert sorted(state) == ["param_groups", "state"] and len(state["param_groups"]) == 2
    w = retorch.nn.Parameter(retorch.tensor(W0.copy()))
    b = retorch.nn.Parameter(retorch.tensor(B0.copy()))
    opt2 = retorch.optim.NAdam([{"params": [w]}, {"params": [b]}], lr=0.5)
    opt2.load_state_dict(state)
    assert opt2.param_groups[1]["lr"] == pytest.approx(0.005)
    assert opt2.state[w]["step"] == 5


def test_python_schedulers_drive_them_and_cpp_ones_say_why_not():
    p = retorch.nn.Parameter(retorch.zeros(2))
    opt = retorch.optim.RAdam([p], lr=0.1)
    s = retorch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
    s.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)
    with pytest.raises(TypeError, match="use LambdaLR or another Python scheduler"):
        retorch.optim.lr_scheduler.StepLR(opt, 2)
