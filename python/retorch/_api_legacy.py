"""torch's legacy and odd-corner API in Python: the FloatTensor-style types and constructors,
Tensor.new/type/resize_, set_default_tensor_type, poisson/binomial sampling, index_reduce, and
the warn-always, anomaly and build switches."""
import importlib
import operator
import os
import warnings

import numpy as np

from . import _C
from ._api_extras import _CPP_NAMES, _format_strides, _resize, _type_name
from ._size import Size
from ._tensor import _TYPE_NAMES
from .autograd.function import Function
from .functional import broadcast_tensors

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
           "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
           "set_default_tensor_type", "poisson", "binomial", "index_reduce", "set_warn_always",
           "is_warn_always_enabled", "set_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "compiled_with_cxx11_abi", "get_file_path"]


# ---------------------------------------------------------------- the legacy tensor types

class tensortype(type):  # noqa: N801  (torch.tensortype)
    """The class of FloatTensor and friends. They are not Tensor subclasses: calling one builds
    a cpu tensor of its dtype (torch's legacy constructor), and isinstance asks whether a tensor
    is a cpu tensor of that dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj.dtype is cls.dtype and \
            obj.device.type == "cpu"

    def __call__(cls, *args, **kwargs):
        return _legacy_new(cls.dtype, _C.device("cpu"), "constructor", args, kwargs)


def _legacy_type(name, dtype):
    # __module__ "torch" so the class prints as torch's and as Tensor.type() names it.
    return tensortype(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False,
                                 "__module__": "torch",
                                 "__doc__": f"Legacy constructor and isinstance test for cpu "
                                            f"{dtype} tensors."})


_TYPES = {dtype: _legacy_type(name, dtype) for dtype, name in _TYPE_NAMES.items()}
_BY_NAME = {t.__name__: t for t in _TYPES.values()}
FloatTensor, DoubleTensor = _BY_NAME["FloatTensor"], _BY_NAME["DoubleTensor"]
HalfTensor, BFloat16Tensor = _BY_NAME["HalfTensor"], _BY_NAME["BFloat16Tensor"]
ByteTensor, CharTensor = _BY_NAME["ByteTensor"], _BY_NAME["CharTensor"]
ShortTensor, IntTensor = _BY_NAME["ShortTensor"], _BY_NAME["IntTensor"]
LongTensor, BoolTensor = _BY_NAME["LongTensor"], _BY_NAME["BoolTensor"]


def _py_name(obj):
    cls = type(obj)
    if isinstance(obj, _C.Tensor):
        return "Tensor"
    if isinstance(obj, _C.dtype):
        return "torch.dtype"
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def _bad_combination(args, kwargs):
    parts = [_py_name(a) for a in args] + [f"{k}={_py_name(v)}" for k, v in kwargs.items()]
    got = ", ".join(parts) + (", " if kwargs and not args else "")
    return TypeError(f"new() received an invalid combination of arguments - got ({got}), but "
                     "expected one of:\n * (*, torch.device device)\n * (torch.Storage storage)"
                     "\n * (Tensor other)\n * (tuple of ints size, *, torch.device device)\n"
                     " * (object data, *, torch.device device)\n")


def _as_int(value):
    """value as a size (a Python or numpy int, or a 0-dim integer tensor), else None."""
    if isinstance(value, (float, np.floating)):
        return None
    try:
        return operator.index(value)
    except (TypeError, RuntimeError, ValueError):
        return None


def _options(dtype, device):
    return (f"TensorOptions(dtype={_CPP_NAMES[dtype]}, device={device}, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


# Integer targets torch range-checks Python data against (uint8 also takes -255..-1, wrapping).
_INT_LIMITS = {_C.uint8: (-255, 255), _C.int8: (-2 ** 7, 2 ** 7 - 1),
               _C.int16: (-2 ** 15, 2 ** 15 - 1), _C.int32: (-2 ** 31, 2 ** 31 - 1),
               _C.int64: (-2 ** 63, 2 ** 63 - 1)}


def _from_data(data, dtype, device):
    """The legacy constructor's data form: Python sequences convert element by element as
    torch's (integers range-checked, floats truncated toward zero); numpy arrays are cast."""
    from_numpy = isinstance(data, np.ndarray)
    arr = np.array(data)
    if arr.dtype.kind in "US":
        raise TypeError("must be real number, not str")
    if arr.dtype.kind == "O" or (arr.dtype == np.uint64 and not from_numpy):
        # Python ints past int64: floats take them, integer types overflow.
        if not all(isinstance(v, int) for v in arr.reshape(-1)):
            raise TypeError(f"new(): could not convert the data to {dtype}")
        if not dtype.is_floating_point:
            raise RuntimeError("Overflow when unpacking long")
        arr = arr.astype(np.float64)
    if dtype in _INT_LIMITS and not from_numpy and arr.dtype.kind in "iuf" and arr.size:
        lo, hi = _INT_LIMITS[dtype]
        whole = np.trunc(arr) if arr.dtype.kind == "f" else arr
        if not (np.isfinite(whole).all() and whole.min() >= lo and whole.max() <= hi):
            raise RuntimeError(f"value cannot be converted to type {str(dtype)[6:]} without "
                               "overflow")
    kind = np.bool_ if arr.dtype.kind == "b" else np.int64 if arr.dtype.kind in "iu" \
        else np.float64
    t = _C.from_numpy(np.ascontiguousarray(arr.astype(kind)).reshape(-1)).reshape(
        list(arr.shape))
    return t.to(device=device, dtype=dtype)


