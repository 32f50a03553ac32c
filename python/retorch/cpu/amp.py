"""retorch.cpu.amp: torch.cpu.amp's autocast (retorch.autocast("cpu", ...))."""
from .. import _C
from ..amp import autocast_mode as _mode


class autocast(_mode.autocast):  # noqa: N801
    """torch.cpu.amp.autocast: retorch.autocast("cpu", ...)."""

    def __init__(self, enabled=True, dtype=_C.bfloat16, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
