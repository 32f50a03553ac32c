"""retorch.backends.mkldnn: torch.backends.mkldnn's flag and queries. retorch has no MKL-DNN
tensor layout or ops (oneDNN, where found, only runs bfloat16 products inside other kernels), so
is_available() is False; `enabled` keeps torch's default and checks but is recorded only."""
import contextlib
import sys
import types

from . import _allow_mutation, _bool_flag, _check_bool

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

_state = {"enabled": True}


def is_available():
    """Whether this build has MKL-DNN (retorch.has_mkldnn)."""
    from .. import _api_gaps
    return _api_gaps.has_mkldnn


class verbose:  # noqa: N801  (torch.backends.mkldnn.verbose)
    """oneDNN's verbose messages for the block; without MKL-DNN only VERBOSE_OFF can be set (any
    other level fails as torch's does when oneDNN refuses it)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return None
        assert is_available(), ("Failed to set MKLDNN into verbose mode. Please consider to "
                                "disable this verbose scope.")
        return self

    def __exit__(self, *exc):
        return False


def set_flags(_enabled):
    """Sets `enabled`; returns the previous value as a one-element tuple."""
    orig = (_state["enabled"],)
    _state["enabled"] = _check_bool("set_enabled_mkldnn", _enabled)
    return orig


@contextlib.contextmanager
def flags(enabled=False):
    """Sets `enabled` for the block (False when not given, as torch's) and restores it after."""
    with _allow_mutation():
        orig = set_flags(enabled)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(orig[0])


class _MkldnnModule(types.ModuleType):
    enabled = _bool_flag("enabled", "set_enabled_mkldnn")


sys.modules[__name__].__class__ = _MkldnnModule
