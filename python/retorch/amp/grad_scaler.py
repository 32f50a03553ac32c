"""torch.amp.GradScaler: scales the loss so that float16 gradients do not underflow, unscales them
before the optimizer's step, skips steps whose gradients are not finite, and adapts the scale."""
import enum
from collections import defaultdict

from .. import _C


class _OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"stage": _OptState.READY, "found_inf_per_device": {}}


def _unscale_and_check(grads, found_inf, inv_scale):
    """Multiplies grads by inv_scale in place and sets found_inf to 1 if any of them holds an
    inf or a NaN (torch._amp_foreach_non_finite_check_and_unscale_), without reading anything
    back to the host."""
    if not grads:
        return
    bad = _C.stack([g.isfinite().logical_not().any() for g in grads]).any()
    found_inf.copy_(_C.maximum(found_inf, bad.to(found_inf.dtype)))
    for g in grads:
        g.mul_(inv_scale.to(g.dtype))


def _update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, interval):
    """torch._amp_update_scale_ as tensor ops (no host sync): a non-finite step multiplies the
    scale by backoff_factor and restarts the count; `interval` finite steps in a row multiply it
    by growth_factor (when the result is finite) and restart the count."""
    inf = found_inf > 0
    successful = growth_tracker + 1
    grow = inf.logical_not().logical_and(successful == interval)
    grown = scale * growth_factor
    new_scale = _C.where(inf, scale * backoff_factor,
                         _C.where(grow.logical_and(grown.isfinite()), grown, scale))
    scale.copy_(new_scale)
    growth_tracker.copy_(_C.where(inf.logical_or(grow), _C.zeros_like(successful), successful))


class GradScaler:
    """Gradient scaling for mixed-precision training (torch.amp.GradScaler):

        scaler.scale(loss).backward()
        scaler.step(optimizer)   # unscales, skips the step if a gradient is inf/NaN
        scaler.update()          # backs the scale off after an inf, grows it after
                                 # growth_interval clean steps
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale = None
        self._growth_tracker = None
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _lazy_init(self, device):
        self._scale = _C.full([], self._init_scale, dtype=_C.float32, device=device)
        self._growth_tracker = _C.full([], self._init_growth_tracker, dtype=_C.int32,
                                       device=device)

    def _check_initialized(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier."
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  " + fix)
        return self._scale, self._growth_tracker

    def scale(self, outputs):
        """outputs (a tensor, or tensors in lists/tuples) multiplied by the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        by_device = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype == _C.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                by_device[str(param.grad.device)].append(param.grad)
        found = {}
        for device, grads in by_device.items():
            found[device] = found_inf.to(device).clone()
            _unscale_and_check(grads, found[device], inv_scale.to(device))
        return found

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale (once between updates), e.g. before
        clipping them."""
        if not self._enabled:
            return
        self._check_initialized("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is _OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _C.full([], 0.0, dtype=_C.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = _OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients if unscale_ was not called, then runs optimizer.step unless a
        gradient is inf or NaN; returns what optimizer.step returned (None if skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_initialized("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise RuntimeError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Adapts the scale from this iteration's inf checks, or sets it to new_scale."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_initialized("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element tensor with "
                          "requires_grad=False.")
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError(reason)
                scale.copy_(new_scale.reshape([]))
        else:
            found_infs = [f.to(scale.device) for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if not found_infs:
                raise RuntimeError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _update_scale(scale, growth_tracker, combined, self._growth_factor,
                          self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
