"""Tensor methods torch has and retorch lacked, composed in Python: the in-place forms of
composites (addmm_, cumsum_, gcd_, float_power_, renorm_, ...) and their torch.* function forms,
sum_to_size, unsafe_split/chunk, apply_/map_/map2_, the layout flags, nextafter, angle,
real/imag, resize_as_ and as_strided_."""
import math
import operator

from . import _C
from . import _dtypes
from . import _tensor
from ._composites import addmv, addr, gcd, lcm, renorm
from ._math_extras import float_power, floor_divide, ldexp
from .functional import broadcast_tensors, deg2rad, rad2deg

__all__ = ["nextafter", "angle", "real", "imag", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes", "acosh_", "asinh_", "atanh_", "arccosh_", "arcsinh_",
           "arctanh_", "deg2rad_", "rad2deg_", "gcd_", "lcm_", "ldexp_", "detach_"]

_TYPE_NAMES = {_C.float32: "Float", _C.float64: "Double", _C.float16: "Half",
               _C.bfloat16: "BFloat16", _C.int64: "Long", _C.int32: "Int", _C.int16: "Short",
               _C.int8: "Char", _C.uint8: "Byte", _C.bool: "Bool"}
# The C++ type names torch's "Bad in-place call" dtype message prints.
_CPP_NAMES = {_C.float32: "float", _C.float64: "double", _C.float16: "c10::Half",
              _C.bfloat16: "c10::BFloat16", _C.int64: "long int", _C.int32: "int",
              _C.int16: "short int", _C.int8: "signed char", _C.uint8: "unsigned char",
              _C.bool: "bool"}


def _type_name(dtype):
    return _TYPE_NAMES[dtype]


def _source(self):
    """self, or a differentiable copy of it while autograd records: the op's backward may save
    self, and writing the result into self would leave that saved value stale."""
    return self.clone() if self.requires_grad and _C.is_grad_enabled() else self


def _into(self, result, elementwise=True):
    """Writes an out-of-place result into self with torch's in-place checks: the result keeps
    self's shape (no broadcasting self up) and has a dtype self can hold."""
    if tuple(result.shape) != tuple(self.shape):
        if elementwise:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output "
                           f"tensor size {list(result.shape)} should match")
    if not _dtypes.can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"result type {_type_name(result.dtype)} can't be cast to the desired "
                           f"output type {_type_name(self.dtype)}")
    return self.copy_(result)


# ---------------------------------------------------------------- in-place forms

def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    return _into(self, _C.addmm(_source(self), mat1, mat2, beta=beta, alpha=alpha), False)


def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    return _into(self, _C.addbmm(_source(self), batch1, batch2, beta=beta, alpha=alpha), False)


def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    return _into(self, _C.baddbmm(_source(self), batch1, batch2, beta=beta, alpha=alpha), False)


def addmv_(self, mat, vec, *, beta=1, alpha=1):
    if self.dim() != 1 or mat.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self.dim()}, {mat.dim()}, "
                           f"{vec.dim()}")
    return _into(self, addmv(_source(self), mat, vec, beta=beta, alpha=alpha), False)


def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    if self.dim() != 2:
        raise RuntimeError(f"2D tensor expected, got {self.dim()}D tensor for input")
    return _into(self, addr(_source(self), vec1, vec2, beta=beta, alpha=alpha), False)


def _cumulative_(self, name, dim, dtype):
    """cumsum_/cumprod_: torch runs them in self's dtype (so int8 sums wrap), and has no bool
    kernel for that."""
    if dtype is not None and dtype != self.dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {_CPP_NAMES[self.dtype]} and "
                           f"output tensor dtype {_CPP_NAMES[dtype]} should match")
    if self.dtype == _C.bool:
        raise RuntimeError(f"\"{name}_out_cpu\" not implemented for 'Bool'")
    return _into(self, getattr(_source(self), name)(dim, dtype=self.dtype))


def cumsum_(self, dim, *, dtype=None):
    return _cumulative_(self, "cumsum", dim, dtype)


def cumprod_(self, dim, *, dtype=None):
    return _cumulative_(self, "cumprod", dim, dtype)


