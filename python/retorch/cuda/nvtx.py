"""retorch.cuda.nvtx: NVTX ranges and marks for Nsight Systems timelines (torch.cuda.nvtx); no-ops
until a tool attaches, and errors in a build without the CUDA backend."""
import contextlib

from .. import _C


def range_push(msg):
    """Opens a nested range named msg; returns its depth (0 for the outermost)."""
    return _C._nvtx_range_push(str(msg))


def range_pop():
    """Closes the innermost range; returns the depth it had."""
    return _C._nvtx_range_pop()


def range_start(msg):
    """Opens a range that may end on another thread; returns its id for range_end."""
    return _C._nvtx_range_start(str(msg))


def range_end(range_id):
    _C._nvtx_range_end(int(range_id))


def mark(msg):
    """An instantaneous event named msg."""
    _C._nvtx_mark(str(msg))


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001  (torch.cuda.nvtx.range)
    """The block as a range named msg.format(*args, **kwargs)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