def _legacy_new(dtype, device, kind, args, kwargs):
    """torch's legacy constructor (kind "constructor") and Tensor.new (kind "new"): no
    argument (an empty tensor), a tensor (an alias, which must have dtype and device already),
    sizes (uninitialized) or data (copied)."""
    kwargs = dict(kwargs)
    wanted = kwargs.pop("device", None)
    named = {k: kwargs.pop(k) for k in ("size", "data", "other") if k in kwargs}
    if kwargs or len(named) > 1 or (named and args):
        raise _bad_combination(args, {**named, **kwargs})
    if wanted is not None:
        if isinstance(wanted, int):
            wanted = _C.device("cuda", wanted)
        elif not isinstance(wanted, _C.device):
            wanted = _C.device(wanted)
        if wanted.type != device.type:
            raise RuntimeError(f"legacy constructor expects device type: {device.type} but "
                               f"device type: {wanted.type} was passed")
    if "data" in named:
        return _from_data(named["data"], dtype, device)
    if named:
        args = (Size(named["size"]),) if "size" in named else (named["other"],)
    if not args:
        return _C.empty([0], dtype=dtype, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, _C.Tensor):
        if wanted is not None:
            raise RuntimeError(
                "Legacy tensor constructor of the form torch.Tensor(tensor, device=device) is "
                "not supported.  Use torch.tensor(...) or torch.as_tensor(...) instead."
                if kind == "constructor" else "Legacy tensor new of the form tensor.new("
                "tensor, device=device) is not supported.  Use torch.as_tensor(...) instead.")
        if first.dtype is not dtype or first.device.type != device.type:
            raise TypeError(f"expected {_options(dtype, device)} (got "
                            f"{_options(first.dtype, first.device)})")
        return first.view_as(first)  # an alias, as torch's
    if len(args) == 1 and not isinstance(first, bool) and _as_int(first) is not None:
        return _sized(dtype, device, [_as_int(first)])
    if len(args) == 1 and isinstance(first, Size):
        # A Size reads as sizes (x.new(x.shape), FloatTensor(x.size())); another tuple as data.
        return _sized(dtype, device, list(first))
    if len(args) == 1:
        if isinstance(first, str):
            raise TypeError("new(): invalid data type 'str'")
        if not isinstance(first, (list, tuple, range, np.ndarray)):
            raise TypeError(f"new(): data must be a sequence (got {_py_name(first)})")
        return _from_data(first, dtype, device)
    if isinstance(first, bool) or _as_int(first) is None:
        raise _bad_combination(args, {})
    sizes = []
    for pos, v in enumerate(args, 1):
        n = _as_int(v)
        if n is None:
            raise TypeError("new(): argument 'size' must be tuple of ints, but found element of "
                            f"type {_py_name(v)} at pos {pos}")
        sizes.append(n)
    return _sized(dtype, device, sizes)


