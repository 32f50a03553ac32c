"""retorch.futures: torch.futures.Future (a value or an exception that completes once, with
callbacks), collect_all and wait_all; retorch.jit.fork returns one."""
import logging
import threading

from . import _C

__all__ = ["Future", "collect_all", "wait_all"]

_log = logging.getLogger(__name__)


class Future:
    """The result of an asynchronous computation. set_result / set_exception complete it once;
    wait() blocks until then and returns the value (or raises the exception); callbacks added
    with then / add_done_callback run when it completes (inline if it already has). devices is
    accepted for torch's signature: retorch does no CUDA stream bookkeeping for futures."""

    def __init__(self, *, devices=None):
        self._devices = []
        for d in devices or []:
            dev = _C.device("cuda", d) if isinstance(d, int) else _C.device(d)
            if dev.index is None:
                raise ValueError(f"Expected devices to have indices, got {dev}")
            self._devices.append(dev)
        self._cond = threading.Condition()
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []

    def done(self):
        """True once the future holds a result or an exception."""
        with self._cond:
            return self._done

    def wait(self):
        """Blocks until completed; returns the value or raises the exception it was set with."""
        with self._cond:
            self._cond.wait_for(lambda: self._done)
        return self.value()

    def value(self):
        """The value of a completed future (raises its exception, if it holds one)."""
        with self._cond:
            if not self._done:
                raise RuntimeError("Future.value() was called on a Future that is not completed "
                                   "yet; call wait() first")
            if self._error is not None:
                raise self._error
            return self._value

    def _complete(self, value, error):
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            self._run_callback(cb)

    def _run_callback(self, callback):
        try:
            callback(self)
        except Exception as e:  # torch logs a failing done-callback and carries on
            _log.error("Got the following error when running the callback: %s: %s",
                       type(e).__name__, e)

    def set_result(self, result):
        """Completes the future with result and runs its callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Completes the future with an exception that wait() and value() will raise."""
        assert isinstance(result, Exception), \
            f"{result} is of type {type(result)}, not an Exception."
        self._complete(None, result)

    def add_done_callback(self, callback):
        """Runs callback(self) when the future completes (now, if it has)."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        self._run_callback(callback)

    def then(self, callback):
        """A new Future completed with callback(self) once this one completes; if the callback
        raises, the new future holds a RuntimeError naming that error."""
        child = Future()
        child._devices = list(self._devices)

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:
                child.set_exception(RuntimeError(
                    f"Got the following error when running the callback: "
                    f"{type(e).__name__}: {e}"))
                return
            child.set_result(result)
        self.add_done_callback(run)
        return child

    def __repr__(self):
        return f"<retorch.futures.Future object at {hex(id(self))}>"


def collect_all(futures):
    """A Future that completes with the list of futures once all of them have completed, or
    with the first exception one of them completes with."""
    futures = list(futures)
    for f in futures:
        if not isinstance(f, Future):
            raise TypeError(f"collect_all(): expected a list of Futures, got "
                            f"{type(f).__name__}")
    out = Future()
    if not futures:
        out.set_result([])
        return out
    lock = threading.Lock()
    left = [len(futures)]

    def on_done(fut):
        with lock:
            if out._done:
                return
            left[0] -= 1
            if fut._error is not None:
                out.set_exception(fut._error)
            elif left[0] == 0:
                out.set_result(futures)
    for f in futures:
        f.add_done_callback(on_done)
    return out


def wait_all(futures):
    """The values of futures, waiting for all; raises the first exception one completes with."""
    return [fut.wait() for fut in collect_all(futures).wait()]
