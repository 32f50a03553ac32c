"""retorch.cuda: torch.cuda's device API (see retorch/_device_api.py for its behaviour without a device)."""
from .._device_api import _install

_install(globals(), "cuda")
del _install

from .graphs import CUDAGraph, graph, make_graphed_callables  # noqa: E402,F401
from . import amp, nvtx  # noqa: E402,F401  (torch.cuda.amp, torch.cuda.nvtx)
