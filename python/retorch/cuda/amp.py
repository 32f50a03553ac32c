"""retorch.cuda.amp: torch.cuda.amp's autocast, GradScaler and custom_fwd/custom_bwd (retorch.amp's
with cuda as the device)."""
import functools

from .. import _C
from ..amp import autocast_mode as _mode
from ..amp.grad_scaler import GradScaler as _GradScaler


class autocast(_mode.autocast):  # noqa: N801
    """torch.cuda.amp.autocast: retorch.autocast("cuda", ...)."""

    def __init__(self, enabled=True, dtype=_C.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.cuda.amp.GradScaler: retorch.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


custom_fwd = functools.partial(_mode.custom_fwd, device_type="cuda")
custom_bwd = functools.partial(_mode.custom_bwd, device_type="cuda")
