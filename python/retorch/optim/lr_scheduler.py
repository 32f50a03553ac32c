"""retorch.optim.lr_scheduler: torch-shaped LR schedulers over the C++ ones."""
import warnings

from .. import _C

_opt = _C._optim

__all__ = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
           "SequentialLR", "OneCycleLR", "ReduceLROnPlateau"]


def _check_optimizer(optimizer):
    from . import Optimizer
    if not isinstance(optimizer, Optimizer):
        raise TypeError("{} is not an Optimizer".format(type(optimizer).__name__))
    if not hasattr(optimizer, "_cpp"):
        raise TypeError(f"this scheduler drives retorch's C++ optimizers (SGD, Adam, AdamW, "
                        f"RMSprop, Adagrad); {type(optimizer).__name__} is written in Python: "
                        f"use LambdaLR or another Python scheduler with it")


class _LRScheduler:
    """Wraps a C++ scheduler: step(), get_last_lr(), last_epoch, state_dict()."""

    def __init__(self, optimizer, cpp):
        self.optimizer = optimizer
        self._cpp = cpp

    def step(self, epoch=None):
        if epoch is None:
            self._cpp.step()
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated; "
                          "call `scheduler.step()` without it.", UserWarning)
            self._cpp.step_epoch(int(epoch))

    def get_last_lr(self):
        return list(self._cpp.get_last_lr())

    @property
    def last_epoch(self):
        return self._cpp.last_epoch

    @property
    def base_lrs(self):
        return list(self._cpp.base_lrs)

    def state_dict(self):
        return self._cpp.state_dict()

    def load_state_dict(self, state_dict):
        self._cpp.load_state_dict(dict(state_dict))


LRScheduler = _LRScheduler


class StepLR(_LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        super().__init__(optimizer, _opt.StepLR(optimizer._cpp, step_size, gamma, last_epoch))


class MultiStepLR(_LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        super().__init__(optimizer, _opt.MultiStepLR(optimizer._cpp, list(milestones), gamma,
                                                     last_epoch))


class ExponentialLR(_LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        super().__init__(optimizer, _opt.ExponentialLR(optimizer._cpp, gamma, last_epoch))


class CosineAnnealingLR(_LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0, last_epoch=-1, verbose=False):  # noqa: N803
        _check_optimizer(optimizer)
        super().__init__(optimizer, _opt.CosineAnnealingLR(optimizer._cpp, T_max, eta_min,
                                                           last_epoch))


class LinearLR(_LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        super().__init__(optimizer, _opt.LinearLR(optimizer._cpp, start_factor, end_factor,
                                                  total_iters, last_epoch))


class SequentialLR(_LRScheduler):
    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(
                    "Sequential Schedulers expects all schedulers to belong to the same "
                    "optimizer, but got schedulers at index {} to be different than the "
                    "optimizer passed in.".format(i))
        self._schedulers = list(schedulers)
        super().__init__(optimizer, _opt.SequentialLR(
            optimizer._cpp, [s._cpp for s in schedulers], list(milestones), last_epoch))


class OneCycleLR(_LRScheduler):
    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25., final_div_factor=1e4, three_phase=False,
                 last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        if total_steps is None and epochs is None and steps_per_epoch is None:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError("Expected positive integer total_steps, but got {}"
                                 .format(total_steps))
        else:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError("Expected positive integer epochs, but got {}".format(epochs))
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError("Expected positive integer steps_per_epoch, but got {}"
                                 .format(steps_per_epoch))
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError("Expected float between 0 and 1 pct_start, but got {}"
                             .format(pct_start))
        for name, v in (("base_momentum", base_momentum), ("max_momentum", max_momentum)):
            if isinstance(v, (list, tuple)):
                raise NotImplementedError("retorch OneCycleLR: {} must be one number for all "
                                          "groups".format(name))
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr]
        super().__init__(optimizer, _opt.OneCycleLR(
            optimizer._cpp, [float(v) for v in max_lrs], total_steps or 0, epochs or 0,
            steps_per_epoch or 0, pct_start, anneal_strategy, cycle_momentum, base_momentum,
            max_momentum, div_factor, final_div_factor, three_phase, last_epoch))
        self.total_steps = total_steps if total_steps is not None else epochs * steps_per_epoch


class ReduceLROnPlateau:
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        min_lrs = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr]
        self._cpp = _opt.ReduceLROnPlateau(optimizer._cpp, mode, factor, patience, threshold,
                                           threshold_mode, cooldown,
                                           [float(v) for v in min_lrs], eps)

    def step(self, metrics, epoch=None):
        if hasattr(metrics, "item"):
            metrics = metrics.item()
        self._cpp.step(float(metrics))

    def get_last_lr(self):
        return list(self._cpp.get_last_lr())

    @property
    def last_epoch(self):
        return self._cpp.last_epoch

    @property
    def best(self):
        return self._cpp.best

    @property
    def num_bad_epochs(self):
        return self._cpp.num_bad_epochs

    @property
    def cooldown_counter(self):
        return self._cpp.cooldown_counter

    @property
    def in_cooldown(self):
        return self._cpp.cooldown_counter > 0

    def state_dict(self):
        return self._cpp.state_dict()

    def load_state_dict(self, state_dict):
        self._cpp.load_state_dict(dict(state_dict))


from ._py_schedulers import *  # noqa: E402,F401,F403  (LambdaLR, CyclicLR, ...)
from ._py_schedulers import __all__ as _py_all  # noqa: E402
__all__ += _py_all
