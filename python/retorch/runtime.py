"""retorch.runtime: the launch manager from Python. `capture(fn)` runs fn once, recording every
kernel launch it makes on this thread, and returns a LaunchGraph whose `replay()` runs the same
kernels on the same buffers again, without dispatch, writing into the tensors the capture
returned (the CPU analogue of a CUDA graph; docs/profiler.md, Note [Launch manager])."""
from . import _C

LaunchGraph = _C._launch.LaunchGraph


def capture(fn):
    """Runs fn() and returns the LaunchGraph of its launches. Tensors fn creates are the graph's
    buffers: keep the ones you read (its outputs) and write new inputs into the ones it read,
    in place, before each `replay()`."""
    if not callable(fn):
        raise TypeError(f"capture(): expected a callable, got {type(fn).__name__}")
    return _C._launch.capture(fn)


__all__ = ["LaunchGraph", "capture"]