def _sized(dtype, device, sizes):
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(n for n in sizes if n < 0)}: {sizes}")
    return _C.empty(sizes, dtype=dtype, device=device)


def new(self, *args, **kwargs):
    """torch's legacy Tensor.new: an empty tensor, sizes, data or an alias of a tensor, all of
    self's dtype and device (prefer new_empty / new_tensor)."""
    return _legacy_new(self.dtype, self.device, "new", args, kwargs)


def type_(self, dtype=None, non_blocking=False):
    """No argument: the legacy type name ('torch.FloatTensor', 'torch.cuda.FloatTensor');
    else a conversion to a dtype, a legacy type (and its device) or such a type's name."""
    if dtype is None:
        cuda = "cuda." if self.device.type == "cuda" else ""
        return f"torch.{cuda}{_TYPES[self.dtype].__name__}"
    device = None
    if isinstance(dtype, str):
        head, _, name = dtype.rpartition(".")
        if head not in ("torch", "torch.cuda", "retorch", "retorch.cuda") or name not in _BY_NAME:
            raise ValueError(f"invalid type: '{dtype}'")
        device = "cuda" if head.endswith("cuda") else "cpu"
        dtype = _BY_NAME[name].dtype
    elif isinstance(dtype, tensortype):
        device, dtype = "cpu", dtype.dtype
    elif dtype is _C.Tensor:
        device, dtype = "cpu", _C.get_default_dtype()
    elif isinstance(dtype, type):
        raise ValueError(f"invalid type: '{dtype.__name__}'")
    elif not isinstance(dtype, _C.dtype):
        raise TypeError("dtype must be a type, str, or dtype object")
    if device is None or self.device.type == device:
        return self.to(dtype, non_blocking=non_blocking)
    return self.to(device, dtype, non_blocking=non_blocking)


def _import_dotted_name(name):
    """torch's _import_dotted_name, with "torch" (and "retorch") naming this package."""
    if ".cuda." in name:
        raise TypeError(f"type {name} not available. retorch has no legacy CUDA tensor types.")
    head, *rest = name.split(".")
    obj = importlib.import_module(__package__ if head in ("torch", "retorch") else head)
    for part in rest:
        obj = getattr(obj, part)
    return obj


