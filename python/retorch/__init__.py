"""retorch: PyTorch's architecture rebuilt in modern C++, with a torch-shaped Python module."""
import builtins as _builtins

import numpy as _np

from . import _C
from ._C import *  # noqa: F401,F403  (every op, dtypes, Tensor, device, Generator)
from ._C import Tensor, dtype, device, Generator  # noqa: F401
from . import autograd  # noqa: F401
from . import return_types  # noqa: F401  (torch.return_types: max(dim), topk, sort, ...)
from . import special  # noqa: F401  (torch.special names)
from . import io  # noqa: F401  (safetensors files, like safetensors.torch)
from . import data  # noqa: F401  (datasets, transforms, DataLoader)
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: F401

# `import *` skips underscore names; generated ops like _to_copy are public API like torch's.
for _name in {q.split("::")[-1].split(".")[0] for q in _C._ops()}:
    if _name.startswith("_") and hasattr(_C, _name):
        globals()[_name] = getattr(_C, _name)
del _name

from ._indexing import unique, nonzero, install as _install_indexing  # noqa: E402
_install_indexing(Tensor)
from . import _tensor  # noqa: E402
_tensor.install(Tensor)

_NP_DEFAULT_INT = {"i", "u"}


# The integer range each Python number must fit to become an element of that dtype, as torch
# checks (c10's overflows: an unsigned type also takes negatives down to -max, wrapping them).
_INT_RANGES = {"uint8": (-255, 255), "int8": (-128, 127), "int16": (-2 ** 15, 2 ** 15 - 1),
               "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


def _check_no_overflow(arr, dtype):
    """torch.tensor(python_data, dtype=<integer type>): a number outside the type's range (or a
    NaN) is an error, not a wrapped value."""
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:  # past int64: numpy chose uint64
        raise RuntimeError("Overflow when unpacking long")
    name = str(dtype).rsplit(".", 1)[-1] if dtype is not None else None
    bounds = _INT_RANGES.get(name)
    if bounds is None or arr.size == 0 or arr.dtype.kind == "b":
        return
    nan = arr.dtype.kind == "f" and _builtins.bool(_np.isnan(arr).any())  # (bool: a dtype here)
    if nan or arr.min() < bounds[0] or arr.max() > bounds[1]:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


_INT64_LIMIT = 1 << 63
_FLOAT32_MAX, _INF = 3.4028234663852886e38, _builtins.float("inf")  # (larger: a float32 inf)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """Copies data (nested lists, numbers, numpy arrays, tensors) into a new tensor."""
    kind = type(data)  # (float, int and bool are retorch's dtypes in this module)
    if dtype is None and ((kind is _builtins.float and not _FLOAT32_MAX < _builtins.abs(data) < _INF) or
                          kind is _builtins.bool or
                          (kind is _builtins.int and -_INT64_LIMIT <= data < _INT64_LIMIT)):
        # A Python number: a 0-dim tensor straight away (numpy's way took 3.9 us, torch 1.5).
        t = _C.full([], data, dtype=get_default_dtype() if kind is _builtins.float else
                    (bool if kind is _builtins.bool else int64))
    elif isinstance(data, Tensor):
        t = data.detach().clone()
    else:
        from_numpy_array = isinstance(data, _np.ndarray)
        arr = _np.array(data)
        if arr.dtype == object:
            raise RuntimeError("Could not infer dtype of " + type(data).__name__)
        if not from_numpy_array and not isinstance(data, _np.generic):
            _check_no_overflow(arr, dtype)
            kind = arr.dtype.kind
            if kind == "f":
                if arr.dtype != _np.float64:
                    arr = arr.astype(_np.float64)
                target = get_default_dtype()
            elif kind in _NP_DEFAULT_INT:
                if arr.dtype != _np.int64:
                    arr = arr.astype(_np.int64)
                target = int64
            elif kind == "b":
                target = bool
            else:
                raise TypeError("tensor(): unsupported data type " + str(arr.dtype))
        else:
            target = None
        want = dtype if dtype is not None else target
        src = from_numpy(_np.asarray(arr, order="C"))
        # one copy, converting on the way (a clone and then to() took twice the time)
        t = src.clone() if want is None or want is src.dtype else _C._to_copy(src, dtype=want)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(arr):
    """A tensor sharing memory with the numpy array arr."""
    if isinstance(arr, _np.ndarray) and arr.ndim == 0:
        return _C.from_numpy(arr.reshape(1)).reshape([])
    return _C.from_numpy(arr)


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing memory when it already is one (or a numpy array) of the
    requested dtype and device; otherwise a copy."""
    if isinstance(data, Tensor):
        t = data
    elif isinstance(data, _np.ndarray) and data.dtype.kind in "biuf" and \
            _builtins.all(s >= 0 for s in data.strides):
        t = from_numpy(data)
    else:
        return tensor(data, dtype=dtype, device=device)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if device is not None and t.device != device:
        t = t.to(device)
    return t


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


from . import cuda, mps, xpu  # noqa: E402,F401  (torch.cuda, torch.mps, torch.xpu)
from . import amp, cpu  # noqa: E402,F401  (torch.amp, torch.cpu.amp)
from .amp import autocast  # noqa: E402,F401


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: "highest" (the default), "high" (CUDA products may
    round to TF32) or "medium" (cpu ones to bfloat16 too, where the CPU multiplies bfloat16
    natively; Note [float32 matmul precision]). Another string warns and changes nothing, as
    torch's does."""
    if not isinstance(precision, str):
        raise RuntimeError("set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if not _C._set_float32_matmul_precision(precision):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.")


def seed():
    """Seeds the default generator from a random number and returns that seed (torch.seed)."""
    return _C.default_generator().seed()


def initial_seed():
    """The seed the default generator was last seeded with (torch.initial_seed)."""
    return _C.default_generator().initial_seed()


from .amp.autocast_mode import (is_autocast_enabled, set_autocast_enabled,  # noqa: E402,F401
                                is_autocast_cpu_enabled, set_autocast_cpu_enabled,
                                get_autocast_gpu_dtype, set_autocast_gpu_dtype,
                                get_autocast_cpu_dtype, set_autocast_cpu_dtype,
                                get_autocast_dtype, set_autocast_dtype)
from ._C import Stream, Event  # noqa: E402,F401
from ._C import (set_device_fallback, get_device_fallback, set_device_fallback_placement,  # noqa: E402,F401,E501
                 get_device_fallback_placement, set_device_fallback_order,
                 get_device_fallback_order, device_fallback_stats, reset_device_fallback_stats,
                 device_fallback_report, compat_matrix)


def get_rng_state():
    """The default CPU generator's state as a uint8 tensor (torch.get_rng_state)."""
    return _C._device_get_rng_state("cpu", -1)


def set_rng_state(new_state):
    """Restores a state from get_rng_state (torch.set_rng_state)."""
    _C._device_set_rng_state("cpu", new_state, -1)


from ._size import Size  # noqa: E402
_C._set_size_type(Size)

# torch.linalg; einsum/tensordot take varargs / int dims in Python like torch's wrappers.
from . import linalg  # noqa: E402,F401
from . import distributions  # noqa: E402,F401  (torch.distributions' common families)
from .functional import *  # noqa: E402,F401,F403  (meshgrid, median, quantile, hstack, ...)
from . import functional  # noqa: E402,F401
functional.install(Tensor)
from ._composites import *  # noqa: E402,F401,F403  (aminmax, cov, gcd, tensor_split, ...)
from . import _composites  # noqa: E402
_composites.install(Tensor, linalg)
from ._math_extras import *  # noqa: E402,F401,F403  (acosh, copysign, frexp, windows, ...)
from . import _math_extras  # noqa: E402
_math_extras.install(Tensor)
from ._api_extras import *  # noqa: E402,F401,F403  (addmm_, cumsum_, nextafter, angle, ...)
from ._api_runtime import *  # noqa: E402,F401,F403  (deterministic flags, asarray, ...)
from ._api_runtime import _range as range  # noqa: E402,F401,A001  (torch.range, deprecated)
from ._api_math import *  # noqa: E402,F401,F403  (the *_copy views, matrix_exp, gradient, ...)
from ._api_legacy import *  # noqa: E402,F401,F403  (FloatTensor, poisson, index_reduce, ...)
from ._api_gaps import *  # noqa: E402,F401,F403  (pi, adjoint, lstm_cell, svd_lowrank, ...)
from ._api_gaps3 import *  # noqa: E402,F401,F403  (lstm, gru, as_strided_scatter, from_file, ...)
from ._api_gaps5 import *  # noqa: E402,F401,F403  (geqrf, ormqr, batch_norm_update_stats)
from . import _api_extras, _api_math, _api_legacy, _api_gaps, _api_gaps3, _api_gaps5  # noqa: E402
_api_extras.install(Tensor)
_api_math.install(Tensor, linalg)
_api_legacy.install(Tensor)
_api_gaps.install(Tensor)
_api_gaps3.install(Tensor)
_api_gaps5.install(Tensor)
concat = concatenate = cat  # noqa: E305  (torch's aliases)
from ._dtypes import finfo, iinfo, promote_types, result_type, can_cast  # noqa: E402,F401
from .linalg import _einsum as einsum, _tensordot as tensordot, _cdist as cdist  # noqa: E402,F401,E501
from .linalg import _multi_head_attention_forward as multi_head_attention_forward  # noqa: E402,F401,E501
from . import optim  # noqa: E402,F401  (torch.optim)
from . import nn  # noqa: E402,F401  (torch.nn)
from .nn._torch_aliases import *  # noqa: E402,F401,F403  (torch.conv3d, torch.max_pool3d, ...)
from .storage import *  # noqa: E402,F401,F403  (TypedStorage, UntypedStorage, FloatStorage, ...)
from . import storage as _storage  # noqa: E402
_storage.install(Tensor)
from . import jit  # noqa: E402,F401  (torch.jit.trace)
from . import futures  # noqa: E402,F401  (torch.futures.Future, used by jit.fork)
from ._compile import compile  # noqa: E402,F401  (torch.compile)
from . import compiler  # noqa: E402,F401  (torch.compiler: benchmark)
from . import profiler  # noqa: E402,F401  (torch.profiler)
from . import runtime  # noqa: E402,F401  (launch capture and replay)
from . import distributed  # noqa: E402,F401  (torch.distributed, one process)
from . import backends  # noqa: E402,F401  (torch.backends.cpu)


def _tensor_deepcopy(self, memo):
    """copy.deepcopy of a tensor: a new leaf with the same values, requires_grad and grad."""
    if id(self) in memo:
        return memo[id(self)]
    with no_grad():
        new = self.clone()
    if self.is_leaf and self.requires_grad:
        new.requires_grad_(True)
    if self.grad is not None:
        new.grad = _tensor_deepcopy(self.grad, memo)
    memo[id(self)] = new
    return new


Tensor.__deepcopy__ = _tensor_deepcopy
from .serialization import save, load  # noqa: E402,F401  (safetensors-based checkpoints)


def _accept_pin_memory(namespace, names):
    """torch's factories take pin_memory=: True makes the result in pinned host memory (Note
    [Pinned host memory]); without a CUDA device that raises, as torch's does."""
    import functools

    for name in names:
        fn = namespace[name]

        def factory(*args, pin_memory=False, _fn=fn, **kwargs):
            out = _fn(*args, **kwargs)
            return out.pin_memory() if pin_memory else out
        namespace[name] = functools.update_wrapper(factory, fn)


_accept_pin_memory(globals(), ("empty", "empty_strided", "zeros", "ones", "full", "rand", "randn",
                               "randint", "randperm", "arange", "linspace", "logspace", "eye",
                               "tensor"))
from . import utils  # noqa: E402,F401  (torch.utils.data, torch.utils.dlpack)
from .utils.dlpack import from_dlpack  # noqa: E402,F401
from . import random  # noqa: E402,F401  (torch.random: seeding, rng state, fork_rng)
from .random import manual_seed  # noqa: E402,F401  (torch's is torch.random's: negative seeds too)
from . import testing  # noqa: E402,F401  (torch.testing: assert_close, make_tensor)
from . import multiprocessing  # noqa: E402,F401  (torch.multiprocessing: spawn; no shared tensors)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """torch.set_printoptions: printing precision, summarizing threshold, edge items, line
    width, a profile ("default", "short", "full"), and sci_mode (None: chosen per tensor)."""
    o = _C._get_printoptions()
    if profile == "default":
        o.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        o.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        o.update(precision=4, threshold=2 ** 62, edgeitems=3, linewidth=80)
    for key, value in (("precision", precision), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            o[key] = _builtins.int(value)
    if threshold is not None:  # float("inf") prints everything
        o["threshold"] = _builtins.int(_builtins.min(threshold, 2 ** 62))
    o["sci_mode"] = sci_mode
    _C._set_printoptions(o["precision"], o["threshold"], o["edgeitems"], o["linewidth"],
                         o["sci_mode"])


# Number arguments that reach tensor code in the Python-level functions raise torch's TypeError
# (python/retorch/_arg_errors.py); the factories and seeding functions take numbers by design.
from ._arg_errors import check_namespace as _check_namespace  # noqa: E402
_check_namespace(globals(), "retorch", skip={
    "manual_seed", "seed", "initial_seed", "from_numpy", "empty", "empty_strided", "zeros",
    "ones", "full", "arange", "linspace", "logspace", "eye", "rand", "randn", "randint",
    "randperm", "tensor", "as_tensor", "is_tensor", "numel", "set_printoptions",
    "tril_indices", "triu_indices"})
_check_namespace(linalg.__dict__, "retorch")
