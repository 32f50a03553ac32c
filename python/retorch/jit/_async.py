"""torch.jit.fork / torch.jit.wait with eager semantics: fork runs the function at once (as
torch's does outside TorchScript) and returns a completed Future; wait returns its value."""
from ..futures import Future

__all__ = ["Future", "fork", "wait"]


def fork(func, *args, **kwargs):
    """Calls func(*args, **kwargs) now and returns a Future holding the result. An exception
    func raises propagates from fork itself, as in torch's eager mode. Under retorch.jit.trace
    the call's ops are recorded inline (the graph has no prim::fork)."""
    if not callable(func):
        raise TypeError(f"Object of type '{type(func).__name__}' is not an instance of "
                        "'function'")
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    """Blocks until future completes and returns its value (raises the exception it holds)."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): argument 'future' must be a retorch.jit.Future, not "
                        f"{type(future).__name__}")
    return future.wait()