def deg2rad_(self):
    return _into(self, deg2rad(_source(self)))


def rad2deg_(self):
    return _into(self, rad2deg(_source(self)))


def gcd_(self, other):
    return _into(self, gcd(self, other))


def lcm_(self, other):
    return _into(self, lcm(self, other))


def ldexp_(self, other):
    return _into(self, ldexp(_source(self), other))


def float_power_(self, exponent):
    if self.dtype != _C.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_type_name(self.dtype)} "
                           "but the operation's result requires dtype Double")
    return _into(self, float_power(_source(self), exponent))


def floor_divide_(self, other):
    return _into(self, floor_divide(_source(self), other))


def renorm_(self, p, dim, maxnorm):
    return _into(self, renorm(_source(self), p, dim, maxnorm))


def nextafter_(self, other):
    return _into(self, nextafter(self, other))


# ---------------------------------------------------------------- shapes and views

def sum_to_size(self, *size):
    """self summed down to `size` (which must expand to self's shape): the leading dimensions
    and those where size has 1 are summed; self itself when nothing needs summing."""
    shape = list(_tensor._size_args(size))
    lead = self.dim() - len(shape)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(shape, self.shape[lead:])):
        raise RuntimeError(f"size {{{shape}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape)
                                if s == 1 and self.shape[lead + i] != 1]
    if not shape:  # torch's sum_to: an empty size is the sum, even of a 0-d tensor
        return self.sum()
    if not dims:
        return self
    return self.sum(dims, keepdim=True).reshape(shape)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False):
    out = _C.empty_strided(list(size), list(stride), dtype=dtype or self.dtype,
                           device=device or self.device, requires_grad=requires_grad)
    return out.pin_memory() if pin_memory else out


def unsafe_chunk(input, chunks, dim=0):
    """chunk; torch's unsafe_ forms skip view tracking, which retorch's views do not need."""
    return tuple(input.chunk(chunks, dim))


