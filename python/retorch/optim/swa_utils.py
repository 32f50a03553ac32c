"""retorch.optim.swa_utils: Stochastic Weight Averaging as torch's: AveragedModel (a running
average of a model's weights), SWALR (anneals each group's lr to a constant) and update_bn
(recomputes BatchNorm statistics for the averaged weights)."""
import itertools
import math
import warnings
from copy import deepcopy

from .. import _C
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ._py_schedulers import _PyScheduler

__all__ = ["AveragedModel", "update_bn", "SWALR"]


class AveragedModel(Module):
    """A copy of model (on device, if given) whose weights update_parameters() averages with
    model's: equally weighted by default, or by avg_fn(averaged, current, n_averaged); with
    use_buffers the buffers are averaged too (else they stay those of the copy)."""

    def __init__(self, model, device=None, avg_fn=None, use_buffers=False):
        super().__init__()
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n_averaged = _C.zeros([], dtype=_C.int64)
        self.register_buffer("n_averaged",
                             n_averaged if device is None else n_averaged.to(device))
        if avg_fn is None:
            def avg_fn(averaged_model_parameter, model_parameter, num_averaged):
                return averaged_model_parameter + \
                    (model_parameter - averaged_model_parameter) / (num_averaged + 1)
        self.avg_fn = avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Folds model's current weights into the average (the first call copies them)."""
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                      if self.use_buffers else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers())
                       if self.use_buffers else model.parameters())
        for p_swa, p_model in zip(self_param, model_param):
            device = p_swa.device
            p_model_ = p_model.detach().to(device)
            if self.n_averaged == 0:
                p_swa.detach().copy_(p_model_)
            else:
                p_swa.detach().copy_(self.avg_fn(p_swa.detach(), p_model_,
                                                 self.n_averaged.to(device)))
        self.n_averaged += 1


def update_bn(loader, model, device=None):
    """One pass over loader (batches are tensors, or lists/tuples whose first item is the input)
    in training mode, with every BatchNorm's statistics reset and accumulated as a plain
    average (momentum None); momenta and the training flag are restored afterwards."""
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.running_mean = _C.zeros_like(module.running_mean)
                module.running_var = _C.ones_like(module.running_var)
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta.keys():
            module.momentum = None
            module.num_batches_tracked *= 0
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
        for bn_module in momenta.keys():
            bn_module.momentum = momenta[bn_module]
        model.train(was_training)


class SWALR(_PyScheduler):
    """Anneals each param group's lr from its current value to swa_lr (one value, or one per
    group) over anneal_epochs steps, by a cosine ('cos') or linear ('linear') ramp, then holds
    it. Like torch's, each step recovers the ramp's start from the current lr, so it can
    follow another scheduler."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = self._format_param(optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        elif anneal_strategy == "cos":
            self.anneal_func = self._cosine_anneal
        elif anneal_strategy == "linear":
            self.anneal_func = self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        self._step_count = 0
        self._get_lr_called_within_step = False
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _format_param(optimizer, swa_lrs):
        if isinstance(swa_lrs, (list, tuple)):
            if len(swa_lrs) != len(optimizer.param_groups):
                raise ValueError("swa_lr must have the same length as optimizer.param_groups: "
                                 f"swa_lr has {len(swa_lrs)}, optimizer.param_groups has "
                                 f"{len(optimizer.param_groups)}")
            return swa_lrs
        return [swa_lrs] * len(optimizer.param_groups)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def step(self, epoch=None):
        # torch's schedulers count steps (the construction's one included) in _step_count.
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            super().step(epoch)
        finally:
            self._get_lr_called_within_step = False

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, "
                          "please use `get_last_lr()`.", UserWarning)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]
