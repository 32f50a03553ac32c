"""retorch.backends.cudnn: torch.backends.cudnn's flags and queries.

retorch opens cuDNN at run time for convolutions on a CUDA device (Note [cuDNN convolutions]),
so cuDNN counts as available exactly when a CUDA device is. The flags keep torch's defaults and
checks (`cudnn.benchmark = True` works as in torch) but are recorded only: retorch's cuDNN path
always takes cuDNN's first heuristic algorithm with strict float32 math, whatever they say.
"""
import contextlib
import ctypes
import os
import sys
import types
import warnings

from .. import _C
from . import _allow_mutation, _bool_flag, _check_bool

__all__ = ["is_available", "version", "is_acceptable", "set_flags", "flags"]

CUDNN_TENSOR_DTYPES = {_C.float16, _C.float32, _C.float64}

_state = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
_version = []  # [version or None] once looked up


def is_available():
    """Whether cuDNN can run: retorch loads it on a CUDA device, so whether there is one."""
    return _C._device_available("cuda")


def version():
    """cuDNN's version as one integer (e.g. 90100), or None without cuDNN."""
    if not is_available():
        return None
    if not _version:
        _version.append(_library_version())
    return _version[0]


def _library_version():
    # The library the convolutions open (RETORCH_CUDNN, else libcudnn.so.9 on the loader path);
    # dlopen hands back the already loaded copy when there is one.
    for name in (os.environ.get("RETORCH_CUDNN"), "libcudnn.so.9", "libcudnn.so"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        return int(lib.cudnnGetVersion())
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: enabled, on a CUDA device, half/float/double."""
    if not _state["enabled"]:
        return False
    if tensor.device.type != "cuda" or tensor.dtype not in CUDNN_TENSOR_DTYPES:
        return False
    if not is_available():
        warnings.warn("retorch found no CUDA device, so cuDNN is not used (tensors on cuda run "
                      "through the device fallback)")
        return False
    if version() is None:
        warnings.warn("cuDNN/MIOpen library not found. Check your LD_LIBRARY_PATH")
        return False
    return True


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None):
    """Sets the flags given (None leaves one as it is); returns the previous five, with
    benchmark_limit None without cuDNN, as torch's."""
    mod = sys.modules[__name__]
    orig = (_state["enabled"], _state["benchmark"],
            mod.benchmark_limit if is_available() else None,
            _state["deterministic"], _state["allow_tf32"])
    if _enabled is not None:
        _state["enabled"] = _check_bool("set_enabled_cudnn", _enabled)
    if _benchmark is not None:
        _state["benchmark"] = _check_bool("set_benchmark_cudnn", _benchmark)
    if _benchmark_limit is not None and is_available():
        mod.benchmark_limit = _benchmark_limit
    if _deterministic is not None:
        _state["deterministic"] = _check_bool("set_deterministic_cudnn", _deterministic)
    if _allow_tf32 is not None:
        _state["allow_tf32"] = _check_bool("set_allow_tf32_cublas", _allow_tf32)  # (torch's name)
    return orig


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Sets all five flags for the block (torch's defaults for those not given: note enabled=False)
    and restores the previous values after it, also on an exception; yields None."""
    with _allow_mutation():
        orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(*orig)


class _CudnnModule(types.ModuleType):
    """The module's class: its flags are properties, so assigning one is checked."""

    enabled = _bool_flag("enabled", "set_enabled_cudnn")
    benchmark = _bool_flag("benchmark", "set_benchmark_cudnn")
    deterministic = _bool_flag("deterministic", "set_deterministic_cudnn")
    allow_tf32 = _bool_flag("allow_tf32", "set_allow_tf32_cublas")


# A plain attribute, as torch's: 10 (cuDNN's algorithms tried in benchmark mode) with cuDNN.
benchmark_limit = 10 if is_available() else None

sys.modules[__name__].__class__ = _CudnnModule