def unsafe_split(input, split_size, dim=0):
    if not isinstance(split_size, int):
        raise TypeError("unsafe_split(): argument 'split_size' (position 1) must be int, not "
                        f"{type(split_size).__name__}")
    return tuple(input.split(split_size, dim))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return tuple(input.split_with_sizes(list(split_sizes), dim))


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def _extent(shape, strides):
    """How many storage elements from the offset a geometry reaches."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def _resize(self, shape, strides=None):
    """torch's resize_: self takes `shape` (with `strides`, contiguous by default; an unchanged
    shape without strides keeps self as it is) over the same storage from the same offset, so
    it reads the storage's first elements whatever self's old strides were. Within the storage
    views still alias self; growing past it moves self to new memory holding the old elements
    first (the rest uninitialized, as torch's), which views made earlier no longer share."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = list(shape)
    if strides is None:
        if shape == list(self.shape):
            return self
        strides = _contiguous_strides(shape)
    offset = self.storage_offset()
    elements = _C._storage_bytes(self).numel() // self.element_size()
    if offset + _extent(shape, strides) <= elements:  # within the storage: views still alias
        self.data = self.as_strided(shape, strides, offset)
        return self
    old = _extent(list(self.shape), list(self.stride()))
    grown = _C.empty([_extent(shape, strides)], dtype=self.dtype, device=self.device)
    keep = min(grown.numel(), old)
    grown[:keep] = self.as_strided([old], [1], offset)[:keep]
    self.data = grown.as_strided(shape, strides, 0)
    return self


def _format_strides(name, shape, memory_format):
    """The strides a resize to `shape` in memory_format gets (None: keep an unchanged shape's)."""
    if memory_format is None:
        return None
    if not isinstance(memory_format, _C.memory_format):
        raise TypeError(f"{name}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    if memory_format == _C.contiguous_format:
        return _contiguous_strides(shape)
    if memory_format == _C.channels_last:
        if len(shape) != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        n, c, h, w = shape
        return [h * w * c, 1, w * c, c]
    raise RuntimeError("Unsupported memory formatPreserve")


def resize_as_(self, the_template, memory_format=None):
    """self resized to the_template's shape (see _resize); preserve_format takes the
    template's channels-last layout when it has one."""
    shape = list(the_template.shape)
    if memory_format == _C.preserve_format:
        stride = list(the_template.stride())
        channels_last = len(shape) == 4 and stride != _contiguous_strides(shape) and \
            stride == _format_strides("resize_as_", shape, _C.channels_last)
        memory_format = _C.channels_last if channels_last else _C.contiguous_format
    return _resize(self, shape, _format_strides("resize_as_", shape, memory_format))


# ---------------------------------------------------------------- per-element Python calls

_INT_RANGES = {_C.uint8: (0, 255), _C.int8: (-128, 127), _C.int16: (-2**15, 2**15 - 1),
               _C.int32: (-2**31, 2**31 - 1), _C.int64: (-2**63, 2**63 - 1)}


def _storer(dtype):
    """Converts a callable's result to a value of dtype the way torch's apply_ does: floats
    truncate into integers (checked for overflow), other objects must be indexable."""
    def to_float(v):
        if isinstance(v, (str, bytes)) or v is None:
            raise TypeError(f"must be real number, not {type(v).__name__}")
        return float(v)

    def to_int(v):
        lo, hi = _INT_RANGES[dtype]
        if isinstance(v, float):
            if not (math.isfinite(v) and lo <= math.trunc(v) <= hi):
                raise RuntimeError(f"value cannot be converted to type {_dtypes._name(dtype)} "
                                   "without overflow")
            return math.trunc(v)
        i = operator.index(v)
        if not lo <= i <= hi:
            raise RuntimeError("Overflow when unpacking long" if dtype == _C.int64 else
                               f"value cannot be converted to type {_dtypes._name(dtype)} "
                               "without overflow")
        return i

    if dtype == _C.bool:
        return lambda v: v != 0 if isinstance(v, float) else operator.index(v) != 0
    return to_float if dtype.is_floating_point else to_int


def _elements(t):
    """t's elements as Python numbers, in row-major order."""
    flat = t.detach().reshape(-1)
    if flat.dtype in (_C.float16, _C.bfloat16):
        flat = flat.float()
    return flat.tolist()


def _store(self, values):
    import numpy as np
    store = _storer(self.dtype)
    kind = np.float64 if self.dtype.is_floating_point else \
        np.bool_ if self.dtype == _C.bool else np.int64
    arr = np.array([store(v) for v in values], dtype=kind)
    self.copy_(_C.from_numpy(arr).reshape(list(self.shape)).to(self.dtype))
    return self


def _check_cpu(name, *tensors):
    if any(t.device.type != "cpu" for t in tensors):
        raise TypeError(f"{name} is only implemented on CPU tensors")


def apply_(self, callable):
    """Replaces each element x with callable(x) (a Python call per element; CPU only)."""
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                           "var.detach().apply_() instead.")
    if self.device.type == "meta":
        return self
    _check_cpu("apply_", self)
    return _store(self, [callable(v) for v in _elements(self)])


def map_(self, tensor, callable):
    """Replaces each element x with callable(x, y), y from tensor broadcast to self's shape."""
    if self.requires_grad or tensor.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use "
                           "var.detach().map_() instead.")
    if tensor.dtype != self.dtype or tensor.device != self.device:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    if self.device.type == "meta":
        return self
    _check_cpu("map_", self)
    ys = _elements(tensor.expand(list(self.shape)))
    return _store(self, [callable(x, y) for x, y in zip(_elements(self), ys)])


def map2_(self, x, y, callable):
    """Replaces each element a with callable(a, b, c), b and c from x and y broadcast."""
    if self.requires_grad or x.requires_grad or y.requires_grad:
        raise RuntimeError("Can't call map2_() on Variable that requires grad. Use "
                           "var.detach().map2_() instead.")
    for name, t in (("x", x), ("y", y)):
        if t.dtype != self.dtype or t.device != self.device:
            raise TypeError(f"map2_: expected {self.type()} for argument '{name}' (got "
                            f"{t.type()})")
    if self.device.type == "meta":
        return self
    _check_cpu("map2_", self, x, y)
    bs, cs = _elements(x.expand(list(self.shape))), _elements(y.expand(list(self.shape)))
    return _store(self, [callable(a, b, c) for a, b, c in zip(_elements(self), bs, cs)])