def set_default_tensor_type(t):
    """Makes t's dtype (a floating legacy type, or its name) the default floating dtype."""
    if isinstance(t, str):
        t = _import_dotted_name(t)
    if not isinstance(t, tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _C.set_default_dtype(t.dtype)


# ---------------------------------------------------------------- switches

_warn_always = {"enabled": False, "warned": set()}


def set_warn_always(b):
    """When True, the warnings torch gives once per process (index_reduce's beta notice here)
    are given every time."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always["enabled"] = b


def is_warn_always_enabled():
    return _warn_always["enabled"]


def _warn_once(message):
    if _warn_always["enabled"] or message not in _warn_always["warned"]:
        _warn_always["warned"].add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def set_anomaly_enabled(enabled, check_nan=True):
    """Turns anomaly detection on or off (see autograd.set_detect_anomaly). retorch's anomaly
    mode is its NaN check, so check_nan=False leaves it off."""
    for pos, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan)), 1):
        if not isinstance(value, bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {pos}) must be "
                            f"bool, not {type(value).__name__}")
    _C._set_anomaly_enabled(enabled and check_nan)


def is_anomaly_check_nan_enabled():
    return _C.is_anomaly_enabled()  # anomaly mode is the NaN check (see set_anomaly_enabled)


def compiled_with_cxx11_abi():
    """Whether retorch was built with _GLIBCXX_USE_CXX11_ABI=1: it always is."""
    return True


def get_file_path(*path_components):
    """A path under the directory that holds the retorch package, as torch.get_file_path."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(root, *path_components)


# ---------------------------------------------------------------- poisson and binomial

def _rounds(params, step, draws, generator):
    """Runs a per-element sampler in vectorized rounds. params are 1-D float64 tensors, one
    value per element; each round, step(params, state, uniforms) looks at the unfinished
    elements (uniforms holds `draws` rows of fresh U[0,1) numbers for them) and returns
    (value, done, state); finished elements keep their value and drop out of later rounds."""
    n = params[0].numel()
    device = params[0].device
    out = _C.zeros([n], dtype=_C.float64, device=device)
    todo = _C.arange(n, device=device)
    state = ()
    while todo.numel() > 0:
        u = _C.rand([draws, todo.numel()], generator=generator, dtype=_C.float64, device=device)
        value, done, state = step(params, state, u)
        out[todo[done]] = value[done]
        keep = ~done
        todo = todo[keep]
        params = [p[keep] for p in params]
        state = tuple(s[keep] for s in state)
    return out


def _poisson_product(params, state, u):
    """Small rates (Knuth): count uniforms until their product falls to exp(-rate)."""
    (rate,) = params
    prod, count = state or (_C.ones_like(rate), _C.zeros_like(rate))
    prod = prod * u[0]
    done = prod <= (-rate).exp()
    return count, done, (prod, count + 1)


def _poisson_ptrs(params, state, u):
    """Rates >= 10: Hormann's transformed rejection (PTRS), as torch's kernel samples them."""
    (lam,) = params
    b = 0.931 + 2.53 * lam.sqrt()
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    U, V = u[0] - 0.5, u[1]
    us = 0.5 - U.abs()
    k = ((2 * a / us + b) * U + lam + 0.43).floor()
    quick = (us >= 0.07) & (V <= vr)
    tested = (k >= 0) & ~((us < 0.013) & (V > us))
    log_ratio = V.log() + inv_alpha.log() - (a / (us * us) + b).log()
    fits = log_ratio <= -lam + k * lam.log() - _C.lgamma(k.clamp(min=0) + 1)
    return k, quick | (tested & fits), ()


def _binomial_inversion(params, state, u):
    """n * p < 10: count geometric waiting times until they pass n (torch's inversion)."""
    count, prob = params
    total, successes = state or (_C.zeros_like(count), _C.zeros_like(count))
    total = total + (u[0].log() / (-prob).log1p()).ceil()
    done = total > count
    return successes, done, (total, successes + 1)


def _binomial_btrs(params, state, u):
    """n * p >= 10 (p <= 1/2): Hormann's BTRS, its acceptance test in exact log-gammas."""
    n, p = params
    stddev = (n * p * (1 - p)).sqrt()
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    r = p / (1 - p)
    alpha = (2.83 + 5.1 / b) * stddev
    m = ((n + 1) * p).floor()
    U, V = u[0] - 0.5, u[1]
    us = 0.5 - U.abs()
    k = ((2 * a / us + b) * U + c).floor()
    inside = (k >= 0) & (k <= n)
    kk = k.clamp(min=0).minimum(n)
    log_ratio = (V * alpha / (a / (us * us) + b)).log()
    # log(f(k) / f(m)) for the binomial pmf f
    bound = (_C.lgamma(m + 1) + _C.lgamma(n - m + 1) - _C.lgamma(kk + 1) - _C.lgamma(n - kk + 1)
             + (kk - m) * r.log())
    done = inside & (((us >= 0.07) & (V <= v_r)) | (log_ratio <= bound))
    return k, done, ()


def _sample_where(out, mask, params, step, draws, generator):
    idx = mask.nonzero().reshape(-1)
    if idx.numel() > 0:
        out[idx] = _rounds([p[idx] for p in params], step, draws, generator)


def _poisson_sample(rates, generator):
    flat = rates.detach().reshape(-1).to(_C.float64)
    out = _C.zeros_like(flat)
    _sample_where(out, (flat > 0) & (flat < 10), [flat], _poisson_product, 1, generator)
    finite = ~_C.isinf(flat)
    _sample_where(out, (flat >= 10) & finite, [flat], _poisson_ptrs, 2, generator)
    out = _C.where(finite, out, _C.full_like(out, -2.0 ** 63))  # torch's int64 overflow
    return out.to(rates.dtype).reshape(list(rates.shape))


def _binomial_sample(count, prob, generator):
    n, p = (t.detach().to(_C.float64) for t in broadcast_tensors(count, prob))
    shape = list(n.shape)
    n, p = n.reshape(-1).contiguous(), p.reshape(-1).contiguous()
    q = _C.where(p > 0.5, 1 - p, p)
    out = _C.zeros_like(n)
    drawn = (n > 0) & (p > 0) & (p < 1) & ~_C.isinf(n)
    big = n * q >= 10
    _sample_where(out, drawn & big, [n, q], _binomial_btrs, 2, generator)
    _sample_where(out, drawn & ~big, [n, q], _binomial_inversion, 1, generator)
    out = _C.where(drawn & (p > 0.5), n - out, out)
    out = _C.where((n > 0) & ((p >= 1) | _C.isinf(n)), n, out)
    out = _C.where(_C.isnan(p) | _C.isnan(n), _C.full_like(out, float("nan")), out)
    out = _C.where((n <= 0) | (p <= 0), _C.zeros_like(out), out)
    return out.to(count.dtype).reshape(shape)


class _Poisson(Function):
    _backward_name = "PoissonBackward0"

    @staticmethod
    def forward(ctx, rates, generator):
        return _poisson_sample(rates, generator)

    @staticmethod
    def backward(ctx, grad):
        return _C.zeros_like(grad), None  # torch's: a sample does not move with its rate


class _Binomial(Function):
    _backward_name = "BinomialBackward0"

    @staticmethod
    def forward(ctx, count, prob, generator):
        return _binomial_sample(count, prob, generator)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::binomial is not implemented")


def _tensor_arg(fn, name, pos, value):
    if not isinstance(value, _C.Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(value).__name__}")


def _records(*tensors):
    return _C.is_grad_enabled() and any(t.requires_grad for t in tensors)


def poisson(input, generator=None):
    """A Poisson sample with each element of input as its rate, drawn from generator (or the
    default one) with torch's algorithms; float32, float64 and bfloat16 rates."""
    _tensor_arg("poisson", "input", 1, input)
    if input.dtype not in (_C.float32, _C.float64, _C.bfloat16):
        raise RuntimeError(f"\"poisson_{input.device.type}\" not implemented for "
                           f"'{_type_name(input.dtype)}'")
    if input.numel() and not bool((input.detach() >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if _records(input):
        return _Poisson.apply(input, generator)
    return _poisson_sample(input, generator)


def binomial(count, prob, generator=None):
    """Binomial samples: successes in count trials of probability prob (broadcast together,
    one float dtype), drawn from generator (or the default one) with torch's algorithms."""
    _tensor_arg("binomial", "count", 1, count)
    _tensor_arg("binomial", "prob", 2, prob)
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {_type_name(prob.dtype)} but expected "
                           f"{_type_name(count.dtype)}")
    if count.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"\"binomial_{count.device.type}\" not implemented for "
                           f"'{_type_name(count.dtype)}'")
    try:
        np.broadcast_shapes(tuple(count.shape), tuple(prob.shape))
    except ValueError:
        raise _broadcast_error(list(count.shape), list(prob.shape)) from None
    if _records(count, prob):
        return _Binomial.apply(count, prob, generator)
    return _binomial_sample(count, prob, generator)


# ---------------------------------------------------------------- index_reduce

def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _broadcast_error(a, b):
    """torch's message for slices a (self's) and b (source's) that do not broadcast."""
    ndim = max(len(a), len(b))
    for i in range(ndim - 1, -1, -1):
        off = ndim - 1 - i
        sa = a[len(a) - 1 - off] if off < len(a) else 1
        sb = b[len(b) - 1 - off] if off < len(b) else 1
        if sa != sb and sa != 1 and sb != 1:
            return RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                                f"({sb}) at non-singleton dimension {i}")
    return RuntimeError(f"output with shape {a} doesn't match the broadcast shape "
                        f"{list(np.broadcast_shapes(tuple(a), tuple(b)))}")


