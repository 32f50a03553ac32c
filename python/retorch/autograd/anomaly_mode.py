"""Anomaly detection: NaN checks in backward that name the failing function (torch's)."""
import functools

from .. import _C


class detect_anomaly:  # noqa: N801
    """Context manager / decorator: while active, a backward function that returns NaN raises
    RuntimeError naming it ("Function 'DivBackward0' returned nan values in its 0th output.")."""

    def __init__(self, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.check_nan = check_nan

    def __enter__(self):
        _C._set_anomaly_enabled(self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:  # noqa: N801
    """Turns anomaly detection on or off now; used as a context manager, restores it on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(bool(mode) and check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev)
