"""retorch.xpu: torch.xpu's device API (see retorch/_device_api.py for its behaviour without a device)."""
from ._device_api import _install

_install(globals(), "xpu")
del _install