def _index_reduce_args(self, dim, index, source, reduce):
    """torch's checks, in its order; returns dim, the index spread over source's shape and
    source broadcast to it (both as for a 1-d self when self is 0-d)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    dim = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {_type_name(index.dtype)} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_type_name(index.dtype)}")
    if self.dtype is not source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_type_name(self.dtype)}) and source "
                           f"({_type_name(source.dtype)}) must have the same scalar type")
    if not (dim == 0 or dim < source.dim()):
        raise RuntimeError(f"index_reduce_(): Indexing dim {dim} is out of bounds of the source "
                           f"tensor with dim {source.dim()}")
    count = 1 if source.dim() == 0 else source.shape[dim]
    if index.numel() != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({count}), for dim: {dim}")
    shape = list(self.shape) or [1]
    src_shape = list(source.shape) or [1]
    a, b = shape[:dim] + shape[dim + 1:], src_shape[:dim] + src_shape[dim + 1:]
    try:
        if list(np.broadcast_shapes(tuple(a), tuple(b))) != a:
            raise ValueError
    except ValueError:
        raise _broadcast_error(a, b) from None
    if self.dtype == _C.bool:
        raise RuntimeError("\"index_func_\" not implemented for 'Bool'")
    index = index.reshape(-1).long()
    if index.numel() and not (bool((index >= 0).all()) and bool((index < shape[dim]).all())):
        raise IndexError("index out of range in self")
    target = shape[:dim] + [count] + shape[dim + 1:]
    spread = index.reshape([-1 if d == dim else 1 for d in range(len(shape))]).expand(target)
    return dim, spread, source.reshape(src_shape).expand(target)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduces source's slices (prod, mean, amax or amin) into input's slices that index names
    along dim; with include_self=False input's own values there take no part (torch's beta
    API). scatter_reduce does the work, so gradients are its."""
    _warn_once("index_reduce() is in beta and the API may change at any time.")
    dim, spread, src = _index_reduce_args(input, dim, index, source, reduce)
    base = input.reshape([1]) if input.dim() == 0 else input
    if input.dtype == _C.bfloat16:  # scatter_reduce has no bfloat16 kernel: reduce in float32
        base, src = base.float(), src.float()
    out = base.scatter_reduce(dim, spread, src, reduce, include_self=include_self)
    return out.to(input.dtype).reshape(list(input.shape))


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """index_reduce written into self."""
    if self.dim() == 0 or self.dtype == _C.bfloat16:
        return self.copy_(index_reduce(self, dim, index, source, reduce,
                                       include_self=include_self))
    _warn_once("index_reduce() is in beta and the API may change at any time.")
    dim, spread, src = _index_reduce_args(self, dim, index, source, reduce)
    return self.scatter_reduce_(dim, spread, src, reduce, include_self=include_self)


