"""retorch.cuda: torch.cuda's device API (see retorch/_device_api.py for its behaviour without a device)."""
from .._device_api import _install

_install(globals(), "cuda")
del _install

import contextlib  # noqa: E402

from .. import _C  # noqa: E402

CUDAGraph = _C.CUDAGraph


class graph:  # noqa: N801  (torch.cuda.graph)
    """Captures the block's work on the current device into `cuda_graph` (torch.cuda.graph): the
    device is synchronized, the block runs on `stream` (a side stream by default: the default
    stream cannot be captured), and an error inside the block abandons the capture."""

    _default_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode
        if stream is None:
            if graph._default_stream is None:
                graph._default_stream = Stream()  # noqa: F821  (installed above)
            stream = graph._default_stream
        self.stream = stream
        self._context = None

    def __enter__(self):
        synchronize()  # noqa: F821
        empty_cache()  # noqa: F821
        self._context = contextlib.ExitStack()
        self._context.enter_context(stream(self.stream))  # noqa: F821
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._context.close()
            raise

    def __exit__(self, kind, value, traceback):
        try:
            if kind is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._capture_abort()
        finally:
            self._context.close()
        return False


from . import amp, nvtx  # noqa: E402,F401  (torch.cuda.amp, torch.cuda.nvtx)