# ---------------------------------------------------------------- elementwise

# nextafter steps through the float's bit pattern, read as a same-width integer.
_BITS = {_C.float32: _C.int32, _C.float64: _C.int64, _C.bfloat16: _C.int16}


def nextafter(input, other):
    """The next representable value after input in the direction of other (C's nextafter).
    float16 is refused, as torch's CPU kernel does; not differentiable."""
    dtype = _dtypes.result_type(input, other)
    if dtype not in _BITS:
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{_type_name(dtype)}'")
    x, y = broadcast_tensors(input.detach().to(dtype), other.detach().to(dtype))
    x, y = x.contiguous(), y.contiguous()
    bits = x.view(_BITS[dtype])
    away = (x < y) == (x > 0)  # moving toward y grows |x|: the next bit pattern up
    stepped = (bits + (away.to(bits.dtype) * 2 - 1)).view(dtype)
    tiny = _C.ones([], dtype=bits.dtype).view(dtype)  # the smallest subnormal
    out = _C.where(x == 0, _C.where(y > 0, tiny, -tiny), stepped)
    out = _C.where(x == y, y, out)
    return _C.where(_C.isnan(x) | _C.isnan(y), x + y, out)


def angle(input):
    """The argument of a real number: pi for negatives, 0 otherwise, NaN kept; integers give
    the default float. Its gradient is zero, as torch's real-input angle."""
    x = input if input.is_floating_point() else input.to(_dtypes.default_float())
    plain = x.detach()
    value = _C.where(plain < 0, _C.full_like(plain, math.pi), _C.zeros_like(plain))
    value = _C.where(_C.isnan(plain), plain, value)
    if x.requires_grad:  # a graph edge to x that carries a zero gradient
        value = _C.where(_C.ones_like(plain, dtype=_C.bool), value, x)
    return value


def real(input):
    return input  # retorch's tensors are real: the real part is the tensor itself


def imag(input):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


# ---------------------------------------------------------------- torch.* in-place functions

def _method_call(name):
    def call(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = f"input.{name}(...) as a function (torch.{name})."
    return call


# (deg2rad_, rad2deg_, gcd_, lcm_ and ldexp_ above serve as functions and methods both.)
acosh_, asinh_, atanh_ = _method_call("acosh_"), _method_call("asinh_"), _method_call("atanh_")
arccosh_, arcsinh_ = _method_call("arccosh_"), _method_call("arcsinh_")
arctanh_, detach_ = _method_call("arctanh_"), _method_call("detach_")


class _Flag:
    """A constant Tensor property (is_sparse and friends): retorch tensors are dense, strided,
    unquantized."""

    def __init__(self, value):
        self.value = value

    def __get__(self, obj, cls):
        return self if obj is None else self.value


_METHODS = ("addmm_", "addbmm_", "baddbmm_", "addmv_", "addr_", "cumsum_", "cumprod_",
            "deg2rad_", "rad2deg_", "gcd_", "lcm_", "ldexp_", "float_power_", "floor_divide_",
            "renorm_", "nextafter_", "sum_to_size", "new_empty_strided", "unsafe_chunk",
            "unsafe_split", "unsafe_split_with_sizes", "resize_as_", "apply_", "map_", "map2_",
            "nextafter", "angle")


def install(Tensor):
    from ._api_runtime import strided
    for name in _METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    Tensor.swapaxes_ = Tensor.swapdims_ = Tensor.transpose_
    Tensor.as_strided_ = _tensor._inplace_view("as_strided")
    Tensor.is_meta = property(lambda self: self.device.type == "meta")
    # retorch's inference_mode only stops graph recording; it makes no inference tensors.
    Tensor.is_inference = lambda self: False
    Tensor.is_quantized = Tensor.is_sparse = Tensor.is_sparse_csr = _Flag(False)
    Tensor.layout = _Flag(strided)
    Tensor.real = property(real)
    Tensor.imag = property(imag)
