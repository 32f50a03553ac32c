"""LR schedulers written in Python over the optimizers' param groups (whose "lr" writes through
to the C++ optimizer): LambdaLR, MultiplicativeLR, ConstantLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR and ChainedScheduler, with torch's step semantics
(an initial step at construction, last_epoch counting steps, chainable forms reading the
current lr)."""
import math
import types
import warnings

__all__ = ["LambdaLR", "MultiplicativeLR", "ConstantLR", "PolynomialLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "ChainedScheduler"]


def _check_optimizer(optimizer):
    from . import Optimizer
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class _PyScheduler:
    """torch's LRScheduler protocol: base_lrs from each group's initial_lr, get_lr() per step."""

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group["initial_lr"] = group["lr"]
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self.step()

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        return self._last_lr

    def step(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated; call "
                          "`scheduler.step()` without it.", UserWarning)
            self.last_epoch = epoch
            values = self._closed_form() if hasattr(self, "_closed_form") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(_PyScheduler):
    """lr = initial_lr * lr_lambda(epoch), one lambda or one per param group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [f.__dict__.copy() if not isinstance(f, types.FunctionType)
                               else None for f in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lambdas
        for f, s in zip(self.lr_lambdas, lambdas):
            if s is not None:
                f.__dict__.update(s)


class MultiplicativeLR(LambdaLR):
    """lr *= lr_lambda(epoch) at each step after the first."""

    def get_lr(self):
        if self.last_epoch > 0:
            return [g["lr"] * f(self.last_epoch)
                    for f, g in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return [g["lr"] for g in self.optimizer.param_groups]


class ConstantLR(_PyScheduler):
    """lr * factor until total_iters steps, then lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1, verbose=False):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = [g["lr"] for g in self.optimizer.param_groups]
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _closed_form(self):
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class PolynomialLR(_PyScheduler):
    """lr decays by (1 - epoch / total_iters) ** power to 0 at total_iters."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1, verbose=False):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = [g["lr"] for g in self.optimizer.param_groups]
        if self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return lrs
        factor = ((1.0 - self.last_epoch / self.total_iters) /
                  (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * factor for lr in lrs]

    def _closed_form(self):
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) **
                self.power for base in self.base_lrs]


class CosineAnnealingWarmRestarts(_PyScheduler):
    """Cosine annealing from initial_lr to eta_min over T_i steps, restarting with
    T_i *= T_mult (SGDR)."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base - self.eta_min) *
                (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class CyclicLR(_PyScheduler):
    """Cyclical learning rates (triangular, triangular2, exp_range or a scale_fn) between
    base_lr and max_lr, and momentum cycled the other way when the optimizer has one."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1,
                 verbose=False):
        _check_optimizer(optimizer)
        n = len(optimizer.param_groups)
        as_list = (lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * n)
        base_lrs = as_list(base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = as_list(max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else (
            "iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            keys = optimizer.param_groups[0].keys() if n else []
            if "momentum" not in keys and "betas" not in keys:  # betas: as torch 2 allows
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self._use_beta1 = "betas" in keys
            self.base_momentums = as_list(base_momentum)
            self.max_momentums = as_list(max_momentum)
            if last_epoch == -1:
                for m, group in zip(self.base_momentums, optimizer.param_groups):
                    self._set_momentum(group, m)
        super().__init__(optimizer, last_epoch)  # base_lrs: the groups' initial_lr = base_lr
        self.base_lrs = base_lrs

    def _set_momentum(self, group, m):
        if self._use_beta1:
            group["betas"] = (m, group["betas"][1])
        else:
            group["momentum"] = m

    def _scale(self, x):
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else \
            (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base + (top - base) * scale_factor * self._scale(at)
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                self._set_momentum(group, hi - (hi - lo) * scale_factor * self._scale(at))
        return lrs

class ChainedScheduler:
    """Steps several schedulers together, each on the lr the previous left."""

    def __init__(self, schedulers):
        self._schedulers = list(schedulers)
        self.optimizer = self._schedulers[0].optimizer
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self):
        return self._last_lr