# ---------------------------------------------------------------- resize_

def _size_of(args):
    """resize_'s size argument: ints, or one sequence of ints, checked as torch's parser."""
    if not args:
        raise TypeError('resize_() missing 1 required positional arguments: "size"')
    if len(args) == 1:
        (arg,) = args
        if isinstance(arg, (tuple, list)):
            items = arg
        elif _as_int(arg) is not None:
            return [_as_int(arg)]
        else:
            raise TypeError("resize_(): argument 'size' (position 1) must be tuple of SymInts, "
                            f"not {_py_name(arg)}")
    elif isinstance(args[0], (tuple, list)):
        raise TypeError(f"resize_() takes 1 positional argument but {len(args)} were given")
    else:
        items = args
    sizes = []
    for pos, v in enumerate(items, 1):
        if _as_int(v) is None:
            raise TypeError("resize_(): argument 'size' must be tuple of SymInts, but found "
                            f"element of type {_py_name(v)} at pos {pos}")
        sizes.append(_as_int(v))
    return sizes


def resize_(self, *sizes, memory_format=None, size=None):
    """self given the new sizes in place over its storage: shrinking keeps the storage (views
    still alias it); growing keeps the first elements, the rest uninitialized. Tensors that
    require grad are refused, as torch's."""
    shape = _size_of(sizes if size is None else (size,))
    if any(n < 0 for n in shape):
        raise RuntimeError("numel: integer multiplication overflow")  # torch 1.13's words
    return _resize(self, shape, _format_strides("resize_", shape, memory_format))


def install(Tensor):
    Tensor.type = type_
    for fn in (new, index_reduce_, resize_):
        if not hasattr(Tensor, fn.__name__):
            setattr(Tensor, fn.__name__, fn)
    if not hasattr(Tensor, "index_reduce"):
        Tensor.index_reduce = index_reduce
