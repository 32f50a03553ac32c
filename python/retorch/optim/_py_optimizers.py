"""Optimizers written in Python the way torch.optim writes them (param groups as dicts, per-
parameter state dicts, updates under no_grad): Adadelta, Adamax, NAdam, RAdam, Rprop and ASGD,
beside the C++ ones. The Python schedulers (LambdaLR, ...) drive them; the C++ schedulers need a
C++ optimizer and say so."""
import math
from collections import defaultdict

from .. import _C
from .._C import Tensor
from . import Optimizer  # defined before optim/__init__.py imports this module

__all__ = ["Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]


class _PyOptimizer(Optimizer):
    """torch.optim.Optimizer's protocol in Python (retorch's Optimizer wraps a C++ one);
    subclasses give their defaults and _update(p, grad, state, group)."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        groups = self._groups_of(params)
        self.param_groups = []
        self.state = defaultdict(dict)
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        group = dict(param_group)
        group["params"] = self._check_params(group)
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad.zero_()

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from ..autograd import enable_grad
            with enable_grad():
                loss = closure()
        from .. import no_grad
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad
                    if group.get("maximize", False):
                        g = -g
                    if group.get("weight_decay", 0):
                        g = g.add(p, alpha=group["weight_decay"])
                    self._update(p, g, self.state[p], group)
        return loss

    def state_dict(self):
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        params = [p for g in self.param_groups for p in g["params"]]
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            self.state[params[int(i)]] = {k: (v.clone() if isinstance(v, Tensor) else v)
                                          for k, v in s.items()}



def _adadelta_defaults(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                       maximize=False, differentiable=False):
    return dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)


def _adadelta(self, p, g, state, group):
    if not state:
        state["step"] = 0
        state["square_avg"] = _C.zeros_like(p)
        state["acc_delta"] = _C.zeros_like(p)
    rho, eps = group["rho"], group["eps"]
    state["step"] += 1
    sq, acc = state["square_avg"], state["acc_delta"]
    sq.mul_(rho).addcmul_(g, g, value=1 - rho)
    delta = (acc + eps).sqrt().div_((sq + eps).sqrt()).mul_(g)
    acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    p.add_(delta, alpha=-group["lr"])


def _adamax_defaults(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                     maximize=False, differentiable=False):
    return dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize)


def _adamax(self, p, g, state, group):
    if not state:
        state["step"] = 0
        state["exp_avg"] = _C.zeros_like(p)
        state["exp_inf"] = _C.zeros_like(p)
    b1, b2 = group["betas"]
    state["step"] += 1
    m, u = state["exp_avg"], state["exp_inf"]
    m.lerp_(g, 1 - b1)
    u.copy_(_C.maximum(u * b2, g.abs() + group["eps"]))
    clr = group["lr"] / (1 - b1 ** state["step"])
    p.addcdiv_(m, u, value=-clr)


def _nadam_defaults(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                    momentum_decay=4e-3, foreach=None, *, differentiable=False):
    return dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                momentum_decay=momentum_decay)


def _nadam(self, p, g, state, group):
    if not state:
        state["step"] = 0
        state["mu_product"] = 1.0
        state["exp_avg"] = _C.zeros_like(p)
        state["exp_avg_sq"] = _C.zeros_like(p)
    b1, b2 = group["betas"]
    state["step"] += 1
    t, psi = state["step"], group["momentum_decay"]
    mu = b1 * (1.0 - 0.5 * 0.96 ** (t * psi))
    mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
    state["mu_product"] *= mu
    prod = state["mu_product"]
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (v / (1 - b2 ** t)).sqrt().add_(group["eps"])
    # prod * mu_next is the product of mu over steps 1..t+1, as in the paper and PyTorch 2;
    # PyTorch 1.13 multiplied mu in twice there (mu_product * mu * mu_next).
    p.addcdiv_(g, denom, value=-group["lr"] * (1 - mu) / (1 - prod))
    p.addcdiv_(m, denom, value=-group["lr"] * mu_next / (1 - prod * mu_next))


def _radam_defaults(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                    differentiable=False):
    return dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


def _radam(self, p, g, state, group):
    if not state:
        state["step"] = 0
        state["exp_avg"] = _C.zeros_like(p)
        state["exp_avg_sq"] = _C.zeros_like(p)
    b1, b2 = group["betas"]
    state["step"] += 1
    t = state["step"]
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    corrected = m / bc1
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * (b2 ** t) / bc2
    if rho_t > 5.0:
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                         ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive = math.sqrt(bc2) / (v.sqrt().add_(group["eps"]))
        p.add_(corrected * group["lr"] * adaptive * rect * -1.0)
    else:
        p.add_(corrected * group["lr"] * -1.0)


def _rprop_defaults(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), foreach=None, *,
                    maximize=False, differentiable=False):
    return dict(lr=lr, etas=etas, step_sizes=step_sizes, maximize=maximize)


def _rprop(self, p, g, state, group):
    if not state:
        state["step"] = 0
        state["prev"] = _C.zeros_like(p)
        state["step_size"] = _C.full_like(g, group["lr"])
    etaminus, etaplus = group["etas"]
    lo, hi = group["step_sizes"]
    state["step"] += 1
    sign = (g * state["prev"]).sign()
    factor = _C.where(sign > 0, _C.full_like(sign, etaplus),
                      _C.where(sign < 0, _C.full_like(sign, etaminus), _C.ones_like(sign)))
    step = state["step_size"]
    step.mul_(factor).clamp_(lo, hi)
    g = _C.where(sign < 0, _C.zeros_like(g), g)
    p.addcmul_(g.sign(), step, value=-1)
    state["prev"].copy_(g)


def _asgd_defaults(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, *,
                   maximize=False, differentiable=False):
    return dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                maximize=maximize)


def _asgd(self, p, g, state, group):
    if not state:
        state["step"] = 0
        state["eta"] = group["lr"]
        state["mu"] = 1.0
        state["ax"] = _C.zeros_like(p)
    state["step"] += 1
    p.mul_(1 - group["lambd"] * state["eta"])
    p.add_(g, alpha=-state["eta"])
    if state["mu"] != 1:
        state["ax"].add_((p - state["ax"]) * state["mu"])
    else:
        state["ax"].copy_(p)
    state["eta"] = group["lr"] / ((1 + group["lambd"] * group["lr"] * state["step"]) **
                                  group["alpha"])
    state["mu"] = 1 / max(1, state["step"] - group["t0"])


def _optimizer(name, defaults, update):
    """A _PyOptimizer subclass named like torch's, taking torch's arguments."""
    def __init__(self, params, *args, **kwargs):
        _PyOptimizer.__init__(self, params, defaults(*args, **kwargs))
    return type(name, (_PyOptimizer,), {"__init__": __init__, "_update": update,
                                         "__doc__": f"torch.optim.{name}.",
                                         "__module__": __name__})


Adadelta = _optimizer("Adadelta", _adadelta_defaults, _adadelta)
Adamax = _optimizer("Adamax", _adamax_defaults, _adamax)
NAdam = _optimizer("NAdam", _nadam_defaults, _nadam)
RAdam = _optimizer("RAdam", _radam_defaults, _radam)
Rprop = _optimizer("Rprop", _rprop_defaults, _rprop)
ASGD = _optimizer("ASGD", _asgd_defaults, _asgd)
