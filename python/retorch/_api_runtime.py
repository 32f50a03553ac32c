"""torch's process-wide switches and tensor makers retorch lacked, in Python: deterministic
algorithms, flush-denormal, inter-op threads, layout/strided, asarray, frombuffer, the
deprecated range, vander, ger, fill and typename (is_storage: storage.py)."""
import math
import warnings

import numpy as np

from . import _C
from . import _dtypes
from ._api_extras import _type_name

__all__ = ["layout", "strided", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_flush_denormal",
           "get_num_interop_threads", "set_num_interop_threads", "asarray", "frombuffer",
           "typename", "vander", "ger", "fill"]


class layout:  # noqa: N801  (torch.layout)
    """How a tensor's elements sit in memory. retorch's tensors are all dense with strides, so
    strided is the one layout."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name  # pickles as the module attribute, like torch's layouts


strided = layout("strided")


# ---------------------------------------------------------------- process-wide switches

# Note: retorch's CPU kernels are deterministic already (fixed reduction orders, Philox
# randomness), so these flags are stored for programs that set and read them; no retorch kernel
# consults them, and CUDA kernels that accumulate with atomics are not made deterministic.
_deterministic = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Records torch's deterministic-algorithms flag (see the note above: retorch's CPU kernels
    are deterministic whatever it says)."""
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, bool):
            raise TypeError(f"use_deterministic_algorithms(): argument '{name}' must be bool, "
                            f"not {type(value).__name__}")
    _deterministic.update(enabled=mode, warn_only=warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """0/"default": off, 1/"warn": on with warn_only, 2/"error": on."""
    if type(debug_mode) not in (str, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["enabled"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def set_flush_denormal(mode):
    """torch sets the CPU's flush-to-zero / denormals-are-zero bits and returns True on x86.
    Python cannot reach the MXCSR register and retorch's C++ offers no call for it, so nothing
    is changed and the answer is False, as torch's on a CPU without the bits."""
    return False


_interop = {"threads": None}


def get_num_interop_threads():
    """The inter-op thread count: what set_num_interop_threads set, else retorch's thread
    count. retorch runs independent ops in order on the calling thread, so it only records
    the number."""
    return _interop["threads"] or _C.get_num_threads()


def set_num_interop_threads(num):
    if not isinstance(num, int) or isinstance(num, bool):
        raise TypeError(f"set_num_interop_threads(): argument 'num' must be int, not "
                        f"{type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _interop["threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _interop["threads"] = num


# ---------------------------------------------------------------- making tensors

def _numpy_dtype(dtype):
    """The numpy dtype with dtype's bytes (bfloat16 travels as int16)."""
    return np.int16 if dtype == _C.bfloat16 else np.dtype(_dtypes._name(dtype))


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor of `count` elements (all, by default) read from a buffer-protocol object
    from byte `offset`, sharing its memory. A read-only buffer (bytes) is copied instead, since
    retorch's tensors are always writable."""
    try:
        view = memoryview(buffer).cast("B")
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    size = _C.empty([], dtype=dtype).element_size()
    length = view.nbytes
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0 and (length - offset) % size:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({size})")
    n = (length - offset) // size if count < 0 else count
    if offset + n * size > length:
        raise ValueError(f"requested buffer length ({n} * {size} bytes) after offset ({offset} "
                         f"bytes) must not be greater than actual buffer length ({length} bytes)")
    arr = np.frombuffer(view, dtype=_numpy_dtype(dtype), count=n, offset=offset)
    t = _C.from_numpy(arr if arr.flags.writeable else arr.copy())
    if dtype == _C.bfloat16:
        t = t.view(_C.bfloat16)
    return t.requires_grad_(True) if requires_grad else t


def _is_buffer(obj):
    if isinstance(obj, (np.generic, str)):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, sharing memory with it where it is a tensor, a numpy array or a buffer
    and no dtype/device change asks for a copy (copy=True always copies, copy=False never
    does and raises instead); sequences and scalars are copied, like torch.tensor."""
    from . import tensor
    if isinstance(obj, _C.Tensor):
        t = obj
    elif isinstance(obj, np.ndarray):
        t = _C.from_numpy(obj) if obj.ndim else _C.from_numpy(obj.reshape(1)).reshape([])
    elif _is_buffer(obj):
        t = frombuffer(obj, dtype=dtype or _dtypes.default_float())
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    want_device = _C.device(device) if isinstance(device, str) else device
    wrong_device = want_device is not None and want_device != t.device
    wrong_dtype = dtype is not None and dtype != t.dtype
    if copy or (copy is None and (wrong_device or wrong_dtype)):
        t = t.to(device=want_device or t.device, dtype=dtype or t.dtype, copy=True)
    elif wrong_device:
        raise ValueError(f"can't alias tensor from device '{t.device}' to '{want_device}'.")
    elif wrong_dtype:
        raise ValueError(f"can't alias tensor with dtype '{_type_name(t.dtype)}' into dtype "
                         f"'{_type_name(dtype)}'.")
    if t.requires_grad != requires_grad:
        if not t.is_leaf:
            t = t.detach()  # requires_grad is only set on leaves, as torch's asarray does
        t.requires_grad_(requires_grad)
    return t


def _range(start, end, step=1, *, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.range (deprecated): start to end inclusive, step apart, in the default float
    dtype unless dtype says otherwise; values are start + i * step in float64 (int64 for an
    integer dtype), then rounded."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    dtype = dtype or _dtypes.default_float()
    start, end, step = (v.item() if isinstance(v, _C.Tensor) else v for v in (start, end, step))
    floating = dtype.is_floating_point
    step = float(step) if floating else int(step)  # an integer dtype truncates all three
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {float(start):g} -> {float(end):g}")
    start, end = (float(start), float(end)) if floating else (int(start), int(end))
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int((end - start) / step + 1) if floating else (end - start) // step + 1
    wide = _C.float64 if floating else _C.int64
    out = (_C.arange(n, dtype=wide) * step + start).to(dtype)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out


def vander(x, N=None, increasing=False):
    """Columns x**(N-1), ..., x**0 (x**0 first with increasing=True); integer inputs give
    int64, as torch's (its cumulative product promotes them)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = _dtypes.promote_types(x.dtype, _C.int64)
    ones = _C.ones([x.shape[0], min(n, 1)], dtype=dtype, device=x.device)
    powers = x.to(dtype).unsqueeze(1).expand(x.shape[0], max(n - 1, 0)).cumprod(1)
    out = _C.cat([ones, powers], 1)
    return out if increasing else out.flip([1])


def ger(input, vec2):
    return _C.outer(input, vec2)


def fill(input, value):
    """A copy of input with every element value (torch.fill); a 0-d tensor value gets the
    gradient of all of them."""
    if isinstance(value, _C.Tensor):
        if value.dim() != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        everywhere = _C.ones_like(input, dtype=_C.bool)
        return _C.where(everywhere, value.to(input.dtype), input)
    return input.clone().fill_(value)


def typename(obj):
    """'torch.FloatTensor' for a tensor, else the object's module-qualified type name."""
    if isinstance(obj, _C.Tensor):
        return obj.type()
    module = getattr(obj, "__module__", None)
    prefix = module + "." if module not in (None, "builtins", "__builtin__") else ""
    if hasattr(obj, "__qualname__"):
        return prefix + obj.__qualname__
    if hasattr(obj, "__name__"):
        return prefix + obj.__name__
    return prefix + obj.__class__.__name__

